"""uvicorn glue shared by the AppServer and the Web Host."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from typing import Any, Literal, Protocol

import uvicorn


def uvicorn_config(
    app: Any, *, host: str, port: int, lifespan: Literal["on", "off"] = "on"
) -> uvicorn.Config:
    """The one uvicorn setup LineUp uses: uvloop, httptools, websockets, no access log
    (our own logs carry ids and codes only)."""
    return uvicorn.Config(
        app,
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


class EmbeddedServer(uvicorn.Server):
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
