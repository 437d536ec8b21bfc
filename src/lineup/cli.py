"""``lineup``: the command line. Parses arguments and calls the packages; no logic.

Every mistake ends in one line on stderr and a non-zero exit (``main``); a traceback
only with ``--debug`` or ``LINEUP_DEBUG=1``."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from . import logs
from .extras import MissingExtra, require

if TYPE_CHECKING:
    from .delivery.keys import PublicKey


def default_data_dir(name: str) -> Path:
    root = os.environ.get("LINEUP_DATA_DIR")
    if root:
        return Path(root) / name
    xdg = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(xdg) / "lineup" / name


MIN_PASSWORD_CHARS = 8
LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")
CONTEXT = {"help_option_names": ["-h", "--help"]}


def _set_log_level(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    """The root's option always sets the level; a subcommand's only when given there."""
    source = ctx.get_parameter_source("log_level")
    if ctx.parent is None or source == click.core.ParameterSource.COMMANDLINE:
        logs.configure(value or logs.DEFAULT_LEVEL)


def _log_level_option() -> click.Option:
    return click.Option(
        ["--log-level"],
        envvar="LINEUP_LOG_LEVEL",
        default=logs.DEFAULT_LEVEL,
        show_default=True,
        type=click.Choice(LEVELS, case_sensitive=False),
        expose_value=False,
        is_eager=True,
        callback=_set_log_level,
        help="Log level (or $LINEUP_LOG_LEVEL).",
    )


def _version() -> str:
    try:
        return metadata.version("lineup")
    except metadata.PackageNotFoundError:
        return "unknown"


@click.group(context_settings=CONTEXT)
@click.version_option(_version(), "--version", prog_name="lineup", message="%(prog)s %(version)s")
@click.option(
    "--debug", is_flag=True, help="Show tracebacks (or LINEUP_DEBUG=1).", expose_value=False
)
def cli() -> None:
    """LineUp: AI agents and people working together."""


# --- lineup server ------------------------------------------------------------------------


@cli.group(invoke_without_command=True)
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
    if database is not None:
        _check_database_url(database, is_postgres(database))
    ctx.meta["lineup.database"] = database
    if ctx.invoked_subcommand is not None:
        return
    logs.use_data_dir(ctx.obj)
    engine = "PostgreSQL" if database else "SQLite"
    click.echo(
        f"LineUp AppServer on http://{host}:{port} ({engine}, {workers} process"
        f"{'es' if workers > 1 else ''}; data: {ctx.obj})"
    )
    if workers == 1:
        build_server(ctx.obj, host=host, port=port, database=database, pool_size=pool_size).run()
        return
    if database is None:
        raise click.UsageError("--workers above 1 needs --database postgresql://...")
    run_workers(
        ctx.obj, host=host, port=port, database=database, workers=workers, pool_size=pool_size
    )


def _check_database_url(database: str, postgres: bool) -> None:
    from urllib.parse import urlsplit

    if not postgres:
        raise click.ClickException("--database takes a postgresql:// URL (SQLite is the default)")
    try:
        urlsplit(database).port  # noqa: B018 (it raises for a port that is not a number)
    except ValueError:
        raise click.ClickException(
            "--database: the port in the URL is not a number (postgresql://HOST:PORT/DB)"
        ) from None


def _existing_data_dir(data_dir: Path, create: bool) -> None:
    """A mistyped ``--data-dir`` must not make a new, empty AppServer database."""
    if _database() is None and not create and not data_dir.is_dir():
        raise click.ClickException(
            f"no AppServer data dir at {data_dir}; check --data-dir,"
            " or add --create to make a new one"
        )


_create_option = click.option(
    "--create", is_flag=True, help="Make the data dir if it does not exist yet."
)


def _prompt_secret(label: str) -> str:
    """Hidden on a terminal; read as a line from a pipe (scripts, tests)."""
    value: str = click.prompt(label, hide_input=sys.stdin.isatty(), err=True)
    return value


def _new_password() -> str:
    first = _prompt_secret("Password")
    _check_password(first)
    if _prompt_secret("Password again") != first:
        raise click.ClickException("the two passwords differ; run the command again")
    return first


def _check_password(password: str) -> None:
    if len(password) < MIN_PASSWORD_CHARS:
        raise click.ClickException(
            f"the password is too short: use at least {MIN_PASSWORD_CHARS} characters"
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
@_create_option
@click.pass_obj
def user_add(data_dir: Path, username: str, password: str | None, create: bool) -> None:
    """Create a user who logs in with USERNAME and a password (asked twice if absent)."""
    from .server import admin

    _existing_data_dir(data_dir, create)
    if password is None:
        password = _new_password()
    else:
        _check_password(password)
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
@_create_option
@click.pass_obj
def agent_add(data_dir: Path, agent_id: str, name: str | None, create: bool) -> None:
    """Create an agent and print its API key (shown once)."""
    from .server import admin

    _existing_data_dir(data_dir, create)
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

cli.add_command(miniapp_group, "miniapp")


# --- lineup demo ---------------------------------------------------------------------------


_dev_surfaces_option = click.option(
    "--dev-surfaces",
    "dev_surfaces",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Offer each bundle folder in DIR as a dev-mode surface agents can open"
    " (read afresh on every open: edit, reopen, see the change).",
)


_mcp_config_option = click.option(
    "--mcp-config",
    "mcp_config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help='MCP servers to host, in the usual {"mcpServers": {...}} JSON (stdio commands or'
    " streamable-HTTP URLs): their tools reach agents under your policy, in Apps.",
)


def _mcp_servers(path: Path | None) -> tuple[Any, ...]:
    """The configured MCP servers (one line for a config that is refused)."""
    if path is None:
        return ()
    require("mcp", "mcp", "Hosting MCP servers (--mcp-config)")
    from .runtime.mcp.config import McpConfigError, load_config

    try:
        return load_config(path)
    except McpConfigError as exc:
        raise click.ClickException(exc.message) from None


@cli.command()
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
@_dev_surfaces_option
@_mcp_config_option
def demo(
    data_dir: Path | None,
    host: str,
    port: int,
    web_port: int,
    surface_port: int | None,
    desktop: bool,
    dev_surfaces: Path | None,
    mcp_config: Path | None,
) -> None:
    """Run AppServer, demo agent, Runtime and Web Host; print the login link."""
    from .demo import run_demo

    mcp_servers = _mcp_servers(mcp_config)
    if desktop and mcp_servers:
        raise click.UsageError("--mcp-config is not offered with --desktop yet")

    logs.use_data_dir(data_dir or default_data_dir("demo"))
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
                dev_surfaces=dev_surfaces,
                mcp_servers=mcp_servers,
            )
        )


# --- lineup client -----------------------------------------------------------------------------

CLIENT_PORT = 8768
"""``lineup client``'s Web Host (and, + 1, its surface origin): beside the demo's 8766/8767."""

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


@cli.command()
@_server_option
@click.option(
    "--data-dir",
    type=click.Path(path_type=Path),
    default=None,
    help="[default: ~/.local/share/lineup/client]",
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option(
    "--port",
    default=CLIENT_PORT,
    show_default=True,
    type=int,
    help="Web Host port (the demo's are 8766 and 8767).",
)
@click.option(
    "--surface-port",
    default=None,
    type=int,
    help="Surface origin port (MiniApp surfaces).  [default: the Web Host port + 1]",
)
@_agent_option
@_trust_option
@_dev_surfaces_option
@_mcp_config_option
def client(
    server_url: str,
    data_dir: Path | None,
    host: str,
    port: int,
    surface_port: int | None,
    agent_id: str | None,
    trust: tuple[Path, ...],
    dev_surfaces: Path | None,
    mcp_config: Path | None,
) -> None:
    """Run your Runtime and the Web Host against an AppServer; log in in the browser."""
    from .host.serve import run_standalone

    keys = _trusted_keys(trust)
    mcp_servers = _mcp_servers(mcp_config)
    logs.use_data_dir(data_dir or default_data_dir("client"))

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
                dev_surfaces=dev_surfaces,
                mcp_servers=mcp_servers,
            )
        )


# --- lineup desktop ---------------------------------------------------------------------------


@cli.command()
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
    logs.use_data_dir(data_dir or default_data_dir("client"))
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


@cli.command()
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
        password = _prompt_secret("Password")
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(run_chat(server_url, username, password, agent_id))


def _every_command(command: click.Command) -> list[click.Command]:
    found = [command]
    if isinstance(command, click.Group):
        for child in command.commands.values():
            found += _every_command(child)
    return found


for _command in _every_command(cli):  # --log-level on every command, root and subcommands
    _command.params.insert(0, _log_level_option())
    _command.context_settings = {**CONTEXT, **_command.context_settings}


# --- one line for every mistake ------------------------------------------------------------


def _debugging(argv: Sequence[str]) -> bool:
    return "--debug" in argv or os.environ.get("LINEUP_DEBUG", "") not in ("", "0")


def _leaf(error: BaseException) -> BaseException:
    """The first real error in a (nested) exception group."""
    while isinstance(error, BaseExceptionGroup):
        real = [e for e in error.exceptions if not isinstance(e, asyncio.CancelledError)]
        error = (real or list(error.exceptions))[0]
    return error


def _short(text: str) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= 200 else line[:197] + "..."


def describe(error: BaseException) -> str:
    """The one line for an error (without the ``lineup: `` prefix)."""
    import httpx

    from .runtime.runtime import DataDirInUse
    from .serving import PortInUse

    if isinstance(error, PortInUse):
        return f"{error}; stop what uses it or choose another port (see --help for the options)"
    if isinstance(error, DataDirInUse):
        return f"{error}: is another lineup running on it? Stop it, or pass another --data-dir"
    if isinstance(error, httpx.TransportError):
        where = ""
        with contextlib.suppress(RuntimeError):
            where = f" {error.request.url.copy_with(path='/', query=None)}"
        return (
            f"cannot reach the AppServer{where} ({type(error).__name__}); is it running there?"
            " Check --server"
        )
    if type(error).__name__ == "StorageError":
        hint = (
            "check --database and that PostgreSQL runs there"
            if "PostgreSQL" in str(error)
            else "check --data-dir"
        )
        return f"{_short(str(error))}; {hint}"
    if isinstance(error, MissingExtra):
        return _short(str(error))
    return (
        f"unexpected error: {type(error).__name__}: {_short(str(error))}"
        " (run with --debug for details)"
    )


def _say(line: str) -> None:
    text = line if line.startswith("lineup") else f"lineup: {line}"
    click.echo(text, err=True)


def main(argv: Sequence[str] | None = None) -> int:
    """The ``lineup`` command: runs ``cli``; every error becomes one line."""
    args = list(sys.argv[1:] if argv is None else argv)
    debug = _debugging(args)
    try:
        result: Any = cli.main(args=args, prog_name="lineup", standalone_mode=False)
    except click.exceptions.Abort as exc:
        if isinstance(exc.__context__, KeyboardInterrupt):
            return 130
        _say("no input; stopped")
        return 1
    except click.exceptions.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} -h')" if exc.ctx is not None else ""
        _say(f"{exc.format_message()}{hint}")
        return exc.exit_code
    except click.ClickException as exc:
        _say(exc.format_message())
        return exc.exit_code
    except KeyboardInterrupt:
        return 130
    except SystemExit:
        raise
    except BaseException as exc:
        if debug:
            raise
        _say(describe(_leaf(exc)))
        return 1
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
