"""``lineup``: the command line. Parses arguments and calls the packages; no logic."""

from __future__ import annotations

import asyncio
import contextlib
import getpass
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

import click

from . import logs

if TYPE_CHECKING:
    from .delivery.keys import PublicKey


def default_data_dir(name: str) -> Path:
    root = os.environ.get("LINEUP_DATA_DIR")
    if root:
        return Path(root) / name
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "lineup" / name


@click.group()
@click.option("--log-level", default="INFO", show_default=True, help="DEBUG, INFO, WARNING, ERROR")
def main(log_level: str) -> None:
    """LineUp: AI agents and people working together."""
    logs.configure(log_level)


# --- lineup server ------------------------------------------------------------------------


@main.group(invoke_without_command=True)
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="Where the AppServer keeps its SQLite database [default: ~/.local/share/lineup/server].",
)
@click.option(
    "--database",
    envvar="LINEUP_DATABASE_URL",
    default=None,
    help="A postgresql:// URL (or $LINEUP_DATABASE_URL) [default: SQLite in the data dir].",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, type=int)
@click.option(
    "--workers",
    default=1,
    show_default=True,
    type=click.IntRange(1, 64),
    help="AppServer processes (more than 1 needs --database postgresql://...).",
)
@click.option(
    "--pool-size",
    default=10,
    show_default=True,
    type=click.IntRange(1, 500),
    help="PostgreSQL connections per process at most (plus one for notifications).",
)
@click.pass_context
def server(
    ctx: click.Context,
    data_dir: Path | None,
    database: str | None,
    host: str,
    port: int,
    workers: int,
    pool_size: int,
) -> None:
    """Run the AppServer, or manage its users and agents."""
    from .server.runner import build_server, is_postgres, run_workers

    ctx.obj = data_dir or default_data_dir("server")
    if database is not None and not is_postgres(database):
        raise click.BadParameter("a postgresql:// URL", param_hint="--database")
    ctx.meta["lineup.database"] = database
    if ctx.invoked_subcommand is not None:
        return
    engine = "PostgreSQL" if database else "SQLite"
    click.echo(
        f"LineUp AppServer on http://{host}:{port} ({engine}, {workers} process"
        f"{'es' if workers > 1 else ''}; data: {ctx.obj})",
        err=True,
    )
    if workers == 1:
        build_server(ctx.obj, host=host, port=port, database=database, pool_size=pool_size).run()
        return
    if database is None:
        raise click.UsageError("--workers above 1 needs --database postgresql://...")
    run_workers(
        ctx.obj, host=host, port=port, database=database, workers=workers, pool_size=pool_size
    )


def _database() -> str | None:
    """The ``--database`` given to ``lineup server`` (its subcommands act on it)."""
    value = click.get_current_context().find_root().meta.get("lineup.database")
    return value if isinstance(value, str) else None


@server.group()
def user() -> None:
    """Manage users."""


@user.command("add")
@click.argument("username")
@click.option(
    "--password",
    envvar="LINEUP_PASSWORD",
    default=None,
    help="Or $LINEUP_PASSWORD; asked if absent.",
)
@click.pass_obj
def user_add(data_dir: Path, username: str, password: str | None) -> None:
    """Create a user who logs in with USERNAME and a password."""
    from .server import admin

    if password is None:
        password = getpass.getpass("Password: ")
    try:
        user_id = asyncio.run(admin.add_user(data_dir, username, password, database=_database()))
    except admin.AdminError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"user {username} created (id {user_id})")


@server.group()
def agent() -> None:
    """Manage agents."""


@agent.command("add")
@click.argument("agent_id")
@click.option("--name", default=None, help="Display name [default: AGENT_ID].")
@click.pass_obj
def agent_add(data_dir: Path, agent_id: str, name: str | None) -> None:
    """Create an agent and print its API key (shown once)."""
    from .server import admin

    try:
        key = asyncio.run(
            admin.add_agent(data_dir, agent_id, name or agent_id, database=_database())
        )
    except admin.AdminError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"agent {agent_id} created; its API key (shown once):")
    click.echo(key)


from .server.catalog_commands import catalog_group  # noqa: E402

server.add_command(catalog_group, "catalog")


# --- lineup miniapp ------------------------------------------------------------------------

from .delivery.commands import miniapp_group  # noqa: E402

main.add_command(miniapp_group, "miniapp")


# --- lineup demo ---------------------------------------------------------------------------


