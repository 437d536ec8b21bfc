"""The capability gateway: an agent's ``app.call`` or an app's
``capabilities.request`` is decided here and answered exactly once.

Arrival (in the apply transaction for ``app.call``): a call id seen before does
nothing (its one result is already on its way or delivered). Otherwise the call is
checked: the capability must be declared by this host now (provided by an attached
host and not revoked; else ``unsupported``, code ``capability_not_declared`` or
``revoked``); an app may ask only for what its manifest's ``permissions`` list
(``rejected``, ``capability_denied``); the arguments must match the input schema
(``rejected``, ``capability_input_invalid``); ``expires_at`` must be in the future
(``expired``). A call that passes waits for the person's consent, except that
``display_only`` ones, and ``user_confirmation`` ones the person allowed for this
requester earlier in this Runtime session, are approved at once (decision
``automatic`` / ``remembered``).

Consent (``decide``): ``deny`` ends the call ``rejected(capability_denied)``.
``allow`` approves it; ``remember`` is honoured for ``user_confirmation`` only and
lasts until the Runtime stops; ``system_permission`` needs ``acknowledged`` (the
dialog's second step) and ``restricted`` needs the confirmation phrase the dialog
shows, typed back (else the decision is refused, ``confirmation_required``, and the
call keeps waiting).

Execution: a ``runtime`` capability (``artifact.save``) runs in the decision's
transaction. A ``shell`` capability runs in the person's browser: one tab claims the
approved call (``claim``: the first claim wins), runs the provider and reports
``finish``; the result is checked against the output schema. A call still
``approved`` at ``expires_at`` expires unexecuted; one a restart finds ``approved``
or ``executing`` ends ``failed(interrupted)`` and never runs again.

Every call, decision and outcome is audited with ids, capability, risk, requester,
decision and status, never arguments, URLs, texts, file names or contents.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import secrets
import uuid
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

import msgspec

from lineup.protocol import AppCallEnvelope, AppResultEnvelope, decode, payloads
from lineup.protocol.errors import ErrorCode

from ..records import OutboxItem, Received
from ..store import RuntimeStore
from ..tables import audit, queue_from_runtime
from ..txn import RuntimeTxn, Sql
from .calls import FINAL, Move, State, next_state
from .catalog import CATALOG, MAX_ARTIFACT_BYTES, Capability

__all__ = [
    "EXECUTION_LEASE_S",
    "Artifact",
    "CallKey",
    "CapabilityCall",
    "CapabilityGateway",
    "CapabilityRefused",
    "busy_or_final",
]

EXECUTION_LEASE_S = 120
"""A claimed call whose tab never reports ends ``failed(interrupted)`` after this."""

_WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor", "iris")


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


class CapabilityRefused(Exception):
    """A request to the gateway was refused: ``code`` says why; nothing changed."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True, slots=True)
class Outcome:
    call: CapabilityCall | None
    outbox: OutboxItem | None = None


_COLUMNS = (
    "conversation_id, call_id, requester_kind, requester_id, capability, risk, reason,"
    " arguments, phrase, state, decision, result, code, created_at, expires_at, updated_at"
)


def _row(row: tuple[Any, ...]) -> CapabilityCall:
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
    return None if row is None else _row(row)


def open_calls(conn: Sql) -> list[CapabilityCall]:
    rows = conn.execute(
        f"SELECT {_COLUMNS} FROM capability_calls"  # noqa: S608
        " WHERE state IN ('awaiting_consent', 'approved', 'executing') ORDER BY created_at"
    ).fetchall()
    return [_row(r) for r in rows]


def declared(conn: Sql) -> dict[str, Capability]:
    """The capabilities this host declares now: provided and not revoked."""
    rows = conn.execute(
        "SELECT name FROM host_capabilities WHERE provided_at IS NOT NULL AND revoked_at IS NULL"
    ).fetchall()
    return {r[0]: CATALOG[r[0]] for r in rows if r[0] in CATALOG}


