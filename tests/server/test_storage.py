"""The SQLite engine in-process: group commit, sequence numbers, tokens, migrations."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lineup.server import auth
from lineup.server.storage import (
    AlreadyExists,
    AppendRequest,
    AppendStatus,
    Principal,
    SQLiteStorage,
    StoredEnvelope,
)


class MovableClock:
    def __init__(self) -> None:
        self.now = datetime(2026, 11, 1, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock()


@pytest.fixture
async def storage(tmp_path: Path, clock: MovableClock) -> AsyncIterator[SQLiteStorage]:
    store = SQLiteStorage(tmp_path / "db.sqlite3", clock=clock)
    await store.open()
    await store.create_user("u1", "alice", auth.hash_password("pw"))
    await store.create_agent("a1", "agent", auth.secret_hash("lak_k"))
    await store.create_conversation("c1", "u1", "a1", "")
    yield store
    await store.close()


def request(n: int, conversation: str = "c1", body: bytes | None = None) -> AppendRequest:
    return AppendRequest(
        conversation, f"e{n}", "lineup.v1.message", "agent", body or b'{"n":%d}' % n
    )


async def test_concurrent_appends_share_commits_and_get_gap_free_seqs(
    storage: SQLiteStorage,
) -> None:
    heard: list[StoredEnvelope] = []
    storage.on_commit(heard.extend)
    before = storage.commits
    outcomes = await asyncio.gather(*[storage.append(request(n)) for n in range(500)])
    assert [o.seq for o in outcomes] == list(range(1, 501))
    assert {o.status for o in outcomes} == {AppendStatus.STORED}
    assert storage.commits - before < 100, "group commit did not group"
    assert [h.seq for h in heard] == list(range(1, 501))


async def test_duplicates_and_conflicts_inside_one_batch(storage: SQLiteStorage) -> None:
    outcomes = await asyncio.gather(
        storage.append(request(1)),
        storage.append(request(1)),
        storage.append(request(1, body=b"other")),
        storage.append(request(2)),
    )
    assert [(o.status, o.seq) for o in outcomes] == [
        (AppendStatus.STORED, 1),
        (AppendStatus.DUPLICATE, 1),
        (AppendStatus.CONFLICT, 1),
        (AppendStatus.STORED, 2),
    ]


async def test_append_to_a_missing_conversation(storage: SQLiteStorage) -> None:
    outcome = await storage.append(request(1, conversation="nope"))
    assert outcome.status is AppendStatus.NO_CONVERSATION
    assert await storage.read_since("nope", 0, 10) == []


async def test_sequence_continues_after_reopen(tmp_path: Path, storage: SQLiteStorage) -> None:
    for n in range(3):
        await storage.append(request(n))
    await storage.close()
    reopened = SQLiteStorage(storage.path)
    await reopened.open()
    try:
        assert (await reopened.append(request(10))).seq == 4
        assert (await reopened.append(request(0))).status is AppendStatus.DUPLICATE
        assert [e.seq for e in await reopened.read_since("c1", 0, 100)] == [1, 2, 3, 4]
    finally:
        await reopened.close()
    await storage.open()  # the fixture closes it again


async def test_tokens_expire_and_revoke(storage: SQLiteStorage, clock: MovableClock) -> None:
    await storage.add_token("h1", "u1", clock.now + timedelta(hours=1))
    assert await storage.user_for_token("h1", clock.now) == "u1"
    clock.now += timedelta(hours=2)
    assert await storage.user_for_token("h1", clock.now) is None
    await storage.add_token("h2", "u1", clock.now + timedelta(hours=1))
    assert await storage.revoke_token("h2") is True
    assert await storage.revoke_token("h2") is False
    assert await storage.user_for_token("h2", clock.now) is None


async def test_duplicate_principals_are_refused(storage: SQLiteStorage) -> None:
    with pytest.raises(AlreadyExists):
        await storage.create_user("u2", "alice", "x")
    with pytest.raises(AlreadyExists):
        await storage.create_agent("a1", "again", "other-hash")
    assert await storage.principal_exists(Principal("agent", "a1"))
    assert not await storage.principal_exists(Principal("user", "u2"))


async def test_schema_version_is_recorded_and_a_newer_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "db.sqlite3"
    store = SQLiteStorage(path)
    await store.open()
    assert store.schema_version == 1
    await store.close()
    with sqlite3.connect(path) as conn:
        conn.execute("INSERT INTO schema_version (version) VALUES (99)")
    newer = SQLiteStorage(path)
    with pytest.raises(Exception, match="newer than this LineUp"):
        await newer.open()
