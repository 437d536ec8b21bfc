"""One configured MCP server, connected and supervised (``McpServer``).

The Runtime talks MCP through the SDK (``mcp`` 2.x): its ``ClientSession`` runs the
initialize handshake and answers the server's requests, its JSON-RPC dispatcher
correlates requests, progress and cancellation, and its streamable HTTP client
reaches remote servers. Stdio children run through ``stdio.stdio_link`` (the SDK's
spawn and shutdown, a bounded reader). ``tools/list``, ``tools/call`` and
``resources/read`` are sent through the dispatcher as raw JSON and decoded by us
(``tools``, ``results``): a server that lies about one tool loses that tool only,
and a result is measured before it is believed.

Supervision: a supervisor task per server connects, initializes and lists (each
bounded in time), then waits until the connection ends or the server says its
tools changed (it re-lists). When the connection fails, it tries again after a
capped, jittered backoff; after ``max_quick_failures`` quick failures the server is
``failed`` with the reason kept. ``stop()`` ends the child process for good.

What we declare at initialize is what we do: elicitation in form mode (answered by
the injected ``elicit``; declined without one), the MCP Apps extension
(``io.modelcontextprotocol/ui`` with ``text/html;profile=mcp-app``); no roots, no
sampling: those requests, and any other, get JSON-RPC's "method not found".

Nothing a server sends is logged: its stderr goes to a bounded ring
(``stderr_tail()``), its log notifications are counted, its traffic is not kept.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
import re
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

import anyio
import anyio.abc
import httpx2
import mcp_types as types
from mcp.client.session import ClientRequestContext, ClientSession, IncomingMessage
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.exceptions import MCPError
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import SessionMessage
from mcp_types import (
    CONNECTION_CLOSED,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    REQUEST_TIMEOUT,
)

from lineup.protocol import ErrorCode

from .backoff import Backoff
from .bounded import Progress, ProgressPump, StderrTail
from .config import ServerConfig
from .results import (
    ElicitAnswer,
    McpCallError,
    McpCallResult,
    McpResource,
    decode_call_result,
    decode_resource,
    one_line,
)
from .sdk_logs import guard_sdk_logs
from .stdio import StdioLink, stdio_link
from .tools import MAX_TOOLS, McpTool, RejectedTool, RejectionReason, ServerInfo, decode_tools

__all__ = [
    "UI_EXTENSION",
    "UI_MIME_TYPE",
    "Elicit",
    "McpLimits",
    "McpServer",
    "McpState",
    "Progress",
]

log = logging.getLogger("lineup.runtime.mcp")

UI_EXTENSION = "io.modelcontextprotocol/ui"
UI_MIME_TYPE = "text/html;profile=mcp-app"
CLIENT_INFO = types.Implementation(name="lineup", version="0.1")
_PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
_SSE_TOO_LARGE = re.compile(r"^SSE stream failed: Server-sent event exceeded the \d+ byte limit")
_HTTP_REFUSAL = re.compile(
    r"Server returned an error response\Z|Session terminated\Z|Session not found\Z"
)
"""What the SDK's HTTP client answers for a request the server refused at the HTTP level."""
_OUR_TIMEOUT = re.compile(r"Request '[^']*' timed out\Z")
"""The dispatcher's own timeout (a server may send the same code for something else)."""
_UNKNOWN_TOOL = re.compile(
    r"unknown tool|tool .{0,140} not found|no such tool|tool not found", re.I
)


class McpState(StrEnum):
    STARTING = "starting"
    READY = "ready"
    RESTARTING = "restarting"
    FAILED = "failed"
    STOPPED = "stopped"


_MOVES: dict[McpState, frozenset[McpState]] = {
    McpState.STOPPED: frozenset({McpState.STARTING}),
    McpState.STARTING: frozenset(
        {McpState.READY, McpState.RESTARTING, McpState.FAILED, McpState.STOPPED}
    ),
    McpState.READY: frozenset({McpState.RESTARTING, McpState.STOPPED}),
    McpState.RESTARTING: frozenset({McpState.READY, McpState.FAILED, McpState.STOPPED}),
    McpState.FAILED: frozenset({McpState.STARTING, McpState.STOPPED}),
}
"""Every state change a server may make; anything else is a bug here."""


class Elicit(Protocol):
    async def __call__(
        self, server_key: str, message: str, requested_schema: dict[str, Any]
    ) -> ElicitAnswer: ...


