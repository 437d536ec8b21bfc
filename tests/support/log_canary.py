"""Log hygiene for the whole suite (issue 11): canaries that must never reach a log
line, an AppServer's log file or a Runtime's audit rows.

Logs and audit rows hold ids, types, codes, sizes and counts only (docs/security.md,
"Logs"). ``Guard`` checks that for every test:

- A handler on the root logger records every line exactly as ``lineup.logs``
  formats it (``KeyValueFormatter``: message, ``extra`` fields, traceback). Levels are
  set as ``lineup --log-level DEBUG`` sets them (root at DEBUG, ``quiet_libraries``),
  so DEBUG lines are made and checked too.
- What must never appear (a *canary*):
  - strings tests plant with ``plant()`` (``CANARY-<hex>``) and secrets they
    ``register()``;
  - every value ``secrets.token_urlsafe`` returns in this process (user tokens, agent
    keys, session cookies, one-time link codes, upload tokens, generated passwords):
    the guard wraps it for the session and registers each result;
  - the suite's password (``correct horse battery``);
  - secret *shapes*, whoever made them (the AppServer subprocess mints user tokens the
    test process never sees): ``lut_``/``lak_`` tokens, a ``Bearer`` value, a
    ``lineup_session`` cookie value, a ``?code=`` link code.
- Identities (issue 22): the usernames, user ids and agent ids of every principal made
  through ``AppServerProcess.add_user``/``add_agent`` or ``login``, and the ids tests
  ``identify()`` (conversation ids), as whole words: log lines name them only as keyed
  hashes (``lineup.logs.pseudonym``). Audit rows may keep them.
- After each test, the lines logged since it began, and what every AppServer started
  through ``AppServerProcess.start`` appended to its log file since, must hold no
  canary: a leak fails that test (an error at its teardown) and names the line.
- At the end of the session: lines logged between tests, the AppServer logs' last
  lines, and every ``audit`` table in a SQLite file under the session's temporary
  directory (every Runtime store a test made), all columns; a leak fails the session.
"""

from __future__ import annotations

import logging
import re
import secrets
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from lineup.logs import KeyValueFormatter, quiet_libraries
from tests.support.appserver import AppServerProcess

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"  # lineup.logs.configure's
PASSWORD = "correct horse battery"  # the suite's test password
MIN_SECRET_CHARS = 12  # shorter random strings could match by chance
SHAPES = re.compile(
    r"(?:lut|lak)_[A-Za-z0-9_-]{16,}"  # a user token or an agent API key
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]{8,}"  # an Authorization header's value
    r"|lineup_session=[A-Za-z0-9_-]{16,}"  # a Web Host session cookie
    r"|[?&]code=[A-Za-z0-9_-]{16,}"  # a one-time login link
)
NOISY = ("websockets", "httpx", "httpcore", "uvicorn.access", "uvicorn.error")  # quiet_libraries'

_canaries: set[str] = {PASSWORD}
_identities: set[str] = set()
_canaries_lock = threading.Lock()
MIN_IDENTITY_CHARS = 5  # shorter names ("demo" is a logger's too) could match by chance
_WORD = "A-Za-z0-9_-"  # an identity counts as a whole word ('.' and ':' separate)


def identify(identity: str) -> str:
    """Make a user, agent or conversation id or a username an identity no log line may
    hold (audit rows may); return it."""
    if len(identity) >= MIN_IDENTITY_CHARS:
        with _canaries_lock:
            _identities.add(identity)
    return identity


def identities_in(text: str) -> list[str]:
    with _canaries_lock:
        identities = list(_identities)
    return [
        i
        for i in identities
        if i in text and re.search(rf"(?<![{_WORD}]){re.escape(i)}(?![{_WORD}])", text)
    ]


def plant(label: str = "") -> str:
    """A fresh canary (``CANARY-<label>-<hex>``) that no log line or audit row may hold."""
    canary = f"CANARY-{label + '-' if label else ''}{secrets.token_hex(8)}"
    return register(canary)


def register(secret: str) -> str:
    """Make ``secret`` (a token, key, password, cookie ...) a canary; return it."""
    if len(secret) >= MIN_SECRET_CHARS or secret.startswith("CANARY-"):
        with _canaries_lock:
            _canaries.add(secret)
    return secret


def leaks_in(text: str, *, identities: bool = True) -> list[str]:
    """The canaries and secret shapes (and, with ``identities``, the identities)
    ``text`` holds (empty: clean)."""
    with _canaries_lock:
        canaries = list(_canaries)
    found = [c for c in canaries if c in text]
    found += [m for m in SHAPES.findall(text) if not any(m in c or c in m for c in found)]
    if identities:
        found += identities_in(text)
    return found


def leaking_lines(lines: Iterable[str], *, identities: bool = True) -> list[str]:
    """The lines that hold a canary, each followed by what it leaks."""
    lines = list(lines)
    if not lines or not leaks_in("\n".join(lines), identities=identities):  # the common case
        return []
    return [
        f"{line!r}\n    leaks {leaks_in(line, identities=identities)}"
        for line in lines
        if leaks_in(line, identities=identities)
    ]


