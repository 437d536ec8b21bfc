"""App sub-sessions as the IM shows them (spec 002 §7.3): read-only queries.

Each sub-session of a conversation is one group in the timeline, placed where its
``app_session.opened`` envelope sits (that row is hidden; the group takes its place),
holding only the standard interactions that named the sub-session as their context
(the agent's questions, the person's answers and their short results) and the files
its instance kept through a capability (their ``artifact`` rows, with a download).
Nothing else an app does inside itself is stored here, so nothing of it can show.

Everything here runs on one of the store's readers (``store.db.read``) and never
writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..records import TimelineItem
from ..store import RuntimeStore
from ..tables import TIMELINE_SELECT, timeline_item
from ..txn import Sql
from .instance_store import app_session_envelope_id

__all__ = [
    "MAX_GROUPS",
    "MAX_GROUP_ITEMS",
    "AppSessionGroup",
    "read_groups",
    "read_groups_by_id",
    "read_groups_of_instances",
]

MAX_GROUPS = 200
"""The newest sub-sessions of a conversation shown in a snapshot."""
MAX_GROUP_ITEMS = 100
"""The newest interactions a group carries (``count`` says how many there are)."""


@dataclass(frozen=True, slots=True)
class AppSessionGroup:
    id: str
    conversation_id: str
    app_scope: str
    instance_id: str
    state: str
    """``open`` or ``closed`` (then the group is read-only history)."""
    opened_at: str
    closed_at: str | None
    anchor_id: int | None
    """The timeline row of ``app_session.opened`` (where the group is placed)."""
    anchor_seq: int | None
    count: int
    """Interactions of the sub-session, all of them."""
    pending: int
    """Of those, still waiting for an answer."""
    interactions: tuple[TimelineItem, ...]
    """The ``tool.call`` rows of the newest ``MAX_GROUP_ITEMS``, oldest first."""
    continues: str | None = None
    """The earlier sub-session this one continues ("continue" on old work)."""
    files: tuple[TimelineItem, ...] = ()
    """The ``artifact`` rows of the newest ``MAX_GROUP_ITEMS`` files its instance
    kept, oldest first."""
    file_count: int = 0
    """Files its instance kept, all of them."""
    app_name: str = ""
    """Its instance's app display name and ordinal, as they were when it opened
    (``MiniAppInstanceRecord.name``/``ordinal``)."""
    ordinal: int = 1


_COLUMNS = (
    "id, conversation_id, app_scope, instance_id, state, opened_at, closed_at, continues,"
    " app_name, ordinal"
)

_Row = tuple[str, str, str, str, str, str, str | None, str | None, str, int]


def _group(conn: Sql, row: _Row) -> AppSessionGroup:
    app_session_id, conversation_id = row[0], row[1]
    anchor = conn.execute(
        "SELECT id, seq FROM timeline WHERE conversation_id = ? AND envelope_id = ?",
        (conversation_id, app_session_envelope_id(app_session_id, "opened")),
    ).fetchone()
    count, pending = conn.execute(
        "SELECT COUNT(*), COALESCE(SUM(state = 'pending'), 0) FROM interactions"
        " WHERE app_session_id = ?",
        (app_session_id,),
    ).fetchone()
    rows = conn.execute(
        f"{TIMELINE_SELECT} WHERE i.app_session_id = ? AND t.conversation_id = ?"
        " ORDER BY t.id DESC LIMIT ?",
        (app_session_id, conversation_id, MAX_GROUP_ITEMS),
    ).fetchall()
    (file_count,) = conn.execute(
        "SELECT COUNT(*) FROM artifacts WHERE app_session_id = ?", (app_session_id,)
    ).fetchone()
    files = conn.execute(
        f"{TIMELINE_SELECT} WHERE t.conversation_id = ? AND t.envelope_id IN"  # noqa: S608
        " (SELECT 'artifact:' || id FROM artifacts WHERE app_session_id = ?)"
        " ORDER BY t.id DESC LIMIT ?",
        (conversation_id, app_session_id, MAX_GROUP_ITEMS),
    ).fetchall()
    return AppSessionGroup(
        id=app_session_id,
        conversation_id=conversation_id,
        app_scope=row[2],
        instance_id=row[3],
        state=row[4],
        opened_at=row[5],
        closed_at=row[6],
        anchor_id=None if anchor is None else int(anchor[0]),
        anchor_seq=None if anchor is None else anchor[1],
        count=int(count),
        pending=int(pending),
        interactions=tuple(timeline_item(r) for r in reversed(rows)),
        continues=row[7],
        files=tuple(timeline_item(r) for r in reversed(files)),
        file_count=int(file_count),
        app_name=row[8],
        ordinal=int(row[9]),
    )


def groups(conn: Sql, conversation_id: str) -> list[AppSessionGroup]:
    """The conversation's newest ``MAX_GROUPS`` sub-sessions, in opening order."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM app_sessions WHERE conversation_id = ?"  # noqa: S608
        " ORDER BY opened_at DESC, rowid DESC LIMIT ?",
        (conversation_id, MAX_GROUPS),
    ).fetchall()
    return [_group(conn, r) for r in reversed(rows)]


def groups_by_id(conn: Sql, ids: list[str]) -> list[AppSessionGroup]:
    out: list[AppSessionGroup] = []
    for app_session_id in ids:
        row = conn.execute(
            f"SELECT {_COLUMNS} FROM app_sessions WHERE id = ?",  # noqa: S608
            (app_session_id,),
        ).fetchone()
        if row is not None:
            out.append(_group(conn, row))
    return out


def groups_of_instances(conn: Sql, instance_ids: list[str]) -> list[AppSessionGroup]:
    out: list[AppSessionGroup] = []
    for instance_id in instance_ids:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM app_sessions WHERE instance_id = ?",  # noqa: S608
            (instance_id,),
        ).fetchall()
        out.extend(_group(conn, r) for r in rows)
    return out


async def read_groups(store: RuntimeStore, conversation_id: str) -> list[AppSessionGroup]:
    return await store.db.read(groups, conversation_id)


async def read_groups_by_id(store: RuntimeStore, ids: Iterable[str]) -> list[AppSessionGroup]:
    return await store.db.read(groups_by_id, sorted(set(ids)))


async def read_groups_of_instances(
    store: RuntimeStore, instance_ids: Iterable[str]
) -> list[AppSessionGroup]:
    return await store.db.read(groups_of_instances, sorted(set(instance_ids)))
