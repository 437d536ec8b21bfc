"""Persisted capability calls: transaction functions run on the store's writer.

Each one loads the call's row, asks the pure rules (``calls.decide``) with the facts
they need as plain values (the catalog's risk and schemas, what is declared, the
manifest's permissions, remembered consent, the clock), stores what they decided and
carries out their effects, in order, on the unit of work: the audit row, the agent's
one ``app.result`` (queued, so the writer sends it after the commit), the Runtime's
own provider (``artifact.save``, in the same transaction), a kept file with its
timeline row (``artifacts.store_artifact``, the same for the agent and an app), the
expiry timer
(``txn.deadline_added``). What changed is told once per transaction, after the
commit: hosts hear ``CapabilitiesChanged`` and the requesting app instances
``ToolCallsChanged(ids, "capabilities")``.

Refused requests raise ``CapabilityRefused`` with the rules' code and write nothing.
Audit rows hold ids, capability, risk, requester, state, decision and code, never
arguments, reasons, URLs, texts, file names or contents.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import msgspec

from lineup.protocol import AppCallEnvelope, AppResultEnvelope, ErrorCode, decode, payloads

from ..events import ToolCallsChanged
from ..records import Received
from ..tables import audit, queue_from_runtime
from ..txn import RuntimeTxn, Sql
from . import declared
from .artifacts import saved_body, store_artifact
from .call_records import (
    CallKey,
    CapabilityCall,
    facts,
    get,
    insert,
    next_expiry,
    open_calls,
    requester,
    requester_of,
    result_envelope_id,
    save,
)
from .calls import (
    Announce,
    Arrival,
    Audit,
    Decision,
    Event,
    KeepArtifact,
    MakePhrase,
    NoteReplay,
    QueueResult,
    RememberConsent,
    RunInRuntime,
    State,
    TellApp,
    WatchDeadline,
    decide,
    refusal_for,
)
from .calls import due as due_event
from .catalog import CATALOG, MAX_ARTIFACT_BYTES

__all__ = [
    "CallKey",
    "CapabilitiesChanged",
    "CapabilityCall",
    "CapabilityRefused",
    "Consented",
    "busy_or_final",
    "cancel",
    "cancel_for_app",
    "claim",
    "consent",
    "due",
    "finish",
    "finish_with_file",
    "get",
    "next_expiry",
    "open_calls",
    "receive",
    "recover",
    "request",
    "requester_of",
    "result_envelope_id",
]

_WORDS = ("amber", "birch", "cedar", "delta", "ember", "fjord", "grove", "harbor", "iris")


@dataclass(frozen=True, slots=True)
class CapabilitiesChanged:
    """Capability calls changed (arrived, decided, claimed, ended): hosts show the
    dialogs again; ``calls`` are the changed ones as they are now."""

    calls: tuple[CapabilityCall, ...]


class CapabilityRefused(Exception):
    """A request to the gateway was refused: ``code`` says why; nothing changed."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True, slots=True)
class Consented:
    """The call after the person's decision; ``remember``: the rules honoured the
    request to remember it for this session."""

    call: CapabilityCall
    remember: bool


def busy_or_final(call: CapabilityCall) -> str:
    """Why a move on ``call`` is refused: it already ended, or it is in another step."""
    return str(refusal_for(call.state))


# --- effects -------------------------------------------------------------------------------


def _audit(conn: Sql, now: str, call: CapabilityCall, action: str) -> None:
    subject = f"{call.key.conversation_id}/{call.key.call_id}"
    detail = f"{call.capability}:{call.risk}:{call.key.requester_kind}:{call.state}"
    if call.decision:
        detail += f":{call.decision}"
    audit(conn, now, call.key.requester_kind, action, subject, detail, call.code)


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


def _queue_result(txn: RuntimeTxn, call: CapabilityCall, now: str) -> None:
    """The one ``app.result`` to an agent, under an id derived from the call."""
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
    queue_from_runtime(txn, AppResultEnvelope, envelope_id, call.key.conversation_id, payload, now)


@dataclass(frozen=True, slots=True)
class _File:
    """A file to keep as the call's artifact (picked, or to save)."""

    name: str
    media_type: str
    body: bytes


@dataclass(slots=True)
class _Changes:
    """What one transaction changed, told once after its commit."""

    calls: list[CapabilityCall] = field(default_factory=list)
    apps: set[str] = field(default_factory=set)
    remember: bool = False

    def tell(self, txn: RuntimeTxn) -> None:
        if self.calls:
            txn.emit(CapabilitiesChanged(tuple(self.calls)))
        if self.apps:
            txn.emit(ToolCallsChanged(frozenset(self.apps), "capabilities"))