def _revoked(conn: Sql, name: str) -> bool:
    row = conn.execute("SELECT revoked_at FROM host_capabilities WHERE name = ?", (name,))
    found = row.fetchone()
    return found is not None and found[0] is not None


def busy_or_final(call: CapabilityCall) -> str:
    """Why a move on ``call`` is refused: it already ended, or it is in another step."""
    return (
        ErrorCode.CALL_ALREADY_FINAL.value
        if call.state in FINAL
        else ErrorCode.CAPABILITY_CALL_BUSY.value
    )


def result_envelope_id(key: CallKey) -> str:
    digest = hashlib.sha256(f"{key.conversation_id}/{key.call_id}".encode()).hexdigest()
    return f"apr_{digest[:40]}"


def _audit(conn: Sql, now: str, call: CapabilityCall, action: str) -> None:
    subject = f"{call.key.conversation_id}/{call.key.call_id}"
    detail = f"{call.capability}:{call.risk}:{call.key.requester_kind}:{call.state}"
    if call.decision:
        detail += f":{call.decision}"
    audit(conn, now, call.key.requester_kind, action, subject, detail, call.code)


def _store(conn: Sql, call: CapabilityCall, envelope_id: str | None) -> None:
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


def _save(conn: Sql, call: CapabilityCall) -> None:
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


def _result_outbox(txn: RuntimeTxn, call: CapabilityCall, now: str) -> OutboxItem | None:
    """The one ``app.result`` to an agent (an app reads its results through the SDK)."""
    if call.key.requester_kind != "agent" or call.state not in FINAL:
        return None
    if call.state is State.COMPLETED:
        payload = payloads.AppResult(
            call_id=call.key.call_id,
            status="completed",
            result=msgspec.json.decode(call.result or b"{}"),
        )
    else:
        payload = payloads.AppResult(
            call_id=call.key.call_id,
            status=call.state.value,  # type: ignore[arg-type]
            error=payloads.ErrorInfo(
                code=call.code or call.state.value,
                message=_MESSAGES.get(call.code or "", "the capability call did not complete"),
            ),
        )
    envelope_id = result_envelope_id(call.key)
    txn.execute(
        "UPDATE capability_calls SET result_envelope_id = ? WHERE conversation_id = ?"
        " AND call_id = ? AND requester_kind = 'agent'",
        (envelope_id, call.key.conversation_id, call.key.call_id),
    )
    return queue_from_runtime(
        txn, AppResultEnvelope, envelope_id, call.key.conversation_id, payload, now
    )


_MESSAGES: dict[str, str] = {
    ErrorCode.CAPABILITY_NOT_DECLARED: "this host does not offer this capability",
    ErrorCode.REVOKED: "the person revoked this capability",
    ErrorCode.CAPABILITY_DENIED: "the person or the policy refused the call",
    ErrorCode.CAPABILITY_INPUT_INVALID: "the arguments do not match the capability's input schema",
    ErrorCode.EXPIRED: "the call expired before it was decided or run",
    ErrorCode.INTERRUPTED: "the Runtime stopped while the call ran; it was not run again",
    ErrorCode.CAPABILITY_OUTPUT_INVALID: "the provider's result did not match the output schema",
    ErrorCode.PROVIDER_FAILED: "the host could not carry out the call",
}


def _move(
    txn: RuntimeTxn,
    call: CapabilityCall,
    move: Move,
    now: str,
    *,
    decision: str | None = None,
    result: bytes | None = None,
    code: str | None = None,
) -> Outcome:
    state = next_state(call.state, move)
    if state is None:
        raise CapabilityRefused(busy_or_final(call))
    moved = replace(
        call,
        state=state,
        decision=decision or call.decision,
        result=result if state is State.COMPLETED else None,
        code=code if state is not State.COMPLETED else None,
        updated_at=now,
    )
    _save(txn, moved)
    _audit(txn, now, moved, f"capability.{move.value}")
    return Outcome(moved, _result_outbox(txn, moved, now))


