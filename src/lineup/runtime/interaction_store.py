"""Transaction functions for the standard interactions (run on the store's writer).

Each function that can end an interaction reads the row, asks
``interactions.decide`` and, when the action wins, updates the row guarded by
``state = 'pending'`` and queues the single ``tool.result`` in the same
transaction. Losers get a refusal code and write nothing but an audit row.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec

from lineup.protocol import (
    ClientInventoryEnvelope,
    ErrorCode,
    ErrorEnvelope,
    ToolResultEnvelope,
    payloads,
)
from lineup.protocol.interactions import Interaction, check_answer, parse_arguments

from .interactions import FINAL, RESULT_ERROR, RESULT_STATUS, Event, State, decide
from .records import (
    DismissIntent,
    InteractionRecord,
    OutboxItem,
    Received,
    TimelineItem,
    ToolCallIntent,
)
from .tables import (
    INTERACTION_COLUMNS,
    audit,
    call_spent,
    interaction,
    queue_from_runtime,
    result_envelope_id,
    show,
)
from .txn import RuntimeTxn, Sql


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one action did. ``won``: it made the interaction final (and queued the
    result); ``code``: why it was refused otherwise. ``card`` is the ``tool.call``
    row with its new record (shown to the hosts after the commit); ``outbox`` the
    result queued (sent after the commit)."""

    interaction: InteractionRecord | None
    won: bool = False
    code: str | None = None
    card: TimelineItem | None = None
    outbox: OutboxItem | None = None


def _parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _format_time(value: datetime) -> str:
    return value.isoformat(timespec="milliseconds")


def get(conn: Sql, interaction_id: str) -> InteractionRecord | None:
    row = conn.execute(
        f"SELECT {INTERACTION_COLUMNS} FROM interactions WHERE id = ?",  # noqa: S608
        (interaction_id,),
    ).fetchone()
    return interaction(row) if row else None


def by_call(conn: Sql, conversation_id: str, call_id: str) -> InteractionRecord | None:
    row = conn.execute(
        f"SELECT {INTERACTION_COLUMNS} FROM interactions"  # noqa: S608
        " WHERE conversation_id = ? AND call_id = ?",
        (conversation_id, call_id),
    ).fetchone()
    return interaction(row) if row else None


def pending(conn: Sql) -> list[InteractionRecord]:
    rows = conn.execute(
        f"SELECT {INTERACTION_COLUMNS} FROM interactions"  # noqa: S608
        " WHERE state = 'pending' ORDER BY expires_at, id"
    ).fetchall()
    return [interaction(row) for row in rows]


def next_expiry(conn: Sql) -> str | None:
    row = conn.execute(
        "SELECT MIN(expires_at) FROM interactions WHERE state = 'pending'"
    ).fetchone()
    return row[0] if row else None


def spec_of(record: InteractionRecord) -> Interaction:
    """The stored, already validated arguments, parsed again for checking an answer."""
    parsed = parse_arguments(record.tool, msgspec.json.decode(record.arguments))
    if not isinstance(parsed, Interaction):  # stored rows were valid when written
        raise RuntimeError("stored interaction arguments no longer parse")
    return parsed


# --- creating ------------------------------------------------------------------------------


