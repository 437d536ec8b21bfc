"""A capability call as stored: its key, its record and its row in
``capability_calls``, read and written by the gateway's transaction functions
(``call_store``) and read by hosts through the gateway. ``facts`` is what the pure
rules (``calls``) are told about a stored call."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from ..txn import Sql
from .calls import CallFacts, State
from .catalog import CATALOG

__all__ = [
    "PICK_FILE",
    "CallKey",
    "CapabilityCall",
    "facts",
    "get",
    "insert",
    "next_expiry",
    "open_calls",
    "requester",
    "requester_of",
    "result_envelope_id",
    "save",
]

PICK_FILE = "device.pick_file"
"""The capability whose result is a file the person picked."""


@dataclass(frozen=True, slots=True)
class CallKey:
    conversation_id: str
    call_id: str
    requester_kind: str  # agent | app


@dataclass(frozen=True, slots=True)
class CapabilityCall:
    """One call as stored. ``arguments`` are for the dialog and the provider only."""

    key: CallKey
    requester_id: str
    capability: str
    risk: str
    reason: str
    arguments: bytes
    phrase: str | None
    state: State
    decision: str | None
    result: bytes | None
    code: str | None
    created_at: str
    expires_at: str
    updated_at: str

    def __repr__(self) -> str:  # never the reason or arguments
        return f"CapabilityCall({self.key}, {self.capability}, {self.state})"


# --- the row -----------------------------------------------------------------------------

_COLUMNS = (
    "conversation_id, call_id, requester_kind, requester_id, capability, risk, reason,"
    " arguments, phrase, state, decision, result, code, created_at, expires_at, updated_at"
)


def _from_row(row: tuple[Any, ...]) -> CapabilityCall:
    return CapabilityCall(
        CallKey(row[0], row[1], row[2]),
        row[3],
        row[4],
        row[5],
        row[6],
        bytes(row[7]),
        row[8],
        State(row[9]),
        row[10],
        None if row[11] is None else bytes(row[11]),
        row[12],
        row[13],
        row[14],
        row[15],
    )


def get(conn: Sql, key: CallKey) -> CapabilityCall | None:
    row = conn.execute(
        f"SELECT {_COLUMNS} FROM capability_calls"  # noqa: S608
        " WHERE conversation_id = ? AND call_id = ? AND requester_kind = ?",
        (key.conversation_id, key.call_id, key.requester_kind),
    ).fetchone()
    return None if row is None else _from_row(row)


def open_calls(conn: Sql) -> list[CapabilityCall]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM capability_calls"  # noqa: S608
        " WHERE state IN ('awaiting_consent', 'approved', 'executing') ORDER BY created_at"
    ).fetchall()
    return [_from_row(r) for r in rows]


def next_expiry(conn: Sql) -> str | None:
    row = conn.execute(
        "SELECT MIN(expires_at) FROM capability_calls"
        " WHERE state IN ('awaiting_consent', 'approved')"
    ).fetchone()
    return None if row is None else row[0]


def insert(conn: Sql, call: CapabilityCall, envelope_id: str | None) -> None:
    k = call.key
    conn.execute(
        f"INSERT INTO capability_calls ({_COLUMNS}, envelope_id)"  # noqa: S608
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            k.conversation_id,
            k.call_id,
            k.requester_kind,
            call.requester_id,
            call.capability,
            call.risk,
            call.reason,
            call.arguments,
            call.phrase,
            str(call.state),
            call.decision,
            call.result,
            call.code,
            call.created_at,
            call.expires_at,
            call.updated_at,
            envelope_id,
        ),
    )


def save(conn: Sql, call: CapabilityCall) -> None:
    k = call.key
    conn.execute(
        "UPDATE capability_calls SET state = ?, decision = ?, result = ?, code = ?,"
        " updated_at = ? WHERE conversation_id = ? AND call_id = ? AND requester_kind = ?",
        (
            str(call.state),
            call.decision,
            call.result,
            call.code,
            call.updated_at,
            k.conversation_id,
            k.call_id,
            k.requester_kind,
        ),
    )


def result_envelope_id(key: CallKey) -> str:
    digest = hashlib.sha256(f"{key.conversation_id}/{key.call_id}".encode()).hexdigest()
    return f"apr_{digest[:40]}"


def requester_of(call: CapabilityCall) -> str:
    """Who remembered consent is for: the agent, or the app (not one instance)."""
    return requester(call.key.requester_kind, call.requester_id)


def requester(kind: str, requester_id: str) -> str:
    if kind == "agent":
        return f"agent:{requester_id}"
    return f"app:{requester_id.rsplit('.', 1)[0]}"


def facts(call: CapabilityCall) -> CallFacts:
    capability = CATALOG.get(call.capability)
    return CallFacts(
        state=call.state,
        from_app=call.key.requester_kind == "app",
        risk=call.risk,
        expires_at=datetime.fromisoformat(call.expires_at),
        updated_at=datetime.fromisoformat(call.updated_at),
        phrase=call.phrase,
        runs_in_runtime=capability is not None and capability.runs_in == "runtime",
        picks_file=call.capability == PICK_FILE,
    )