# --- arrival ---------------------------------------------------------------------------------


def _arrive(
    txn: RuntimeTxn,
    key: CallKey,
    requester_id: str,
    name: str,
    reason: str,
    arguments: dict[str, Any],
    expires_at: datetime,
    now: str,
    remembered: frozenset[str],
    envelope_id: str | None,
    allowed: Iterable[str] | None,
) -> Outcome | None:
    if get(txn, key) is not None:
        audit(txn, now, key.requester_kind, "capability.call", key.call_id, "duplicate")
        return None
    capability = declared(txn).get(name)
    state, code, decision = State.AWAITING_CONSENT, None, None
    risk = "unknown" if capability is None else capability.risk
    if capability is None:
        code = (
            ErrorCode.REVOKED.value
            if _revoked(txn, name)
            else ErrorCode.CAPABILITY_NOT_DECLARED.value
        )
        state = State.UNSUPPORTED
    elif allowed is not None and name not in allowed:
        state, code = State.REJECTED, ErrorCode.CAPABILITY_DENIED.value
    elif capability.schemas.validate_input(arguments) is not None:
        state, code = State.REJECTED, ErrorCode.CAPABILITY_INPUT_INVALID.value
    elif expires_at <= datetime.fromisoformat(now):
        state, code = State.EXPIRED, ErrorCode.EXPIRED.value
    elif capability.risk == "display_only":
        state, decision = State.APPROVED, "automatic"
    elif capability.risk == "user_confirmation" and name in remembered:
        state, decision = State.APPROVED, "remembered"
    phrase = None
    if capability is not None and capability.risk == "restricted":
        phrase = f"{secrets.choice(_WORDS)}-{secrets.randbelow(900) + 100}"
    call = CapabilityCall(
        key,
        requester_id,
        name,
        risk,
        reason,
        msgspec.json.encode(arguments),
        phrase,
        state,
        decision,
        None,
        code,
        now,
        expires_at.astimezone(UTC).isoformat(timespec="milliseconds"),
        now,
    )
    _store(txn, call, envelope_id)
    _audit(txn, now, call, "capability.call")
    if state is State.APPROVED and capability is not None and capability.runs_in == "runtime":
        return _run_in_runtime(txn, call, capability, now)
    return Outcome(call, _result_outbox(txn, call, now))


def receive(
    txn: RuntimeTxn,
    item: Received,
    now: str,
    remembered: frozenset[tuple[str, str]] = frozenset(),
) -> Outcome | None:
    """An agent's ``app.call`` was just stored (its timeline row): take it in.
    ``remembered``: the (requester, capability) pairs allowed for this session."""
    envelope = decode(item.body)
    row = txn.execute(
        "SELECT agent_id FROM conversations WHERE id = ?", (item.conversation_id,)
    ).fetchone()
    if not isinstance(envelope, AppCallEnvelope) or row is None:
        return None
    agent_id = str(row[0])
    if envelope.sender.id != agent_id:
        return None  # not this conversation's agent: the AppServer never relays that
    requester = f"agent:{agent_id}"
    p = envelope.payload
    key = CallKey(item.conversation_id, p.call_id, "agent")
    return _arrive(
        txn,
        key,
        agent_id,
        p.capability,
        p.reason,
        dict(p.arguments),
        p.expires_at,
        now,
        frozenset(c for r, c in remembered if r == requester),
        envelope.id,
        None,
    )


# --- runtime providers -----------------------------------------------------------------------