def create(txn: RuntimeTxn, received: Received, intent: ToolCallIntent, now: str) -> Outcome | None:
    """Handle a ``tool.call`` whose timeline row was just stored. ``None`` for a
    duplicate call id (its one result was already decided: nothing is sent again) and
    for a call another Runtime of the person's answers (``intent.elsewhere``)."""
    conversation_id = received.conversation_id
    subject = f"{conversation_id}/{intent.call_id}"
    if call_spent(txn, conversation_id, intent.call_id):
        audit(txn, now, "agent", "tool.call", subject, "duplicate", ErrorCode.CALL_ALREADY_FINAL)
        return None
    if intent.elsewhere:  # another Runtime of the person's advertised it: that one answers
        audit(txn, now, "agent", "tool.call", subject, "elsewhere")
        return None
    agent = txn.execute(
        "SELECT agent_id FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    code: str | None = None
    if agent is None or agent[0] != intent.sender_id:
        code = ErrorCode.SENDER_MISMATCH
    elif intent.refusal is not None:
        code = intent.refusal.code
    elif intent.app_session_id is not None and not _app_session_usable(
        txn, intent.app_session_id, conversation_id, intent.sender_id
    ):
        code = ErrorCode.APP_SESSION_NOT_FOUND
    if code is not None or intent.interaction is None:
        code = code or ErrorCode.TOOL_INPUT_INVALID
        message: str = code
        refusal = intent.refusal
        if refusal is not None and refusal.code == code:  # its own words, and where
            message = refusal.message + (f" (at {refusal.path})" if refusal.path else "")
        rejected = refuse_call(
            txn, conversation_id, intent.call_id, received.envelope_id or "", code, message, now
        )
        return Outcome(None, code=code, outbox=rejected)

    spec = intent.interaction
    delay = spec.expires_in_ms
    expires_at = (
        None if delay is None else _format_time(_parse_time(now) + timedelta(milliseconds=delay))
    )
    interaction_id = f"int_{uuid.uuid4().hex}"
    state = State.PENDING if delay is not None else State.ACCEPTED
    txn.execute(
        "INSERT INTO interactions (id, conversation_id, call_id, envelope_id, agent_id,"
        " app_session_id, tool, arguments, state, created_at, expires_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            interaction_id,
            conversation_id,
            intent.call_id,
            received.envelope_id,
            intent.sender_id,
            intent.app_session_id,
            spec.tool,
            msgspec.json.encode(spec.arguments),
            state.value,
            now,
            expires_at,
        ),
    )
    audit(txn, now, "agent", "interaction", subject, "created", spec.kind)
    outbox: OutboxItem | None = None
    if state is State.ACCEPTED:  # a notice: stored and shown is all it waits for
        outbox = _finish_row(txn, interaction_id, State.ACCEPTED, {}, None, now, pending=False)
    record = get(txn, interaction_id)
    assert record is not None
    return Outcome(record, won=state is State.ACCEPTED, outbox=outbox)


def refuse_call(
    txn: RuntimeTxn,
    conversation_id: str,
    call_id: str,
    envelope_id: str,
    code: str,
    message: str,
    now: str,
) -> OutboxItem:
    """Refuse a ``tool.call`` before anything was created: the call id is spent in
    ``refused_calls`` and its one ``rejected`` result is queued (also used by the Tool
    Router for ordinary tools)."""
    txn.execute(
        "INSERT INTO refused_calls (conversation_id, call_id, envelope_id, code, at)"
        " VALUES (?, ?, ?, ?, ?)",
        (conversation_id, call_id, envelope_id, code, now),
    )
    rejected = _queue_result(
        txn,
        conversation_id,
        call_id,
        payloads.ToolResult(
            call_id=call_id,
            status="rejected",
            error=payloads.ErrorInfo(code=code, message=message[:1024] or code),
        ),
        now,
    )
    audit(txn, now, "agent", "tool.call", f"{conversation_id}/{call_id}", "rejected", code)
    return rejected


def _app_session_usable(
    conn: Sql, app_session_id: str, conversation_id: str, agent_id: str
) -> bool:
    """A real sub-session of this conversation and agent; a closed one is still valid
    history context (it is not revived)."""
    row = conn.execute(
        "SELECT 1 FROM app_sessions WHERE id = ? AND conversation_id = ? AND agent_id = ?",
        (app_session_id, conversation_id, agent_id),
    ).fetchone()
    return row is not None


# --- ending --------------------------------------------------------------------------------