def _carry_out(
    txn: RuntimeTxn,
    call: CapabilityCall,
    decision: Decision,
    now: str,
    changes: _Changes,
    *,
    file: _File | None = None,
    result: bytes | None = None,
    new: str | None = None,
) -> CapabilityCall:
    """Store an accepted ``decision`` on ``call`` and carry out its effects, in order.
    ``file``: the file to keep, ``result``: the provider's result (stored only if the
    call completes). ``new``: the call is new (its row is inserted, with this
    ``envelope_id``, or ``""`` for an app's request)."""
    to = decision.to
    assert to is not None, "only an accepted decision is stored"
    phrase = call.phrase
    for effect in decision.effects:  # the effects that shape the row
        if isinstance(effect, MakePhrase):
            phrase = f"{secrets.choice(_WORDS)}-{secrets.randbelow(900) + 100}"
        elif isinstance(effect, KeepArtifact):
            assert file is not None, "keeping an artifact needs its file"
            key = call.key
            kept = store_artifact(
                txn,
                key.conversation_id,
                file.name,
                file.media_type,
                file.body,
                key.call_id,
                now,
                instance_id=call.requester_id if key.requester_kind == "app" else None,
            )
            result = msgspec.json.encode(kept)
    moved = replace(
        call,
        phrase=phrase,
        state=to,
        decision=decision.consent or call.decision,
        result=result if to is State.COMPLETED else None,
        code=None if to is State.COMPLETED or decision.code is None else str(decision.code),
        updated_at=now,
    )
    if new is None:
        save(txn, moved)
    else:
        insert(txn, moved, new or None)
    for effect in decision.effects:
        if isinstance(effect, Audit):
            _audit(txn, now, moved, effect.action)
        elif isinstance(effect, QueueResult):
            _queue_result(txn, moved, now)
        elif isinstance(effect, RunInRuntime):
            moved = _run_in_runtime(txn, moved, now, changes)
        elif isinstance(effect, Announce):
            changes.calls.append(moved)
        elif isinstance(effect, TellApp):
            changes.apps.add(moved.requester_id)
        elif isinstance(effect, WatchDeadline):
            txn.deadline_added()
        elif isinstance(effect, RememberConsent):
            changes.remember = True
    return moved


def _run_in_runtime(
    txn: RuntimeTxn, call: CapabilityCall, now: str, changes: _Changes
) -> CapabilityCall:
    """Carry out a capability that runs in the Runtime (``artifact.save``)."""
    arguments = msgspec.json.decode(call.arguments)
    body = saved_body(arguments)
    decision = decide(
        facts(call),
        Event.RAN,
        now=datetime.fromisoformat(now),
        input_valid=body is not None,
        too_large=body is not None and len(body) > MAX_ARTIFACT_BYTES,
    )
    file = None if body is None else _File(arguments["name"], arguments["media_type"], body)
    return _carry_out(txn, call, decision, now, changes, file=file)


def _act(
    txn: RuntimeTxn,
    key: CallKey,
    event: Event,
    now: str,
    *,
    file: _File | None = None,
    result: bytes | None = None,
    **given: Any,
) -> tuple[CapabilityCall, _Changes]:
    """Decide ``event`` on the stored call ``key`` (``given``: the rules' keyword
    facts) and store it; raises ``CapabilityRefused`` when the rules refuse it."""
    call = get(txn, key)
    decision = decide(
        None if call is None else facts(call), event, now=datetime.fromisoformat(now), **given
    )
    if decision.refusal is not None:
        raise CapabilityRefused(str(decision.refusal))
    assert call is not None
    changes = _Changes()
    if decision.to is not None:
        call = _carry_out(txn, call, decision, now, changes, file=file, result=result)
    changes.tell(txn)
    return call, changes


def _each(
    txn: RuntimeTxn, pairs: Iterable[tuple[CapabilityCall, Event | None]], now: str
) -> list[CapabilityCall]:
    """Apply each (call, event) the rules accept, in order; the rest stay as they are
    (the timer, a restart and a closed app move only the calls they concern)."""
    when = datetime.fromisoformat(now)
    changes = _Changes()
    ended = []
    for call, event in pairs:
        if event is None:
            continue
        decision = decide(facts(call), event, now=when)
        if decision.accepted:
            ended.append(_carry_out(txn, call, decision, now, changes))
    changes.tell(txn)
    return ended


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
    remembered: frozenset[tuple[str, str]],
    envelope_id: str | None,
    permissions: frozenset[str] | None,
) -> CapabilityCall | None:
    """Take a new call in; ``None`` when its id was seen before (a replay).
    ``permissions``: what the requesting app's manifest lists (``None`` for an agent)."""
    existing = get(txn, key)
    capability = None if existing is not None else declared.declared(txn).get(name)
    arrival = Arrival(
        from_app=key.requester_kind == "app",
        expires_at=expires_at,
        declared=capability is not None,
        revoked=capability is None and existing is None and declared.revoked(txn, name),
        risk=None if capability is None else capability.risk,
        listed=permissions is None or name in permissions,
        input_valid=capability is not None and capability.schemas.validate_input(arguments) is None,
        remembered=(requester(key.requester_kind, requester_id), name) in remembered,
        runs_in_runtime=capability is not None and capability.runs_in == "runtime",
    )
    decision = decide(
        None if existing is None else facts(existing),
        Event.ARRIVE,
        now=datetime.fromisoformat(now),
        arrival=arrival,
    )
    if decision.to is None:
        if any(isinstance(e, NoteReplay) for e in decision.effects):
            audit(txn, now, key.requester_kind, "capability.call", key.call_id, "duplicate")
        return None
    call = CapabilityCall(
        key,
        requester_id,
        name,
        arrival.risk or "unknown",
        reason,
        msgspec.json.encode(arguments),
        None,
        decision.to,
        None,
        None,
        None,
        now,
        expires_at.astimezone(UTC).isoformat(timespec="milliseconds"),
        now,
    )
    changes = _Changes()
    stored = _carry_out(txn, call, decision, now, changes, new=envelope_id or "")
    changes.tell(txn)
    return stored


