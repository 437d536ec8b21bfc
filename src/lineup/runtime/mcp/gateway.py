"""``McpGateway``: the Runtime's MCP servers at work (issue 24).

It keeps the configured servers running (the connection layer, ``mcp.connection``,
starts, restarts and stops them), keeps what each one lists in the store
(``servers.record_tools``, then the inventory is recomputed in the same transaction),
and carries out what the calls' rules decide after each commit (``McpCallsChanged``):
a call now ``executing`` is forwarded to its server, one that ended early is cancelled
there (``notifications/cancelled``), and the server's answer comes back as one more
decision (``complete`` / ``fail``) in its own transaction. The server's progress
becomes ``tool.progress`` for the agent, at most one per interval per call (the
connection coalesces them), so a flood of notifications never floods the
agent.

Hosts ask through it: the person's consent, and the App centre's enable, disable,
remove and policy for a server. Nothing here logs an argument, a result or a server's
traffic: ids, names, states, codes and sizes only.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import msgspec

from lineup.protocol import ErrorCode, ToolProgressEnvelope, payloads

from ..apps.registry import refresh_inventory
from ..store import RuntimeStore
from ..tables import queue_from_runtime
from ..txn import RuntimeTxn
from . import call_store, servers
from .call_store import McpCall, McpCallRefused, McpCallsChanged
from .calls import POLICIES, Event, Policy, State
from .config import ServerConfig
from .servers import McpServerEntry, McpToolSnapshot

if TYPE_CHECKING:
    from .connection import McpServer
    from .results import McpCallResult

__all__ = ["McpGateway", "McpRefused", "McpServersChanged"]

log = logging.getLogger("lineup.runtime.mcp")

START_WAIT_S = 30.0
"""How long a call waits for its server to finish starting (or restarting)."""
MAX_RESULT_BYTES = 4 * 1024 * 1024
"""The largest ``tool.result`` an MCP call may give the agent (its JSON)."""


@dataclass(frozen=True, slots=True)
class McpServersChanged:
    """A server's state, tools or the person's decisions about it changed (the App
    centre shows them again). ``key``, ``state`` and ``reason``: a running server's
    connection moved (``reason``: why it failed or restarts, one line for the person)."""

    key: str | None = None
    state: str | None = None
    reason: str | None = None


class McpRefused(Exception):
    """A host's request about a server or a call that changed nothing: ``code``."""

    def __init__(self, code: str, message: str = "") -> None:
        super().__init__(code)
        self.code = code
        self.message = message


Connect = Callable[["ServerConfig", Callable[[], None]], "McpServer"]
"""``connect(config, on_change)``: a (not yet started) connection for one server;
``on_change`` is called when its state or tool list changed."""
Listed = tuple[Sequence[McpToolSnapshot], Mapping[str, str | None]]
Listing = Callable[["McpServer"], Listed | None]
"""What a ready connection lists: its tools and its ``server_name`` / ``server_version``
/ ``title``; ``None`` while it has not listed."""