def _run_in_runtime(
    txn: RuntimeTxn, call: CapabilityCall, capability: Capability, now: str
) -> Outcome:
    """Carry out a capability that runs in the Runtime (``artifact.save``)."""
    arguments = msgspec.json.decode(call.arguments)
    if "base64" in arguments:
        try:
            body = base64.b64decode(arguments["base64"], validate=True)
        except ValueError:
            return _move(txn, call, Move.FAIL, now, code=ErrorCode.CAPABILITY_INPUT_INVALID)
    else:
        body = arguments["text"].encode("utf-8")
    if len(body) > MAX_ARTIFACT_BYTES:
        return _move(txn, call, Move.FAIL, now, code=ErrorCode.ARTIFACT_TOO_LARGE)
    artifact = store_artifact(
        txn,
        call.key.conversation_id,
        arguments["name"],
        arguments["media_type"],
        body,
        call.key.call_id,
        now,
    )
    result = msgspec.json.encode(artifact)
    return _move(txn, call, Move.COMPLETE, now, result=result)


def store_artifact(
    conn: Sql,
    conversation_id: str,
    name: str,
    media_type: str,
    body: bytes,
    call_id: str | None,
    now: str,
) -> dict[str, Any]:
    """Keep ``body`` as an artifact of the conversation; its public metadata."""
    artifact_id = f"art_{uuid.uuid4().hex}"
    conn.execute(
        "INSERT INTO artifacts (id, conversation_id, name, media_type, size, sha256, body,"
        " call_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            artifact_id,
            conversation_id,
            name,
            media_type,
            len(body),
            hashlib.sha256(body).hexdigest(),
            body,
            call_id,
            now,
        ),
    )
    audit(conn, now, "runtime", "artifact.store", artifact_id, f"bytes:{len(body)}")
    return {"artifact_id": artifact_id, "name": name, "media_type": media_type, "size": len(body)}


# --- the person, the shell, the clock -------------------------------------------------------


def decide(
    txn: RuntimeTxn,
    key: CallKey,
    allow: bool,
    now: str,
    *,
    acknowledged: bool = False,
    confirmation: str | None = None,
) -> Outcome:
    call = get(txn, key)
    if call is None:
        raise CapabilityRefused(ErrorCode.CAPABILITY_CALL_NOT_FOUND.value)
    if call.state is not State.AWAITING_CONSENT:
        raise CapabilityRefused(busy_or_final(call))
    if datetime.fromisoformat(call.expires_at) <= datetime.fromisoformat(now):
        return _move(txn, call, Move.EXPIRE, now, code=ErrorCode.EXPIRED)
    if not allow:
        return _move(txn, call, Move.DENY, now, decision="deny", code=ErrorCode.CAPABILITY_DENIED)
    if call.risk == "system_permission" and not acknowledged:
        raise CapabilityRefused(ErrorCode.CONFIRMATION_REQUIRED.value)
    if call.risk == "restricted" and (not confirmation or confirmation.strip() != call.phrase):
        raise CapabilityRefused(ErrorCode.CONFIRMATION_REQUIRED)
    approved = _move(txn, call, Move.ALLOW, now, decision="allow")
    capability = CATALOG.get(call.capability)
    if approved.call is not None and capability is not None and capability.runs_in == "runtime":
        return _run_in_runtime(txn, approved.call, capability, now)
    return approved


def claim(txn: RuntimeTxn, key: CallKey, now: str) -> Outcome:
    call = get(txn, key)
    if call is None:
        raise CapabilityRefused(ErrorCode.CAPABILITY_CALL_NOT_FOUND)
    return _move(txn, call, Move.CLAIM, now)


def finish(
    txn: RuntimeTxn,
    key: CallKey,
    now: str,
    *,
    result: dict[str, Any] | None = None,
    code: str | None = None,
) -> Outcome:
    """The shell's provider ran (``result``) or could not (``code``)."""
    call = get(txn, key)
    if call is None:
        raise CapabilityRefused(ErrorCode.CAPABILITY_CALL_NOT_FOUND.value)
    if call.state is not State.EXECUTING:
        raise CapabilityRefused(busy_or_final(call))
    if result is None:
        return _move(txn, call, Move.FAIL, now, code=code or ErrorCode.PROVIDER_FAILED)
    capability = CATALOG.get(call.capability)
    if capability is not None and capability.schemas.validate_output(result) is not None:
        return _move(txn, call, Move.FAIL, now, code=ErrorCode.CAPABILITY_OUTPUT_INVALID)
    return _move(txn, call, Move.COMPLETE, now, result=msgspec.json.encode(result))


