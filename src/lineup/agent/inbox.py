"""What the user's Runtime sends back to one conversation: tool results, capability
results, refusals (``error`` envelopes naming one of ours), and its inventory.

The ``Agent`` routes them here the moment they arrive on the stream, so a handler
waiting for an answer is woken even though it holds its conversation's queue. What the
stream will not replay (stored before the agent's cursor) is read from the history.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Generic, Protocol, TypeVar

from lineup.protocol import (
    AppResultEnvelope,
    AppSessionOpenedEnvelope,
    ClientInventoryEnvelope,
    Envelope,
    ErrorEnvelope,
    ToolResultEnvelope,
    decode,
    payloads,
)
from lineup.protocol.payloads import AppResult, ClientInventory, ToolResult

from .errors import AgentClosed

T = TypeVar("T")
R = TypeVar("R", ToolResult, AppResult)

RESULTS_KEPT = 1000
"""Terminal results remembered per conversation and kind of call for ``result()``;
older ones are looked up in the AppServer's history."""


class History(Protocol):
    """The conversation's stored log, for what the stream will not replay."""

    def streamed_after(self, conversation_id: str) -> int:
        """Envelopes after this sequence number reach the conversation on the stream."""
        ...

    async def read_page(self, conversation_id: str, since: int) -> list[tuple[int, bytes]]:
        """Stored envelopes after ``since``, in order, as ``(seq, bytes)``; empty at the end."""
        ...


class CallResults(Generic[R]):
    """The terminal results of one kind of call (tool calls, capability calls) by call
    id, and who waits for them. Each kind is a call id namespace of its own: a tool
    call and a capability call may share an id. The first result of a call wins."""

    def __init__(self) -> None:
        self._results: OrderedDict[str, R] = OrderedDict()
        self._waiters: dict[str, asyncio.Future[R]] = {}
        self._closed = False

    def known(self, call_id: str) -> R | None:
        """The call's terminal result, if it is remembered."""
        return self._results.get(call_id)

    def awaited(self, call_id: str) -> bool:
        return call_id in self._waiters

    def waiter(self, call_id: str) -> asyncio.Future[R]:
        """The future the call's result is delivered to (made on first use; already
        done when the result is known)."""
        if self._closed:
            raise AgentClosed("the agent stopped")
        future = self._waiters.get(call_id)
        if future is None:
            future = asyncio.get_running_loop().create_future()
            known = self._results.get(call_id)
            if known is not None:
                future.set_result(known)
            else:
                self._waiters[call_id] = future
        return future

    def drop_waiter(self, call_id: str) -> None:
        self._waiters.pop(call_id, None)

    def deliver(self, result: R) -> None:
        if result.call_id in self._results:
            return  # the first result is the terminal one
        self._results[result.call_id] = result
        while len(self._results) > RESULTS_KEPT:
            self._results.popitem(last=False)
        waiter = self._waiters.pop(result.call_id, None)
        if waiter is not None and not waiter.done():
            waiter.set_result(result)

    def close(self) -> list[asyncio.Future[R]]:
        """Stop taking waiters; return the ones left, for the caller to wake."""
        self._closed = True
        waiters = list(self._waiters.values())
        self._waiters.clear()
        return waiters