class McpGateway:
    """The Runtime's MCP servers and the calls agents make of them."""

    def __init__(
        self,
        store: RuntimeStore,
        *,
        clock: Callable[[], datetime],
        connect: Connect | None = None,
        listing: Listing | None = None,
        notify: Callable[[Any], None] | None = None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._connect = connect
        self._listing = listing
        self._notify = notify or (lambda _: None)
        self._entries: dict[str, McpServerEntry] = {}
        """The servers as last stored (read after every change): what hosts show."""
        self._configs: dict[str, ServerConfig] = {}
        self._connections: dict[str, McpServer] = {}
        self._running: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    def _spawn(self, work: Awaitable[Any], name: str) -> None:
        task = asyncio.ensure_future(work)
        task.set_name(name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # --- configuration and lifetime --------------------------------------------------------

    async def configure(self, configs: Sequence[ServerConfig]) -> None:
        """Record the configured servers (``ServerConfig``: ``key``, ``name``,
        ``digest``) and start the enabled ones. Calls a stop caught executing end
        ``failed(interrupted)`` first: they are never sent again."""
        self._loop = asyncio.get_running_loop()
        self._configs = {c.key: c for c in configs}
        named = {c.key: (c.name, c.digest) for c in configs}
        await self._store.db.write(_configure_txn, named, self._now())
        for entry in await self._reread():
            if entry.advertised and entry.key in self._configs:
                await self._start(entry.key)

    async def recover(self) -> None:
        """At open, before anything is forwarded: executing calls never run again."""
        await self._store.db.write(call_store.recover, self._now())

    async def stop(self) -> None:
        """Stop every server (their calls' tasks end; the calls stay as stored)."""
        for task in list(self._running.values()) + list(self._tasks):
            task.cancel()
        connections = list(self._connections.values())
        self._connections.clear()
        if connections:
            await asyncio.gather(*(c.stop() for c in connections), return_exceptions=True)
        pending = list(self._running.values()) + list(self._tasks)
        if pending:
            await asyncio.gather(*pending, return_exceptions=True)
        self._running.clear()

    async def _start(self, key: str) -> None:
        if self._connect is None or key in self._connections:
            return
        connection = self._connect(self._configs[key], lambda: self._changed(key))
        self._connections[key] = connection
        self._spawn(connection.start(), f"mcp-start-{key}")  # it connects in the background

    async def _stop(self, key: str) -> None:
        connection = self._connections.pop(key, None)
        if connection is not None:
            await connection.stop()

    def _changed(self, key: str) -> None:
        """The connection's state or tool list changed (called on the loop)."""
        if self._loop is None:
            return
        self._loop.call_soon_threadsafe(self._spawn_listing, key)

    def _spawn_listing(self, key: str) -> None:
        connection = self._connections.get(key)
        if connection is not None:  # its state, at least, changed
            state = str(connection.state)
            self._notify(McpServersChanged(key, state, connection.reason))
        self._spawn(self._record_listing(key), f"mcp-list-{key}")

    async def _record_listing(self, key: str) -> None:
        connection = self._connections.get(key)
        if connection is None or self._listing is None:
            return
        listed = self._listing(connection)
        if listed is None:
            return
        tools, about = listed
        await self._store.db.write(_tools_txn, key, tuple(tools), dict(about), self._now())
        await self._reread()

    # --- what hosts ask ---------------------------------------------------------------------

    async def servers(self) -> list[McpServerEntry]:
        return await self._store.db.read(servers.entries)

    def entry(self, key: str) -> McpServerEntry | None:
        """The server as last stored (no read: for a host's frame)."""
        return self._entries.get(key)

    async def _reread(self) -> list[McpServerEntry]:
        found = await self.servers()
        self._entries = {e.key: e for e in found}
        self._notify(McpServersChanged())
        return found

    def state_of(self, key: str) -> str:
        """``stopped`` for a server that is not running, else its connection's state."""
        connection = self._connections.get(key)
        return "stopped" if connection is None else str(connection.state)

    def reason_of(self, key: str) -> str | None:
        """Why the server last failed (one line for the person), or ``None``."""
        connection = self._connections.get(key)
        return None if connection is None else connection.reason

    async def set_enabled(self, key: str, enabled: bool) -> McpServerEntry:
        """Disabling stops the server and ends its open calls (``cancelled(app_disabled)``);
        its tools leave the inventory in the same transaction."""
        entry = await self._store.db.write(_enabled_txn, key, enabled, self._now())
        if entry is None:
            raise McpRefused(ErrorCode.APP_NOT_FOUND, "no such MCP server")
        await self._reread()
        if entry.advertised and key in self._configs:
            await self._start(key)
        else:
            await self._stop(key)
        return entry

    async def remove(self, key: str) -> McpServerEntry:
        entry = await self._store.db.write(_remove_txn, key, self._now())
        if entry is None:
            raise McpRefused(ErrorCode.APP_NOT_FOUND, "no such MCP server")
        await self._stop(key)
        await self._reread()
        return entry

    async def set_policy(self, key: str, policy: str) -> McpServerEntry:
        if policy not in POLICIES:
            raise McpRefused(ErrorCode.MCP_POLICY_INVALID, "the policy is ask, read_only or allow")
        entry = await self._store.db.write(_policy_txn, key, policy, self._now())
        if entry is None:
            raise McpRefused(ErrorCode.APP_NOT_FOUND, "no such MCP server")
        await self._reread()
        return entry

    async def consent(self, conversation_id: str, call_id: str, allow: bool) -> McpCall:
        """The person's answer in the consent dialog. Raises ``McpCallRefused``."""
        event = Event.ALLOW if allow else Event.DENY
        act = functools.partial(call_store.act, actor="user", consent="allow" if allow else "deny")
        now = self._now()
        call: McpCall = await self._store.db.write(act, conversation_id, call_id, event, now)
        return call

    async def open_calls(self) -> list[McpCall]:
        return await self._store.db.read(call_store.open_calls)

    async def due(self) -> None:
        await self._store.db.write(call_store.due, self._now())

    async def next_deadline(self) -> datetime | None:
        return await self._store.db.read(call_store.next_deadline)

    # --- carrying out the rules' decisions --------------------------------------------------

    def on_event(self, event: object) -> None:
        """After a commit: forward what now executes, cancel what ended early."""
        if not isinstance(event, McpCallsChanged):
            return
        for call in event.cancel:
            task = self._running.pop(call.key, None)
            if task is not None:
                task.cancel()  # the connection sends notifications/cancelled
        for call in event.forward:
            if call.key not in self._running:
                self._running[call.key] = asyncio.ensure_future(self._forward(call))

    async def _forward(self, call: McpCall) -> None:
        key = call.key
        try:
            connection = self._connections.get(call.server_key)
            if connection is None:
                await self._end(call, Event.FAIL, code=ErrorCode.MCP_SERVER_UNAVAILABLE)
                return
            left = (datetime.fromisoformat(call.expires_at) - self._clock()).total_seconds()
            if not await self._ready(connection, min(left, START_WAIT_S)):
                await self._end(call, Event.FAIL, code=ErrorCode.MCP_SERVER_UNAVAILABLE)
                return
            left = (datetime.fromisoformat(call.expires_at) - self._clock()).total_seconds()
            started = time.perf_counter()
            try:
                answer = await connection.call_tool(
                    call.tool,
                    msgspec.json.decode(call.arguments),
                    progress=functools.partial(self._on_progress, call),
                    timeout_s=max(0.001, left),
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # the connection layer's McpCallError, or a bug
                code = getattr(exc, "code", None) or ErrorCode.PROVIDER_FAILED
                log.info("mcp call failed", extra={"server": call.server_key, "code": str(code)})
                await self._end(call, Event.FAIL, code=str(code))
                return
            result = _result(answer)
            body = msgspec.json.encode(result)
            log.debug(
                "mcp call answered",
                extra={
                    "server": call.server_key,
                    "bytes": len(body),
                    "ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )
            if len(body) > MAX_RESULT_BYTES:
                await self._end(call, Event.FAIL, code=ErrorCode.MCP_RESULT_TOO_LARGE)
            elif await self._output_problem(call, result):
                await self._end(call, Event.FAIL, code=ErrorCode.TOOL_OUTPUT_INVALID)
            else:
                await self._end(call, Event.COMPLETE, result=body)
        finally:
            if self._running.get(key) is asyncio.current_task():
                self._running.pop(key, None)

    @staticmethod
    async def _ready(connection: McpServer, within: float) -> bool:
        """Whether the server is ready, waiting ``within`` seconds for one that is
        starting or restarting (its tools stay advertised meanwhile)."""
        from .connection import McpState

        if connection.state in (McpState.STARTING, McpState.RESTARTING) and within > 0:
            with contextlib.suppress(TimeoutError):
                await connection.wait_for(
                    McpState.READY, McpState.FAILED, McpState.STOPPED, timeout_s=within
                )
        return connection.state is McpState.READY

    async def _output_problem(self, call: McpCall, result: dict[str, Any]) -> bool:
        """Whether the server's answer breaks the output schema the inventory advertised
        (a server that lies about its schemas): the agent never gets it."""
        held = self._entries.get(call.server_key)
        target = None if held is None else servers.target_of(held, call.tool)
        if target is None:  # the tool left the listing meanwhile: its schema is gone
            return False
        problem = target.compiled.validate_output(result)
        if problem is not None:
            log.info("mcp result refused", extra={"code": ErrorCode.TOOL_OUTPUT_INVALID.value})
        return problem is not None

    async def _end(
        self, call: McpCall, event: Event, *, code: str | None = None, result: bytes | None = None
    ) -> None:
        with contextlib.suppress(McpCallRefused):  # it ended meanwhile: its result is out
            act = functools.partial(call_store.act, actor="runtime", code=code, result=result)
            await self._store.db.write(act, call.conversation_id, call.call_id, event, self._now())

    async def _on_progress(
        self, call: McpCall, done: float, total: float | None, label: str | None
    ) -> None:
        """A server's progress notification (the connection coalesces a flood of them
        to one per interval): one ``tool.progress`` for the agent."""
        try:
            report = payloads.ToolProgress(
                call_id=call.call_id,
                current=max(0.0, float(done)),
                total=None if total is None or total <= 0 or total < done else float(total),
                label=None if label is None else str(label)[:200],
            )
        except (ValueError, TypeError, msgspec.ValidationError):
            return  # a report the protocol cannot carry is dropped, never sent broken
        await self._store.db.write(_progress_txn, call, report, self._now())


def _result(answer: McpCallResult) -> dict[str, Any]:
    result: dict[str, Any] = {"content": list(answer.content), "isError": bool(answer.is_error)}
    if answer.structured_content is not None:
        result["structuredContent"] = answer.structured_content
    return result


# --- transactions -------------------------------------------------------------------------


def _configure_txn(txn: RuntimeTxn, named: Mapping[str, tuple[str, str]], now: str) -> None:
    if servers.sync(txn, named, now):
        refresh_inventory(txn, now)


def _tools_txn(
    txn: RuntimeTxn,
    key: str,
    tools: tuple[McpToolSnapshot, ...],
    about: Mapping[str, str | None],
    now: str,
) -> None:
    changed = servers.record_tools(
        txn,
        key,
        tools,
        now,
        server_name=about.get("server_name"),
        server_version=about.get("server_version"),
        title=about.get("title"),
    )
    if changed:
        refresh_inventory(txn, now)


def _enabled_txn(txn: RuntimeTxn, key: str, enabled: bool, now: str) -> McpServerEntry | None:
    if servers.entry(txn, key) is None:
        return None
    entry = servers.set_enabled(txn, key, enabled, now)
    if not enabled:
        call_store.end_for_server(txn, key, now)
    refresh_inventory(txn, now)
    return entry


def _remove_txn(txn: RuntimeTxn, key: str, now: str) -> McpServerEntry | None:
    if servers.entry(txn, key) is None:
        return None
    entry = servers.remove(txn, key, now)
    call_store.end_for_server(txn, key, now)
    refresh_inventory(txn, now)
    return entry


def _policy_txn(txn: RuntimeTxn, key: str, policy: Policy, now: str) -> McpServerEntry | None:
    if servers.entry(txn, key) is None:
        return None
    return servers.set_policy(txn, key, policy, now)


def _progress_txn(txn: RuntimeTxn, call: McpCall, report: payloads.ToolProgress, now: str) -> None:
    held = call_store.get(txn, call.conversation_id, call.call_id)
    if held is None or held.state is not State.EXECUTING:
        return  # it ended meanwhile: no progress after the result
    queue_from_runtime(
        txn, ToolProgressEnvelope, f"prg_{uuid.uuid4().hex}", call.conversation_id, report, now
    )