def finish_with_file(
    txn: RuntimeTxn, key: CallKey, name: str, media_type: str, body: bytes, now: str
) -> Outcome:
    """``device.pick_file``: the file the person picked becomes an artifact of the
    conversation and the call's result (its metadata, never a path), in one go."""
    call = get(txn, key)
    if call is None:
        raise CapabilityRefused(ErrorCode.CAPABILITY_CALL_NOT_FOUND.value)
    if call.state is not State.EXECUTING or call.capability != "device.pick_file":
        raise CapabilityRefused(busy_or_final(call))
    if len(body) > MAX_ARTIFACT_BYTES:
        return _move(txn, call, Move.FAIL, now, code=ErrorCode.ARTIFACT_TOO_LARGE)
    artifact = store_artifact(txn, key.conversation_id, name, media_type, body, key.call_id, now)
    return _move(txn, call, Move.COMPLETE, now, result=msgspec.json.encode(artifact))


@dataclass(frozen=True, slots=True)
class Artifact:
    id: str
    conversation_id: str
    name: str
    media_type: str
    size: int
    sha256: str
    created_at: str
    call_id: str | None = None
    """The capability call that saved or picked it."""


def artifact(conn: Sql, artifact_id: str) -> tuple[Artifact, bytes] | None:
    row = conn.execute(
        "SELECT id, conversation_id, name, media_type, size, sha256, created_at, call_id, body"
        " FROM artifacts WHERE id = ?",
        (artifact_id,),
    ).fetchone()
    return None if row is None else (Artifact(*row[:8]), bytes(row[8]))


def artifacts(conn: Sql, conversation_id: str) -> list[Artifact]:
    rows = conn.execute(
        "SELECT id, conversation_id, name, media_type, size, sha256, created_at, call_id"
        " FROM artifacts WHERE conversation_id = ? ORDER BY created_at, id",
        (conversation_id,),
    ).fetchall()
    return [Artifact(*r) for r in rows]


def cancel(txn: RuntimeTxn, key: CallKey, now: str) -> Outcome:
    call = get(txn, key)
    if call is None:
        raise CapabilityRefused(ErrorCode.CAPABILITY_CALL_NOT_FOUND)
    return _move(txn, call, Move.CANCEL, now, code=ErrorCode.CANCELLED)


def cancel_for_app(txn: RuntimeTxn, instance_id: str, now: str) -> list[Outcome]:
    """The app instance closed or failed: its calls not yet running end
    ``cancelled(app_closed)`` (one already running finishes as it will)."""
    return [
        _move(txn, call, Move.CANCEL, now, code=ErrorCode.APP_CLOSED)
        for call in open_calls(txn)
        if call.key.requester_kind == "app"
        and call.requester_id == instance_id
        and call.state in (State.AWAITING_CONSENT, State.APPROVED)
    ]


def due(txn: RuntimeTxn, now: str) -> list[Outcome]:
    """Expire calls past ``expires_at`` that nobody ran; end claims past their lease."""
    when = datetime.fromisoformat(now)
    ended = []
    for call in open_calls(txn):
        if call.state in (State.AWAITING_CONSENT, State.APPROVED):
            if datetime.fromisoformat(call.expires_at) <= when:
                ended.append(_move(txn, call, Move.EXPIRE, now, code=ErrorCode.EXPIRED))
        elif (when - datetime.fromisoformat(call.updated_at)).total_seconds() > EXECUTION_LEASE_S:
            ended.append(_move(txn, call, Move.INTERRUPT, now, code=ErrorCode.INTERRUPTED))
    return ended