class Inbox:
    """Results, refusals and inventories of one conversation, and who waits for them."""

    def __init__(self, conversation_id: str, history: History | None = None) -> None:
        self._conversation_id = conversation_id
        self._history = history
        self._inventory: ClientInventory | None = None
        self._inventory_seq = -1
        self._inventory_future: asyncio.Future[ClientInventory] | None = None
        self._inventory_scanned = False
        self.inventory_wanted = asyncio.Event()  # someone waits for a first inventory
        self._scan_lock = asyncio.Lock()
        self.tool_results: CallResults[ToolResult] = CallResults()
        self.app_results: CallResults[AppResult] = CallResults()
        self._refusals: dict[str, asyncio.Future[payloads.Error]] = {}
        self.app_sessions: dict[str, str] = {}
        """App instance id -> its sub-session id, from ``app_session.opened``."""
        self.call_instances: dict[str, str] = {}
        """Tool call id -> the app instance that ran it (a ``tool.result``'s
        ``target.instance_id``)."""
        self._closed = False

    # --- what callers read and wait for -----------------------------------------------------

    async def result(self, call_id: str) -> ToolResult:
        """A tool call's terminal result: remembered, in the history, or once it arrives."""
        return await self._await(self.tool_results, call_id)

    async def app_result(self, call_id: str) -> AppResult:
        """A capability call's terminal result, found like ``result``'s."""
        return await self._await(self.app_results, call_id)

    async def _await(self, results: CallResults[R], call_id: str) -> R:
        known = results.known(call_id)
        if known is not None:
            return known
        waiter = results.waiter(call_id)
        if not waiter.done():
            await self.scan_history(lambda: waiter.done())
        return await asyncio.shield(waiter)

    @property
    def inventory(self) -> ClientInventory | None:
        return self._inventory

    async def known_inventory(self) -> ClientInventory | None:
        """The latest inventory, looked for in the history (once) when none has been
        seen on the stream; ``None`` when there is none yet. Does not wait."""
        if self._inventory is None:
            async with self._scan_lock:
                if self._inventory is None and not self._inventory_scanned:
                    await self.scan_history(lambda: False)
                    self._inventory_scanned = True
        return self._inventory

    async def latest_inventory(self) -> ClientInventory:
        if self._inventory is not None:
            return self._inventory
        waiter = self._inventory_waiter()
        if await self.known_inventory() is None:
            self.inventory_wanted.set()
        await asyncio.shield(waiter)
        assert self._inventory is not None
        return self._inventory

    def refusal(self, envelope_id: str) -> asyncio.Future[payloads.Error]:
        """The future an ``error`` envelope referring to ``envelope_id`` is delivered to."""
        return self._future(self._refusals, envelope_id)

    def drop_refusal(self, envelope_id: str) -> None:
        self._refusals.pop(envelope_id, None)

    # --- what the Agent routes here -----------------------------------------------------------

    def observe(self, seq: int, envelope: Envelope) -> None:
        """Take note of an envelope from the user's side, the moment it arrives."""
        if isinstance(envelope, ToolResultEnvelope):
            self._tool_result(envelope)
        elif isinstance(envelope, AppResultEnvelope):
            self.app_results.deliver(envelope.payload)
        elif isinstance(envelope, ClientInventoryEnvelope):
            if seq > self._inventory_seq:
                self._inventory_seq = seq
                self._inventory = envelope.payload
                future = self._inventory_future
                if future is not None and not future.done():
                    future.set_result(envelope.payload)
        elif isinstance(envelope, AppSessionOpenedEnvelope):
            _remember(
                self.app_sessions, envelope.payload.instance_id, envelope.payload.app_session_id
            )
        elif isinstance(envelope, ErrorEnvelope) and envelope.payload.ref_id is not None:
            refused = self._refusals.get(envelope.payload.ref_id)
            if refused is not None and not refused.done():
                refused.set_result(envelope.payload)

    def close(self) -> None:
        """The agent stopped: wake every waiter with ``AgentClosed``."""
        self._closed = True
        futures: list[asyncio.Future[Any]] = [
            *self.tool_results.close(),
            *self.app_results.close(),
            *self._refusals.values(),
        ]
        if self._inventory_future is not None:
            futures.append(self._inventory_future)
        for future in futures:
            if not future.done():
                future.set_exception(AgentClosed("the agent stopped"))
                future.exception()  # retrieved: no "never retrieved" noise if unawaited

    async def scan_history(self, found: Callable[[], bool]) -> None:
        """Read what the stream will not replay (up to where it took over), noting
        results and inventories as if they had just arrived; stop once ``found()``."""
        if self._history is None:
            return
        until = self._history.streamed_after(self._conversation_id)
        since = 0
        while since < until and not found():
            page = await self._history.read_page(self._conversation_id, since)
            if not page:
                return
            for seq, body in page:
                if seq > until:
                    return
                envelope = decode(body)
                if not isinstance(envelope, Envelope) or envelope.sender.kind == "agent":
                    continue
                # Only the results someone waits for: old ones must not push the recent
                # ones out of memory.
                if isinstance(envelope, ToolResultEnvelope):
                    if self.tool_results.awaited(envelope.payload.call_id):
                        self._tool_result(envelope)
                elif isinstance(envelope, AppResultEnvelope):
                    if self.app_results.awaited(envelope.payload.call_id):
                        self.app_results.deliver(envelope.payload)
                else:
                    self.observe(seq, envelope)
            since = page[-1][0]

    def _tool_result(self, envelope: ToolResultEnvelope) -> None:
        """Note where the call ran before waking whoever waits for its result."""
        if envelope.target is not None and envelope.target.instance_id is not None:
            _remember(self.call_instances, envelope.payload.call_id, envelope.target.instance_id)
        self.tool_results.deliver(envelope.payload)

    # --- futures ------------------------------------------------------------------------------

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


def _remember(table: dict[str, str], key: str, value: str) -> None:
    """Keep the newest ``RESULTS_KEPT`` entries (oldest noted first out)."""
    table[key] = value
    while len(table) > RESULTS_KEPT:
        table.pop(next(iter(table)))
