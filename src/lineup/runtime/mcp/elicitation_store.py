"""Persisted MCP forms (``mcp_elicitations``): transaction functions run on the writer.

Each move reads the row, asks ``elicitations.decide`` and, when it wins, updates the
row guarded by ``state = 'pending'`` and the card's timeline row (type
``ELICITATION_ROW``, whose body is ``ElicitationRow``: what every host shows) in the
same transaction. Losers get a refusal code and write nothing but an audit row. Audit
rows carry ids, the server key, states and codes: never the message, the schema or
the answer.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import msgspec

from lineup.protocol import ErrorCode

from ..tables import audit, show
from ..txn import RuntimeTxn, Sql
from . import call_store
from .calls import State as CallState
from .elicitations import (
    ACTION,
    MAX_MESSAGE_CHARS,
    Event,
    Form,
    State,
    check_answer,
    decide,
    expiry,
    parse_schema,
)
from .servers import entry as server_entry

__all__ = [
    "ELICITATION_ROW",
    "ElicitationRecord",
    "ElicitationRow",
    "Outcome",
    "act",
    "create",
    "decode_row",
    "due",
    "end_for_calls",
    "get",
    "next_expiry",
    "recover",
    "row_id",
]

ELICITATION_ROW = "mcp.elicitation"
"""The ``type`` of the timeline row that shows a form (never sent to the AppServer)."""


def row_id(elicitation_id: str) -> str:
    """The ``envelope_id`` of the form's timeline row."""
    return f"elicit:{elicitation_id}"


@dataclass(frozen=True, slots=True)
class ElicitationRecord:
    id: str
    conversation_id: str
    call_id: str
    server_key: str
    message: str
    schema: bytes
    state: State
    answer: bytes | None
    created_at: str
    expires_at: str
    final_at: str | None

    @property
    def form(self) -> Form:
        parsed = parse_schema(msgspec.json.decode(self.schema))
        if parsed is None:  # stored rows were valid when written
            raise RuntimeError("stored elicitation schema no longer parses")
        return parsed

    @property
    def content(self) -> dict[str, Any] | None:
        return None if self.answer is None else msgspec.json.decode(self.answer)


