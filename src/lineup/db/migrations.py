"""Apply numbered ``NNNN_name.sql`` files in order and record the schema version."""

from __future__ import annotations

import re
import sqlite3
from importlib.resources.abc import Traversable

_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def migration_files(folder: Traversable) -> list[tuple[int, str]]:
    """``(version, sql)`` for every migration in ``folder``, in order, numbered 1..n."""
    found: list[tuple[int, str]] = []
    for entry in folder.iterdir():
        match = _NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.read_text(encoding="utf-8")))
    found.sort()
    versions = [v for v, _ in found]
    if versions != list(range(1, len(versions) + 1)):
        raise RuntimeError(f"migrations in {folder} are not numbered 1..n without gaps: {versions}")
    return found


def migrate_sqlite(conn: sqlite3.Connection, folder: Traversable) -> int:
    """Bring the database to the newest schema; return the resulting version."""
    conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
    row = conn.execute("SELECT MAX(version) FROM schema_version").fetchone()
    current = row[0] or 0
    migrations = migration_files(folder)
    if current > len(migrations):
        raise RuntimeError(
            f"database schema version {current} is newer than this LineUp ({len(migrations)})"
        )
    for version, sql in migrations[current:]:
        conn.execute("BEGIN IMMEDIATE")
        try:
            for statement in _statements(sql):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    return len(migrations)


def _statements(sql: str) -> list[str]:
    """The complete statements of a migration file, in order, as SQLite's own tokenizer
    sees them (``sqlite3.complete_statement``): a ``;`` in a string, a comment or a
    trigger's ``BEGIN ... END`` body does not end a statement. ``executescript`` would
    split the same way but commits first; here the whole file is one transaction."""
    statements: list[str] = []
    pending = ""
    for piece in sql.split(";"):
        pending += piece + ";"
        if sqlite3.complete_statement(pending):
            statements.append(pending.strip())
            pending = ""
    rest = pending[:-1]  # the ``;`` added after the last piece
    if not _only_comments(rest):
        raise RuntimeError(f"a migration ends inside a statement: {rest.strip()[:60]!r}")
    return [s for s in statements if not _only_comments(s)]


def _only_comments(text: str) -> bool:
    """``text`` holds nothing but whitespace, ``--`` and ``/* */`` comments and ``;``."""
    body = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    body = re.sub(r"--[^\n]*", "", body)
    return body.replace(";", "").strip() == ""
