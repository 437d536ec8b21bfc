"""Timeline pages: every row exactly once, in the conversation's order, by row key.

The store is real (a SQLite file); rows are written as the Runtime writes them
(received rows with their ``seq`` in any arrival order, rows not yet sent with none),
then paged back from the newest, forward from the oldest, and both ways from any row.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.runtime import RuntimeStore
from lineup.runtime.timeline_pages import page

_TEMPLATE: dict[str, bytes] = {}


def _schema() -> bytes:
    """The Runtime's own schema, as its store's migrations make it (made once)."""
    if "db" not in _TEMPLATE:

        async def make(path: Path) -> None:
            store = RuntimeStore(path)
            await store.open()
            await store.close()

        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / "r.sqlite3"
            asyncio.run(make(path))
            source = sqlite3.connect(path)
            source.execute("PRAGMA journal_mode = DELETE")  # WAL cannot live in memory
            _TEMPLATE["db"] = source.serialize()
            source.close()
    return _TEMPLATE["db"]


def _database(rows: list[int | None]) -> sqlite3.Connection:
    """A copy of the Runtime's store holding ``rows`` (their seqs, in the order they
    arrived; ``None``: not sent yet), and as many of another conversation's."""
    conn = sqlite3.connect(":memory:")
    conn.deserialize(_schema())
    for conversation in ("c", "d"):
        conn.execute(
            "INSERT INTO conversations (id, agent_id, title, cursor, created_at)"
            " VALUES (?, 'a', '', 0, '2026-12-02T00:00:00Z')",
            (conversation,),
        )
    for n, seq in enumerate(rows):
        for conversation in ("c", "d"):  # another conversation's rows interleave
            conn.execute(
                "INSERT INTO timeline (conversation_id, envelope_id, seq, type, sender_kind,"
                " body, state, created_at) VALUES (?, ?, ?, 'lineup.v1.message', 'agent',"
                " X'', ?, '2026-12-02T00:00:00Z')",
                (conversation, f"e{n}", seq, "received" if seq is not None else "sending"),
            )
    return conn


def _order(conn: sqlite3.Connection) -> list[int]:
    rows = conn.execute("SELECT id, seq FROM timeline WHERE conversation_id = 'c'").fetchall()
    return [key for key, seq in sorted(rows, key=lambda r: (r[1] is None, r[1] or 0, r[0]))]


# Distinct seqs in any arrival order, with unsent rows anywhere among them.
timelines = st.lists(st.one_of(st.none(), st.integers(1, 10_000)), max_size=60).map(
    lambda seqs: [s for i, s in enumerate(seqs) if s is None or s not in [t for t in seqs[:i] if t]]
)


@settings(max_examples=150, deadline=None)
@given(rows=timelines, limit=st.integers(1, 8))
def test_paging_back_from_the_newest_returns_every_row_once_in_order(
    rows: list[int | None], limit: int
) -> None:
    conn = _database(rows)
    expected = _order(conn)
    found = page(conn, "c", None, None, limit)
    assert found is not None
    seen: list[int] = []
    assert found.newer is False
    while True:
        keys = [i.id for i in found.items]
        assert len(keys) == min(limit, len(expected) - len(seen))
        seen = keys + seen
        assert found.older == (len(seen) < len(expected))
        if not found.older:
            break
        found = page(conn, "c", found.items[0].id, None, limit)
        assert found is not None and found.newer
    assert seen == expected


@settings(max_examples=150, deadline=None)
@given(rows=timelines.filter(bool), limit=st.integers(1, 8), data=st.data())
def test_from_any_row_both_ways_meet_exactly(
    rows: list[int | None], limit: int, data: st.DataObject
) -> None:
    conn = _database(rows)
    expected = _order(conn)
    at = data.draw(st.sampled_from(expected))
    older: list[int] = []
    key = at
    while True:
        found = page(conn, "c", key, None, limit)
        assert found is not None
        older = [i.id for i in found.items] + older
        if not found.older:
            break
        key = found.items[0].id
    newer: list[int] = []
    key = at
    while True:
        found = page(conn, "c", None, key, limit)
        assert found is not None
        newer += [i.id for i in found.items]
        if not found.newer:
            break
        key = found.items[-1].id
    assert [*older, at, *newer] == expected


def test_a_key_of_another_conversation_or_none_at_all_is_not_a_page() -> None:
    conn = _database([1, 2, None])
    other = conn.execute("SELECT id FROM timeline WHERE conversation_id = 'd'").fetchone()[0]
    assert page(conn, "c", other, None, 5) is None
    assert page(conn, "c", None, 10_000, 5) is None
    assert page(conn, "nope", 1, None, 5) is None
    empty = page(conn, "nope", None, None, 5)
    assert empty is not None and empty.items == [] and not empty.older and not empty.newer


def test_a_page_is_asked_for_one_way() -> None:
    conn = _database([1])
    for before, after, limit in ((1, 1, 5), (None, None, 0)):
        try:
            page(conn, "c", before, after, limit)
        except ValueError:
            continue
        raise AssertionError(f"accepted before={before} after={after} limit={limit}")


def test_the_store_pages_its_own_file() -> None:
    """Through the store's reader, on a real file: the same pages."""

    async def run(directory: Path) -> None:
        store = RuntimeStore(directory / "r.sqlite3")
        await store.open()
        await store.upsert_conversation("c", "a", "")
        for n in range(7):
            await store.queue_envelope("c", f"m{n}", "lineup.v1.message", "user", b"{}")
        newest = await store.page("c", limit=3)
        assert newest is not None and newest.older and not newest.newer
        older = await store.page("c", before=newest.items[0].id, limit=10)
        assert older is not None and not older.older and older.newer
        keys = [i.id for i in older.items + newest.items]
        assert keys == sorted(keys) and len(keys) == 7
        assert [i.id for i in await store.timeline("c", limit=3)] == keys[-3:]
        await store.close()

    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(run(Path(directory)))
