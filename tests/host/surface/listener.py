"""Serve an ASGI app with the project's uvicorn setup on a loopback port chosen by the
kernel (port 0), so parallel tests never race for a "free" port."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from lineup.serving import EmbeddedServer, uvicorn_config, wait_started


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[int]:
    """Yield the port ``app`` listens on at 127.0.0.1; stop the server on exit."""
    server = EmbeddedServer(uvicorn_config(app, host="127.0.0.1", port=0))
    task = asyncio.create_task(server.serve())
    try:
        await wait_started(server, task)
        port: int = server.servers[0].sockets[0].getsockname()[1]
        yield port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 15)