@dataclass(frozen=True)
class McpLimits:
    """The bounds on one server. Sizes are bytes of JSON; times are seconds."""

    initialize_timeout_s: float = 20.0
    list_timeout_s: float = 20.0
    max_list_pages: int = 16
    max_result_bytes: int = 4 * 1024 * 1024
    max_message_bytes: int = 8 * 1024 * 1024
    """The longest stdout line a stdio server may write (a result, a resource)."""
    progress_interval_s: float = 0.05
    """At most one progress callback per interval; the newest value wins."""
    stderr_lines: int = 200
    stderr_bytes: int = 64 * 1024
    backoff_base_s: float = 0.5
    backoff_cap_s: float = 30.0
    quick_failure_s: float = 10.0
    max_quick_failures: int = 5


class _Session(ClientSession):
    """The SDK's session, declaring only what we support.

    The SDK derives its capability ad from which callbacks are set and would declare
    url-mode elicitation too; we answer form mode only, so we say so.
    """

    def _build_capabilities(self, version: str) -> types.ClientCapabilities:
        return types.ClientCapabilities(
            elicitation=types.ElicitationCapability(form=types.FormElicitationCapability()),
            extensions={UI_EXTENSION: {"mimeTypes": [UI_MIME_TYPE]}},
        )


@dataclass
class _Connection:
    """One live connection to the server (one child process, or one HTTP session)."""

    dispatcher: JSONRPCDispatcher[Any]
    protocol_version: str
    link: StdioLink | None
    lost: anyio.Event = field(default_factory=anyio.Event)
    relist: anyio.Event = field(default_factory=anyio.Event)

    def headers(self) -> dict[str, str]:
        return {_PROTOCOL_VERSION_HEADER: self.protocol_version}