def recover(txn: RuntimeTxn, now: str) -> list[Outcome]:
    """After a restart: approved or executing calls may have run; they end
    ``failed(interrupted)`` and are never run again."""
    return [
        _move(txn, call, Move.INTERRUPT, now, code=ErrorCode.INTERRUPTED)
        for call in open_calls(txn)
        if call.state in (State.APPROVED, State.EXECUTING)
    ]


def next_expiry(conn: Sql) -> str | None:
    row = conn.execute(
        "SELECT MIN(expires_at) FROM capability_calls"
        " WHERE state IN ('awaiting_consent', 'approved')"
    ).fetchone()
    return None if row is None else row[0]


def provide(conn: Sql, names: Iterable[str], now: str) -> None:
    for name in names:
        if name not in CATALOG:
            raise ValueError(f"no such capability: {name}")
        conn.execute(
            "INSERT INTO host_capabilities (name, provided_at) VALUES (?, ?)"
            " ON CONFLICT (name) DO UPDATE SET provided_at = excluded.provided_at",
            (name, now),
        )


def set_revoked(conn: Sql, name: str, revoked: bool, now: str) -> None:
    if name not in CATALOG:
        raise ValueError(f"no such capability: {name}")
    conn.execute(
        "INSERT INTO host_capabilities (name, revoked_at) VALUES (?, ?)"
        " ON CONFLICT (name) DO UPDATE SET revoked_at = excluded.revoked_at",
        (name, now if revoked else None),
    )
    audit(conn, now, "user", "capability.policy", name, "revoked" if revoked else "restored")


# --- the async face ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CapabilitiesChanged:
    """Capability calls changed (arrived, decided, claimed, ended): hosts show the
    dialogs again; ``calls`` are the changed ones as they are now."""

    calls: tuple[CapabilityCall, ...]


def _ignore(_: object) -> None:
    return None


