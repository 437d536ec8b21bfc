"""The unit of work (``lineup.db.Txn``) on a real SQLite file: what a job registers
runs once, in commit order, after the commit and before its caller resumes; nothing
of a job that rolled back runs."""

from __future__ import annotations

import logging
import sqlite3
from importlib import resources
from pathlib import Path

import pytest

from lineup.db import SQLiteDatabase, StorageError, Txn
from lineup.runtime import migrations as runtime_migrations


@pytest.fixture
async def db(tmp_path: Path):  # type: ignore[no-untyped-def]
    database = SQLiteDatabase(tmp_path / "t.sqlite3", resources.files(runtime_migrations))
    await database.open()
    yield database
    await database.close()


def _note(txn: Txn, seen: list[str], text: str) -> str:
    txn.execute(
        "INSERT INTO audit (at, actor, action, subject, outcome) VALUES ('t', 'x', ?, 's', 'o')",
        (text,),
    )
    txn.call_after(seen.append, text)
    return text


def _fail_after_note(txn: Txn, seen: list[str], text: str) -> None:
    _note(txn, seen, text)
    raise ValueError("refused")


def _audited(conn: sqlite3.Connection) -> list[str]:
    return [r[0] for r in conn.execute("SELECT action FROM audit ORDER BY id")]


async def test_effects_run_after_the_commit_in_order_before_the_caller_resumes(
    db: SQLiteDatabase,
) -> None:
    seen: list[str] = []
    first = db.submit(_note, seen, "a")
    second = db.submit(_note, seen, "b")
    assert seen == []  # nothing before the commit
    assert await first == "a"
    assert seen == ["a", "b"]  # the whole batch committed: both ran, in order
    assert await second == "b"
    assert await db.read(_audited) == ["a", "b"]


async def test_a_job_that_fails_rolls_back_and_nothing_of_it_follows(db: SQLiteDatabase) -> None:
    seen: list[str] = []
    kept = db.submit(_note, seen, "kept")
    failed = db.submit(_fail_after_note, seen, "undone")
    assert await kept == "kept"
    with pytest.raises(ValueError, match="refused"):
        await failed
    assert seen == ["kept"]
    assert await db.read(_audited) == ["kept"]


async def test_a_job_without_a_savepoint_that_fails_drops_its_effects(db: SQLiteDatabase) -> None:
    seen: list[str] = []
    with pytest.raises(ValueError, match="refused"):
        await db.submit(_fail_after_note, seen, "undone", savepoint=False)
    assert seen == []


async def test_a_failed_commit_drops_every_effect_of_the_batch(db: SQLiteDatabase) -> None:
    seen: list[str] = []

    def deferred_violation(txn: Txn, seen: list[str]) -> None:
        # A deferred foreign key fails only at COMMIT: the whole batch rolls back.
        txn.execute("PRAGMA defer_foreign_keys = ON")
        txn.execute(
            "INSERT INTO timeline (conversation_id, envelope_id, type, sender_kind, body,"
            " state, created_at)"
            " VALUES ('no-such-conversation', 'e', 't', 'user', x'', 'sending', 't')"
        )
        txn.call_after(seen.append, "never")

    with pytest.raises(StorageError, match="commit failed"):
        await db.submit(deferred_violation, seen)
    assert seen == []


async def test_a_failing_effect_is_logged_by_type_and_the_next_ones_still_run(
    db: SQLiteDatabase, caplog: pytest.LogCaptureFixture
) -> None:
    seen: list[str] = []

    def boom() -> None:
        raise RuntimeError("CANARY-effect-message")

    def job(txn: Txn) -> None:
        txn.call_after(boom)
        txn.call_after(seen.append, "after")

    with caplog.at_level(logging.ERROR, logger="lineup.db"):
        await db.submit(job)
    assert seen == ["after"]
    (record,) = [r for r in caplog.records if r.getMessage() == "after-commit callback failed"]
    assert record.__dict__["error"] == "RuntimeError"
    assert "CANARY-effect-message" not in caplog.text