@main.command()
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="[default: ~/.local/share/lineup/demo]",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8765, show_default=True, type=int, help="AppServer port.")
@click.option("--web-port", default=8766, show_default=True, type=int, help="Web Host port.")
@click.option(
    "--surface-port",
    default=None,
    type=int,
    help="Surface origin port (MiniApp surfaces).  [default: the Web Host port + 1]",
)
@click.option(
    "--desktop", is_flag=True, help="Show the shell in a desktop window (the desktop extra)."
)
def demo(
    data_dir: Path | None,
    host: str,
    port: int,
    web_port: int,
    surface_port: int | None,
    desktop: bool,
) -> None:
    """Run AppServer, demo agent, Runtime and Web Host; print the login link."""
    from .demo import run_demo

    if desktop:
        from .desktop.launch import desktop_demo

        _in_window(
            lambda: desktop_demo(
                data_dir or default_data_dir("demo"),
                host=host,
                port=port,
                web_port=web_port,
                surface_port=surface_port,
            )
        )
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            run_demo(
                data_dir or default_data_dir("demo"),
                host=host,
                port=port,
                web_port=web_port,
                surface_port=surface_port,
            )
        )


# --- lineup client -----------------------------------------------------------------------------

_server_option = click.option(
    "--server", "server_url", required=True, help="The AppServer, e.g. https://lineup.example."
)
_agent_option = click.option(
    "--agent", "agent_id", default=None, help="Open a conversation with this agent after login."
)
_trust_option = click.option(
    "--trust",
    "trust",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A publisher's public key file (NAME.pub.json) to trust for signed MiniApps; repeatable.",
)


def _trusted_keys(paths: tuple[Path, ...]) -> list[PublicKey]:
    from .delivery.keys import load_public_key

    try:
        return [load_public_key(path) for path in paths]
    except ValueError as exc:
        raise click.ClickException(f"--trust: {exc}") from None


@main.command()
@_server_option
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="[default: ~/.local/share/lineup/client]",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8766, show_default=True, type=int, help="Web Host port.")
@click.option(
    "--surface-port",
    default=None,
    type=int,
    help="Surface origin port (MiniApp surfaces).  [default: the Web Host port + 1]",
)
@_agent_option
@_trust_option
def client(
    server_url: str,
    data_dir: Path | None,
    host: str,
    port: int,
    surface_port: int | None,
    agent_id: str | None,
    trust: tuple[Path, ...],
) -> None:
    """Run your Runtime and the Web Host against an AppServer; log in in the browser."""
    from .host.serve import run_standalone

    keys = _trusted_keys(trust)

    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(
            run_standalone(
                data_dir or default_data_dir("client"),
                server_url=server_url.rstrip("/"),
                host=host,
                port=port,
                surface_port=surface_port,
                agent_id=agent_id,
                trusted_keys=keys,
            )
        )


# --- lineup desktop ---------------------------------------------------------------------------


@main.command()
@_server_option
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="[default: ~/.local/share/lineup/client, the same as lineup client]",
)
@click.option("--port", default=None, type=int, help="Web Host port.  [default: a free one]")
@click.option(
    "--surface-port", default=None, type=int, help="Surface origin port.  [default: a free one]"
)
@_agent_option
@_trust_option
def desktop(
    server_url: str,
    data_dir: Path | None,
    port: int | None,
    surface_port: int | None,
    agent_id: str | None,
    trust: tuple[Path, ...],
) -> None:
    """Your Runtime and the shell in a desktop window (a second launch focuses it)."""
    from .desktop.launch import desktop_client

    keys = _trusted_keys(trust)
    _in_window(
        lambda: desktop_client(
            data_dir or default_data_dir("client"),
            server_url=server_url.rstrip("/"),
            port=port,
            surface_port=surface_port,
            agent_id=agent_id,
            trusted_keys=keys,
        )
    )


def _in_window(launch: Callable[[], int]) -> NoReturn:
    """Run a desktop launcher; exit with its status (a clear error without the extra)."""
    from .desktop.launch import MissingDesktopExtra

    try:
        status = launch()
    except MissingDesktopExtra as exc:
        raise click.ClickException(str(exc)) from None
    sys.exit(status)


# --- lineup chat -----------------------------------------------------------------------------


@main.command()
@click.option("--server", "server_url", default="http://127.0.0.1:8765", show_default=True)
@click.option("--user", "username", required=True)
@click.option(
    "--password",
    envvar="LINEUP_PASSWORD",
    default=None,
    help="Or $LINEUP_PASSWORD; asked if absent.",
)
@click.option("--agent", "agent_id", default="demo-agent", show_default=True)
def chat(server_url: str, username: str, password: str | None, agent_id: str) -> None:
    """Chat with an agent from the terminal (a plain line client)."""
    from .chat import run_chat

    if password is None:
        password = getpass.getpass("Password: ")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_chat(server_url, username, password, agent_id))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
