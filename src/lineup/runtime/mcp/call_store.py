"""Persisted MCP tool calls (``mcp_calls``): transaction functions run on the writer.

Each one loads the call's row, asks the pure rules (``mcp.calls.decide``), stores the
move and carries out what the rules return on the unit of work: the audit row (ids,
server, tool name, state and code: never arguments or results), the agent's one
``tool.result`` (queued, sent after the commit, under the id derived from the call),
the expiry timer, and ``McpCallsChanged`` for whoever forwards, cancels or shows
calls (the Runtime's ``McpHost``, the consent dialog).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

import msgspec

from lineup.protocol import ErrorCode, Target, ToolResultEnvelope, payloads

from ..tables import audit, queue_from_runtime, result_envelope_id
from ..txn import RuntimeTxn, Sql
from .calls import OPEN, CallFacts, Decision, Event, State, decide, starts_executing
from .servers import McpToolTarget, scope_of

__all__ = [
    "McpCall",
    "McpCallRefused",
    "McpCallsChanged",
    "act",
    "arrive",
    "dismiss",
    "due",
    "end_for_server",
    "get",
    "next_deadline",
    "open_calls",
    "recover",
]

MESSAGES: dict[str, str] = {
    ErrorCode.CAPABILITY_DENIED: "the person refused the call",
    ErrorCode.TOOL_TIMEOUT: "the call had no result before its deadline",
    ErrorCode.CALL_DISMISSED: "the agent took the call back",
    ErrorCode.APP_DISABLED: "the person disabled or removed the server",
    ErrorCode.INTERRUPTED: "the Runtime stopped while the call ran; it was not run again",
}


@dataclass(frozen=True, slots=True)
class McpCall:
    conversation_id: str
    call_id: str
    agent_id: str
    server_key: str
    tool: str
    read_only: bool
    arguments: bytes
    state: State
    decision: str | None
    code: str | None
    result: bytes | None
    created_at: str
    expires_at: str
    updated_at: str

    @property
    def key(self) -> tuple[str, str]:
        return (self.conversation_id, self.call_id)


@dataclass(frozen=True, slots=True)
class McpCallsChanged:
    """These calls moved (after the commit): ``forward`` the ones now executing,
    ``cancel`` the ones that left a forwarded state, and show the rest."""

    calls: tuple[McpCall, ...]
    forward: tuple[McpCall, ...] = ()
    cancel: tuple[McpCall, ...] = ()


class McpCallRefused(Exception):
    """A move the rules refuse (``call_already_final``, ``lifecycle_denied``,
    ``call_not_found``): nothing changed."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


_COLUMNS = (
    "conversation_id, call_id, agent_id, server_key, tool, read_only, arguments, state,"
    " decision, code, result, created_at, expires_at, updated_at"
)


def _call(row: Any) -> McpCall:
    return McpCall(
        row[0], row[1], row[2], row[3], row[4], bool(row[5]), bytes(row[6]), State(row[7]),
        row[8], row[9], None if row[10] is None else bytes(row[10]), row[11], row[12], row[13],
    )  # fmt: skip


def get(conn: Sql, conversation_id: str, call_id: str) -> McpCall | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM mcp_calls WHERE conversation_id = ? AND call_id = ?",  # noqa: S608
        (conversation_id, call_id),
    ).fetchone()
    return None if row is None else _call(row)


def open_calls(conn: Sql) -> list[McpCall]:
    """Calls without a result yet, oldest first."""
    marks = ",".join("?" * len(OPEN))
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM mcp_calls WHERE state IN ({marks}) ORDER BY created_at, call_id",  # noqa: S608
        tuple(OPEN),
    ).fetchall()
    return [_call(r) for r in rows]


def next_deadline(conn: Sql) -> datetime | None:
    marks = ",".join("?" * len(OPEN))
    row = conn.execute(
        f"SELECT MIN(expires_at) FROM mcp_calls WHERE state IN ({marks})",  # noqa: S608
        tuple(OPEN),
    ).fetchone()
    return None if row is None or row[0] is None else datetime.fromisoformat(row[0])


# --- moves -----------------------------------------------------------------------------------


def _facts(call: McpCall) -> CallFacts:
    return CallFacts(call.state, datetime.fromisoformat(call.expires_at))


def _result(call: McpCall) -> payloads.ToolResult:
    if call.state is State.COMPLETED:
        return payloads.ToolResult(
            call_id=call.call_id,
            status="completed",
            result=msgspec.json.decode(call.result or b"{}"),
        )
    code = call.code or ErrorCode.PROVIDER_FAILED
    return payloads.ToolResult(
        call_id=call.call_id,
        status=call.state.value,  # type: ignore[arg-type]
        error=payloads.ErrorInfo(
            code=code, message=MESSAGES.get(code, "the MCP server could not carry out the call")
        ),
    )


def _audit(txn: Sql, now: str, call: McpCall, action: str, actor: str) -> None:
    subject = f"{call.conversation_id}/{call.call_id}"
    detail = f"{call.server_key}:{call.tool}:{call.state}"
    if call.decision:
        detail += f":{call.decision}"
    audit(txn, now, actor, action, subject, detail, call.code)


def _carry_out(
    txn: RuntimeTxn,
    call: McpCall,
    decision: Decision,
    now: str,
    *,
    actor: str,
    result: bytes | None = None,
    consent: str | None = None,
) -> McpCall:
    assert decision.to is not None
    moved = replace(
        call,
        state=decision.to,
        code=decision.code,
        decision=consent or call.decision,
        result=result if decision.to is State.COMPLETED else None,
        updated_at=now,
    )
    txn.execute(
        "UPDATE mcp_calls SET state = ?, code = ?, decision = ?, result = ?, updated_at = ?"
        " WHERE conversation_id = ? AND call_id = ?",
        (moved.state, moved.code, moved.decision, moved.result, now, *call.key),
    )
    _audit(txn, now, moved, f"mcp.{decision.event}", actor)
    if decision.queue_result:
        _queue(txn, moved, now)
    return moved


