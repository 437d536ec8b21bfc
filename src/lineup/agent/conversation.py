"""A conversation as the agent sees it: who it is with, ways to speak in it, the
four standard interactions (notice, choice, confirm, input) to ask the person, and
calls of the host capabilities the Runtime declares.

Sending is here; asking is done by ``Asking`` (``asking.py``), capability calls by
``Capabilities`` (``capabilities.py``), and what the user's Runtime sends back
(results, refusals, inventories) is noted by ``Inbox`` (``inbox.py``), to which the
``Agent`` routes it the moment it arrives on the stream.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

from lineup.protocol import (
    Envelope,
    ErrorEnvelope,
    MessageEnvelope,
    ProgressEnvelope,
    Sender,
    StatusEnvelope,
    Target,
    UiCloseEnvelope,
    UiOpenEnvelope,
    UiPatchEnvelope,
    decode,
    encode,
    payloads,
)
from lineup.protocol import interactions as ix
from lineup.protocol.errors import ErrorBody, ErrorCode, Rejection
from lineup.protocol.payloads import AppResult, CapabilityDescriptor, ClientInventory, ToolResult

from .apps import AppInstance
from .arguments import (
    DEFAULT_CAPABILITY_EXPIRY,
    CapabilityExpiresIn,
    ExpiresIn,
    Options,
    check_id,
    expires_in_ms,
    wire_options,
)
from .asking import Asking, accepted, answer_of, chosen
from .capabilities import Capabilities
from .errors import SendRejected, ToolCallError, capability_error, tool_call_error
from .ids import new_envelope_id
from .inbox import History, Inbox

if TYPE_CHECKING:
    from lineup.client import Connection

Clock = Callable[[], datetime]
E = TypeVar("E", bound=Envelope)


def utcnow() -> datetime:
    return datetime.now(UTC)


class Conversation:
    def __init__(
        self,
        conversation_id: str,
        *,
        user_id: str,
        agent_id: str,
        title: str,
        connection: Connection,
        clock: Clock,
        history: History | None = None,
    ) -> None:
        self.id = conversation_id
        self.user_id = user_id
        self.agent_id = agent_id
        self.title = title
        self._connection = connection
        self._clock = clock
        self._inbox = Inbox(conversation_id, history)
        self._asking = Asking(self, self._inbox)
        self._capabilities = Capabilities(self, self._inbox)

    def __repr__(self) -> str:
        return f"Conversation(id={self.id!r}, user_id={self.user_id!r})"

    async def send(self, envelope: Envelope) -> int:
        """Validate and send one envelope; return its sequence number once durable.

        The envelope is checked with the same decoder the AppServer uses, so a bad
        one fails here with the same code instead of on the server. Cancelling the
        wait (``asyncio.timeout``) does not unsend: the envelope stays queued and is
        still delivered, once; sending the same envelope again waits for that.
        """
        body = encode(envelope)
        checked = decode(body)
        if isinstance(checked, Rejection):
            raise SendRejected(
                ErrorBody(code=checked.code, message=checked.message, path=checked.path)
            )
        ack = await self._connection.send_envelope(envelope.id, body)
        return ack.seq

    async def _send_call(self, envelope: Envelope, answered: Callable[[], bool]) -> bool:
        """Send a call whose envelope id is derived from its call id; return whether an
        earlier run had already stored it.

        A replayed handler builds the same call again at another time, so the AppServer
        answers ``conflict`` for its envelope id: the stored call is the call. What
        answered it may be stored before the agent's cursor, where the stream will not
        replay it, so then the history is read until ``answered()``.
        """
        try:
            await self.send(envelope)
        except SendRejected as exc:
            if exc.code != ErrorCode.CONFLICT:
                raise
        else:
            return False
        if not answered():
            await self._inbox.scan_history(answered)
        return True

    def message(
        self, text: str, *, reply_to: str | None = None, envelope_id: str | None = None
    ) -> MessageEnvelope:
        """Build (without sending) a markdown message from this agent."""
        payload = payloads.Message(text=text, reply_to=reply_to)
        return self._make(MessageEnvelope, "msg", payload, envelope_id)

    def _make(
        self,
        kind: Callable[..., E],
        prefix: str,
        payload: payloads.Payload,
        envelope_id: str | None,
        target: Target | None = None,
    ) -> E:
        return kind(
            id=envelope_id or new_envelope_id(prefix),
            conversation_id=self.id,
            sender=Sender(kind="agent", id=self.agent_id),
            created_at=self._clock(),
            payload=payload,
            target=target,
        )

    async def send_markdown(
        self, text: str, *, reply_to: str | None = None, envelope_id: str | None = None
    ) -> int:
        return await self.send(self.message(text, reply_to=reply_to, envelope_id=envelope_id))

    async def send_status(
        self,
        state: Literal["idle", "thinking", "working", "waiting", "done"],
        text: str | None = None,
    ) -> int:
        payload = payloads.Status(state=state, text=text)
        return await self.send(self._make(StatusEnvelope, "st", payload, None))

    async def send_progress(
        self,
        progress_id: str,
        current: float,
        *,
        total: float | None = None,
        label: str | None = None,
        state: Literal["running", "completed", "failed", "cancelled"] = "running",
    ) -> int:
        payload = payloads.Progress(
            progress_id=progress_id, current=current, total=total, label=label, state=state
        )
        return await self.send(self._make(ProgressEnvelope, "pg", payload, None))

    async def send_error(self, code: str, message: str, *, ref_id: str | None = None) -> int:
        payload = payloads.Error(code=code, message=message, ref_id=ref_id)
        return await self.send(self._make(ErrorEnvelope, "err", payload, None))

    # --- app tools (spec 002 §8) -----------------------------------------------------------

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        instance_id: str | None = None,
        app_session_id: str | None = None,
        call_id: str | None = None,
    ) -> dict[str, Any]:
        """Call a MiniApp's tool that the inventory advertises (``launch``,
        ``foreground``, ``direct`` or ``operation``) and return the app's result.

        ``instance_id`` (the envelope's ``target.instance_id``) or ``app_session_id``
        (the instance's sub-session) binds the call to one instance: it runs there or
        is refused (``app_instance_not_found``), never on another. Without either it
        goes to the one instance of the app open in this conversation
        (``app_instance_ambiguous`` when there are several); ``open_app`` and
        ``AppInstance.call`` make the bound form the easy one. Raises
        ``ToolCallError`` for any outcome but ``completed``. Call ids are derived
        like the interactions' (a replayed handler does not call twice)."""
        result = await self._call_tool(tool, arguments, instance_id, app_session_id, call_id)
        return dict(result.result or {})

    async def open_app(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        app_session_id: str | None = None,
        call_id: str | None = None,
    ) -> AppInstance:
        """Call a ``launch`` tool (a new instance) or a ``foreground`` one (the app's
        open instance, or a new one when none is open) and return a handle on the
        instance that ran it, whose ``call`` names it in every follow-up. Raises
        ``ToolCallError`` like ``call_tool``."""
        result = await self._call_tool(tool, arguments, None, app_session_id, call_id)
        instance_id = self._inbox.call_instances.get(result.call_id)
        if instance_id is None:  # a Runtime that does not say where a call ran
            raise ToolCallError(
                result.call_id,
                ErrorCode.APP_INSTANCE_NOT_FOUND.value,
                "the result names no app instance",
                status=result.status,
                result=result,
            )
        return AppInstance(self, instance_id, dict(result.result or {}))

    def app(self, instance_id: str) -> AppInstance:
        """A handle on an instance known by its id (a ``ui.event``'s
        ``instance_id``, an ``app_session.opened``), to call it bound."""
        check_id(instance_id, "instance_id")
        return AppInstance(self, instance_id)

    async def _call_tool(
        self,
        tool: str,
        arguments: dict[str, Any] | None,
        instance_id: str | None,
        app_session_id: str | None,
        call_id: str | None,
    ) -> ToolResult:
        if not isinstance(arguments, dict | None):
            raise TypeError("arguments must be a dict")
        if instance_id is not None:
            check_id(instance_id, "instance_id")
        result = await self._asking.call(
            tool, dict(arguments or {}), call_id, app_session_id, instance_id=instance_id
        )
        if result.status != "completed":
            raise tool_call_error(result)
        return result

    def app_session_id(self, instance_id: str) -> str | None:
        """The sub-session of an app instance the Runtime opened here (from
        ``app_session.opened``, noted the moment it arrives: before the result of
        the tool call that launched the app). Ask in it to show the question over
        the app (``app_session_id=`` of ``ask_*``)."""
        return self._inbox.app_sessions.get(instance_id)

    # --- surfaces (spec 000 §4) ----------------------------------------------------------

    async def open_surface(
        self,
        app_id: str,
        version: str,
        *,
        instance_id: str,
        surface: str | None = None,
        state: dict[str, Any] | None = None,
        name: str | None = None,
    ) -> int:
        """Show one surface of an enabled app (exact ``version``; ``surface`` is
        required: an open without it is refused as ``malformed_envelope``) in the
        conversation, with ``state``. The same ``instance_id`` again replaces it. The
        person's events arrive as ``lineup.v1.ui.event`` (``Agent.on_event``); a
        surface the Runtime cannot show is answered with a ``lineup.v1.error``
        (``surface_unavailable``) naming this envelope."""
        app = payloads.SurfaceApp(id=app_id, version=version, surface=surface, name=name)
        payload = payloads.UiOpen(instance_id=instance_id, app=app, state=state or {})
        return await self.send(self._make(UiOpenEnvelope, "uio", payload, None))

    async def patch_surface(self, instance_id: str, state: dict[str, Any]) -> int:
        """Replace the surface's state (never its code)."""
        payload = payloads.UiPatch(instance_id=instance_id, state=state)
        return await self.send(self._make(UiPatchEnvelope, "uip", payload, None))

    async def close_surface(self, instance_id: str, reason: str | None = None) -> int:
        payload = payloads.UiClose(instance_id=instance_id, reason=reason)
        return await self.send(self._make(UiCloseEnvelope, "uic", payload, None))

    # --- asking the person ------------------------------------------------------------------

    async def notify(
        self,
        text: str,
        *,
        title: str | None = None,
        level: Literal["info", "success", "warning", "error"] = "info",
        toast: bool = True,
        call_id: str | None = None,
        app_session_id: str | None = None,
    ) -> None:
        """Show a notice card; return once the Runtime has accepted it.

        Raises ``InteractionRejected`` (and the other ``InteractionError``\\ s) when
        the Runtime does not show it, ``ValueError`` for bad arguments (nothing sent).
        """
        arguments = {"text": text, "title": title, "level": level, "toast": toast}
        accepted(await self._asking.ask(ix.NOTICE, arguments, call_id, app_session_id))

    @overload
    async def ask_choice(
        self,
        prompt: str,
        options: Options,
        *,
        multiple: Literal[False] = False,
        min_selected: None = None,
        max_selected: None = None,
        expires_in: ExpiresIn = None,
        call_id: str | None = None,
        app_session_id: str | None = None,
    ) -> str: ...

    @overload
    async def ask_choice(
        self,
        prompt: str,
        options: Options,
        *,
        multiple: Literal[True],
        min_selected: int | None = None,
        max_selected: int | None = None,
        expires_in: ExpiresIn = None,
        call_id: str | None = None,
        app_session_id: str | None = None,
    ) -> list[str]: ...

    @overload
    async def ask_choice(
        self,
        prompt: str,
        options: Options,
        *,
        multiple: bool,
        min_selected: int | None = None,
        max_selected: int | None = None,
        expires_in: ExpiresIn = None,
        call_id: str | None = None,
        app_session_id: str | None = None,
    ) -> str | list[str]: ...

    async def ask_choice(
        self,
        prompt: str,
        options: Options,
        *,
        multiple: bool = False,
        min_selected: int | None = None,
        max_selected: int | None = None,
        expires_in: ExpiresIn = None,
        call_id: str | None = None,
        app_session_id: str | None = None,
    ) -> str | list[str]:
        """Ask the person to pick one option (``multiple=False``: returns its key) or
        several (returns their keys, in the order the options were given).

        The key of an option given as a plain string is that string (on the wire its
        id is its 1-based position, ``"1"``, ``"2"``, ...); of any other option, its id.
        """
        wire, keys = wire_options(options)
        arguments = {
            "prompt": prompt,
            "options": wire,
            "multiple": multiple,
            "min_selected": min_selected,
            "max_selected": max_selected,
            "expires_in_ms": expires_in_ms(expires_in),
        }
        result = await self._asking.ask(ix.CHOICE, arguments, call_id, app_session_id)
        return chosen(result, keys, multiple)

    async def ask_confirm(
        self,
        prompt: str,
        *,
        confirm_label: str | None = None,
        cancel_label: str | None = None,
        danger: bool = False,
        expires_in: ExpiresIn = None,
        call_id: str | None = None,
        app_session_id: str | None = None,
    ) -> bool:
        """Ask a yes/no question; ``True`` when the person confirmed."""
        arguments = {
            "prompt": prompt,
            "confirm_label": confirm_label,
            "cancel_label": cancel_label,
            "danger": danger,
            "expires_in_ms": expires_in_ms(expires_in),
        }
        result = await self._asking.ask(ix.CONFIRM, arguments, call_id, app_session_id)
        return answer_of(result, ix.ConfirmAnswer).confirmed

    async def ask_input(
        self,
        prompt: str,
        *,
        placeholder: str | None = None,
        multiline: bool = False,
        min_length: int = 0,
        max_length: int = ix.DEFAULT_INPUT_CHARS,
        pattern: str | None = None,
        expires_in: ExpiresIn = None,
        call_id: str | None = None,
        app_session_id: str | None = None,
    ) -> str:
        """Ask for a line (or, ``multiline``, a text); ``pattern`` is an RE2 expression
        the whole answer must match."""
        arguments = {
            "prompt": prompt,
            "placeholder": placeholder,
            "multiline": multiline,
            "min_length": min_length,
            "max_length": max_length,
            "pattern": pattern,
            "expires_in_ms": expires_in_ms(expires_in),
        }
        result = await self._asking.ask(ix.INPUT, arguments, call_id, app_session_id)
        return answer_of(result, ix.InputAnswer).text

    async def dismiss(self, call_id: str, reason: str | None = None) -> ToolResult:
        """Stop waiting for an interaction; return the call's single terminal result.

        That is ``dismissed`` when the dismiss won, or the answer (or expiry) that came
        first. It is the stable receipt: calling ``dismiss`` again returns the same
        result (and, once the result is known, sends nothing). Raises
        ``InteractionError`` when the Runtime refuses the dismiss itself with an
        ``error`` envelope (e.g. ``interaction_not_found``).
        """
        return await self._asking.dismiss(call_id, reason)

    async def result(self, call_id: str) -> ToolResult:
        """The terminal ``tool.result`` payload of a call: at once when it is known,
        otherwise once it arrives.

        Results seen on the stream are remembered (the last ``RESULTS_KEPT``); an
        older one, or one stored before the agent's cursor (after a restart the stream
        does not replay it), is read from the AppServer's history.
        """
        return await self._inbox.result(call_id)

    @property
    def inventory(self) -> ClientInventory | None:
        """The latest inventory the Runtime published here, if one is known."""
        return self._inbox.inventory

    async def latest_inventory(self) -> ClientInventory:
        """The latest inventory; waits for the Runtime's first one when none is known."""
        return await self._inbox.latest_inventory()

    @property
    def locale(self) -> str | None:
        """The person's language (a BCP 47 tag such as ``zh-CN`` or ``en``) as the
        latest inventory says; ``None`` while no inventory is known or when the
        Runtime does not say (an older one)."""
        inventory = self._inbox.inventory
        return inventory.locale if inventory is not None else None

    async def known_locale(self) -> str | None:
        """``locale``, looked for in the history (once) when no inventory has been
        seen on the stream yet (after a restart). Does not wait."""
        inventory = await self._inbox.known_inventory()
        return inventory.locale if inventory is not None else None

    # --- host capabilities (spec 000 §5.3) ---------------------------------------------------

    async def call_capability(
        self,
        name: str,
        arguments: Mapping[str, Any] | None = None,
        *,
        reason: str,
        expires_in: CapabilityExpiresIn = DEFAULT_CAPABILITY_EXPIRY,
        call_id: str | None = None,
    ) -> dict[str, Any]:
        """Ask the Runtime to run a host capability (``lineup.v1.app.call``); return the
        ``result`` object of its ``completed`` answer.

        ``reason`` is shown to the person; ``expires_in`` (a ``timedelta`` or seconds,
        1 s to 24 h) bounds how long the call waits for their decision. Any other
        answer raises the ``CapabilityError`` for its status (``CapabilityRejected``,
        ...); a call the latest known inventory does not declare raises
        ``CapabilityUnsupported`` without being sent; bad arguments raise
        ``ValueError`` (nothing sent). Call ids are derived like ``ask_*``'s, so a
        replayed handler gets the recorded result instead of calling again.
        """
        result = await self._capabilities.call(
            name, arguments, reason=reason, expires_in=expires_in, call_id=call_id
        )
        if result.status != "completed":
            raise capability_error(result)
        return dict(result.result or {})

    async def capability_result(self, call_id: str) -> AppResult:
        """The terminal ``app.result`` payload of a capability call, whatever its status:
        at once when it is known, otherwise from the history or once it arrives."""
        return await self._inbox.app_result(call_id)

    async def capabilities(self) -> list[CapabilityDescriptor]:
        """The capabilities the latest inventory declares (looked for in the history
        when none has been seen yet); empty while no inventory is known."""
        return await self._capabilities.declared()

    # --- what the Agent routes here -----------------------------------------------------------

    def _observe(self, seq: int, envelope: Envelope) -> None:
        """Take note of an envelope from the user's side, the moment it arrives."""
        self._inbox.observe(seq, envelope)

    def _close(self) -> None:
        """The agent stopped: wake every waiter with ``AgentClosed``."""
        self._inbox.close()
