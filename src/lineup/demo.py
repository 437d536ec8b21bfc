"""``lineup demo``: the AppServer and the scripted demo agent in one process.

It also shows signed delivery (docs/delivery.md): at every start the demo signs the
sample Focus Timer with its own publisher key (made once, in the data dir), publishes
it to the AppServer's catalog and has the Runtime trust that key. It does not install
it: the person does, from the Apps dialog.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

import click
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from .agent import Agent
from .agent.demo import build_demo_agent
from .delivery.errors import DeliveryError, DeliveryErrorCode
from .delivery.keys import (
    PublicKey,
    generate_key,
    load_private_key,
    public_key_of,
    sign_release,
    write_key_pair,
)
from .delivery.publisher import pack_bundle
from .delivery.release import Release, encode_release
from .host.native import NativeHost
from .host.serve import build_host_server, run_client, stop_client
from .runtime import Runtime
from .runtime.mcp.config import ServerConfig
from .server import admin
from .server.catalog import catalog_for
from .server.runner import build_server
from .serving import wait_started
from .stopping import run_stoppable, within

log = logging.getLogger("lineup.demo")

DEMO_USER = "demo"
DEMO_AGENT = "demo-agent"
CREDENTIALS_FILE = "demo-credentials.json"
PUBLISHER_KEY = "demo-publisher"
"""``<data dir>/demo-publisher.key`` (0600) and ``.pub.json``: the demo's publisher key."""
PUBLISHER_NAME = "LineUp demo publisher"
SAMPLE_APP_NAME = "Focus Timer"


async def ensure_demo_accounts(data_dir: Path) -> dict[str, str]:
    """Create the demo user and agent once; later runs reuse the saved credentials."""
    saved = _load_credentials(data_dir)
    if saved is not None:
        return saved
    password = secrets.token_urlsafe(12)
    await admin.add_user(data_dir, DEMO_USER, password)
    key = await admin.add_agent(data_dir, DEMO_AGENT, "Demo agent")
    credentials = {
        "username": DEMO_USER,
        "password": password,
        "agent_id": DEMO_AGENT,
        "agent_key": key,
    }
    _save_credentials(data_dir, credentials)
    return credentials


def _load_credentials(data_dir: Path) -> dict[str, str] | None:
    path = data_dir / CREDENTIALS_FILE
    if not path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        return None
    saved: dict[str, str] = json.loads(path.read_text(encoding="utf-8"))
    return saved


