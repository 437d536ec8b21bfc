"""Asking the person: the four standard interactions (notice, choice, confirm, input)
and dismissing one.

An interaction is a ``lineup.v1.tool.call`` to one of the Runtime's interactive tools;
the user's Runtime answers it exactly once with a ``lineup.v1.tool.result``, which the
conversation's ``Inbox`` hands to the waiting call. ``Conversation`` builds each
tool's arguments and hands them to ``Asking.ask``, then reads the result with
``accepted``, ``chosen`` or ``answer_of``.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec

from lineup.protocol import InteractionDismissEnvelope, Target, ToolCallEnvelope, payloads
from lineup.protocol import interactions as ix
from lineup.protocol.errors import ErrorCode
from lineup.protocol.payloads import AppSessionContext, ToolResult

from .arguments import (
    check_id,
    checked_arguments,
)
from .errors import InteractionError, InteractionFailed, SendRejected, interaction_error
from .ids import call_envelope_id, new_envelope_id, next_call_id, retry_call_id
from .inbox import Inbox

if TYPE_CHECKING:
    from .conversation import Conversation

A = TypeVar("A", ix.ChoiceAnswer, ix.ConfirmAnswer, ix.InputAnswer)


class Asking:
    """The interactions of one conversation: sent through it, answered via its inbox."""

    def __init__(self, conversation: Conversation, inbox: Inbox) -> None:
        self._conversation = conversation
        self._inbox = inbox

    async def dismiss(self, call_id: str, reason: str | None) -> ToolResult:
        known = self._inbox.tool_results.known(call_id)
        if known is not None:
            return known
        check_id(call_id, "call_id")
        payload = payloads.InteractionDismiss(
            control_id=new_envelope_id("ctl"), call_id=call_id, reason=reason
        )
        envelope = self._conversation._make(InteractionDismissEnvelope, "dis", payload, None)
        refused = self._inbox.refusal(envelope.id)
        waiting = asyncio.ensure_future(self._inbox.result(call_id))
        try:
            await self._conversation.send(envelope)
            either: set[asyncio.Future[Any]] = {waiting, refused}
            done, _ = await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if waiting in done:
                return waiting.result()
            error = refused.result()
            raise InteractionError(call_id, error.code, error.message)
        finally:
            self._inbox.drop_refusal(envelope.id)
            if not waiting.done():
                waiting.cancel()

    # --- the call itself ----------------------------------------------------------------------

    async def ask(
        self,
        tool: str,
        arguments: dict[str, Any],
        call_id: str | None,
        app_session_id: str | None,
    ) -> ToolResult:
        """An interactive tool: its arguments are checked here first."""
        return await self.call(tool, checked_arguments(tool, arguments), call_id, app_session_id)

    async def call(
        self,
        tool: str,
        checked: dict[str, Any],
        call_id: str | None,
        app_session_id: str | None,
        *,
        instance_id: str | None = None,
    ) -> ToolResult:
        """Send one ``tool.call`` (arguments checked first: ``ValueError``, nothing
        sent), bound to ``instance_id`` when given (``target.instance_id``), and return
        its single result; retried once, under a derived call id, when the Runtime's
        inventory moved on meanwhile."""
        target = None if instance_id is None else Target(instance_id=instance_id)
        context = None
        if app_session_id is not None:
            check_id(app_session_id, "app_session_id")
            context = AppSessionContext(app_session_id=app_session_id)
        conversation_id = self._conversation.id
        if call_id is None:
            call_id = next_call_id(conversation_id)
        else:
            check_id(call_id, "call_id")
        revision = (await self._inbox.latest_inventory()).revision
        result, sent_before = await self._call(tool, checked, call_id, revision, context, target)
        if result.status == "rejected" and _code(result) == ErrorCode.INVENTORY_REVISION_MISMATCH:
            inventory = self._inbox.inventory
            current = inventory.revision if inventory is not None else revision
            # Retry once, under a call id derived from the first, when a newer inventory
            # has arrived (or when the call was stored by an earlier run of this handler,
            # whose revision we do not know).
            if current != revision or sent_before:
                retry_id = retry_call_id(conversation_id, call_id)
                result, _ = await self._call(tool, checked, retry_id, current, context, target)
        return result

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        call_id: str,
        revision: str,
        context: AppSessionContext | None,
        target: Target | None,
    ) -> tuple[ToolResult, bool]:
        """Send one ``tool.call`` and wait for its result; also say whether the call was
        already stored (a replayed handler asking again)."""
        results = self._inbox.tool_results
        known = results.known(call_id)
        if known is not None:
            return known, True  # replayed after a restart: the answer is already here
        waiter = results.waiter(call_id)
        payload = payloads.ToolCall(
            call_id=call_id,
            tool=tool,
            inventory_revision=revision,
            arguments=arguments,
            app_session_context=context,
        )
        conversation = self._conversation
        envelope_id = call_envelope_id(conversation.id, call_id)
        envelope = conversation._make(ToolCallEnvelope, "call", payload, envelope_id, target)
        try:
            sent_before = await conversation._send_call(envelope, waiter.done)
        except SendRejected:
            if not waiter.done():
                results.drop_waiter(call_id)
            raise
        return await asyncio.shield(waiter), sent_before


# --- answers ------------------------------------------------------------------------------------


def _code(result: ToolResult) -> str | None:
    return result.error.code if result.error is not None else None


def accepted(result: ToolResult) -> None:
    """A notice: shown (``accepted``) or the typed error saying why not."""
    if result.status not in ("accepted", "completed"):
        raise interaction_error(result)


def chosen(result: ToolResult, keys: dict[str, str], multiple: bool) -> str | list[str]:
    """The keys of the options the person selected, in the order they were given."""
    answer = answer_of(result, ix.ChoiceAnswer)
    if any(option_id not in keys for option_id in answer.selected) or (
        not multiple and len(answer.selected) != 1
    ):
        raise _bad_result(result, "the selection does not fit the options")
    selected = [keys[option_id] for option_id in answer.selected]
    return selected if multiple else selected[0]


def answer_of(result: ToolResult, kind: type[A]) -> A:
    if result.status != "completed":
        raise interaction_error(result)
    try:
        return msgspec.convert(result.result or {}, kind)
    except msgspec.ValidationError:
        raise _bad_result(result, "the result does not fit the question") from None


def _bad_result(result: ToolResult, message: str) -> InteractionFailed:
    return InteractionFailed(
        result.call_id,
        ErrorCode.TOOL_OUTPUT_INVALID.value,
        message,
        status=result.status,
        result=result,
    )
