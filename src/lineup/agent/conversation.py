"""A conversation as the agent sees it: who it is with, ways to speak in it, and the
four standard interactions (notice, choice, confirm, input) to ask the person.

An interaction is a ``lineup.v1.tool.call`` to one of the Runtime's interactive tools;
the user's Runtime answers it exactly once with a ``lineup.v1.tool.result``. The
``Agent`` routes those results (and the Runtime's inventory) to the conversation the
moment they arrive on the stream, so a handler waiting for an answer is woken even
though it holds its conversation's queue.
"""

from __future__ import annotations

import asyncio
import hashlib
import math
import re
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypeVar, overload

import msgspec

from lineup.protocol import (
    ClientInventoryEnvelope,
    Envelope,
    ErrorEnvelope,
    InteractionDismissEnvelope,
    MessageEnvelope,
    ProgressEnvelope,
    Sender,
    StatusEnvelope,
    ToolCallEnvelope,
    ToolResultEnvelope,
    decode,
    encode,
    payloads,
)
from lineup.protocol import interactions as ix
from lineup.protocol.errors import ErrorBody, ErrorCode, Rejection
from lineup.protocol.fields import ID_PATTERN
from lineup.protocol.payloads import AppSessionContext, ClientInventory, ToolResult

from .errors import (
    AgentClosed,
    InteractionError,
    InteractionFailed,
    SendRejected,
    interaction_error,
)

if TYPE_CHECKING:
    from lineup.client import Connection

Clock = Callable[[], datetime]
E = TypeVar("E", bound=Envelope)
A = TypeVar("A", ix.ChoiceAnswer, ix.ConfirmAnswer, ix.InputAnswer)
T = TypeVar("T")

RESULTS_KEPT = 1000
"""Terminal results remembered per conversation for ``result()``; older ones are
looked up in the AppServer's history."""

ExpiresIn: TypeAlias = timedelta | float | None
"""How long the person has to answer: a ``timedelta`` or seconds, 1 minute to 24 hours;
``None`` leaves it to the Runtime (15 minutes)."""

OptionSpec: TypeAlias = str | tuple[str, str] | tuple[str, str, str] | ix.ChoiceOption
Options: TypeAlias = Sequence[OptionSpec] | Mapping[str, str]
"""Choice options: plain strings, ``(id, label)`` or ``(id, label, description)``
tuples, ``ChoiceOption`` structs, or a mapping of id to label."""

_ID = re.compile(ID_PATTERN)


def new_envelope_id(prefix: str = "env") -> str:
    """Client-made, globally unique: a resend after a timeout is deduplicated."""
    return f"{prefix}_{uuid.uuid4().hex}"


# --- which handler is running (deterministic call ids) -----------------------------------


@dataclass(slots=True)
class HandlerScope:
    """One handler invocation: what triggered it and how many interactions it started.

    ``Agent`` sets it around every handler call; ``ask_*`` inside the handler derive
    their call id from (conversation, trigger, handler, n), so a handler replayed after
    a restart asks the *same* call again instead of a new one.
    """

    trigger: str
    handler: str
    asked: int = 0


handler_scope: ContextVar[HandlerScope | None] = ContextVar("lineup_handler_scope", default=None)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def call_envelope_id(conversation_id: str, call_id: str) -> str:
    """The ``tool.call`` envelope id for a call id: the same call is the same envelope."""
    return "call-" + _digest("lineup.agent.tool.call", conversation_id, call_id)