def act(
    txn: RuntimeTxn,
    record: InteractionRecord,
    event: Event,
    now: str,
    *,
    actor: str,
    answer: Any = None,
) -> Outcome:
    """Apply one action to one interaction: the single place where results are made."""
    subject = f"{record.conversation_id}/{record.call_id}"
    decision = decide(
        State(record.state),
        event,
        now=_parse_time(now),
        expires_at=None if record.expires_at is None else _parse_time(record.expires_at),
    )
    if decision.to is None:
        audit(txn, now, actor, event.value, subject, "refused", decision.refusal)
        return Outcome(record, code=decision.refusal)
    result: dict[str, Any] | None = None
    if decision.effective is Event.ANSWER:
        checked = check_answer(spec_of(record), answer)
        if not isinstance(checked, dict):
            audit(txn, now, actor, event.value, subject, "refused", checked.code)
            return Outcome(record, code=checked.code)
        result = checked
    outbox = _finish_row(txn, record.id, decision.to, result, None, now, pending=True)
    if outbox is None:  # cannot happen inside the writer's transaction; be safe anyway
        return Outcome(record, code=ErrorCode.CALL_ALREADY_FINAL)
    audit(txn, now, actor, decision.effective.value, subject, decision.to.value)
    updated = get(txn, record.id)
    card = show(txn, record.conversation_id, record.envelope_id)
    won = decision.effective is event
    return Outcome(updated, won=won, code=decision.refusal, card=card, outbox=outbox)


def _finish_row(
    txn: RuntimeTxn,
    interaction_id: str,
    to: State,
    result: dict[str, Any] | None,
    code: str | None,
    now: str,
    *,
    pending: bool,
) -> OutboxItem | None:
    assert to in FINAL
    guard = "pending" if pending else to.value
    record = get(txn, interaction_id)
    assert record is not None
    error = RESULT_ERROR.get(to)
    changed = txn.execute(
        "UPDATE interactions SET state = ?, final_at = ?, result = ?, code = ?,"
        " result_envelope_id = ? WHERE id = ? AND state = ?",
        (
            to.value,
            now,
            None if result is None else msgspec.json.encode(result),
            error[0].value if error else code,
            result_envelope_id(record.conversation_id, record.call_id),
            interaction_id,
            guard,
        ),
    ).rowcount
    if not changed:
        return None
    return _queue_result(
        txn,
        record.conversation_id,
        record.call_id,
        payloads.ToolResult(
            call_id=record.call_id,
            status=RESULT_STATUS[to],
            result=result if error is None else None,
            error=None if error is None else payloads.ErrorInfo(code=error[0], message=error[1]),
        ),
        now,
    )


def _queue_result(
    txn: RuntimeTxn,
    conversation_id: str,
    call_id: str,
    result: payloads.ToolResult,
    now: str,
) -> OutboxItem:
    envelope_id = result_envelope_id(conversation_id, call_id)
    return queue_from_runtime(txn, ToolResultEnvelope, envelope_id, conversation_id, result, now)


def answer(
    txn: RuntimeTxn,
    interaction_id: str,
    conversation_id: str,
    value: Any,
    now: str,
) -> Outcome:
    record = get(txn, interaction_id)
    if record is None or record.conversation_id != conversation_id:
        audit(
            txn,
            now,
            "user",
            "answer",
            interaction_id[:64],
            "refused",
            ErrorCode.INTERACTION_NOT_FOUND,
        )
        return Outcome(None, code=ErrorCode.INTERACTION_NOT_FOUND)
    return act(txn, record, Event.ANSWER, now, actor="user", answer=value)


