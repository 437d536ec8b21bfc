"""Row helpers shared by the store's transaction functions (one SQLite connection,
always called inside a transaction of the writer or a read of a reader)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, TypeVar

from lineup.protocol import Envelope, Rejection, Sender, Target, decode, encode

from .events import TimelineChanged
from .records import (
    ARTIFACT_ROW,
    InteractionRecord,
    OutboxItem,
    SurfaceRecord,
    TimelineItem,
    decode_artifact_row,
)
from .txn import RuntimeTxn, Sql

E = TypeVar("E", bound=Envelope)


def audit(
    conn: Sql,
    at: str,
    actor: str,
    action: str,
    subject: str,
    outcome: str,
    code: str | None = None,
) -> None:
    """One audit row: ids, types and codes only, never content."""
    conn.execute(
        "INSERT INTO audit (at, actor, action, subject, outcome, code) VALUES (?, ?, ?, ?, ?, ?)",
        (at, actor, action, subject, outcome, code),
    )


INTERACTION_COLUMNS = (
    "id, conversation_id, call_id, envelope_id, agent_id, app_session_id, tool, arguments,"
    " state, created_at, expires_at, final_at, result, code"
)
TIMELINE_SELECT = (
    "SELECT t.id, t.conversation_id, t.envelope_id, t.seq, t.type, t.sender_kind, t.body,"
    " t.state, t.error_code, t.created_at, i.id, i.conversation_id, i.call_id, i.envelope_id,"
    " i.agent_id, i.app_session_id, i.tool, i.arguments, i.state, i.created_at, i.expires_at,"
    " i.final_at, i.result, i.code,"
    " s.conversation_id, s.open_envelope_id, s.instance_id, s.app_id, s.app_version,"
    " s.surface_id, s.state, s.status, s.reason, s.updated_at, s.html IS NOT NULL"
    " FROM timeline t LEFT JOIN interactions i"
    " ON i.conversation_id = t.conversation_id AND i.envelope_id = t.envelope_id"
    " LEFT JOIN ui_surfaces s"
    " ON s.conversation_id = t.conversation_id AND s.open_envelope_id = t.envelope_id"
)
"""Timeline rows with the interaction each ``tool.call`` row started and the surface
each ``ui.open`` row opened, if any."""


def interaction(row: Sequence[Any]) -> InteractionRecord:
    return InteractionRecord(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        row[6],
        bytes(row[7]),
        row[8],
        row[9],
        row[10],
        row[11],
        None if row[12] is None else bytes(row[12]),
        row[13],
    )


def timeline_item(row: Sequence[Any]) -> TimelineItem:
    return TimelineItem(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        bytes(row[6]),
        row[7],
        row[8],
        row[9],
        interaction(row[10:24]) if row[10] is not None else None,
        surface_record(row[24:]) if row[24] is not None else None,
        decode_artifact_row(bytes(row[6])) if row[4] == ARTIFACT_ROW else None,
    )


def surface_record(row: Sequence[Any]) -> SurfaceRecord:
    return SurfaceRecord(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        row[5],
        bytes(row[6]),
        row[7],
        row[8],
        row[9],
        bool(row[10]),
    )


def get_item(conn: Sql, conversation_id: str, envelope_id: str) -> TimelineItem | None:
    row = conn.execute(
        f"{TIMELINE_SELECT} WHERE t.conversation_id = ? AND t.envelope_id = ?",
        (conversation_id, envelope_id),
    ).fetchone()
    return timeline_item(row) if row else None


def show(txn: RuntimeTxn, conversation_id: str, envelope_id: str) -> TimelineItem | None:
    """Tell the hosts, after the commit, that this timeline row is new or changed
    (as it is at the commit); returns it."""
    item = get_item(txn, conversation_id, envelope_id)
    if item is not None:
        txn.emit(TimelineChanged(item))
    return item


def queue(
    txn: RuntimeTxn,
    conversation_id: str,
    envelope_id: str,
    type: str,
    sender_kind: str,
    body: bytes,
    now: str,
) -> OutboxItem:
    """Show an envelope of ours as ``sending`` and put it in the outbox; it is sent
    once the transaction commits (every outbox row is queued here)."""
    txn.execute(
        "INSERT INTO timeline (conversation_id, envelope_id, type, sender_kind, body, state,"
        " created_at) VALUES (?, ?, ?, ?, ?, 'sending', ?)",
        (conversation_id, envelope_id, type, sender_kind, body, now),
    )
    cursor = txn.execute(
        "INSERT INTO outbox (conversation_id, envelope_id, body, created_at) VALUES (?, ?, ?, ?)",
        (conversation_id, envelope_id, body, now),
    )
    audit(txn, now, sender_kind, "send", f"{conversation_id}/{envelope_id}", "queued", type)
    assert cursor.lastrowid is not None
    item = OutboxItem(cursor.lastrowid, conversation_id, envelope_id, body)
    txn.send(item)
    return item


def queue_from_runtime(
    txn: RuntimeTxn,
    kind: Callable[..., E],
    envelope_id: str,
    conversation_id: str,
    payload: Any,
    now: str,
    *,
    target: Target | None = None,
) -> OutboxItem:
    """Queue an envelope the Runtime sends for its user (``sender.kind`` ``runtime``),
    checked by the decoder first: never queue what the AppServer would refuse.
    ``target`` names the app instance the envelope is about (a ``tool.result`` of an
    app's tool names the instance that ran the call)."""
    envelope = kind(
        id=envelope_id,
        conversation_id=conversation_id,
        sender=Sender(kind="runtime", id=runtime_sender_id(txn)),
        created_at=datetime.fromisoformat(now),
        payload=payload,
        target=target,
    )
    body = encode(envelope)
    checked = decode(body)
    if isinstance(checked, Rejection):
        raise ValueError(f"{envelope.type} would be refused: {checked.code} at {checked.path}")
    return queue(txn, conversation_id, envelope.id, envelope.type, "runtime", body, now)


def has_session(conn: Sql) -> bool:
    """Is the Runtime logged in (someone to speak for)?"""
    return conn.execute("SELECT 1 FROM session WHERE key = 'user_id'").fetchone() is not None


def runtime_sender_id(conn: Sql) -> str:
    """The Runtime speaks for its user: ``sender = {"kind": "runtime", "id": user_id}``."""
    row = conn.execute("SELECT value FROM session WHERE key = 'user_id'").fetchone()
    if row is None:
        raise RuntimeError("the Runtime has no session")
    return str(row[0])


def result_envelope_id(conversation_id: str, call_id: str) -> str:
    """The id of a call's one ``tool.result``: derived, so even a second result could
    never be stored twice upstream (the AppServer deduplicates by envelope id)."""
    digest = hashlib.sha256(f"{conversation_id}\x00{call_id}".encode()).hexdigest()[:32]
    return f"res_{digest}"


def call_spent(conn: Sql, conversation_id: str, call_id: str) -> bool:
    """Is the call id already used in the conversation: by an interaction, a refused
    call, an ordinary tool call or a call of an MCP server's tool? A call id has one
    result, ever."""
    for table in ("interactions", "refused_calls", "tool_calls", "mcp_calls"):
        row = conn.execute(
            f"SELECT 1 FROM {table} WHERE conversation_id = ? AND call_id = ?",  # noqa: S608
            (conversation_id, call_id),
        ).fetchone()
        if row is not None:
            return True
    return False
