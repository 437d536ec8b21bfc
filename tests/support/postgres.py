"""A throwaway PostgreSQL cluster for the tests, and a fresh empty database per test.

`PostgresCluster.from_environment()` either starts a private cluster (initdb into a
temporary directory, `postgres` on a free loopback port, trust auth, superuser
`lineup`) or, when `LINEUP_TEST_POSTGRES=postgresql://user@host:port/db` is set, uses
that existing server, where the user may create databases. Nothing is ever skipped:
without binaries and without that variable, starting fails with what to do.

The fixtures `postgres_cluster` (one per session) and `postgres_dsn` (a new database
per test, dropped afterwards) are registered by `pytest_plugins = ["tests.support.postgres"]`.

As root, initdb and the server run as the `postgres` user (PostgreSQL refuses root).
The server is a direct child of the test process (not daemonized by `pg_ctl`), so
that on Linux it gets SIGQUIT (an immediate shutdown) if the test process dies
without cleaning up; a clean exit stops it through the fixture or `atexit`. Data
directories left by a killed run are removed by the next start.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import ctypes
import itertools
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import asyncpg
import pytest

T = TypeVar("T")

ENV_DSN = "LINEUP_TEST_POSTGRES"
ENV_BIN = "LINEUP_PG_BIN"
SUPERUSER = "lineup"
_DIR_PREFIX = "lineup-pg-"
_SERVER_PROGRAMS = ("initdb", "pg_ctl", "postgres")
_HOW_TO_GET_ONE = (
    "install PostgreSQL's server (on Debian: scripts/system-deps, or apt-get install"
    f" --no-install-recommends postgresql), point {ENV_BIN} at its bin directory, or set"
    f" {ENV_DSN}=postgresql://user@host:port/db to use an existing server where that"
    " user may create databases"
)


class PostgresUnavailable(RuntimeError):
    """No way to get a PostgreSQL server for the tests; the message says what to do."""


def _is_server_bin(path: Path) -> bool:
    return all(os.access(path / name, os.X_OK) for name in _SERVER_PROGRAMS)


def _version_key(path: Path) -> tuple[int, ...]:
    return tuple(int(part) for part in re.findall(r"\d+", path.parent.name))


def find_pg_bin() -> Path:
    """The directory holding initdb, pg_ctl and postgres.

    In order: $LINEUP_PG_BIN, `pg_config --bindir`, the newest /usr/lib/postgresql/*/bin
    (Debian), then wherever `initdb` is on PATH (symlinks followed).
    """
    explicit = os.environ.get(ENV_BIN)
    if explicit:
        path = Path(explicit)
        if not _is_server_bin(path):
            raise PostgresUnavailable(
                f"{ENV_BIN}={explicit} does not hold executable {', '.join(_SERVER_PROGRAMS)}"
            )
        return path
    candidates: list[Path] = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        # Debian's libpq-dev ships a pg_config whose bindir may lack the server.
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            out = subprocess.run(
                [pg_config, "--bindir"], capture_output=True, text=True, timeout=10, check=True
            ).stdout.strip()
            if out:
                candidates.append(Path(out))
    candidates.extend(
        sorted(Path("/usr/lib/postgresql").glob("*/bin"), key=_version_key, reverse=True)
    )
    initdb = shutil.which("initdb")
    if initdb:
        candidates.append(Path(initdb).resolve().parent)
    for candidate in candidates:
        if _is_server_bin(candidate):
            return candidate
    raise PostgresUnavailable(f"no PostgreSQL server binaries found: {_HOW_TO_GET_ONE}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _first_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _world_traversable(path: Path) -> bool:
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


def _sweep_stale(base: Path) -> None:
    """Remove data directories of earlier runs whose test process and server are gone."""
    for old in base.glob(_DIR_PREFIX + "*"):
        owner = _first_int(old / "owner.pid")
        if owner is None or _alive(owner):
            continue
        postmaster = _first_int(old / "data" / "postmaster.pid")
        if postmaster is not None and _alive(postmaster):
            continue
        shutil.rmtree(old, ignore_errors=True)


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """A preexec_fn: SIGQUIT (PostgreSQL's immediate shutdown) when the parent dies."""
    libc = ctypes.CDLL(None, use_errno=True)
    prctl = libc.prctl
    pr_set_pdeathsig = 1

    def preexec() -> None:  # runs in the child after setuid, before exec
        prctl(pr_set_pdeathsig, int(signal.SIGQUIT), 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before prctl
            os._exit(1)

    return preexec


class _Admin:
    """One asyncpg connection on a private event loop thread, usable from sync code."""

    def __init__(self, dsn: str) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="postgres-admin", daemon=True
        )
        self._thread.start()
        self._lock = asyncio.Lock()
        self._pending: set[Future[Any]] = set()
        try:
            self._conn: asyncpg.Connection = self.call(asyncpg.connect(dsn, timeout=10))
        except BaseException:
            self.close()
            raise

    def submit(self, coro: Coroutine[Any, Any, T]) -> Future[T]:
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        self._pending.add(future)
        future.add_done_callback(self._pending.discard)
        return future

    def call(self, coro: Coroutine[Any, Any, T], timeout: float = 60.0) -> T:
        return self.submit(coro).result(timeout)

    async def execute(self, sql: str) -> None:
        async with self._lock:
            await self._conn.execute(sql)

    async def fetch_column(self, sql: str) -> list[Any]:
        async with self._lock:
            return [row[0] for row in await self._conn.fetch(sql)]

    def close(self) -> None:
        for future in list(self._pending):  # background drops: a few ms each
            with contextlib.suppress(Exception):
                future.result(30)
        if hasattr(self, "_conn"):
            with contextlib.suppress(Exception):
                self.call(self._conn.close(timeout=5), timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self._loop.close()


class PostgresCluster:
    """A private throwaway cluster, or an existing server given by a DSN."""

    def __init__(self, *, external_dsn: str | None = None, bin_dir: Path | None = None) -> None:
        self.external_dsn = external_dsn
        self._bin_dir = bin_dir
        self.root: Path | None = None
        self.port: int | None = None
        self.process: subprocess.Popen[bytes] | None = None
        self._admin: _Admin | None = None
        self._names = itertools.count(1)
        self._base_dsn = ""

    @classmethod
    def from_environment(cls) -> PostgresCluster:
        return cls(external_dsn=os.environ.get(ENV_DSN) or None)

    @property
    def external(self) -> bool:
        return self.external_dsn is not None

    @property
    def data_dir(self) -> Path:
        assert self.root is not None, "not started"
        return self.root / "data"

    @property
    def log_path(self) -> Path:
        assert self.root is not None, "not started"
        return self.root / "postgres.log"

    # -- lifecycle ---------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> None:
        assert self._admin is None, "already started"
        if self.external_dsn is not None:
            parts = urlsplit(self.external_dsn)
            if parts.scheme not in ("postgres", "postgresql"):
                raise PostgresUnavailable(
                    f"{ENV_DSN} must be a postgresql:// URL, not {self.external_dsn!r}"
                )
            self._base_dsn = self.external_dsn
        else:
            self._start_local(timeout)
            self._base_dsn = f"postgresql://{SUPERUSER}@127.0.0.1:{self.port}/postgres"
        atexit.register(self.stop)
        try:
            self._admin = _Admin(self._base_dsn)
        except BaseException as exc:
            self.stop()
            if self.external:
                raise PostgresUnavailable(f"cannot connect to {ENV_DSN}: {exc}") from exc
            raise

    def stop(self) -> None:
        """Immediate shutdown (what `pg_ctl stop -m immediate` does) and remove the files."""
        atexit.unregister(self.stop)
        if self._admin is not None:
            self._admin.close()
            self._admin = None
        if self.process is not None:
            if self.process.poll() is None:
                self.process.send_signal(signal.SIGQUIT)
                try:
                    self.process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    self.process.kill()
                    self.process.wait(timeout=10)
            self.process = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None

    def _start_local(self, timeout: float) -> None:
        bin_dir = self._bin_dir or find_pg_bin()
        run_as: dict[str, Any] = {}
        base = Path(tempfile.gettempdir())
        if os.geteuid() == 0:
            user = _unprivileged_user()
            run_as = {"user": user.pw_uid, "group": user.pw_gid, "extra_groups": []}
            if not _world_traversable(base):
                base = Path("/tmp")
        _sweep_stale(base)
        self.root = Path(tempfile.mkdtemp(prefix=_DIR_PREFIX, dir=base))
        (self.root / "owner.pid").write_text(f"{os.getpid()}\n")
        (self.root / "socket").mkdir()
        if run_as:
            for path in (self.root, self.root / "socket"):
                os.chown(path, run_as["user"], run_as["group"])
        env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
        env.pop("PGDATA", None)
        initdb = subprocess.run(
            [
                str(bin_dir / "initdb"),
                "--pgdata",
                str(self.data_dir),
                "--auth=trust",
                f"--username={SUPERUSER}",
                "--encoding=UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ],
            cwd=self.root,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            **run_as,
        )
        if initdb.returncode != 0:
            output = initdb.stdout + initdb.stderr
            self.stop()
            raise RuntimeError(f"initdb failed ({initdb.returncode}):\n{output}")
        deadline = time.monotonic() + timeout
        for _ in range(5):  # another process may take the free port before postgres binds it
            self.port = _free_port()
            if self._launch(bin_dir, env, run_as, deadline):
                return
        self.stop()
        raise RuntimeError("postgres found no free port")

    def _launch(
        self, bin_dir: Path, env: dict[str, str], run_as: dict[str, Any], deadline: float
    ) -> bool:
        """Start postgres; True once it accepts connections, False if its port was taken."""
        assert self.root is not None
        settings = {
            "port": str(self.port),
            "listen_addresses": "127.0.0.1",
            "unix_socket_directories": str(self.root / "socket"),
            "fsync": "off",  # a throwaway cluster: no crash safety needed
            "full_page_writes": "off",
            "max_connections": "400",
            "shared_buffers": "64MB",
            "logging_collector": "off",
            "log_min_messages": "log",  # "ready to accept connections" is a LOG line
        }
        args = [str(bin_dir / "postgres"), "-D", str(self.data_dir)]
        for key, value in settings.items():
            args += ["-c", f"{key}={value}"]
        in_main_thread = threading.current_thread() is threading.main_thread()
        self.process = subprocess.Popen(
            args,
            cwd=self.root,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # Ctrl-C in the terminal goes to pytest, not here
            preexec_fn=(
                _die_with_parent(os.getpid())
                if in_main_thread and sys.platform == "linux"
                else None
            ),
            **run_as,
        )
        # The server says when it is ready (the same moment pg_ctl -w waits for); its
        # output is copied to the log file for as long as it runs.
        ready = threading.Event()
        threading.Thread(
            target=_copy_output, args=(self.process, self.log_path, ready), daemon=True
        ).start()
        if ready.wait(max(0.0, deadline - time.monotonic())):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=0)  # reaps it if the output ended with it
            if self.process.poll() is None:
                return True
            log_text = self.log_path.read_text(errors="replace")
            self.process = None
            if "could not bind" in log_text or "already in use" in log_text:
                self.log_path.write_text("")
                return False
            self.stop()
            raise RuntimeError(f"postgres exited at start:\n{log_text}")
        log_text = self.log_path.read_text(errors="replace")
        self.stop()
        raise RuntimeError(f"postgres did not become ready in time:\n{log_text}")

    # -- databases ---------------------------------------------------------------

    def dsn(self, database: str) -> str:
        """The DSN of `database` on this server (same user, host, port and options)."""
        assert self._base_dsn, "not started"
        parts = urlsplit(self._base_dsn)
        return urlunsplit(parts._replace(path="/" + database))

    def create_database(self, template: str = "template0") -> str:
        """Create a fresh, uniquely named empty database and return its DSN."""
        assert self._admin is not None, "not started"
        name = f"lineup_test_{os.getpid()}_{next(self._names)}_{secrets.token_hex(3)}"
        self._admin.call(
            self._admin.execute(
                f'CREATE DATABASE "{name}" TEMPLATE "{_ident(template)}" ENCODING \'UTF8\''
            )
        )
        return self.dsn(name)

    def drop_database(self, dsn_or_name: str, *, wait: bool = False) -> None:
        """Drop a database made by `create_database`, closing its connections.

        Without `wait` the drop runs in the background: it only frees disk space.
        """
        assert self._admin is not None, "not started"
        name = urlsplit(dsn_or_name).path.lstrip("/") if "://" in dsn_or_name else dsn_or_name
        future = self._admin.submit(
            self._admin.execute(f'DROP DATABASE IF EXISTS "{_ident(name)}" WITH (FORCE)')
        )
        if wait:
            future.result(60)

    def databases(self) -> list[str]:
        """Names of the databases on the server (for tests of this module)."""
        assert self._admin is not None, "not started"
        return self._admin.call(
            self._admin.fetch_column("SELECT datname FROM pg_database ORDER BY datname")
        )


def _copy_output(process: subprocess.Popen[bytes], log_path: Path, ready: threading.Event) -> None:
    """Copy the server's output to its log; set ``ready`` when it accepts connections,
    or when its output ends (it exited: the caller looks at why)."""
    assert process.stdout is not None
    with process.stdout, log_path.open("ab") as log:
        for line in process.stdout:
            log.write(line)
            log.flush()
            if b"ready to accept connections" in line:
                ready.set()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    ready.set()


def _ident(name: str) -> str:
    if not re.fullmatch(r"[A-Za-z0-9_]+", name):
        raise ValueError(f"not a plain database name: {name!r}")
    return name


def _unprivileged_user() -> pwd.struct_passwd:
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            return pwd.getpwnam(name)
    raise PostgresUnavailable(
        "running as root, and PostgreSQL refuses root: create a 'postgres' user, or "
        + _HOW_TO_GET_ONE
    )


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One PostgreSQL server for the whole session (private unless $LINEUP_TEST_POSTGRES)."""
    cluster = PostgresCluster.from_environment()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def postgres_dsn(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """The DSN of a new, empty database of this test's own, dropped afterwards."""
    dsn = postgres_cluster.create_database()
    yield dsn
    postgres_cluster.drop_database(dsn)