def dismiss(txn: RuntimeTxn, conversation_id: str, intent: DismissIntent, now: str) -> Outcome:
    """``interaction.dismiss`` from the agent: idempotent by ``control_id``."""
    replay = txn.execute(
        "SELECT outcome FROM interaction_controls WHERE conversation_id = ? AND control_id = ?",
        (conversation_id, intent.control_id),
    ).fetchone()
    subject = f"{conversation_id}/{intent.call_id}"
    if replay is not None:
        audit(txn, now, "agent", "dismiss", subject, "replayed", replay[0])
        return Outcome(by_call(txn, conversation_id, intent.call_id), code=replay[0])
    record = by_call(txn, conversation_id, intent.call_id)
    agent = txn.execute(
        "SELECT agent_id FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    if record is None or agent is None or agent[0] != intent.sender_id:
        # Nothing to end. The agent still gets an answer, once per control: an error
        # envelope referring to its dismiss (never a tool.result: there is no call).
        notice = queue_from_runtime(
            txn,
            ErrorEnvelope,
            f"err_{result_envelope_id(conversation_id, intent.control_id)[4:]}",
            conversation_id,
            payloads.Error(
                code=ErrorCode.INTERACTION_NOT_FOUND,
                message="no interaction with this call id in this conversation",
                ref_id=intent.envelope_id,
            ),
            now,
        )
        outcome = Outcome(None, code=ErrorCode.INTERACTION_NOT_FOUND, outbox=notice)
        audit(txn, now, "agent", "dismiss", subject, "refused", outcome.code)
    else:
        outcome = act(txn, record, Event.DISMISS, now, actor="agent")
    receipt = State.DISMISSED.value if outcome.won else (outcome.code or "refused")
    txn.execute(
        "INSERT INTO interaction_controls (conversation_id, control_id, call_id, outcome, at)"
        " VALUES (?, ?, ?, ?, ?)",
        (conversation_id, intent.control_id, intent.call_id, receipt, now),
    )
    return outcome


def expire_due(txn: RuntimeTxn, now: str) -> list[Outcome]:
    rows = txn.execute(
        f"SELECT {INTERACTION_COLUMNS} FROM interactions"  # noqa: S608
        " WHERE state = 'pending' AND expires_at <= ? ORDER BY expires_at",
        (now,),
    ).fetchall()
    return [act(txn, interaction(row), Event.EXPIRE, now, actor="runtime") for row in rows]


def fail(txn: RuntimeTxn, interaction_id: str, now: str) -> Outcome:
    record = get(txn, interaction_id)
    if record is None:
        return Outcome(None, code=ErrorCode.INTERACTION_NOT_FOUND)
    return act(txn, record, Event.FAIL, now, actor="runtime")


# --- inventory and app sessions --------------------------------------------------------------


def publish_inventory(
    txn: RuntimeTxn, conversation_id: str, inventory: payloads.ClientInventory, now: str
) -> OutboxItem | None:
    """Queue the inventory to a conversation unless that revision was already queued."""
    row = txn.execute(
        "SELECT revision FROM inventory_published WHERE conversation_id = ?", (conversation_id,)
    ).fetchone()
    if row is not None and row[0] == inventory.revision:
        return None
    txn.execute(
        "INSERT INTO inventory_published (conversation_id, revision, at) VALUES (?, ?, ?)"
        " ON CONFLICT (conversation_id) DO UPDATE SET revision = excluded.revision,"
        " at = excluded.at",
        (conversation_id, inventory.revision, now),
    )
    return queue_from_runtime(
        txn, ClientInventoryEnvelope, f"inv_{uuid.uuid4().hex}", conversation_id, inventory, now
    )


def open_app_session(
    conn: Sql,
    app_session_id: str,
    conversation_id: str,
    agent_id: str,
    app_scope: str,
    instance_id: str,
    now: str,
    continues: str | None = None,
    *,
    name: str = "",
    ordinal: int = 1,
) -> None:
    """``name`` and ``ordinal``: its instance's, kept with the group (shown after the
    instance's record is gone)."""
    conn.execute(
        "INSERT INTO app_sessions (id, conversation_id, agent_id, app_scope, instance_id, state,"
        " opened_at, continues, app_name, ordinal) VALUES (?, ?, ?, ?, ?, 'open', ?, ?, ?, ?)",
        (
            app_session_id,
            conversation_id,
            agent_id,
            app_scope,
            instance_id,
            now,
            continues,
            name,
            ordinal,
        ),
    )


def close_app_session(conn: Sql, app_session_id: str, now: str) -> bool:
    return (
        conn.execute(
            "UPDATE app_sessions SET state = 'closed', closed_at = ?"
            " WHERE id = ? AND state = 'open'",
            (now, app_session_id),
        ).rowcount
        > 0
    )
