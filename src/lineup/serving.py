"""uvicorn glue shared by the AppServer and the Web Host.

A server binds its port before its application starts (a port in use is a
``PortInUse`` error, not uvicorn's ``sys.exit``), and an application whose start-up
fails raises that failure from ``serve()`` (not a logged traceback and a quiet
return): the command line turns both into one line.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import Any, Literal, Protocol

import uvicorn


class PortInUse(OSError):
    """A listener's port is taken (or cannot be bound)."""

    def __init__(self, host: str, port: int, reason: str) -> None:
        super().__init__(f"cannot listen on {host}:{port}: {reason}")
        self.host = host
        self.port = port


class _LifespanGuard:
    """Wraps an ASGI app: a start-up failure is kept (to be raised by ``serve``)
    instead of being logged by uvicorn as a traceback."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.error: BaseException | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "lifespan":
            await self.app(scope, receive, send)
            return
        failed = False

        async def quiet_send(message: Any) -> None:
            nonlocal failed
            if message["type"] == "lifespan.startup.failed":
                failed = True
                message = {"type": message["type"], "message": ""}
            await send(message)

        try:
            await self.app(scope, receive, quiet_send)
        except Exception as exc:
            if not failed:
                raise
            self.error = exc


class _NoStartupFailureLine(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return record.getMessage() != "Application startup failed. Exiting."


_lifespan_log = logging.getLogger("uvicorn.error.lifespan")
_lifespan_log.addFilter(_NoStartupFailureLine())


def uvicorn_config(
    app: Any, *, host: str, port: int, lifespan: Literal["on", "off"] = "on"
) -> uvicorn.Config:
    """The one uvicorn setup LineUp uses: uvloop, httptools, websockets, no access log
    (our own logs carry ids and codes only)."""
    return uvicorn.Config(
        app if isinstance(app, str) else _LifespanGuard(app),
        host=host,
        port=port,
        loop="uvloop",
        http="httptools",
        ws="websockets-sansio",
        lifespan=lifespan,
        access_log=False,
        log_config=None,
        ws_max_size=512 * 1024,
        timeout_graceful_shutdown=10,
    )


def bind(host: str, port: int) -> list[socket.socket]:
    """Listening-to-be sockets for ``host:port`` (every address the name has);
    raises ``PortInUse``."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise PortInUse(host, port, exc.strerror or "unknown host") from None
    sockets: list[socket.socket] = []
    for family, kind, proto, _, address in dict.fromkeys(infos):
        sock = socket.socket(family, kind, proto)
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
        except OSError as exc:
            sock.close()
            for made in sockets:
                made.close()
            raise PortInUse(host, port, exc.strerror or str(exc)) from None
        sockets.append(sock)
    return sockets


class LineUpServer(uvicorn.Server):
    """A uvicorn server that binds before its app starts and raises what went wrong."""

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        config = self.config
        own = sockets is None and config.fd is None and config.uds is None
        if own:
            sockets = bind(config.host, config.port)
        try:
            await super().serve(sockets)
        finally:
            if own and sockets is not None:
                for sock in sockets:
                    sock.close()

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self.lifespan.logger = _lifespan_log
        try:
            await super().startup(sockets)
        except SystemExit:
            guard = self.config.app
            if isinstance(guard, _LifespanGuard) and guard.error is not None:
                raise guard.error from None
            raise
        if sockets is not None:
            self._log_started_message(sockets)


class EmbeddedServer(LineUpServer):
    """A uvicorn server that leaves signal handling to its host program."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


class Startable(Protocol):
    @property
    def started(self) -> bool: ...


async def wait_started(server: Startable, task: asyncio.Task[None]) -> None:
    """Return once ``server`` listens; raise if it stopped instead."""
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("the server stopped during startup")
        await asyncio.sleep(0.02)