class History(Protocol):
    """The conversation's stored log, for what the stream will not replay."""

    def streamed_after(self, conversation_id: str) -> int:
        """Envelopes after this sequence number reach the conversation on the stream."""
        ...

    async def read_page(self, conversation_id: str, since: int) -> list[tuple[int, bytes]]:
        """Stored envelopes after ``since``, in order, as ``(seq, bytes)``; empty at the end."""
        ...


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
        self._history = history
        self._inventory: ClientInventory | None = None
        self._inventory_seq = -1
        self._inventory_future: asyncio.Future[ClientInventory] | None = None
        self._inventory_scanned = False
        self._inventory_wanted = asyncio.Event()  # someone waits for a first inventory
        self._scan_lock = asyncio.Lock()
        self._results: OrderedDict[str, ToolResult] = OrderedDict()
        self._waiters: dict[str, asyncio.Future[ToolResult]] = {}
        self._refusals: dict[str, asyncio.Future[payloads.Error]] = {}
        self._closed = False

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
    ) -> E:
        return kind(
            id=envelope_id or new_envelope_id(prefix),
            conversation_id=self.id,
            sender=Sender(kind="agent", id=self.agent_id),
            created_at=self._clock(),
            payload=payload,
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
        result = await self._ask(ix.NOTICE, arguments, call_id, app_session_id)
        if result.status not in ("accepted", "completed"):
            raise interaction_error(result)

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
        wire_options, keys = _options(options)
        arguments = {
            "prompt": prompt,
            "options": wire_options,
            "multiple": multiple,
            "min_selected": min_selected,
            "max_selected": max_selected,
            "expires_in_ms": expires_in_ms(expires_in),
        }
        result = await self._ask(ix.CHOICE, arguments, call_id, app_session_id)
        answer = _answer(result, ix.ChoiceAnswer)
        if any(option_id not in keys for option_id in answer.selected) or (
            not multiple and len(answer.selected) != 1
        ):
            raise _bad_result(result, "the selection does not fit the options")
        selected = [keys[option_id] for option_id in answer.selected]
        return selected if multiple else selected[0]

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
        result = await self._ask(ix.CONFIRM, arguments, call_id, app_session_id)
        return _answer(result, ix.ConfirmAnswer).confirmed

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
        result = await self._ask(ix.INPUT, arguments, call_id, app_session_id)
        return _answer(result, ix.InputAnswer).text

    async def dismiss(self, call_id: str, reason: str | None = None) -> ToolResult:
        """Stop waiting for an interaction; return the call's single terminal result.

        That is ``dismissed`` when the dismiss won, or the answer (or expiry) that came
        first. It is the stable receipt: calling ``dismiss`` again returns the same
        result (and, once the result is known, sends nothing). Raises
        ``InteractionError`` when the Runtime refuses the dismiss itself with an
        ``error`` envelope (e.g. ``interaction_not_found``).
        """
        known = self._results.get(call_id)
        if known is not None:
            return known
        _check_id(call_id, "call_id")
        payload = payloads.InteractionDismiss(
            control_id=new_envelope_id("ctl"), call_id=call_id, reason=reason
        )
        envelope = self._make(InteractionDismissEnvelope, "dis", payload, None)
        refused = self._future(self._refusals, envelope.id)
        waiting = asyncio.ensure_future(self.result(call_id))
        try:
            await self.send(envelope)
            either: set[asyncio.Future[Any]] = {waiting, refused}
            done, _ = await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if waiting in done:
                return waiting.result()
            error = refused.result()
            raise InteractionError(call_id, error.code, error.message)
        finally:
            self._refusals.pop(envelope.id, None)
            if not waiting.done():
                waiting.cancel()

    async def result(self, call_id: str) -> ToolResult:
        """The terminal ``tool.result`` payload of a call: at once when it is known,
        otherwise once it arrives.

        Results seen on the stream are remembered (the last ``RESULTS_KEPT``); an
        older one, or one stored before the agent's cursor (after a restart the stream
        does not replay it), is read from the AppServer's history.
        """
        known = self._results.get(call_id)
        if known is not None:
            return known
        waiter = self._future(self._waiters, call_id)
        if not waiter.done():
            await self._scan_history(lambda: waiter.done())
        return await asyncio.shield(waiter)

    @property
    def inventory(self) -> ClientInventory | None:
        """The latest inventory the Runtime published here, if one is known."""
        return self._inventory

    async def latest_inventory(self) -> ClientInventory:
        """The latest inventory; waits for the Runtime's first one when none is known."""
        if self._inventory is not None:
            return self._inventory
        waiter = self._inventory_waiter()
        async with self._scan_lock:
            if self._inventory is None and not self._inventory_scanned:
                await self._scan_history(lambda: False)
                self._inventory_scanned = True
        if self._inventory is None:
            self._inventory_wanted.set()
        await asyncio.shield(waiter)
        assert self._inventory is not None
        return self._inventory

    # --- the call itself ----------------------------------------------------------------------

    async def _ask(
        self,
        tool: str,
        arguments: dict[str, Any],
        call_id: str | None,
        app_session_id: str | None,
    ) -> ToolResult:
        checked = _arguments(tool, arguments)
        context = None
        if app_session_id is not None:
            _check_id(app_session_id, "app_session_id")
            context = AppSessionContext(app_session_id=app_session_id)
        if call_id is None:
            call_id = self._next_call_id()
        else:
            _check_id(call_id, "call_id")
        revision = (await self.latest_inventory()).revision
        result, sent_before = await self._call(tool, checked, call_id, revision, context)
        if result.status == "rejected" and _code(result) == ErrorCode.INVENTORY_REVISION_MISMATCH:
            current = self._inventory.revision if self._inventory is not None else revision
            # Retry once, under a call id derived from the first, when a newer inventory
            # has arrived (or when the call was stored by an earlier run of this handler,
            # whose revision we do not know).
            if current != revision or sent_before:
                retry_id = "ask-" + _digest("lineup.agent.retry", self.id, call_id)
                result, _ = await self._call(tool, checked, retry_id, current, context)
        return result

    def _next_call_id(self) -> str:
        scope = handler_scope.get()
        if scope is None:
            return new_envelope_id("ask")
        scope.asked += 1
        return "ask-" + _digest(
            "lineup.agent.ask", self.id, scope.trigger, scope.handler, str(scope.asked)
        )

    async def _call(
        self,
        tool: str,
        arguments: dict[str, Any],
        call_id: str,
        revision: str,
        context: AppSessionContext | None,
    ) -> tuple[ToolResult, bool]:
        """Send one ``tool.call`` and wait for its result; also say whether the call was
        already stored (a replayed handler asking again)."""
        known = self._results.get(call_id)
        if known is not None:
            return known, True  # replayed after a restart: the answer is already here
        waiter = self._future(self._waiters, call_id)
        payload = payloads.ToolCall(
            call_id=call_id,
            tool=tool,
            inventory_revision=revision,
            arguments=arguments,
            app_session_context=context,
        )
        envelope = self._make(ToolCallEnvelope, "call", payload, call_envelope_id(self.id, call_id))
        sent_before = False
        try:
            await self.send(envelope)
        except SendRejected as exc:
            if exc.code != ErrorCode.CONFLICT:
                if not waiter.done():
                    self._waiters.pop(call_id, None)
                raise
            # The envelope id is derived from the call id, so this call is already
            # stored (by an earlier run, at another time): that one is the call. Its
            # result may be stored too, before the cursor, where the stream will not
            # replay it.
            sent_before = True
            if not waiter.done():
                await self._scan_history(lambda: waiter.done())
        return await asyncio.shield(waiter), sent_before

    # --- what the Agent routes here -----------------------------------------------------------

    def _observe(self, seq: int, envelope: Envelope) -> None:
        """Take note of an envelope from the user's side, the moment it arrives."""
        if isinstance(envelope, ToolResultEnvelope):
            self._deliver_result(envelope.payload)
        elif isinstance(envelope, ClientInventoryEnvelope):
            if seq > self._inventory_seq:
                self._inventory_seq = seq
                self._inventory = envelope.payload
                future = self._inventory_future
                if future is not None and not future.done():
                    future.set_result(envelope.payload)
        elif isinstance(envelope, ErrorEnvelope) and envelope.payload.ref_id is not None:
            refused = self._refusals.get(envelope.payload.ref_id)
            if refused is not None and not refused.done():
                refused.set_result(envelope.payload)

    def _deliver_result(self, result: ToolResult) -> None:
        if result.call_id in self._results:
            return  # the first result is the terminal one
        self._results[result.call_id] = result
        while len(self._results) > RESULTS_KEPT:
            self._results.popitem(last=False)
        waiter = self._waiters.pop(result.call_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    def _close(self) -> None:
        """The agent stopped: wake every waiter with ``AgentClosed``."""
        self._closed = True
        futures: list[asyncio.Future[Any]] = [*self._waiters.values(), *self._refusals.values()]
        if self._inventory_future is not None:
            futures.append(self._inventory_future)
        self._waiters.clear()
        for future in futures:
            if not future.done():
                future.set_exception(AgentClosed("the agent stopped"))
                future.exception()  # retrieved: no "never retrieved" noise if unawaited

    def _future(self, table: dict[str, asyncio.Future[T]], key: str) -> asyncio.Future[T]:
        if self._closed:
            raise AgentClosed("the agent stopped")
        future = table.get(key)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            table[key] = future
        return future

    def _inventory_waiter(self) -> asyncio.Future[ClientInventory]:
        if self._closed:
            raise AgentClosed("the agent stopped")
        if self._inventory_future is None:
            self._inventory_future = asyncio.get_running_loop().create_future()
            if self._inventory is not None:
                self._inventory_future.set_result(self._inventory)
        return self._inventory_future

    async def _scan_history(self, found: Callable[[], bool]) -> None:
        """Read what the stream will not replay (up to where it took over), noting
        results and inventories as if they had just arrived; stop once ``found()``."""
        if self._history is None:
            return
        until = self._history.streamed_after(self.id)
        since = 0
        while since < until and not found():
            page = await self._history.read_page(self.id, since)
            if not page:
                return
            for seq, body in page:
                if seq > until:
                    return
                envelope = decode(body)
                if not isinstance(envelope, Envelope) or envelope.sender.kind == "agent":
                    continue
                if isinstance(envelope, ToolResultEnvelope):
                    # Only the results someone waits for: old ones must not push the
                    # recent ones out of memory.
                    if envelope.payload.call_id in self._waiters:
                        self._deliver_result(envelope.payload)
                else:
                    self._observe(seq, envelope)
            since = page[-1][0]


# --- arguments and answers ---------------------------------------------------------------------


def expires_in_ms(expires_in: ExpiresIn) -> int | None:
    """``expires_in`` (a ``timedelta`` or seconds) in milliseconds, checked: 1 min to 24 h."""
    if expires_in is None:
        return None
    if isinstance(expires_in, bool) or not isinstance(expires_in, timedelta | int | float):
        raise TypeError("`expires_in` is a timedelta or a number of seconds")
    seconds = expires_in.total_seconds() if isinstance(expires_in, timedelta) else float(expires_in)
    milliseconds = round(seconds * 1000) if math.isfinite(seconds) else -1
    if not ix.MIN_EXPIRES_IN_MS <= milliseconds <= ix.MAX_EXPIRES_IN_MS:
        raise ValueError("`expires_in` must be between 1 minute and 24 hours")
    return milliseconds


def _options(options: Options) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Wire options, and the key ``ask_choice`` returns for each wire id."""
    if isinstance(options, str):
        raise TypeError("`options` is a list of options, not one string")
    if isinstance(options, Mapping):
        items: list[OptionSpec] = [(str(k), str(v)) for k, v in options.items()]
    else:
        items = list(options)
    wire: list[dict[str, Any]] = []
    keys: dict[str, str] = {}
    labels: set[str] = set()
    for position, item in enumerate(items, start=1):
        if isinstance(item, str):
            if item in labels:
                raise ValueError("options given as strings must be unique")
            labels.add(item)
            option: dict[str, Any] = {"id": str(position), "label": item}
            key = item
        elif isinstance(item, ix.ChoiceOption):
            option = msgspec.to_builtins(item)
            key = item.id
        elif isinstance(item, tuple) and len(item) in (2, 3):
            option = {"id": item[0], "label": item[1]}
            if len(item) == 3:
                option["description"] = item[2]
            key = item[0]
        else:
            raise TypeError(
                "an option is a string, an (id, label[, description]) tuple or a ChoiceOption"
            )
        wire.append(option)
        keys[str(option["id"])] = key
    return wire, keys


def _arguments(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Check arguments with the protocol's own types; ``ValueError`` before any send."""
    given = {name: value for name, value in arguments.items() if value is not None}
    parsed = ix.parse_arguments(tool, given)
    if isinstance(parsed, Rejection):
        where = f" (at {parsed.path})" if parsed.path else ""
        raise ValueError(f"invalid `{tool}` arguments: {parsed.message}{where}")
    built: dict[str, Any] = msgspec.to_builtins(parsed.arguments)
    return built


def _check_id(value: str, name: str) -> None:
    if not isinstance(value, str) or not _ID.match(value):
        raise ValueError(f"`{name}` must match [A-Za-z0-9._:-]{{1,128}}")


def _code(result: ToolResult) -> str | None:
    return result.error.code if result.error is not None else None


def _answer(result: ToolResult, kind: type[A]) -> A:
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


def utcnow() -> datetime:
    return datetime.now(UTC)
