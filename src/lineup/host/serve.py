"""Run a Runtime and its Web Host together (``lineup client``, ``lineup demo``)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import uvicorn

from lineup.delivery.keys import PublicKey
from lineup.runtime import Runtime
from lineup.runtime.mcp.config import ServerConfig
from lineup.serving import EmbeddedServer, uvicorn_config, wait_started
from lineup.stopping import run_stoppable, within

from .app import WebHost
from .native import NativeHost
from .surface import frame_source
from .views import DEFAULT_TITLE


class HostServer:
    """The Web Host's two loopback listeners, run as one: the shell (pages, static
    files, the host channel) and the surface origin (each mounted surface document,
    once, from its own ``m-<random>.localhost`` site). Quacks like the
    ``uvicorn.Server`` that ``wait_started`` and ``run_client`` expect."""

    def __init__(
        self, shell: uvicorn.Server, surfaces: uvicorn.Server, web: WebHost | None = None
    ) -> None:
        self.shell = shell
        self.surfaces = surfaces
        self.web = web

    @property
    def started(self) -> bool:
        return bool(self.shell.started and self.surfaces.started)

    @property
    def should_exit(self) -> bool:
        return bool(self.shell.should_exit)

    @should_exit.setter
    def should_exit(self, value: bool) -> None:
        self.shell.should_exit = value
        self.surfaces.should_exit = value

    async def serve(self) -> None:
        if self.web is None:
            await self._listen()
            return
        async with self.web.serving():  # its jobs live, its capabilities are declared
            await self._listen()

    async def _listen(self) -> None:
        async with asyncio.TaskGroup() as tg:
            tg.create_task(self.surfaces.serve())
            tg.create_task(self.shell.serve())


def build_host_server(
    runtime: Runtime,
    *,
    server_url: str,
    host: str = "127.0.0.1",
    port: int = 8766,
    surface_port: int | None = None,
    native: NativeHost | None = None,
) -> tuple[WebHost, HostServer]:
    """The host's listeners (the surface origin on ``surface_port``, by default the
    next port); the caller runs ``runtime.run()`` beside them. ``native``: a desktop
    host's providers."""
    surface_port = port + 1 if surface_port is None else surface_port
    web = WebHost(
        runtime,
        server_url=server_url,
        allowed_hosts=_hosts(host, port),
        surface_port=surface_port,
        native=native,
    )
    shell = uvicorn_config(
        web.asgi(frame_origins=[frame_source(surface_port)]), host=host, port=port, lifespan="off"
    )
    surfaces = uvicorn_config(
        web.surfaces.asgi(), host="127.0.0.1", port=surface_port, lifespan="off"
    )
    return web, HostServer(EmbeddedServer(shell), EmbeddedServer(surfaces), web)


def _hosts(host: str, port: int) -> set[str]:
    names = {host}
    if host in ("127.0.0.1", "localhost"):
        names |= {"127.0.0.1", "localhost"}
    return {f"{name}:{port}" for name in names}


def conversation_id_for(user_id: str, agent_id: str) -> str:
    """The conversation a person has with an agent by default (stable, so retry-safe)."""
    return f"chat.{user_id}.{agent_id}"[:128]


async def run_client(
    runtime: Runtime,
    server: HostServer,
    *,
    agent_id: str | None = None,
    bundled_apps: bool = False,
) -> None:
    """Serve the host; once logged in, open the default conversation and sync.

    Runs until cancelled. Logging in happens on the host's login page (or before,
    as ``lineup demo`` does); the sync loop starts as soon as there is a session.
    ``bundled_apps``: install and enable the reference MiniApps first.
    """
    if bundled_apps:
        from lineup.miniapps import install_bundled

        await install_bundled(runtime)
    async with asyncio.TaskGroup() as tg:
        server_task = tg.create_task(server.serve())
        await wait_started(server, server_task)
        await runtime.logged_in.wait()
        session = runtime.session
        if agent_id is not None and session is not None:
            await runtime.open_conversation(
                agent_id,
                conversation_id=conversation_id_for(session.user_id, agent_id),
                title=DEFAULT_TITLE,
            )
        try:
            await runtime.run()
        finally:
            server.should_exit = True


async def stop_client(runtime: Runtime, client_task: asyncio.Task[None]) -> None:
    """Drain the outbox (briefly, only while in sync), stop the sync loop, and cancel
    what is left: ``runtime.stop()`` alone does nothing when the sync loop has not
    started yet (a signal during login), and ``client_task`` would wait for ever."""
    await runtime.drain(within=1.0)
    await runtime.stop()
    await within(0.6, asyncio.shield(client_task))
    client_task.cancel()


async def run_standalone(
    data_dir: Path,
    *,
    server_url: str,
    host: str,
    port: int,
    agent_id: str | None,
    surface_port: int | None = None,
    trusted_keys: Sequence[PublicKey] = (),
    stop: asyncio.Event | None = None,
    on_ready: Callable[[str], None] | None = None,
    native: NativeHost | None = None,
    dev_surfaces: Path | None = None,
    mcp_servers: Sequence[ServerConfig] = (),
) -> None:
    """``lineup client`` (and ``lineup desktop``): until Ctrl-C or SIGTERM, or until
    ``stop`` is set when given (then signals are the caller's). ``trusted_keys``:
    publisher keys to trust for signed MiniApps (kept in the store). ``on_ready`` gets
    the page to open (a one-time login link when the Runtime is logged in) instead of
    it being printed. Stopping drains the outbox for a few seconds; what is left stays
    on disk. A signal at any moment stops it within ``stopping.DEADLINE`` seconds."""
    await run_stoppable(
        lambda stop: _standalone(
            data_dir,
            server_url=server_url,
            host=host,
            port=port,
            agent_id=agent_id,
            surface_port=surface_port,
            trusted_keys=trusted_keys,
            stop=stop,
            on_ready=on_ready,
            native=native,
            dev_surfaces=dev_surfaces,
            mcp_servers=mcp_servers,
        ),
        stop,
    )


async def _standalone(
    data_dir: Path,
    *,
    server_url: str,
    host: str,
    port: int,
    agent_id: str | None,
    surface_port: int | None,
    trusted_keys: Sequence[PublicKey],
    stop: asyncio.Event,
    on_ready: Callable[[str], None] | None,
    native: NativeHost | None,
    dev_surfaces: Path | None,
    mcp_servers: Sequence[ServerConfig],
) -> None:
    runtime = Runtime(data_dir, dev_surfaces=dev_surfaces, mcp_servers=mcp_servers)
    await runtime.open()
    for key in trusted_keys:
        await runtime.delivery.trust_key(key)
    try:
        web, server = build_host_server(
            runtime,
            server_url=server_url,
            host=host,
            port=port,
            surface_port=surface_port,
            native=native,
        )
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(run_client(runtime, server, agent_id=agent_id, bundled_apps=True))
            await wait_started(server, task)
            where = f"http://{host}:{port}"
            if runtime.session is None:
                page = f"{where}/login"
            else:
                page = f"{where}/login/link?code={await web.sessions.create('link')}"
            if on_ready is not None:
                on_ready(page)
            elif runtime.session is None:
                print(f"LineUp is running: log in at {page}", flush=True)
            else:
                print(f"LineUp is running: open {page}", flush=True)
            await stop.wait()
            await stop_client(runtime, task)
            server.should_exit = True
    finally:
        await runtime.close()