def receive(
    txn: RuntimeTxn,
    item: Received,
    now: str,
    remembered: frozenset[tuple[str, str]] = frozenset(),
) -> CapabilityCall | None:
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
        remembered,
        envelope.id,
        None,
    )


def request(
    txn: RuntimeTxn,
    key: CallKey,
    instance_id: str,
    permissions: frozenset[str],
    name: str,
    arguments: dict[str, Any],
    reason: str,
    expires_at: datetime,
    now: str,
    remembered: frozenset[tuple[str, str]],
) -> CapabilityCall:
    """A MiniApp instance's ``capabilities.request``: the call as it is now (the one
    stored before, for a replayed call id)."""
    arrived = _arrive(
        txn,
        key,
        instance_id,
        name,
        reason,
        arguments,
        expires_at,
        now,
        remembered,
        None,
        permissions,
    )
    if arrived is not None:
        return arrived
    found = get(txn, key)
    if found is None:  # pragma: no cover - a replay names a stored call
        raise CapabilityRefused(ErrorCode.CAPABILITY_CALL_NOT_FOUND.value)
    return found


# --- the person, the shell, the clock -------------------------------------------------------


def consent(
    txn: RuntimeTxn,
    key: CallKey,
    allow: bool,
    now: str,
    *,
    remember: bool = False,
    acknowledged: bool = False,
    confirmation: str | None = None,
) -> Consented:
    """The person's decision in the dialog."""
    event = Event.ALLOW if allow else Event.DENY
    call, changes = _act(
        txn,
        key,
        event,
        now,
        remember=remember,
        acknowledged=acknowledged,
        confirmation=confirmation,
    )
    return Consented(call, changes.remember)


def claim(txn: RuntimeTxn, key: CallKey, now: str) -> CapabilityCall:
    """A tab takes an approved call to run its provider (the first claim wins)."""
    return _act(txn, key, Event.CLAIM, now)[0]


def finish(
    txn: RuntimeTxn,
    key: CallKey,
    now: str,
    *,
    result: dict[str, Any] | None = None,
    code: str | None = None,
) -> CapabilityCall:
    """The shell's provider ran (``result``) or could not (``code``)."""
    if result is None:
        return _act(txn, key, Event.FAIL, now, code=code)[0]
    call = get(txn, key)
    capability = None if call is None else CATALOG.get(call.capability)
    valid = capability is None or capability.schemas.validate_output(result) is None
    encoded = msgspec.json.encode(result)
    return _act(txn, key, Event.COMPLETE, now, result=encoded, output_valid=valid)[0]


def finish_with_file(
    txn: RuntimeTxn, key: CallKey, name: str, media_type: str, body: bytes, now: str
) -> CapabilityCall:
    """``device.pick_file``: the file the person picked becomes an artifact of the
    conversation and the call's result (its metadata, never a path), in one go."""
    file = _File(name, media_type, body)
    too_large = len(body) > MAX_ARTIFACT_BYTES
    return _act(txn, key, Event.PICKED, now, too_large=too_large, file=file)[0]


def cancel(txn: RuntimeTxn, key: CallKey, now: str) -> CapabilityCall:
    return _act(txn, key, Event.CANCEL, now)[0]


def cancel_for_app(txn: RuntimeTxn, instance_id: str, now: str) -> list[CapabilityCall]:
    """The app instance closed or failed: its calls not yet running end
    ``cancelled(app_closed)`` (one already running finishes as it will)."""
    mine = [
        c
        for c in open_calls(txn)
        if c.key.requester_kind == "app" and c.requester_id == instance_id
    ]
    return _each(txn, [(c, Event.APP_CLOSED) for c in mine], now)


def due(txn: RuntimeTxn, now: str) -> list[CapabilityCall]:
    """Expire calls past ``expires_at`` that nobody ran; end claims past their lease."""
    when = datetime.fromisoformat(now)
    return _each(txn, [(c, due_event(facts(c), when)) for c in open_calls(txn)], now)


def recover(txn: RuntimeTxn, now: str) -> list[CapabilityCall]:
    """After a restart: approved or executing calls may have run; they end
    ``failed(interrupted)`` and are never run again."""
    return _each(txn, [(c, Event.INTERRUPT) for c in open_calls(txn)], now)
