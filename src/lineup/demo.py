"""``lineup demo``: the AppServer and the scripted demo agent in one process."""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import signal
from pathlib import Path

import click

from .agent import Agent
from .agent.demo import build_demo_agent
from .host.serve import build_host_server, run_client
from .runtime import Runtime
from .server import admin
from .server.runner import build_server
from .serving import wait_started

DEMO_USER = "demo"
DEMO_AGENT = "demo-agent"
CREDENTIALS_FILE = "demo-credentials.json"


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


async def run_demo(
    data_dir: Path, *, host: str, port: int, web_port: int, surface_port: int | None = None
) -> None:
    """AppServer, demo agent, Runtime and Web Host in one process, until Ctrl-C."""
    credentials = await ensure_demo_accounts(data_dir)
    server = build_server(data_dir, host=host, port=port, embedded=True)
    url = f"http://{host}:{port}"
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    runtime = Runtime(data_dir / "runtime")
    await runtime.open()
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
                runtime, server_url=url, host=host, port=web_port, surface_port=surface_port
            )
            client_task = tg.create_task(
                run_client(runtime, web_server, agent_id=credentials["agent_id"], bundled_apps=True)
            )
            await wait_started(web_server, client_task)
            link = await web.sessions.create("link")
            web_url = f"http://{host}:{web_port}"
            click.echo(_banner(credentials, url, web_url, link, data_dir))
            await stop.wait()
            await runtime.stop()
            await client_task
            await agent.stop()
            await agent_task
            server.should_exit = True
            await server_task
    finally:
        await runtime.close()


def _banner(credentials: dict[str, str], url: str, web_url: str, link: str, data_dir: Path) -> str:
    launcher = os.environ.get("LINEUP_LAUNCHER", "lineup")
    user, password = credentials["username"], credentials["password"]
    chat_command = f"LINEUP_PASSWORD={password} {launcher} chat --server {url} --user {user}"
    return "\n".join(
        [
            "",
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
            "",
            "Press Ctrl-C to stop.",
        ]
    )
