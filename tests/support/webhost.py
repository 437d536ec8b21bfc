"""A Runtime and its Web Host, in-process on a loopback port, against a real AppServer."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import httpx
import pytest

from lineup.client import Backoff
from lineup.host.app import WebHost
from lineup.host.native import NativeHost
from lineup.host.serve import build_host_server, run_client
from lineup.runtime import Runtime
from lineup.runtime.mcp import ServerConfig
from tests.conftest import Pair, make_pair
from tests.support.appserver import AppServerProcess, free_port


@dataclass
class Client:
    runtime: Runtime
    web: WebHost
    url: str
    pair: Pair

    @property
    def origin(self) -> str:
        return self.url

    async def wait_for_items(self, conversation_id: str, count: int) -> None:
        """Wait (on Runtime events, not time) until the store holds ``count`` items."""

        async def enough() -> bool:
            items = await self.runtime.store.timeline(conversation_id, limit=count + 1)
            return len(items) >= count

        await self.wait_until(enough)

    async def wait_for_envelope(self, conversation_id: str, envelope_id: str) -> None:
        """Wait (on Runtime events, not time) until the store holds this envelope."""

        async def stored() -> bool:
            return await self.runtime.store.item(conversation_id, envelope_id) is not None

        await self.wait_until(stored)

    async def wait_until(self, check: Callable[[], Awaitable[bool]], within: float = 30) -> None:
        """Look again after every Runtime event until ``check`` holds."""
        changed = asyncio.Event()
        unsubscribe = self.runtime.subscribe(lambda _event: changed.set())
        try:
            async with asyncio.timeout(within):
                while True:
                    changed.clear()  # before looking, so no event slips between
                    if await check():
                        return
                    await changed.wait()
        finally:
            unsubscribe()

    async def session_cookie(self) -> str:
        link = await self.web.sessions.create("link")
        async with httpx.AsyncClient(base_url=self.url) as http:
            response = await http.get(f"/login/link?code={link}")
        assert response.status_code == 303
        return response.cookies["lineup_session"]


@asynccontextmanager
async def serving(
    server: AppServerProcess,
    pair: Pair,
    data_dir: Path,
    *,
    clock: Callable[[], datetime] | None = None,
    password: str = "correct horse battery",
    native: NativeHost | None = None,
    dev_surfaces: Path | None = None,
    mcp_servers: Sequence[ServerConfig] = (),
) -> AsyncIterator[Client]:
    """A logged-in Runtime (on ``clock`` when given) and its Web Host, synced;
    ``native``: a desktop host's providers; ``dev_surfaces`` and ``mcp_servers``: the
    Runtime's."""
    runtime = Runtime(
        data_dir,
        clock=clock,
        backoff=Backoff(base=0.05, cap=0.3),
        dev_surfaces=dev_surfaces,
        mcp_servers=mcp_servers,
    )
    await runtime.open()
    await runtime.login(server.url, pair.user_name, password)
    port = free_port()
    web, host_server = build_host_server(
        runtime, server_url=server.url, port=port, surface_port=free_port(), native=native
    )
    task = asyncio.create_task(run_client(runtime, host_server, agent_id=pair.agent.id))
    await asyncio.wait_for(runtime.ready.wait(), 15)
    try:
        yield Client(runtime, web, f"http://127.0.0.1:{port}", pair)
    finally:
        await runtime.stop()
        await asyncio.wait_for(task, 15)
        await runtime.close()


@pytest.fixture
async def client(pair: Pair, appserver: AppServerProcess, tmp_path: Path) -> AsyncIterator[Client]:
    """A Runtime + Web Host for ``pair``'s user on the shared AppServer."""
    async with serving(appserver, pair, tmp_path / "runtime") as made:
        yield made


@pytest.fixture
async def client_own_server(
    own_appserver: AppServerProcess, tmp_path: Path
) -> AsyncIterator[Client]:
    """The same, on an AppServer this test may kill and restart."""
    pair = await make_pair(own_appserver)
    async with serving(own_appserver, pair, tmp_path / "runtime") as made:
        yield made
    await pair.user.aclose()
    await pair.agent.aclose()