def audit_rows(database: Path) -> list[tuple[Any, ...]]:
    """Every row of ``database``'s ``audit`` table, all columns (none: no table)."""
    conn = sqlite3.connect(database)  # nobody has it open any more: recovers a WAL
    try:
        tables = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        if ("audit",) not in tables:
            return []
        return list(conn.execute("SELECT * FROM audit ORDER BY id"))
    finally:
        conn.close()


def leaking_audit_rows(database: Path) -> list[str]:
    rows = map(repr, audit_rows(database))  # the Runtime's own record: ids may stay
    return [f"{database}: {line}" for line in leaking_lines(rows, identities=False)]


class Recorder(logging.Handler):
    """Keeps every record as one line formatted like ``lineup.logs`` formats it."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(KeyValueFormatter(FORMAT))
        self._lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record)
        except Exception:  # a record that cannot be formatted is its own bug
            self.handleError(record)
            return
        self._lines.append(line)

    def take(self) -> list[str]:
        """The lines recorded since the last ``take``."""
        assert self.lock is not None  # made by Handler.__init__
        with self.lock:
            lines, self._lines = self._lines, []
        return lines


@dataclass
class LogFiles:
    """AppServer log files, read on from where the last look stopped (whole lines)."""

    offsets: dict[Path, int] = field(default_factory=dict)

    def watch(self, path: Path) -> None:
        self.offsets.setdefault(path, 0)

    def new_lines(self) -> list[str]:
        lines: list[str] = []
        for path, offset in self.offsets.items():
            if not path.exists():
                continue
            with path.open("rb") as log:
                log.seek(offset)
                data = log.read()
            complete = data[: data.rfind(b"\n") + 1]
            self.offsets[path] = offset + len(complete)
            text = complete.decode("utf-8", errors="replace")
            lines += [f"{path}: {line}" for line in text.splitlines()]
        return lines


@dataclass
class Guard:
    recorder: Recorder
    files: LogFiles
    temp_root: Path
    between_tests: list[str] = field(default_factory=list)

    def lines_since_last_look(self) -> list[str]:
        """In-process lines and AppServer log lines since the last look."""
        return self.recorder.take() + self.files.new_lines()

    @contextmanager
    def test(self) -> Iterator[None]:
        """Around one test: fail it if what it logged holds a canary."""
        self.between_tests += leaking_lines(self.lines_since_last_look())
        yield
        found = leaking_lines(self.lines_since_last_look())
        if found:
            pytest.fail(_report("log lines hold canaries", found), pytrace=False)

    def finish(self) -> None:
        """At the end of the session: lines between tests, log tails, audit tables."""
        found = self.between_tests + leaking_lines(self.lines_since_last_look())
        for database in sorted(self.temp_root.rglob("*.sqlite3")):
            found += leaking_audit_rows(database)
        if found:
            pytest.fail(_report("logs or audit rows hold canaries", found), pytrace=False)


def _report(what: str, found: list[str]) -> str:
    shown = "\n".join(found[:20])
    more = f"\n... and {len(found) - 20} more" if len(found) > 20 else ""
    return f"log hygiene (docs/security.md, Logs): {what}:\n{shown}{more}"


@contextmanager
def guard(temp_root: Path) -> Iterator[Guard]:
    """Install the guard for the session (see the module docstring); check at exit."""
    root = logging.getLogger()
    saved = {name: logging.getLogger(name).level for name in ("", *NOISY)}
    recorder = Recorder()
    files = LogFiles()
    token_urlsafe = secrets.token_urlsafe
    start = AppServerProcess.start
    add_user, add_agent = AppServerProcess.add_user, AppServerProcess.add_agent

    def registering_token_urlsafe(nbytes: int | None = None) -> str:
        return register(token_urlsafe(nbytes))

    def watching_start(self: AppServerProcess, *args: Any, **kwargs: Any) -> None:
        files.watch(self.log_path)
        start(self, *args, **kwargs)

    def identifying_add_user(self: AppServerProcess, username: str, *args: Any) -> str:
        return identify(add_user(self, identify(username), *args))

    def identifying_add_agent(self: AppServerProcess, agent_id: str) -> str:
        return add_agent(self, identify(agent_id))

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(secrets, "token_urlsafe", registering_token_urlsafe)
        patch.setattr(AppServerProcess, "start", watching_start)
        patch.setattr(AppServerProcess, "add_user", identifying_add_user)
        patch.setattr(AppServerProcess, "add_agent", identifying_add_agent)
        root.addHandler(recorder)
        root.setLevel(logging.DEBUG)
        quiet_libraries()
        made = Guard(recorder, files, temp_root)
        try:
            yield made
        finally:
            root.removeHandler(recorder)
            for name, level in saved.items():
                logging.getLogger(name).setLevel(level)
        made.finish()
