"""Both storage engines in-process, with the same tests: sequence numbers,
idempotency, tokens, principals, migrations; SQLite's group commit; PostgreSQL with
writers in two "processes" (two storages on one database)."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from lineup.server import auth
from lineup.server.storage import (
    AlreadyExists,
    AppendRequest,
    AppendStatus,
    PostgresStorage,
    Principal,
    SQLiteStorage,
    StorageError,
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


Engine = SQLiteStorage | PostgresStorage


def make_storage(kind: str, tmp_path: Path, clock: MovableClock, dsn: str) -> Engine:
    if kind == "sqlite":
        return SQLiteStorage(tmp_path / "db.sqlite3", clock=clock)
    return PostgresStorage(dsn, clock=clock, pool_size=4)


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def dsn(engine: str, request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("postgres_dsn")) if engine == "postgres" else ""


@pytest.fixture
async def storage(
    engine: str, tmp_path: Path, clock: MovableClock, dsn: str
) -> AsyncIterator[Engine]:
    store = make_storage(engine, tmp_path, clock, dsn)
    await store.open()
    await store.create_user("u1", "alice", auth.hash_password("pw"))
    await store.create_agent("a1", "agent", auth.secret_hash("lak_k"))
    await store.create_conversation("c1", "u1", "a1", "")
    yield store
    await store.close()


class Heard:
    """What a storage's commit listeners hear; ``until(n)`` waits for ``n`` of them."""

    def __init__(self, storage: Engine) -> None:
        self.items: list[StoredEnvelope] = []
        self._enough = asyncio.Event()
        self._wanted = 0
        storage.on_commit(self._add)

    def _add(self, items: Sequence[StoredEnvelope]) -> None:
        self.items.extend(items)
        if len(self.items) >= self._wanted:
            self._enough.set()

    async def until(self, count: int) -> list[StoredEnvelope]:
        self._wanted = count
        if len(self.items) < count:
            self._enough.clear()
            async with asyncio.timeout(10):
                await self._enough.wait()
        return self.items


def request(n: int, conversation: str = "c1", body: bytes | None = None) -> AppendRequest:
    return AppendRequest(
        conversation, f"e{n}", "lineup.v1.message", "agent", body or b'{"n":%d}' % n
    )


async def test_concurrent_appends_share_commits_and_get_gap_free_seqs(
    storage: Engine,
) -> None:
    heard = Heard(storage)
    before = storage.commits if isinstance(storage, SQLiteStorage) else 0
    outcomes = await asyncio.gather(*[storage.append(request(n)) for n in range(500)])
    assert [o.seq for o in outcomes] == list(range(1, 501))
    assert {o.status for o in outcomes} == {AppendStatus.STORED}
    if isinstance(storage, SQLiteStorage):
        assert storage.commits - before < 100, "group commit did not group"
    assert [h.seq for h in await heard.until(500)] == list(range(1, 501))


async def test_duplicates_and_conflicts_inside_one_batch(storage: Engine) -> None:
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


async def test_append_to_a_missing_conversation(storage: Engine) -> None:
    outcome = await storage.append(request(1, conversation="nope"))
    assert outcome.status is AppendStatus.NO_CONVERSATION
    assert await storage.read_since("nope", 0, 10) == []


async def test_sequence_continues_after_reopen(
    engine: str, tmp_path: Path, clock: MovableClock, dsn: str, storage: Engine
) -> None:
    for n in range(3):
        await storage.append(request(n))
    await storage.close()
    reopened = make_storage(engine, tmp_path, clock, dsn)
    await reopened.open()
    try:
        assert (await reopened.append(request(10))).seq == 4
        assert (await reopened.append(request(0))).status is AppendStatus.DUPLICATE
        assert [e.seq for e in await reopened.read_since("c1", 0, 100)] == [1, 2, 3, 4]
    finally:
        await reopened.close()
    await storage.open()  # the fixture closes it again


async def test_tokens_expire_and_revoke(storage: Engine, clock: MovableClock) -> None:
    await storage.add_token("h1", "u1", clock.now + timedelta(hours=1))
    assert await storage.user_for_token("h1", clock.now) == "u1"
    clock.now += timedelta(hours=2)
    assert await storage.user_for_token("h1", clock.now) is None
    await storage.add_token("h2", "u1", clock.now + timedelta(hours=1))
    assert await storage.revoke_token("h2") is True
    assert await storage.revoke_token("h2") is False
    assert await storage.user_for_token("h2", clock.now) is None


async def test_duplicate_principals_are_refused(storage: Engine) -> None:
    with pytest.raises(AlreadyExists):
        await storage.create_user("u2", "alice", "x")
    with pytest.raises(AlreadyExists):
        await storage.create_agent("a1", "again", "other-hash")
    assert await storage.principal_exists(Principal("agent", "a1"))
    assert not await storage.principal_exists(Principal("user", "u2"))


async def test_postgres_schema_version_is_recorded_and_a_newer_database_is_refused(
    postgres_dsn: str,
) -> None:
    first, second = PostgresStorage(postgres_dsn), PostgresStorage(postgres_dsn)
    await asyncio.gather(first.open(), second.open())  # two processes starting together
    assert (first.schema_version, second.schema_version) == (1, 1)
    await second.close()
    assert first._pool is not None
    await first._pool.execute(
        "INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'x', now())"
    )
    await first.close()
    newer = PostgresStorage(postgres_dsn)
    with pytest.raises(StorageError, match="newer than this LineUp"):
        await newer.open()


async def test_postgres_writers_in_two_processes_get_gap_free_numbers_and_hear_each_other(
    postgres_dsn: str, clock: MovableClock
) -> None:
    a = PostgresStorage(postgres_dsn, clock=clock)
    b = PostgresStorage(postgres_dsn, clock=clock)
    await a.open()
    await b.open()
    try:
        await a.create_user("u1", "alice", "h")
        await a.create_agent("a1", "agent", "k")
        announced = asyncio.Queue[str]()
        b.on_conversation(lambda record: announced.put_nowait(record.id))
        await a.create_conversation("c1", "u1", "a1", "")
        heard = Heard(b)
        big = b"x" * 9000  # too large for its notification: read back
        sends = [
            (a if n % 2 else b).append(request(n, body=big if n % 7 == 0 else None))
            for n in range(300)
        ]
        outcomes = await asyncio.gather(*sends)
        assert sorted(o.seq for o in outcomes) == list(range(1, 301))
        items = await heard.until(300)
        assert [h.seq for h in items] == list(range(1, 301))  # in order, each once
        stored = {e.seq: e.body for e in await a.read_since("c1", 0, 1000)}
        assert all(stored[h.seq] == h.body for h in items)
        async with asyncio.timeout(10):
            assert await announced.get() == "c1"
        assert announced.empty()
    finally:
        await a.close()
        await b.close()


async def test_sqlite_schema_version_is_recorded_and_a_newer_database_is_refused(
    tmp_path: Path,
) -> None:
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
