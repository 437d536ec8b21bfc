"""A MiniApp instance as the agent sees it: a handle that names the instance in every
call it makes, so a follow-up can only ever reach the instance it means.

The Runtime never moves a call to another instance (docs/miniapps.md, "How a tool
call finds its instance"): a call bound to an instance (``target.instance_id``) goes
there or is refused with ``app_instance_not_found``; one that names no instance goes
to the one instance of its app that is open in the conversation, and is refused with
``app_instance_ambiguous`` when there are several. So the safe habit is to name the
instance, and ``AppInstance`` makes it the easy one::

    board = await conversation.open_app("task-dashboard.open")
    await board.call("task-dashboard.add_task", {"title": "Write the report"})
    await conversation.ask_confirm("Keep it?", app_session_id=board.app_session_id)

The instance id comes from the Runtime: every ``tool.result`` of an app's tool names
the instance that ran the call in its envelope's ``target.instance_id``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .conversation import Conversation

__all__ = ["AppInstance"]


@dataclass(frozen=True, slots=True)
class AppInstance:
    """One app instance of a conversation. ``result`` is the result of the call that
    opened (or brought forward) it, ``{}`` for a handle made from a known id
    (``Conversation.app``)."""

    conversation: Conversation = field(repr=False)
    instance_id: str
    result: dict[str, Any] = field(default_factory=dict)

    @property
    def app_session_id(self) -> str | None:
        """The instance's app sub-session, once its ``app_session.opened`` arrived
        (before the result of the call that opened it): pass it as ``app_session_id=``
        of ``ask_*`` to ask over the app. ``None`` for an instance this agent did not
        see open."""
        return self.conversation.app_session_id(self.instance_id)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
    ) -> dict[str, Any]:
        """``Conversation.call_tool`` bound to this instance: it runs here, or raises
        ``ToolCallError`` (``app_instance_not_found`` once the instance closed, with a
        message saying what became of it); it never reaches a sibling."""
        return await self.conversation.call_tool(
            tool, arguments, instance_id=self.instance_id, call_id=call_id
        )
