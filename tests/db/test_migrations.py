"""The SQLite migration runner takes any valid SQL file: statements are split the way
SQLite's own tokenizer ends them, so a ``;`` or ``--`` in a string, a comment or a
trigger body stays where it is, and a file is applied whole or not at all."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from lineup.db import migrate_sqlite

TRICKY = """-- a header; with a semicolon
CREATE TABLE notes (
    body TEXT NOT NULL DEFAULT 'a;b', -- a default with a ;
    seen TEXT
); /* a block; comment */
INSERT INTO notes (body) VALUES ('--not a comment;'), ('it''s; fine');
CREATE TRIGGER notes_seen AFTER INSERT ON notes BEGIN
    UPDATE notes SET seen = 'seen;' WHERE rowid = NEW.rowid;
END;
INSERT INTO notes (body) VALUES ('after the trigger');
"""


def _folder(tmp_path: Path, *files: str) -> Path:
    folder = tmp_path / "migrations"
    folder.mkdir()
    for number, sql in enumerate(files, start=1):
        (folder / f"{number:04d}_step.sql").write_text(sql, encoding="utf-8")
    return folder


def test_strings_comments_and_trigger_bodies_keep_their_semicolons(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)
    assert migrate_sqlite(conn, _folder(tmp_path, TRICKY)) == 1
    rows = conn.execute("SELECT body, seen FROM notes ORDER BY rowid").fetchall()
    assert rows == [
        ("--not a comment;", None),
        ("it's; fine", None),
        ("after the trigger", "seen;"),
    ]
    default = conn.execute("SELECT dflt_value FROM pragma_table_info('notes') WHERE name='body'")
    assert default.fetchone() == ("'a;b'",)


def test_a_file_that_ends_inside_a_statement_changes_nothing(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)
    folder = _folder(
        tmp_path, "CREATE TABLE kept (a);", "CREATE TABLE half (a); INSERT INTO half VALUES ('open"
    )
    with pytest.raises(RuntimeError, match="ends inside a statement"):
        migrate_sqlite(conn, folder)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"schema_version", "kept"}  # the second file left nothing behind
    assert conn.execute("SELECT MAX(version) FROM schema_version").fetchone() == (1,)


def test_a_syntax_error_rolls_the_whole_file_back(tmp_path: Path) -> None:
    conn = sqlite3.connect(tmp_path / "db.sqlite", isolation_level=None)
    folder = _folder(tmp_path, "CREATE TABLE half (a); CREATE TABLE x (;")
    with pytest.raises(sqlite3.OperationalError):
        migrate_sqlite(conn, folder)
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert tables == {"schema_version"}
