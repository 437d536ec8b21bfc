"""A stdio MCP server as a child process, read with bounds.

The SDK's ``stdio_client`` is almost what the Runtime needs; two things are not: it
holds a whole stdout line in memory however long it is (a server answering 10 MB
holds 10 MB here, then a parse of it), and it sends the child's stderr to a file.
So this transport keeps the SDK's spawn (own process group) and its shutdown (close
stdin, wait, SIGTERM to the group, SIGKILL; every wait bounded) and replaces the
reader:

- a stdout line longer than ``max_line_bytes`` is never held: its first and last
  bytes are kept to find the JSON-RPC id it answers, the rest is counted and dropped;
  the request it answers ends with ``TOO_LARGE`` (the id is recorded in ``oversized``);
- a line that is not JSON-RPC ends the connection (``broken`` says why, without its
  bytes): a server that writes anything else on stdout has lost the framing;
- stderr goes, line by line, to ``on_stderr``, which keeps a bounded tail.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel
import mcp_types as types
from anyio.abc import Process
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.client.stdio import (
    _create_platform_compatible_process,
    _stop_server_process,
    get_default_environment,
)
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

__all__ = ["TOO_LARGE", "StdioLink", "child_environment", "stdio_link"]

TOO_LARGE = -32099
"""The code of the error that ends a request whose answer was over the limit. A
server may send this code too, so the link's ``oversized`` ids are what decide."""

_EDGE = 512
"""Bytes kept from each end of an overlong line, to find its id."""

_EXTRA_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TZ", "TMPDIR")
_HEAD_ID = re.compile(
    rb'^\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){1,100}")'
)
_TAIL_ID = re.compile(rb'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){1,100}")\s*\}\s*$')


def child_environment(extra: Mapping[str, str]) -> dict[str, str]:
    """What a child gets: a minimal environment of ours (PATH, HOME, the locale...),
    never the Runtime's secrets, and the env the person configured over it."""
    env = get_default_environment()
    for name in _EXTRA_ENV:
        value = os.environ.get(name)
        if value is not None:
            env[name] = value
    return env | dict(extra)


@dataclass
class StdioLink:
    """What the transport learnt about its child while it ran."""

    pid: int
    oversized: set[types.RequestId] = field(default_factory=set)
    broken: str | None = None
    closed: anyio.Event = field(default_factory=anyio.Event)

    @property
    def returncode(self) -> int | None:
        return self._process.returncode

    async def exit_status(self, timeout_s: float) -> int | None:
        """The child's exit status, waiting up to ``timeout_s`` for it to exit."""
        with anyio.move_on_after(timeout_s):
            await self._process.wait()
        return self._process.returncode

    _process: Process = field(init=False, repr=False)


@asynccontextmanager
async def stdio_link(
    command: str,
    args: tuple[str, ...],
    env: Mapping[str, str],
    cwd: str | None,
    *,
    max_line_bytes: int,
    on_stderr: Callable[[bytes], None],
) -> AsyncIterator[
    tuple[
        MemoryObjectReceiveStream[SessionMessage | Exception],
        MemoryObjectSendStream[SessionMessage],
        StdioLink,
    ]
]:
    """Spawn the server and yield the session's streams and the link's state.

    Raises ``OSError`` when the command cannot be started.
    """
    process = await _create_platform_compatible_process(
        command=command,
        args=list(args),
        env=child_environment(env),
        errlog=subprocess.PIPE,  # type: ignore[arg-type]  # a pipe, read below
        cwd=cwd,
    )
    assert isinstance(process, Process)
    link = StdioLink(pid=process.pid)
    link._process = process
    read_writer, read_stream = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_stream, write_reader = anyio.create_memory_object_stream[SessionMessage](0)
    writer_done = anyio.Event()
    stderr_done = anyio.Event()

    async def deliver(line: bytes) -> bool:
        """Hand one complete line on; False when the connection must end."""
        if not line.strip():
            return True
        try:
            message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
        except (ValidationError, ValueError):
            link.broken = "the server wrote something that is not JSON-RPC on stdout"
            return False
        await read_writer.send(SessionMessage(message))
        return True

    async def deliver_oversized(head: bytes, tail: bytes) -> None:
        match = _HEAD_ID.search(head) or _TAIL_ID.search(tail)
        if match is None:
            return  # a notification or a request of the server's: dropped
        request_id = json.loads(match.group(1))
        link.oversized.add(request_id)
        error = types.ErrorData(code=TOO_LARGE, message="The answer is over the size limit")
        await read_writer.send(
            SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))
        )

    async def stdout_reader() -> None:
        assert process.stdout is not None
        buffer = bytearray()
        over = False
        head = b""
        tail = bytearray()
        try:
            async with read_writer:
                async for chunk in process.stdout:
                    start = 0
                    while start <= len(chunk):
                        end = chunk.find(b"\n", start)
                        piece = chunk[start : end if end >= 0 else len(chunk)]
                        if not over and len(buffer) + len(piece) > max_line_bytes:
                            over, head = True, bytes(buffer[:_EDGE]) + piece[:_EDGE]
                            buffer.clear()
                        if over:
                            tail = (tail + piece)[-_EDGE:]
                        else:
                            buffer += piece
                        if end < 0:
                            break
                        if over:
                            await deliver_oversized(head, bytes(tail))
                        elif not await deliver(bytes(buffer)):
                            return
                        buffer.clear()
                        tail.clear()
                        over = False
                        start = end + 1
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            pass  # our own shutdown, or the session went away
        finally:
            link.closed.set()

    async def stderr_reader() -> None:
        assert process.stderr is not None
        pending = b""
        try:
            try:
                async for chunk in process.stderr:
                    lines = (pending + chunk).split(b"\n")
                    pending = lines.pop()[-4096:]
                    for line in lines:
                        on_stderr(line)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
                pass
            if pending:
                on_stderr(pending)
        finally:
            stderr_done.set()

    async def stdin_writer() -> None:
        assert process.stdin is not None
        try:
            async with write_reader:
                async for message in write_reader:
                    data = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    await process.stdin.send(data.encode() + b"\n")
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, OSError):
            await read_writer.aclose()
        finally:
            writer_done.set()

    async with anyio.create_task_group() as tg:
        tg.start_soon(stdout_reader)
        tg.start_soon(stderr_reader)
        tg.start_soon(stdin_writer)
        try:
            yield read_stream, write_stream, link
        finally:
            with anyio.CancelScope(shield=True):
                read_stream.close()
                write_stream.close()
                with anyio.move_on_after(0.5):
                    await writer_done.wait()
                # The SDK's escalation: stdin closed, a grace, SIGTERM to the group, SIGKILL.
                await _stop_server_process(process)
                # The child's last words (why it crashed) are still in the pipe.
                with anyio.move_on_after(0.5):
                    await stderr_done.wait()
                if process.stderr is not None:
                    await process.stderr.aclose()
            tg.cancel_scope.cancel()