def _save_credentials(data_dir: Path, credentials: dict[str, str]) -> None:
    """Owner-only file: it holds the demo password and the agent key."""
    fd = os.open(data_dir / CREDENTIALS_FILE, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        json.dump(credentials, handle, indent=2)


# --- the signed sample app ----------------------------------------------------------------


def sample_app_dir() -> Path:
    """The Focus Timer's bundle directory (an ``installed`` app, delivered signed)."""
    package = resources.files("lineup.miniapps")
    return Path(str(package.joinpath("examples").joinpath("focus_timer")))


def ensure_publisher_key(data_dir: Path) -> tuple[Ed25519PrivateKey, PublicKey]:
    """The demo publisher's key pair, created once (``write_key_pair``: the key file
    0600, never overwritten) and loaded from ``data_dir`` later."""
    stem = data_dir / PUBLISHER_KEY
    key_path = stem.with_name(stem.name + ".key")
    if not key_path.exists():
        data_dir.mkdir(parents=True, exist_ok=True)
        # A public key file without its private key is of no use: write both anew.
        stem.with_name(stem.name + ".pub.json").unlink(missing_ok=True)
        write_key_pair(generate_key(), stem, PUBLISHER_NAME)
    private = load_private_key(key_path)
    return private, public_key_of(private, PUBLISHER_NAME)


@dataclass(frozen=True, slots=True)
class SamplePublished:
    """What ``publish_sample_app`` did: the key to trust, the signed release and its
    artifact, and whether the catalog now lists exactly this release."""

    key: PublicKey
    release: Release
    release_bytes: bytes
    artifact: bytes
    published: bool


def publish_sample_app(data_dir: Path) -> SamplePublished:
    """Pack and sign the Focus Timer with the demo key and publish it to the catalog
    of the AppServer whose data dir is ``data_dir``. The same files and key give the
    same bytes (deterministic archive, Ed25519), so publishing again is a no-op. When
    the catalog already has this version with other bytes (the sample changed without
    a version bump, or the key was made anew) it is left as it is and logged."""
    private, public = ensure_publisher_key(data_dir)
    artifact, unsigned = pack_bundle(sample_app_dir())
    release = sign_release(unsigned, private)
    release_bytes = encode_release(release)
    try:
        catalog_for(data_dir).publish(release_bytes, artifact)
    except DeliveryError as exc:
        if exc.code != DeliveryErrorCode.VERSION_CONFLICT:
            raise
        log.warning(
            "sample app not published: this version is in the catalog with other bytes;"
            " bump its version",
            extra={"app_id": release.app_id, "version": release.version, "code": exc.code},
        )
        return SamplePublished(public, release, release_bytes, artifact, False)
    return SamplePublished(public, release, release_bytes, artifact, True)


async def trust_sample_publisher(runtime: Runtime, key: PublicKey) -> bool:
    """Have the demo Runtime trust the demo publisher (idempotent). ``False`` when the
    person revoked the key in this Runtime: it is never trusted again."""
    try:
        await runtime.delivery.trust_key(key)
    except DeliveryError as exc:
        log.warning("demo publisher key not trusted", extra={"code": exc.code})
        return False
    return True


# --- running ---------------------------------------------------------------------------------


async def run_demo(
    data_dir: Path,
    *,
    host: str,
    port: int,
    web_port: int,
    surface_port: int | None = None,
    stop: asyncio.Event | None = None,
    on_ready: Callable[[str], None] | None = None,
    native: NativeHost | None = None,
    dev_surfaces: Path | None = None,
    mcp_servers: Sequence[ServerConfig] = (),
) -> None:
    """AppServer, demo agent, Runtime and Web Host in one process, until Ctrl-C (or
    until ``stop`` is set, when given: then signals are the caller's). ``on_ready``
    gets the one-time login link once everything serves (``lineup demo --desktop``
    opens it in the window); ``native``: the desktop host's providers. A signal at
    any moment stops it within ``stopping.DEADLINE`` seconds (lineup.stopping)."""
    await run_stoppable(
        lambda stop: _demo(
            data_dir,
            host=host,
            port=port,
            web_port=web_port,
            surface_port=surface_port,
            stop=stop,
            on_ready=on_ready,
            native=native,
            dev_surfaces=dev_surfaces,
            mcp_servers=mcp_servers,
        ),
        stop,
    )


async def _demo(
    data_dir: Path,
    *,
    host: str,
    port: int,
    web_port: int,
    surface_port: int | None,
    stop: asyncio.Event,
    on_ready: Callable[[str], None] | None,
    native: NativeHost | None,
    dev_surfaces: Path | None,
    mcp_servers: Sequence[ServerConfig],
) -> None:
    credentials = await ensure_demo_accounts(data_dir)
    sample = publish_sample_app(data_dir)  # before the Runtime's first catalog fetch
    server = build_server(data_dir, host=host, port=port, embedded=True)
    url = f"http://{host}:{port}"
    runtime = Runtime(data_dir / "runtime", dev_surfaces=dev_surfaces, mcp_servers=mcp_servers)
    await runtime.open()
    offered = await trust_sample_publisher(runtime, sample.key) and sample.published
    try:
        async with asyncio.TaskGroup() as tg:
            server_task = tg.create_task(server.serve())
            await wait_started(server, server_task)
            agent = build_demo_agent(
                Agent(
                    url,
                    credentials["agent_key"],
                    cursor_path=str(data_dir / "demo-agent-cursors.json"),
                )
            )
            agent_task = tg.create_task(agent.run())
            if runtime.session is None:
                await runtime.login(url, credentials["username"], credentials["password"])
            web, web_server = build_host_server(
                runtime,
                server_url=url,
                host=host,
                port=web_port,
                surface_port=surface_port,
                native=native,
            )
            client_task = tg.create_task(
                run_client(runtime, web_server, agent_id=credentials["agent_id"], bundled_apps=True)
            )
            await wait_started(web_server, client_task)
            link = await web.sessions.create("link")
            web_url = f"http://{host}:{web_port}"
            click.echo(
                _banner(
                    credentials,
                    url,
                    web_url,
                    link,
                    data_dir,
                    sample=offered,
                    window=on_ready is not None,
                    mcp=tuple(c.name for c in mcp_servers),
                )
            )
            if on_ready is not None:  # a link of its own: the printed one stays unused
                on_ready(f"{web_url}/login/link?code={await web.sessions.create('link')}")
            await stop.wait()
            await stop_client(runtime, client_task)
            await agent.stop()
            await within(0.5, asyncio.shield(agent_task))
            agent_task.cancel()
            server.should_exit = True
            await server_task
    finally:
        await runtime.close()


def _banner(
    credentials: dict[str, str],
    url: str,
    web_url: str,
    link: str,
    data_dir: Path,
    *,
    sample: bool = False,
    window: bool = False,
    mcp: Sequence[str] = (),
) -> str:
    """``window``: the shell is in the desktop window (closing it stops the demo too);
    ``mcp``: the names of the MCP servers configured."""
    launcher = os.environ.get("LINEUP_LAUNCHER", "lineup")
    user, password = credentials["username"], credentials["password"]
    chat_command = f"LINEUP_PASSWORD={password} {launcher} chat --server {url} --user {user}"
    apps = (
        [f"A signed sample app ({SAMPLE_APP_NAME}) is in the catalog: open Apps to install it.", ""]
        if sample
        else []
    )
    return "\n".join(
        [
            "LineUp demo is running.",
            "",
            f"  Open        {web_url}/login/link?code={link}",
            "              (a one-time login link; later, log in at "
            f"{web_url}/login as {user} / {password})",
            "",
            f"  AppServer   {url}   (API description: {url}/openapi.json)",
            f"  Agent       {credentials['agent_id']}   (scripted: /help, echo)",
            f"  Data        {data_dir}",
            f"  Terminal    {chat_command}",
            *(
                [f"  MCP         {', '.join(mcp)}   (their tools: /mcp; policy and switch: Apps)"]
                if mcp
                else []
            ),
            "",
            *apps,
            "Close the window or press Ctrl-C to stop." if window else "Press Ctrl-C to stop.",
        ]
    )
