"""Pages of a conversation's timeline, by a key every row has and that never moves.

The conversation's order is the AppServer's: rows it has stored, by ``seq``; then
the rows still on their way to it (``seq`` is not known yet), in the order they were
written. Within that order a page starts or ends at a row's ``key`` (its ``id`` in
``timeline``, given when the row is written and never changed), so paging back or
forward from any row a tab holds returns every other row exactly once, whatever
kinds are mixed in (hidden rows included: the host decides what each one shows).

Each direction is at most two index range scans (``timeline_by_seq`` for stored
rows, the primary key for unsent ones), never a sort of the whole conversation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .records import TimelineItem
from .tables import TIMELINE_SELECT, timeline_item
from .txn import Sql

__all__ = ["TimelinePage", "page"]


@dataclass(frozen=True, slots=True)
class TimelinePage:
    """Rows in the conversation's order, and whether there are more on each side."""

    items: list[TimelineItem]
    older: bool
    """Rows come before ``items[0]`` (or before the key asked for)."""
    newer: bool
    """Rows come after ``items[-1]`` (or after the key asked for)."""


_SYNCED = f"{TIMELINE_SELECT} WHERE t.conversation_id = ? AND t.seq IS NOT NULL"
_UNSENT = f"{TIMELINE_SELECT} WHERE t.conversation_id = ? AND t.seq IS NULL"
_NO_KEY = 2**63 - 1


def page(
    conn: Sql,
    conversation_id: str,
    before: int | None,
    after: int | None,
    limit: int,
) -> TimelinePage | None:
    """``limit`` rows just before the row ``before`` (the newest ones when neither key
    is given) or just after the row ``after``. ``None`` when the key is not a row of
    this conversation."""
    if before is not None and after is not None:
        raise ValueError("page before a row or after it, not both")
    if limit < 1:
        raise ValueError("a page holds at least one row")
    key = before if before is not None else after
    position: tuple[int | None, int] | None = None
    if key is not None:
        row = conn.execute(
            "SELECT seq, id FROM timeline WHERE id = ? AND conversation_id = ?",
            (key, conversation_id),
        ).fetchone()
        if row is None:
            return None
        position = (row[0], row[1])
    if after is None:
        rows = _before(conn, conversation_id, position, limit + 1)
        items = [timeline_item(r) for r in reversed(rows[:limit])]
        return TimelinePage(items, older=len(rows) > limit, newer=position is not None)
    assert position is not None
    rows = _after(conn, conversation_id, position, limit + 1)
    items = [timeline_item(r) for r in rows[:limit]]
    return TimelinePage(items, older=True, newer=len(rows) > limit)


def _before(
    conn: Sql, conversation_id: str, position: tuple[int | None, int] | None, n: int
) -> list[Any]:
    """Up to ``n`` rows before ``position`` (the end when ``None``), newest first."""
    rows: list[Any] = []
    if position is None or position[0] is None:
        bound = _NO_KEY if position is None else position[1]
        rows.extend(
            conn.execute(
                f"{_UNSENT} AND t.id < ? ORDER BY t.id DESC LIMIT ?",
                (conversation_id, bound, n),
            ).fetchall()
        )
        if len(rows) < n:
            rows.extend(
                conn.execute(
                    f"{_SYNCED} ORDER BY t.seq DESC, t.id DESC LIMIT ?",
                    (conversation_id, n - len(rows)),
                ).fetchall()
            )
        return rows
    seq, key = position
    return conn.execute(
        f"{_SYNCED} AND (t.seq < ? OR (t.seq = ? AND t.id < ?))"
        " ORDER BY t.seq DESC, t.id DESC LIMIT ?",
        (conversation_id, seq, seq, key, n),
    ).fetchall()


def _after(conn: Sql, conversation_id: str, position: tuple[int | None, int], n: int) -> list[Any]:
    """Up to ``n`` rows after ``position``, oldest first."""
    seq, key = position
    rows: list[Any] = []
    if seq is not None:
        rows.extend(
            conn.execute(
                f"{_SYNCED} AND (t.seq > ? OR (t.seq = ? AND t.id > ?))"
                " ORDER BY t.seq, t.id LIMIT ?",
                (conversation_id, seq, seq, key, n),
            ).fetchall()
        )
        key = 0  # then every unsent row
    if len(rows) < n:
        rows.extend(
            conn.execute(
                f"{_UNSENT} AND t.id > ? ORDER BY t.id LIMIT ?",
                (conversation_id, key, n - len(rows)),
            ).fetchall()
        )
    return rows