class ElicitationRow(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What the card shows: the server (its key and name), its message and fields
    (shown as text), the state, when it expires and, once accepted, the answer."""

    elicitation_id: str
    server_key: str
    server_name: str
    message: str
    fields: list[dict[str, Any]]
    state: str
    expires_at: str
    final_at: str | None = None
    answer: dict[str, Any] | None = None


_row_decoder = msgspec.json.Decoder(ElicitationRow)


def decode_row(body: bytes) -> ElicitationRow | None:
    try:
        return _row_decoder.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


@dataclass(frozen=True, slots=True)
class Outcome:
    """``won``: the action made the form final; ``code``: why it was refused otherwise."""

    record: ElicitationRecord | None
    won: bool = False
    code: str | None = None


_COLUMNS = (
    "id, conversation_id, call_id, server_key, message, schema, state, answer,"
    " created_at, expires_at, final_at"
)


def _record(row: Any) -> ElicitationRecord:
    return ElicitationRecord(
        row[0], row[1], row[2], row[3], row[4], bytes(row[5]), State(row[6]),
        None if row[7] is None else bytes(row[7]), row[8], row[9], row[10],
    )  # fmt: skip


def get(conn: Sql, elicitation_id: str) -> ElicitationRecord | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM mcp_elicitations WHERE id = ?",  # noqa: S608
        (elicitation_id,),
    ).fetchone()
    return None if row is None else _record(row)


def _pending(conn: Sql, where: str = "", args: tuple[Any, ...] = ()) -> list[ElicitationRecord]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM mcp_elicitations WHERE state = 'pending'{where}"  # noqa: S608
        " ORDER BY expires_at, id",
        args,
    ).fetchall()
    return [_record(r) for r in rows]


def next_expiry(conn: Sql) -> datetime | None:
    row = conn.execute(
        "SELECT MIN(expires_at) FROM mcp_elicitations WHERE state = 'pending'"
    ).fetchone()
    return None if row is None or row[0] is None else datetime.fromisoformat(row[0])


def _server_name(conn: Sql, server_key: str) -> str:
    found = server_entry(conn, server_key)
    if found is None:
        return server_key
    # The name the person gave it in their config first: the server's own title is
    # its word about itself.
    return found.name or found.title or found.server_name or server_key


def _body(conn: Sql, record: ElicitationRecord) -> bytes:
    row = ElicitationRow(
        elicitation_id=record.id,
        server_key=record.server_key,
        server_name=_server_name(conn, record.server_key),
        message=record.message,
        fields=[f.view() for f in record.form.fields],
        state=record.state.value,
        expires_at=record.expires_at,
        final_at=record.final_at,
        answer=record.content if record.state is State.ACCEPTED else None,
    )
    return msgspec.json.encode(row)


def _audit(
    txn: Sql,
    now: str,
    record: ElicitationRecord,
    action: str,
    actor: str,
    code: str | None = None,
) -> None:
    subject = f"{record.conversation_id}/{record.call_id}/{record.id}"
    audit(txn, now, actor, action, subject, f"{record.server_key}:{record.state}", code)


# --- creating --------------------------------------------------------------------------------


def create(
    txn: RuntimeTxn, server_key: str, message: str, schema: Any, now: str
) -> ElicitationRecord | ErrorCode:
    """Store the form of ``server_key``'s request and show its card, in the
    conversation of the call the server is running: its most recently forwarded call
    still ``executing``. Without one (the server asks outside any call of ours), or
    when the schema is not one MCP allows, nothing is stored or shown and the caller
    declines: ``call_not_found`` or ``elicitation_answer_invalid`` says which."""
    running = [
        c for c in call_store.open_calls(txn)
        if c.server_key == server_key and c.state is CallState.EXECUTING
    ]  # fmt: skip
    if not running:
        audit(txn, now, "runtime", "mcp.elicit", server_key, "declined", ErrorCode.CALL_NOT_FOUND)
        return ErrorCode.CALL_NOT_FOUND
    call = max(running, key=lambda c: (c.updated_at, c.created_at))
    form = parse_schema(schema)
    if form is None or not isinstance(message, str):
        code = ErrorCode.ELICITATION_ANSWER_INVALID
        audit(txn, now, "runtime", "mcp.elicit", f"{call.conversation_id}/{call.call_id}",
              "declined", code)  # fmt: skip
        return code
    at = datetime.fromisoformat(now)
    until = expiry(at, datetime.fromisoformat(call.expires_at))
    record = ElicitationRecord(
        f"eli_{uuid.uuid4().hex}", call.conversation_id, call.call_id, server_key,
        message[:MAX_MESSAGE_CHARS], msgspec.json.encode(schema), State.PENDING, None, now,
        until.isoformat(timespec="milliseconds"), None,
    )  # fmt: skip
    txn.execute(
        f"INSERT INTO mcp_elicitations ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",  # noqa: S608
        (
            record.id, record.conversation_id, record.call_id, record.server_key,
            record.message, record.schema, record.state.value, None, now, record.expires_at,
            None,
        ),
    )  # fmt: skip
    # After the newest row the conversation holds now, as an artifact row is placed.
    (newest,) = txn.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM timeline WHERE conversation_id = ?",
        (record.conversation_id,),
    ).fetchone()
    txn.execute(
        "INSERT INTO timeline (conversation_id, envelope_id, seq, type, sender_kind, body,"
        " state, created_at) VALUES (?, ?, ?, ?, 'runtime', ?, 'received', ?)",
        (record.conversation_id, row_id(record.id), newest, ELICITATION_ROW,
         _body(txn, record), now),
    )  # fmt: skip
    _audit(txn, now, record, "mcp.elicit", "runtime")
    txn.deadline_added()
    show(txn, record.conversation_id, row_id(record.id))
    return record


# --- ending ----------------------------------------------------------------------------------


def act(
    txn: RuntimeTxn,
    record: ElicitationRecord,
    event: Event,
    now: str,
    *,
    actor: str,
    content: Any = None,
) -> Outcome:
    """Apply one event to one form: the single place where a form ends."""
    decision = decide(
        record.state,
        event,
        now=datetime.fromisoformat(now),
        expires_at=datetime.fromisoformat(record.expires_at),
    )
    if decision.to is None:
        if decision.refusal is not None:
            _audit(txn, now, record, f"mcp.elicit.{event}", actor, decision.refusal)
        return Outcome(record, code=decision.refusal)
    answer: bytes | None = None
    if decision.effective is Event.ACCEPT:
        checked = check_answer(record.form, content)
        if not isinstance(checked, dict):
            _audit(txn, now, record, f"mcp.elicit.{event}", actor, checked)
            return Outcome(record, code=checked)
        answer = msgspec.json.encode(checked)
    changed = txn.execute(
        "UPDATE mcp_elicitations SET state = ?, answer = ?, final_at = ?"
        " WHERE id = ? AND state = 'pending'",
        (decision.to.value, answer, now, record.id),
    ).rowcount
    if not changed:  # cannot happen inside the writer's transaction; be safe anyway
        return Outcome(record, code=ErrorCode.CALL_ALREADY_FINAL)
    moved = get(txn, record.id)
    assert moved is not None
    txn.execute(
        "UPDATE timeline SET body = ? WHERE conversation_id = ? AND envelope_id = ?",
        (_body(txn, moved), moved.conversation_id, row_id(moved.id)),
    )
    _audit(txn, now, moved, f"mcp.elicit.{decision.effective}", actor)
    show(txn, moved.conversation_id, row_id(moved.id))
    won = decision.effective is event
    return Outcome(moved, won=won, code=decision.refusal)


def answer(
    txn: RuntimeTxn,
    elicitation_id: str,
    conversation_id: str,
    event: Event,
    content: Any,
    now: str,
) -> Outcome:
    """The person's accept (with ``content``), decline or cancel."""
    record = get(txn, elicitation_id)
    if record is None or record.conversation_id != conversation_id:
        code = ErrorCode.ELICITATION_NOT_FOUND
        audit(txn, now, "user", f"mcp.elicit.{event}", elicitation_id[:64], "refused", code)
        return Outcome(None, code=code)
    return act(txn, record, event, now, actor="user", content=content)


def end(txn: RuntimeTxn, elicitation_id: str, now: str) -> Outcome:
    """The server withdrew its request (or its connection went): ``cancelled``."""
    record = get(txn, elicitation_id)
    if record is None:
        return Outcome(None, code=ErrorCode.ELICITATION_NOT_FOUND)
    return act(txn, record, Event.END, now, actor="runtime")


def end_for_calls(txn: RuntimeTxn, keys: list[tuple[str, str]], now: str) -> list[Outcome]:
    """These calls ended (dismissed, timed out, their server disabled, ...): their
    open forms end ``cancelled``."""
    found: list[Outcome] = []
    for conversation_id, call_id in keys:
        for record in _pending(
            txn, " AND conversation_id = ? AND call_id = ?", (conversation_id, call_id)
        ):
            found.append(act(txn, record, Event.END, now, actor="runtime"))
    return found


def due(txn: RuntimeTxn, now: str) -> list[Outcome]:
    """Expire the pending forms whose ``expires_at`` has passed."""
    late = _pending(txn, " AND expires_at <= ?", (now,))
    return [act(txn, r, Event.EXPIRE, now, actor="runtime") for r in late]


def recover(txn: RuntimeTxn, now: str) -> list[Outcome]:
    """At start: the servers' requests died with the old connections; every pending
    form ends ``cancelled`` (its card says so)."""
    return [act(txn, r, Event.END, now, actor="runtime") for r in _pending(txn)]


def action_of(record: ElicitationRecord) -> Literal["accept", "decline", "cancel"]:
    """What the server is answered for a final form."""
    return ACTION[record.state]
