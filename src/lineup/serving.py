"""uvicorn glue shared by the AppServer and the Web Host."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import uvicorn


class EmbeddedServer(uvicorn.Server):
    """A uvicorn server that leaves signal handling to its host program."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


async def wait_started(server: uvicorn.Server, task: asyncio.Task[None]) -> None:
    """Return once ``server`` listens; raise if it stopped instead."""
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError("the server stopped during startup")
        await asyncio.sleep(0.02)