class CapabilityGateway:
    """The Runtime's capability gateway (``runtime.capabilities``)."""

    def __init__(
        self,
        store: RuntimeStore,
        *,
        clock: Callable[[], datetime],
        emit: Callable[[Any], None] = _ignore,
        inventory_changed: Callable[[], Awaitable[object]] | None = None,
        apps_told: Callable[[frozenset[str]], None] = _ignore,
        deadline_added: Callable[[], None] = lambda: None,
    ) -> None:
        self._store = store
        self._clock = clock
        self._emit = emit
        self._inventory_changed = inventory_changed
        self._apps_told = apps_told
        self._deadline_added = deadline_added
        """Wakes the Runtime's expiry timer (a new call may expire first)."""
        """Told the app instances whose own calls changed (their SDK reads them)."""
        self._remembered: set[tuple[str, str]] = set()
        """(requester, capability) the person allowed for this session (memory only)."""

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    # --- remembered consent --------------------------------------------------------------------

    def remembered_for(self, requester: str) -> frozenset[str]:
        return frozenset(c for r, c in self._remembered if r == requester)

    def remembered(self) -> frozenset[tuple[str, str]]:
        """Every (requester, capability) allowed for this session."""
        return frozenset(self._remembered)

    def forget(self, requester: str, capability: str) -> bool:
        present = (requester, capability) in self._remembered
        self._remembered.discard((requester, capability))
        return present

    # --- what hosts and the person do -------------------------------------------------------

    async def provide(self, names: Iterable[str]) -> None:
        """An attached host offers these capabilities (declared from now on)."""
        await self._store.db.write(provide, list(names), self._now())
        if self._inventory_changed is not None:
            await self._inventory_changed()

    async def set_revoked(self, name: str, revoked: bool = True) -> None:
        await self._store.db.write(set_revoked, name, revoked, self._now())
        if self._inventory_changed is not None:
            await self._inventory_changed()

    async def open_calls(self) -> list[CapabilityCall]:
        return await self._store.db.read(open_calls)

    async def get(self, key: CallKey) -> CapabilityCall | None:
        return await self._store.db.read(get, key)

    async def decide(
        self,
        key: CallKey,
        allow: bool,
        *,
        remember: bool = False,
        acknowledged: bool = False,
        confirmation: str | None = None,
    ) -> CapabilityCall:
        outcome = await self._store.db.write(
            functools.partial(decide, acknowledged=acknowledged, confirmation=confirmation),
            key,
            allow,
            self._now(),
        )
        call = outcome.call
        if allow and remember and call is not None and call.risk == "user_confirmation":
            self._remembered.add((requester_of(call), call.capability))
        return self._after([outcome])[0]

    async def claim(self, key: CallKey) -> CapabilityCall:
        return self._after([await self._store.db.write(claim, key, self._now())])[0]

    async def finish(
        self, key: CallKey, *, result: dict[str, Any] | None = None, code: str | None = None
    ) -> CapabilityCall:
        outcome = await self._store.db.write(
            functools.partial(finish, result=result, code=code), key, self._now()
        )
        return self._after([outcome])[0]

    async def finish_with_file(
        self, key: CallKey, name: str, media_type: str, body: bytes
    ) -> CapabilityCall:
        outcome = await self._store.db.write(
            finish_with_file, key, name, media_type, body, self._now()
        )
        return self._after([outcome])[0]

    async def artifact(self, artifact_id: str) -> tuple[Artifact, bytes] | None:
        return await self._store.db.read(artifact, artifact_id)

    async def artifacts(self, conversation_id: str) -> list[Artifact]:
        return await self._store.db.read(artifacts, conversation_id)

    async def cancel(self, key: CallKey) -> CapabilityCall:
        return self._after([await self._store.db.write(cancel, key, self._now())])[0]

    async def cancel_for_app(self, instance_id: str) -> None:
        self._after(await self._store.db.write(cancel_for_app, instance_id, self._now()))

    async def due(self) -> None:
        self._after(await self._store.db.write(due, self._now()))

    async def recover(self) -> None:
        self._after(await self._store.db.write(recover, self._now()))

    async def next_deadline(self) -> datetime | None:
        value = await self._store.db.read(next_expiry)
        return None if value is None else datetime.fromisoformat(value)

    async def request_from_app(
        self,
        key: CallKey,
        instance_id: str,
        permissions: Iterable[str],
        name: str,
        arguments: dict[str, Any],
        reason: str,
        expires_at: datetime,
    ) -> CapabilityCall:
        """A MiniApp's ``capabilities.request`` (the SDK); ``key.requester_kind`` is
        ``app``. The app reads the outcome with ``get``."""
        remembered = self.remembered_for(f"app:{instance_id.rsplit('.', 1)[0]}")
        outcome = await self._store.db.write(
            _arrive,
            key,
            instance_id,
            name,
            reason,
            arguments,
            expires_at,
            self._now(),
            remembered,
            None,
            frozenset(permissions),
        )
        if outcome is not None and outcome.call is not None and outcome.call.state not in FINAL:
            self._deadline_added()
        if outcome is None:
            found = await self.get(key)
            if found is None:  # pragma: no cover - the key exists when _arrive said so
                raise CapabilityRefused(ErrorCode.CAPABILITY_CALL_NOT_FOUND.value)
            return found
        return self._after([outcome])[0]

    def _after(self, outcomes: list[Outcome]) -> list[CapabilityCall]:
        calls = [o.call for o in outcomes if o.call is not None]
        if calls:
            self._emit(CapabilitiesChanged(tuple(calls)))
            instances = frozenset(c.requester_id for c in calls if c.key.requester_kind == "app")
            if instances:
                self._apps_told(instances)
        return calls


def requester_of(call: CapabilityCall) -> str:
    """Who remembered consent is for: the agent, or the app (not one instance)."""
    if call.key.requester_kind == "agent":
        return f"agent:{call.requester_id}"
    return f"app:{call.requester_id.rsplit('.', 1)[0]}"