class _ConnectFailed(Exception):
    """The connection could not be made or kept; ``reason`` is one line for the person."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class McpServer:
    """One configured MCP server: started, kept up, called, stopped.

    ``on_change(server)`` is called (synchronously: keep it short) when ``state`` or
    ``info`` changes. ``elicit`` answers the server's ``elicitation/create``.
    """

    def __init__(
        self,
        config: ServerConfig,
        *,
        elicit: Elicit | None = None,
        on_change: Callable[[McpServer], None] | None = None,
        limits: McpLimits | None = None,
        rand: Callable[[], float] = random.random,
    ) -> None:
        self.config = config
        self.limits = limits or McpLimits()
        self._elicit = elicit
        self._on_change = on_change
        self._rand = rand
        self._state = McpState.STOPPED
        self._info: ServerInfo | None = None
        self._reason: str | None = None
        self._connection: _Connection | None = None
        self._changed = anyio.Event()
        self._stderr = StderrTail(self.limits.stderr_lines, self.limits.stderr_bytes)
        self._ids = itertools.count(1)
        self._task: asyncio.Task[None] | None = None
        self._scope = anyio.CancelScope()
        self.pid: int | None = None
        """The pid of the running child (stdio servers), for the tests and the notice."""
        self.log_messages = 0
        """Log notifications the server sent: counted, never kept."""
        self.stream_errors = 0
        self.starts = 0

    # -- what the Runtime reads ------------------------------------------------------

    @property
    def key(self) -> str:
        return self.config.key

    @property
    def state(self) -> McpState:
        return self._state

    @property
    def info(self) -> ServerInfo | None:
        return self._info

    @property
    def reason(self) -> str | None:
        """Why the server last failed (one line, for the person), or ``None``."""
        return self._reason

    def stderr_tail(self) -> str:
        return self._stderr.text()

    async def wait_for(self, *states: McpState, timeout_s: float) -> McpState:
        """Wait until the server is in one of ``states``; ``TimeoutError`` after ``timeout_s``."""
        with anyio.fail_after(timeout_s):
            while self._state not in states:
                await self._changed.wait()
        return self._state

    async def wait_for_change(
        self, predicate: Callable[[McpServer], bool], *, timeout_s: float
    ) -> None:
        with anyio.fail_after(timeout_s):
            while not predicate(self):
                await self._changed.wait()

    # -- lifecycle -------------------------------------------------------------------

    async def start(self) -> None:
        """Start supervising the server (returns at once; see ``wait_for``)."""
        if self._task is not None and not self._task.done():
            return
        guard_sdk_logs()
        self._reason = None
        self._move(McpState.STARTING)
        self._scope = anyio.CancelScope()
        # Awaited by stop(); the supervisor keeps every failure as ``reason``.
        self._task = asyncio.create_task(self._run(self._scope), name=f"mcp server {self.key}")

    async def stop(self) -> None:
        """Stop the server and end its child process (stdin closed, then SIGTERM, then
        SIGKILL, each after a grace). Idempotent."""
        task, self._task = self._task, None
        if task is None:
            return
        self._scope.cancel()
        await task
        self._connection = None
        self.pid = None
        if self._state is not McpState.STOPPED:
            self._move(McpState.STOPPED)

    async def _run(self, scope: anyio.CancelScope) -> None:
        with scope:
            await self._supervise()

    async def _supervise(self) -> None:
        backoff = Backoff(
            base_s=self.limits.backoff_base_s,
            cap_s=self.limits.backoff_cap_s,
            quick_s=self.limits.quick_failure_s,
            max_quick_failures=self.limits.max_quick_failures,
        )
        while True:
            up_since: float | None = None
            try:
                async with self._connect() as connection:
                    up_since = anyio.current_time()
                    self._connection = connection
                    self._move(McpState.READY)
                    await self._serve(connection)
            except Exception as exc:  # ours (_ConnectFailed), the SDK's or the transport's
                self._reason = _reason_of(exc)
                log.info(
                    "mcp connection failed", extra={"server": self.key, "error": _type_of(exc)}
                )
            finally:
                self._connection = None
                self.pid = None
            up_for = anyio.current_time() - up_since if up_since is not None else 0.0
            delay = backoff.after_failure(up_for, self._rand)
            log.info(
                "mcp server down",
                extra={
                    "server": self.key,
                    "up_s": round(up_for, 3),
                    "tries": backoff.quick_failures,
                },
            )
            if delay is None:
                self._info = None
                self._move(McpState.FAILED)
                return
            self._move(McpState.RESTARTING)
            await anyio.sleep(delay)

    async def _serve(self, connection: _Connection) -> None:
        """Keep the connection until it is lost; re-list when the server says so."""
        while True:
            async with anyio.create_task_group() as tg:

                async def until(event: anyio.Event) -> None:
                    await event.wait()
                    tg.cancel_scope.cancel()

                tg.start_soon(until, connection.lost)
                tg.start_soon(until, connection.relist)
            if connection.lost.is_set():
                link = connection.link
                if link is not None and link.broken:
                    raise _ConnectFailed(link.broken)
                if link is not None:
                    await link.exit_status(1.0)
                raise _ConnectFailed(self._ended_reason(link))
            connection.relist = anyio.Event()
            info = self._info
            assert info is not None
            tools, rejected = await self._list_tools(connection)
            self._info = _replace_tools(info, tools, rejected)
            log.info("mcp tools changed", extra={"server": self.key, "tools": len(tools)})
            self._notify()

    def _ended_reason(self, link: StdioLink | None) -> str:
        if link is None:
            return "the connection to the server was lost"
        code = link.returncode
        if code is None:
            return "the server closed its stdout"
        return f"the server exited with status {code}"

    @asynccontextmanager
    async def _connect(self) -> AsyncIterator[_Connection]:
        self.starts += 1
        config = self.config
        async with AsyncExitStack() as stack:
            link: StdioLink | None = None
            read: ReadStream[SessionMessage | Exception]
            write: WriteStream[SessionMessage]
            if config.transport == "stdio":
                assert config.command is not None
                try:
                    read, write, link = await stack.enter_async_context(
                        stdio_link(
                            config.command,
                            config.args,
                            config.env,
                            config.cwd,
                            max_line_bytes=self.limits.max_message_bytes,
                            on_stderr=self._stderr.add,
                        )
                    )
                except OSError as exc:
                    raise _ConnectFailed(
                        f"the command cannot be started ({exc.strerror or type(exc).__name__})"
                    ) from None
                assert link is not None
                self.pid = link.pid
            else:
                assert config.url is not None
                client = create_mcp_http_client(
                    headers=dict(config.headers),
                    timeout=httpx2.Timeout(30.0, read=300.0),
                )
                await stack.enter_async_context(client)
                read, write = await stack.enter_async_context(
                    streamable_http_client(
                        config.url,
                        http_client=client,
                        max_sse_event_size=self.limits.max_message_bytes,
                    )
                )
            dispatcher: JSONRPCDispatcher[Any] = JSONRPCDispatcher(read, write)
            connection_holder: list[_Connection] = []

            async def on_message(message: IncomingMessage) -> None:
                if isinstance(message, Exception):
                    self.stream_errors += 1
                    if connection_holder and isinstance(message, httpx2.TransportError):
                        connection_holder[0].lost.set()
                elif isinstance(message, types.ToolListChangedNotification) and connection_holder:
                    connection_holder[0].relist.set()

            async def on_log(params: types.LoggingMessageNotificationParams) -> None:
                self.log_messages += 1

            session = _Session(
                dispatcher=dispatcher,
                elicitation_callback=self._on_elicit,
                sampling_callback=_not_offered,
                list_roots_callback=_roots_not_offered,
                logging_callback=on_log,
                message_handler=on_message,
                client_info=CLIENT_INFO,
            )
            await stack.enter_async_context(session)
            try:
                with anyio.fail_after(self.limits.initialize_timeout_s):
                    result = await session.initialize()
            except TimeoutError:
                raise _ConnectFailed(
                    "the server did not answer initialize within"
                    f" {self.limits.initialize_timeout_s:g} s"
                ) from None
            except MCPError as exc:
                raise await self._connect_error(exc, link, "initialize") from None
            connection = _Connection(
                dispatcher=dispatcher, protocol_version=result.protocol_version, link=link
            )
            connection_holder.append(connection)
            if link is not None:
                # The child's stdout ended: the connection is gone.
                tg = await stack.enter_async_context(anyio.create_task_group())

                async def watch(link: StdioLink = link) -> None:
                    await link.closed.wait()
                    connection.lost.set()

                tg.start_soon(watch)
                stack.callback(tg.cancel_scope.cancel)
            tools, rejected = await self._list_tools(connection)
            server = result.server_info
            has_ui = any(tool.ui_resource_uri for tool in tools)
            self._info = ServerInfo(
                name=server.name,
                title=server.title,
                version=server.version,
                protocol_version=result.protocol_version,
                instructions=result.instructions,
                tools=tools,
                rejected_tools=rejected,
                has_ui=has_ui,
            )
            yield connection

    async def _connect_error(
        self, exc: MCPError, link: StdioLink | None, step: str
    ) -> _ConnectFailed:
        if exc.error.code == CONNECTION_CLOSED:
            if link is not None and link.broken:
                return _ConnectFailed(link.broken)
            if link is not None:
                await link.exit_status(1.0)
            return _ConnectFailed(f"{self._ended_reason(link)} during {step}")
        return _ConnectFailed(f"the server refused {step} (error {exc.error.code})")

    async def _list_tools(
        self, connection: _Connection
    ) -> tuple[tuple[McpTool, ...], tuple[RejectedTool, ...]]:
        raw_tools: list[Any] = []
        cursor: str | None = None
        try:
            with anyio.fail_after(self.limits.list_timeout_s):
                for _ in range(self.limits.max_list_pages):
                    params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
                    page = await connection.dispatcher.send_raw_request(
                        "tools/list", params or None, {"headers": connection.headers()}
                    )
                    tools = page.get("tools")
                    if not isinstance(tools, list):
                        raise _ConnectFailed("the server's tools/list answer is not MCP")
                    raw_tools.extend(tools[: MAX_TOOLS + 1])
                    next_cursor = page.get("nextCursor")
                    if (
                        not isinstance(next_cursor, str)
                        or not next_cursor
                        or len(raw_tools) > MAX_TOOLS
                    ):
                        break
                    cursor = next_cursor
        except TimeoutError:
            raise _ConnectFailed(
                f"the server did not list its tools within {self.limits.list_timeout_s:g} s"
            ) from None
        except MCPError as exc:
            if exc.error.code == METHOD_NOT_FOUND:
                return (), ()  # a server without tools (resources only, say)
            raise await self._connect_error(exc, connection.link, "tools/list") from None
        tools_out, rejected = decode_tools(raw_tools)
        if len(raw_tools) > MAX_TOOLS:
            rejected = (*rejected, RejectedTool("", RejectionReason.TOO_MANY_TOOLS))
        return tools_out, rejected

    # -- calls -----------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        progress: Progress | None = None,
        timeout_s: float,
    ) -> McpCallResult:
        """Call one of the server's tools. Cancelling the caller cancels the call on the
        server (``notifications/cancelled``). Raises ``McpCallError``."""
        connection = self._ready_connection()
        request_id = f"lineup-{next(self._ids)}"
        opts: dict[str, Any] = {
            "request_id": request_id,
            "timeout": timeout_s,
            "headers": connection.headers(),
        }
        params = {"name": name, "arguments": dict(arguments or {})}
        pump = (
            ProgressPump(progress, self.limits.progress_interval_s)
            if progress is not None
            else None
        )
        if pump is not None:
            opts["on_progress"] = pump.receive
        error: McpCallError | None = None
        raw: dict[str, Any] = {}
        async with anyio.create_task_group() as tg:
            if pump is not None:
                tg.start_soon(pump.run)
            try:
                raw = await connection.dispatcher.send_raw_request("tools/call", params, opts)  # type: ignore[arg-type]
            except MCPError as exc:
                error = await self._failed_call(exc, connection, request_id, timeout_s, tool=True)
            finally:
                tg.cancel_scope.cancel()
        if error is not None:
            raise error
        result = decode_call_result(raw, server=self.key, max_bytes=self.limits.max_result_bytes)
        if result.is_error and self._says_unknown_tool(name, result):
            raise McpCallError(
                ErrorCode.MCP_TOOL_UNKNOWN, f"MCP server {self.key} has no tool {name[:128]}"
            )
        return result

    def _says_unknown_tool(self, name: str, result: McpCallResult) -> bool:
        """Whether an error result says the tool does not exist (the TypeScript SDK
        answers an unknown tool so, not with a JSON-RPC error), for a tool not listed."""
        info = self._info
        if info is not None and any(tool.name == name for tool in info.tools):
            return False
        text = next((b.get("text") for b in result.content if b.get("type") == "text"), None)
        return isinstance(text, str) and _UNKNOWN_TOOL.search(text[:400]) is not None

    async def read_resource(
        self, uri: str, *, max_bytes: int, timeout_s: float = 30.0
    ) -> McpResource:
        """Read one resource (a ``ui://`` view). Raises ``McpCallError``."""
        connection = self._ready_connection()
        request_id = f"lineup-{next(self._ids)}"
        opts: dict[str, Any] = {
            "request_id": request_id,
            "timeout": timeout_s,
            "headers": connection.headers(),
        }
        try:
            raw = await connection.dispatcher.send_raw_request("resources/read", {"uri": uri}, opts)  # type: ignore[arg-type]
        except MCPError as exc:
            error = await self._failed_call(exc, connection, request_id, timeout_s, tool=False)
            if error.code is ErrorCode.MCP_RESULT_TOO_LARGE:
                error = McpCallError(
                    ErrorCode.MCP_RESOURCE_TOO_LARGE,
                    f"MCP server {self.key}: resource {one_line(uri, 100)} is over the size limit",
                )
            raise error from None
        return decode_resource(raw, uri, server=self.key, max_bytes=max_bytes)

    def _ready_connection(self) -> _Connection:
        connection = self._connection
        if self._state is not McpState.READY or connection is None:
            raise McpCallError(
                ErrorCode.MCP_SERVER_UNAVAILABLE, f"MCP server {self.key} is {self._state.value}"
            )
        if connection.lost.is_set():
            raise McpCallError(
                ErrorCode.MCP_SERVER_UNAVAILABLE, f"MCP server {self.key}: its connection ended"
            )
        return connection

    async def _failed_call(
        self,
        exc: MCPError,
        connection: _Connection,
        request_id: str,
        timeout_s: float,
        *,
        tool: bool,
    ) -> McpCallError:
        """The error of a failed call; over HTTP, an HTTP-level refusal may mean the
        server lost our session (it restarted): a ping says, and a lost session is a
        lost connection (the supervisor connects again)."""
        if connection.link is None and _HTTP_REFUSAL.match(exc.error.message or ""):
            try:
                await connection.dispatcher.send_raw_request(
                    "ping", None, {"headers": connection.headers(), "timeout": 5.0}
                )
            except MCPError:
                connection.lost.set()
                return McpCallError(
                    ErrorCode.MCP_SERVER_UNAVAILABLE,
                    f"MCP server {self.key}: the server no longer knows our session",
                )
        return self._call_error(exc, connection, request_id, timeout_s, tool=tool)

    def _call_error(
        self,
        exc: MCPError,
        connection: _Connection,
        request_id: str,
        timeout_s: float,
        *,
        tool: bool,
    ) -> McpCallError:
        code, message = exc.error.code, exc.error.message or ""
        link = connection.link
        if link is not None and request_id in link.oversized:
            link.oversized.discard(request_id)
            return McpCallError(
                ErrorCode.MCP_RESULT_TOO_LARGE,
                f"MCP server {self.key}: the answer is over the limit of"
                f" {self.limits.max_message_bytes} bytes",
            )
        if code == REQUEST_TIMEOUT and _OUR_TIMEOUT.match(message):
            return McpCallError(
                ErrorCode.MCP_TIMEOUT,
                f"MCP server {self.key} did not answer within {timeout_s:g} s",
            )
        if code == CONNECTION_CLOSED and link is None and _SSE_TOO_LARGE.search(message):
            # The SDK's HTTP client ends a request whose SSE event is over its bound so.
            return McpCallError(
                ErrorCode.MCP_RESULT_TOO_LARGE,
                f"MCP server {self.key}: the answer is over the limit of"
                f" {self.limits.max_message_bytes} bytes",
            )
        if code == CONNECTION_CLOSED:
            if link is not None and link.broken:
                return McpCallError(
                    ErrorCode.MCP_PROTOCOL_ERROR,
                    f"MCP server {self.key}: {link.broken}",
                    server_code=None,
                )
            return McpCallError(
                ErrorCode.MCP_SERVER_UNAVAILABLE,
                f"MCP server {self.key}: the connection ended during the call",
            )
        if tool and code in (INVALID_PARAMS, METHOD_NOT_FOUND) and _UNKNOWN_TOOL.search(message):
            return McpCallError(
                ErrorCode.MCP_TOOL_UNKNOWN,
                f"MCP server {self.key} has no such tool",
                server_code=code,
            )
        return McpCallError(
            ErrorCode.MCP_PROTOCOL_ERROR,
            f"MCP server {self.key} answered error {code}: {one_line(message)}",
            server_code=code,
        )

    # -- the server's requests -------------------------------------------------------

    async def _on_elicit(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ErrorData(
                code=INVALID_PARAMS, message="Only form elicitation is supported"
            )
        if self._elicit is None:
            return types.ElicitResult(action="decline")
        answer = await self._elicit(self.key, params.message, dict(params.requested_schema))
        return types.ElicitResult(
            action=answer.action, content=answer.content if answer.action == "accept" else None
        )

    # -- state -----------------------------------------------------------------------

    def _move(self, state: McpState) -> None:
        if state is self._state:
            return
        if state not in _MOVES[self._state]:
            raise RuntimeError(
                f"mcp server {self.key}: {self._state.value} -> {state.value} is not a move"
            )
        self._state = state
        log.info("mcp server state", extra={"server": self.key, "state": state.value})
        self._notify()

    def _notify(self) -> None:
        changed, self._changed = self._changed, anyio.Event()
        changed.set()
        if self._on_change is not None:
            try:
                self._on_change(self)
            except Exception:
                log.exception("mcp on_change raised")


def _reason_of(exc: BaseException) -> str:
    """One line for the person: ours when we raised it, else the exception's type only
    (an SDK's message may quote what the server sent)."""
    found = _find(exc, _ConnectFailed)
    if isinstance(found, _ConnectFailed):
        return found.reason
    return f"the connection failed ({_type_of(exc)})"


def _type_of(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return type(exc).__name__


def _find(exc: BaseException, kind: type[BaseException]) -> BaseException | None:
    if isinstance(exc, kind):
        return exc
    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            if (found := _find(inner, kind)) is not None:
                return found
    return None


def _replace_tools(
    info: ServerInfo, tools: tuple[Any, ...], rejected: tuple[RejectedTool, ...]
) -> ServerInfo:
    return ServerInfo(
        name=info.name,
        title=info.title,
        version=info.version,
        protocol_version=info.protocol_version,
        instructions=info.instructions,
        tools=tools,
        rejected_tools=rejected,
        has_ui=any(tool.ui_resource_uri for tool in tools),
    )


async def _not_offered(context: ClientRequestContext, params: Any) -> types.ErrorData:
    return types.ErrorData(code=METHOD_NOT_FOUND, message="Method not found")


async def _roots_not_offered(context: ClientRequestContext) -> types.ErrorData:
    return types.ErrorData(code=METHOD_NOT_FOUND, message="Method not found")