def _queue(txn: RuntimeTxn, call: McpCall, now: str) -> None:
    queue_from_runtime(
        txn,
        ToolResultEnvelope,
        result_envelope_id(call.conversation_id, call.call_id),
        call.conversation_id,
        _result(call),
        now,
        target=Target(app_scope=scope_of(call.server_key)),
    )


def _tell(txn: RuntimeTxn, moves: Iterable[tuple[McpCall, Decision]]) -> None:
    done = list(moves)
    if not done:
        return
    txn.emit(
        McpCallsChanged(
            tuple(c for c, _ in done),
            forward=tuple(c for c, d in done if d.forward),
            cancel=tuple(c for c, d in done if d.cancel_on_server),
        )
    )


def arrive(
    txn: RuntimeTxn,
    conversation_id: str,
    call_id: str,
    envelope_id: str,
    agent_id: str,
    target: McpToolTarget,
    arguments: dict[str, Any],
    now: str,
    *,
    remembered: bool = False,
) -> McpCall:
    """Store a routed call: executing at once when the policy allows it (forwarded
    after the commit), else awaiting the person's consent. The caller checked that the
    call id is not spent."""
    entry, tool = target.entry, target.tool
    runs = starts_executing(entry.policy, read_only=tool.read_only, remembered=remembered)
    state = State.EXECUTING if runs else State.AWAITING_CONSENT
    if not runs:
        decision = None
    elif remembered:
        decision = "remembered"
    else:
        decision = "automatic"
    expires = datetime.fromisoformat(now) + timedelta(
        milliseconds=target.descriptor.timeout_ms or 0
    )
    call = McpCall(
        conversation_id, call_id, agent_id, entry.key, tool.name, tool.read_only,
        msgspec.json.encode(arguments), state, decision, None, None, now,
        expires.isoformat(timespec="milliseconds"), now,
    )  # fmt: skip
    txn.execute(
        "INSERT INTO mcp_calls (conversation_id, call_id, envelope_id, agent_id, server_key,"
        " tool, read_only, arguments, state, decision, created_at, expires_at, updated_at)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            conversation_id, call_id, envelope_id, agent_id, entry.key, tool.name,
            int(tool.read_only), call.arguments, state, decision, now, call.expires_at, now,
        ),
    )  # fmt: skip
    _audit(txn, now, call, "mcp.call", "agent")
    txn.deadline_added()
    txn.emit(McpCallsChanged((call,), forward=(call,) if runs else ()))
    return call


def act(
    txn: RuntimeTxn,
    conversation_id: str,
    call_id: str,
    event: Event,
    now: str,
    *,
    actor: str,
    code: str | None = None,
    result: bytes | None = None,
    consent: str | None = None,
) -> McpCall:
    """Decide ``event`` on the stored call and store it; raises ``McpCallRefused``."""
    call = get(txn, conversation_id, call_id)
    if call is None:
        raise McpCallRefused(ErrorCode.CALL_NOT_FOUND)
    decision = decide(_facts(call), event, now=datetime.fromisoformat(now), code=code)
    if decision.refusal is not None:
        raise McpCallRefused(decision.refusal)
    if decision.to is None:
        return call
    moved = _carry_out(txn, call, decision, now, actor=actor, result=result, consent=consent)
    _tell(txn, [(moved, decision)])
    return moved


def dismiss(
    txn: RuntimeTxn, conversation_id: str, call_id: str, sender_id: str, now: str
) -> McpCall | None:
    """The agent's ``interaction.dismiss`` naming an MCP call: it ends ``dismissed`` and
    the server is told to stop. A repeat, or a call that already ended, changes nothing
    (its one result was sent)."""
    call = get(txn, conversation_id, call_id)
    if call is None or call.agent_id != sender_id:
        return None
    try:
        return act(txn, conversation_id, call_id, Event.DISMISS, now, actor="agent")
    except McpCallRefused as refused:
        subject = f"{conversation_id}/{call_id}"
        audit(txn, now, "agent", "mcp.dismiss", subject, "refused", refused.code)
        return None


def _each(txn: RuntimeTxn, calls: Iterable[McpCall], event: Event, now: str) -> list[McpCall]:
    when = datetime.fromisoformat(now)
    moves = []
    for call in calls:
        decision = decide(_facts(call), event, now=when)
        if decision.to is not None:
            moves.append((_carry_out(txn, call, decision, now, actor="runtime"), decision))
    _tell(txn, moves)
    return [c for c, _ in moves]


def due(txn: RuntimeTxn, now: str) -> list[McpCall]:
    """End the open calls whose deadline passed (``failed(tool_timeout)``)."""
    when = datetime.fromisoformat(now)
    late = [c for c in open_calls(txn) if datetime.fromisoformat(c.expires_at) <= when]
    return _each(txn, late, Event.EXPIRE, now)


def recover(txn: RuntimeTxn, now: str) -> list[McpCall]:
    """At start: a call a stop found executing may have run; it never runs again."""
    running = [c for c in open_calls(txn) if c.state is State.EXECUTING]
    return _each(txn, running, Event.INTERRUPT, now)


def end_for_server(txn: RuntimeTxn, server_key: str, now: str) -> list[McpCall]:
    """The person disabled or removed the server: its open calls end now."""
    mine = [c for c in open_calls(txn) if c.server_key == server_key]
    return _each(txn, mine, Event.DISABLE, now)
