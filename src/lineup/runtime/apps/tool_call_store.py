"""Persisted ordinary tool calls: transaction functions run on the store's writer.

Each function reads the call rows it needs, asks the pure machine
(``lineup.runtime.apps.tool_calls``) and writes what it decides: the new state,
guarded by the state it read, and, when the decision writes the call's single
result, that result and its one ``tool.result`` outbox row, in the same
transaction. A refused request writes nothing but an audit row. The result's
envelope id is derived from the conversation and call ids (the same derivation as
for interactions), so a call can never have two results upstream either.

The router (``router.route``) creates calls from the agent's ``tool.call``; tests
and store-level use create them with ``insert``.

**Progress.** ``progress`` queues an accepted progress report as one
``lineup.v1.tool.progress`` envelope (runtime sender), at most one per call per
``PROGRESS_INTERVAL`` (250 ms) of the injected clock. A report inside the window is
not queued: it is kept in ``progress_pending`` (a newer one replaces it, so reports
coalesce to the latest), and ``flush_progress`` queues it once the window has
ended (``next_deadline`` includes that moment, so the Runtime's timer runs it). A
held report is dropped when the call settles: the result supersedes it.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

import msgspec

from lineup.protocol import (
    ErrorCode,
    Target,
    ToolProgressEnvelope,
    ToolResultEnvelope,
    payloads,
)
from lineup.protocol.fields import ERROR_CODE_PATTERN

from ..records import OutboxItem
from ..tables import (
    audit,
    call_spent,
    queue_from_runtime,
    result_envelope_id,
)
from ..txn import RuntimeTxn, Sql
from . import tool_calls
from .tool_calls import Decision, Event, Outcome, Receipt, State, ToolCallRecord

__all__ = [
    "MESSAGES",
    "PROGRESS_INTERVAL",
    "CallOutcome",
    "Inserted",
    "StoredToolCall",
    "act",
    "all_calls",
    "close_instance",
    "due",
    "flush_progress",
    "for_instance",
    "get",
    "insert",
    "next_deadline",
    "progress",
]

PROGRESS_INTERVAL = timedelta(milliseconds=250)
"""At most one ``tool.progress`` is queued per call per this much of the clock."""

MESSAGES: dict[str, str] = {
    ErrorCode.APP_CLOSED: "The app was closed before the call finished",
    ErrorCode.APP_FAILED: "The app failed before the call finished",
    ErrorCode.APP_CANCELLED: "The app cancelled the call",
    ErrorCode.TOOL_TIMEOUT: "The call did not finish in time",
}
"""The message sent with each result code the Runtime fixes itself."""

_CODE = re.compile(ERROR_CODE_PATTERN)
_COLUMNS = (
    "conversation_id, call_id, envelope_id, tool, instance_id, state, received_at, deadline,"
    " outcome_status, outcome_code, result, result_envelope_id"
)


@dataclass(frozen=True, slots=True)
class StoredToolCall:
    """One ``tool_calls`` row."""

    conversation_id: str
    call_id: str
    envelope_id: str
    tool: str
    instance_id: str | None
    state: State
    received_at: datetime
    deadline: datetime | None
    outcome: Outcome | None
    result: bytes | None
    result_envelope_id: str | None

    def record(self) -> ToolCallRecord:
        """What the pure rules need of it."""
        return ToolCallRecord(
            self.call_id, self.state, self.instance_id, self.deadline, self.outcome
        )


@dataclass(frozen=True, slots=True)
class Inserted:
    """``call``: the stored call (the earlier one for a ``duplicate`` call id)."""

    call: StoredToolCall | None
    duplicate: bool = False


@dataclass(frozen=True, slots=True)
class CallOutcome:
    """What one event did to one call: the call after it, the decision, and the one
    ``tool.result`` queued when the decision wrote it."""

    call: StoredToolCall | None
    decision: Decision
    outbox: OutboxItem | None = None

    @property
    def receipt(self) -> Receipt:
        call_id = self.call.call_id if self.call is not None else ""
        return self.decision.receipt(call_id)


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _format(value: datetime) -> str:
    return value.isoformat(timespec="milliseconds")


def _row(row: Sequence[Any]) -> StoredToolCall:
    outcome = None if row[8] is None else Outcome(row[8], row[9])
    received_at = _time(row[6])
    assert received_at is not None
    return StoredToolCall(
        row[0],
        row[1],
        row[2],
        row[3],
        row[4],
        State(row[5]),
        received_at,
        _time(row[7]),
        outcome,
        None if row[10] is None else bytes(row[10]),
        row[11],
    )


def get(conn: Sql, conversation_id: str, call_id: str) -> StoredToolCall | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM tool_calls WHERE conversation_id = ? AND call_id = ?",  # noqa: S608
        (conversation_id, call_id),
    ).fetchone()
    return _row(row) if row else None


def for_instance(conn: Sql, instance_id: str) -> list[StoredToolCall]:
    """The calls bound to ``instance_id``, oldest first."""
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM tool_calls WHERE instance_id = ?"  # noqa: S608
        " ORDER BY received_at, rowid",
        (instance_id,),
    ).fetchall()
    return [_row(row) for row in rows]


def all_calls(conn: Sql) -> list[StoredToolCall]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM tool_calls ORDER BY rowid"  # noqa: S608
    ).fetchall()
    return [_row(row) for row in rows]


def insert(
    conn: Sql,
    conversation_id: str,
    call_id: str,
    envelope_id: str,
    tool: str,
    now: str,
    *,
    timeout_ms: int | None = None,
    instance_id: str | None = None,
) -> Inserted:
    """Store a new ``received`` call, its deadline computed once from ``now``.

    A call id already used in the conversation (by a tool call, an interaction or a
    refused call) stores nothing: ``duplicate`` is true, with the earlier call if it
    is a tool call.
    """
    subject = f"{conversation_id}/{call_id}"
    existing = get(conn, conversation_id, call_id)
    if existing is not None or call_spent(conn, conversation_id, call_id):
        audit(conn, now, "agent", "tool.call", subject, "duplicate", ErrorCode.CALL_ALREADY_FINAL)
        return Inserted(existing, duplicate=True)
    received_at = datetime.fromisoformat(now)
    record = tool_calls.receive(
        call_id, received_at=received_at, timeout_ms=timeout_ms, instance_id=instance_id
    )
    conn.execute(
        "INSERT INTO tool_calls (conversation_id, call_id, envelope_id, tool, instance_id, state,"
        " received_at, deadline, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            conversation_id,
            call_id,
            envelope_id,
            tool,
            instance_id,
            record.state.value,
            now,
            None if record.deadline is None else _format(record.deadline),
            now,
        ),
    )
    audit(conn, now, "agent", "tool.call", subject, record.state.value)
    return Inserted(get(conn, conversation_id, call_id))


def act(
    txn: RuntimeTxn,
    conversation_id: str,
    call_id: str,
    event: Event,
    now: str,
    *,
    app_instance_id: str | None = None,
    code: str | None = None,
    message: str | None = None,
    result: dict[str, Any] | None = None,
    output_valid: bool = True,
    actor: str = "runtime",
) -> CallOutcome:
    """Apply one event to one call.

    ``app_instance_id``: the instance making an app request (``progress``,
    ``complete``, ``fail``, ``app_cancel``); a call not bound to it is answered
    ``call_not_found`` and nothing else. ``code``: the router's code for ``reject``,
    the app's for ``fail``; ``message``: their words (the code when omitted);
    ``result``: the result object of a ``complete``; ``output_valid``: whether it
    passed the tool's output schema. An unknown call id is ``call_not_found``.
    """
    subject = f"{conversation_id}/{call_id}"
    call = get(txn, conversation_id, call_id)
    when = datetime.fromisoformat(now)
    if call is None:
        decision = Decision(None, event, ErrorCode.CALL_NOT_FOUND)
    elif app_instance_id is not None:
        decision = tool_calls.app_request(
            call.record(),
            app_instance_id,
            event,
            now=when,
            code=code,
            output_valid=output_valid,
        )
    else:
        decision = tool_calls.decide(
            call.state,
            event,
            now=when,
            deadline=call.deadline,
            outcome=call.outcome,
            code=code,
            output_valid=output_valid,
        )
    if call is None or decision.to is None:
        audit(txn, now, actor, f"tool.{event.value}", subject, "refused", decision.refusal)
        # An app learns nothing about calls that are not its own.
        shown = None if decision.refusal == ErrorCode.CALL_NOT_FOUND else call
        return CallOutcome(shown, decision)
    return _write(txn, call, decision, now, actor=actor, message=message, result=result)


def _write(
    txn: RuntimeTxn,
    call: StoredToolCall,
    decision: Decision,
    now: str,
    *,
    actor: str,
    message: str | None = None,
    result: dict[str, Any] | None = None,
    code_override: str | None = None,
) -> CallOutcome:
    """Store an accepted decision and, when it writes one, queue the single result.

    A decision that moved the call is applied even when the requester is refused (an
    overdue call times out: the move is ``timeout``, the request gets
    ``call_already_final``).
    """
    assert decision.to is not None
    subject = f"{call.conversation_id}/{call.call_id}"
    written = decision.writes
    if written is not None and code_override is not None:
        written = Outcome(written.status, code_override)
    outbox: OutboxItem | None = None
    body: bytes | None = None
    envelope_id: str | None = call.result_envelope_id
    if written is not None:
        if written.status == "completed":
            body = msgspec.json.encode(result or {})
        envelope_id = result_envelope_id(call.conversation_id, call.call_id)
    changed = txn.execute(
        "UPDATE tool_calls SET state = ?, outcome_status = ?, outcome_code = ?, result = ?,"
        " result_envelope_id = ?, updated_at = ?"
        " WHERE conversation_id = ? AND call_id = ? AND state = ?",
        (
            decision.to.value,
            written.status if written else (call.outcome.status if call.outcome else None),
            written.code if written else (call.outcome.code if call.outcome else None),
            body if written else call.result,
            envelope_id,
            now,
            call.conversation_id,
            call.call_id,
            call.state.value,
        ),
    ).rowcount
    if not changed:  # cannot happen on the single writer; be safe anyway
        raise RuntimeError(f"tool call {subject} changed under its transaction")
    if decision.to in tool_calls.SETTLED:  # the result supersedes held progress
        txn.execute(
            "UPDATE tool_calls SET progress_pending = NULL"
            " WHERE conversation_id = ? AND call_id = ?",
            (call.conversation_id, call.call_id),
        )
    if written is not None:
        if written.status == "completed":
            payload = payloads.ToolResult(
                call_id=call.call_id, status="completed", result=result or {}
            )
        else:
            error_code = written.code or ErrorCode.RUNTIME_FAILED
            text = message if message and code_override is None else None
            payload = payloads.ToolResult(
                call_id=call.call_id,
                status=written.status,
                error=payloads.ErrorInfo(
                    code=error_code,
                    message=(text or MESSAGES.get(error_code) or error_code)[:1024],
                ),
            )
        outbox = _queue_result(txn, call.conversation_id, payload, now, call.instance_id)
    audit(
        txn,
        now,
        actor,
        f"tool.{decision.effective.value}",
        subject,
        decision.to.value,
        written.code if written else decision.refusal,
    )
    return CallOutcome(get(txn, call.conversation_id, call.call_id), decision, outbox)


def _queue_result(
    txn: RuntimeTxn,
    conversation_id: str,
    result: payloads.ToolResult,
    now: str,
    instance_id: str | None,
) -> OutboxItem:
    """Queue the call's one result; its ``target.instance_id`` tells the agent which
    instance ran the call (so a ``launch`` gives the agent the instance to name)."""
    if result.error is not None and not _CODE.match(result.error.code):
        raise ValueError(f"not an error code: {result.error.code!r}")
    envelope_id = result_envelope_id(conversation_id, result.call_id)
    target = None if instance_id is None else Target(instance_id=instance_id)
    return queue_from_runtime(
        txn, ToolResultEnvelope, envelope_id, conversation_id, result, now, target=target
    )


def close_instance(
    txn: RuntimeTxn,
    instance_id: str,
    now: str,
    reason: Literal[ErrorCode.APP_CLOSED, ErrorCode.APP_FAILED] = ErrorCode.APP_CLOSED,
    *,
    actor: str = "runtime",
) -> list[CallOutcome]:
    """The accepted close (or failure) of ``instance_id``: every bound call still
    ``received``, ``routing``, ``waiting_for_app`` or ``running`` becomes
    ``cancelled`` with one result row (code ``reason``), oldest call first; an overdue
    one ``failed(tool_timeout)``. ``submitted`` and final calls are left exactly as
    they are (their result goes out unchanged) and are not returned."""
    calls = for_instance(txn, instance_id)
    by_id = {c.call_id: c for c in calls}
    decisions = tool_calls.close_instance(
        [c.record() for c in calls], instance_id, now=datetime.fromisoformat(now)
    )
    outcomes: list[CallOutcome] = []
    for call_id, decision in decisions:
        if decision.to is None:
            continue
        override = reason if decision.effective is Event.APP_CLOSED else None
        outcomes.append(
            _write(txn, by_id[call_id], decision, now, actor=actor, code_override=override)
        )
    return outcomes


def due(txn: RuntimeTxn, now: str) -> list[CallOutcome]:
    """Time out every live call whose deadline is at or before ``now``, earliest
    deadline first."""
    live = tuple(s.value for s in tool_calls.LIVE)
    marks = ", ".join("?" for _ in live)
    rows = txn.execute(
        f"SELECT {_COLUMNS} FROM tool_calls"  # noqa: S608
        f" WHERE state IN ({marks}) AND deadline IS NOT NULL AND deadline <= ?"
        " ORDER BY deadline, conversation_id, call_id",
        (*live, now),
    ).fetchall()
    when = datetime.fromisoformat(now)
    outcomes: list[CallOutcome] = []
    for call in map(_row, rows):
        # One call at a time: call ids repeat across conversations.
        ((_, decision),) = tool_calls.due([call.record()], when)
        if decision.to is not None:
            outcomes.append(_write(txn, call, decision, now, actor="runtime"))
    return outcomes


def next_deadline(conn: Sql) -> datetime | None:
    """The earliest deadline of a live call, or end of a held progress report's
    window: when to run ``due`` / ``flush_progress`` next."""
    live = tuple(s.value for s in tool_calls.LIVE)
    marks = ", ".join("?" for _ in live)
    row = conn.execute(
        f"SELECT MIN(deadline) FROM tool_calls WHERE state IN ({marks})",  # noqa: S608
        live,
    ).fetchone()
    found = [t for t in (_time(row[0]) if row else None,) if t is not None]
    held = conn.execute(
        "SELECT MIN(progress_at) FROM tool_calls WHERE progress_pending IS NOT NULL"
    ).fetchone()
    if held is not None and held[0] is not None:
        found.append(datetime.fromisoformat(held[0]) + PROGRESS_INTERVAL)
    return min(found) if found else None


def _queue_progress(
    txn: RuntimeTxn, conversation_id: str, report: payloads.ToolProgress, now: str
) -> OutboxItem:
    txn.execute(
        "UPDATE tool_calls SET progress_at = ?, progress_pending = NULL"
        " WHERE conversation_id = ? AND call_id = ?",
        (now, conversation_id, report.call_id),
    )
    return queue_from_runtime(
        txn, ToolProgressEnvelope, f"prg_{uuid.uuid4().hex}", conversation_id, report, now
    )


def progress(
    txn: RuntimeTxn, conversation_id: str, report: payloads.ToolProgress, now: str
) -> OutboxItem | None:
    """After an accepted ``progress`` event: queue ``report`` now, or hold it (the
    newest held report wins) until the call's 250 ms window ends."""
    row = txn.execute(
        "SELECT progress_at FROM tool_calls WHERE conversation_id = ? AND call_id = ?",
        (conversation_id, report.call_id),
    ).fetchone()
    if row is None:
        return None
    when = datetime.fromisoformat(now)
    if row[0] is None or when >= datetime.fromisoformat(row[0]) + PROGRESS_INTERVAL:
        return _queue_progress(txn, conversation_id, report, now)
    txn.execute(
        "UPDATE tool_calls SET progress_pending = ? WHERE conversation_id = ? AND call_id = ?",
        (msgspec.json.encode(report), conversation_id, report.call_id),
    )
    # The end of the window is a new deadline: without this the Runtime's timer slept
    # on to the next call timeout (up to a minute) before sending the held report.
    txn.deadline_added()
    return None


def flush_progress(txn: RuntimeTxn, now: str) -> list[OutboxItem]:
    """Queue every held progress report whose window has ended (of calls still
    live), oldest window first."""
    rows = txn.execute(
        "SELECT conversation_id, call_id, progress_at, progress_pending, state FROM tool_calls"
        " WHERE progress_pending IS NOT NULL ORDER BY progress_at, conversation_id, call_id"
    ).fetchall()
    when = datetime.fromisoformat(now)
    items: list[OutboxItem] = []
    for conversation_id, call_id, at, held, state in rows:
        if State(state) not in tool_calls.LIVE:
            txn.execute(
                "UPDATE tool_calls SET progress_pending = NULL"
                " WHERE conversation_id = ? AND call_id = ?",
                (conversation_id, call_id),
            )
            continue
        if at is not None and when < datetime.fromisoformat(at) + PROGRESS_INTERVAL:
            continue
        report = msgspec.json.decode(bytes(held), type=payloads.ToolProgress)
        items.append(_queue_progress(txn, conversation_id, report, now))
    return items
