"""Persisted MiniApp instances and focus: transaction functions run on the store's writer.

``apply_lifecycle`` is the only way instances change. In one transaction it loads the
stored ``Instances`` value, runs one pure operation of ``lineup.runtime.apps.focus``,
stores the new value and carries out every effect the operation returned, in order:

- ``InstanceOpened``: an audit row (the record is stored with the value).
- ``OpenAppSession``: an ``app_sessions`` row (a random ``as_`` id, the agent of the
  instance's conversation) and ``lineup.v1.app_session.opened`` queued to that
  conversation. An instance opened without a conversation has no sub-session, and
  nothing is sent for it, now or when it ends.
- ``InstanceStateChanged``, ``FocusChanged``, ``StopToolDelivery``, ``CloseSurfaces``:
  audit rows. Tool delivery stops because the stored state is ``stopping`` or final,
  which the router reads; surfaces are closed by the host that hears the effect.
- ``CancelBoundTools``: ``tool_call_store.close_instance``: one ``cancelled`` result
  row per unfinished bound call (``app_closed``, or ``app_failed`` after a failure);
  ``submitted`` calls are untouched. The instance's own capability calls still
  waiting or approved end ``cancelled(app_closed)`` (``capabilities.call_store``):
  it cannot take their results either.
- ``EndAppSession``: the sub-session becomes ``closed`` and
  ``lineup.v1.app_session.closed`` is queued, listing the call ids of that
  sub-session's interactions still ``pending``. They are not cancelled: they stay
  answerable.
- ``InstanceDropped``: the row is deleted (with the value) and audited.

A refused operation writes one audit row with its code and nothing else. Audit rows
hold ids, states and codes only. The ``app_session`` envelopes have ids derived from
the sub-session id, so a sub-session is announced opened once and closed once.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any

import msgspec

from lineup.protocol import (
    AppSessionClosedEnvelope,
    AppSessionOpenedEnvelope,
    ErrorCode,
    payloads,
)
from lineup.protocol.fields import MAX_LABEL_CHARS, MAX_LIST_ITEMS

from .. import interaction_store
from ..capabilities import call_store as capability_calls
from ..events import AppsChanged
from ..records import OutboxItem
from ..tables import audit, queue_from_runtime
from ..txn import RuntimeTxn, Sql
from . import tool_call_store
from .focus import (
    MAX_FINAL_KEPT,
    MAX_LIVE,
    CancelBoundTools,
    CloseSurfaces,
    Effect,
    EndAppSession,
    FocusChanged,
    InstanceDropped,
    InstanceOpened,
    Instances,
    InstanceStateChanged,
    OpenAppSession,
    Outcome,
    StopToolDelivery,
    recover,
)
from .lifecycle import MiniAppInstanceRecord, State
from .tool_call_store import StoredToolCall

__all__ = [
    "Action",
    "LifecycleResult",
    "Op",
    "app_session_envelope_id",
    "app_session_of",
    "apply_lifecycle",
    "load",
    "save",
]


class Action(StrEnum):
    OPEN = "open"
    STARTED = "started"
    REQUEST_FOREGROUND = "request_foreground"
    REQUEST_BACKGROUND = "request_background"
    REQUEST_CLOSE = "request_close"
    CLOSED = "closed"
    FAIL = "fail"
    SUSPEND = "suspend"
    RESUME = "resume"
    RECOVER = "recover"


@dataclass(frozen=True, slots=True)
class Op:
    """One lifecycle operation, as data (it crosses to the writer thread).

    ``reason``: the close reason for ``closed``, the error for ``fail``.
    ``actor``: who asked (``user``, ``agent``, ``app``, ``runtime``), for the audit.
    """

    action: Action
    instance_id: str = ""
    app_scope: str = ""
    conversation_id: str | None = None
    parent_instance_id: str | None = None
    foreground: bool = True
    reason: str | None = None
    actor: str = "runtime"
    max_live: int = MAX_LIVE
    max_final: int = MAX_FINAL_KEPT


@dataclass(frozen=True, slots=True)
class LifecycleResult:
    """What one operation did.

    ``refusal``: the code when refused (then nothing else changed). ``effects``: the
    effects carried out, in order. ``outbox``: the envelopes queued, in order (the
    unit of work sends them after the commit). ``records``: the instance records that
    are new or changed; ``dropped``: the ids deleted; ``tool_calls``: the calls the
    operation ended. ``value``: the stored value after the operation.
    """

    op: Op
    value: Instances
    refusal: ErrorCode | None = None
    effects: tuple[Effect, ...] = ()
    outbox: tuple[OutboxItem, ...] = ()
    records: tuple[MiniAppInstanceRecord, ...] = ()
    dropped: tuple[str, ...] = ()
    tool_calls: tuple[StoredToolCall, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.refusal is None

    @property
    def changed(self) -> bool:
        return bool(self.effects)


# --- the stored value ----------------------------------------------------------------------

_RECORD_COLUMNS = (
    "instance_id, app_scope, conversation_id, state, parent_instance_id, started_at,"
    " stopped_at, error, app_name, ordinal"
)


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)


def _format(value: datetime | None) -> str | None:
    return None if value is None else value.isoformat(timespec="milliseconds")


def _record(row: Sequence[Any]) -> MiniAppInstanceRecord:
    started_at = _time(row[5])
    assert started_at is not None
    return MiniAppInstanceRecord(
        instance_id=row[0],
        app_scope=row[1],
        conversation_id=row[2],
        state=State(row[3]),
        parent_instance_id=row[4],
        started_at=started_at,
        stopped_at=_time(row[6]),
        error=row[7],
        name=row[8],
        ordinal=int(row[9]),
    )


def load(conn: Sql) -> Instances:
    """The value as stored (not yet ``recover``ed): records in opening order, the
    stack bottom first, the focus holder."""
    rows = conn.execute(
        f"SELECT {_RECORD_COLUMNS} FROM app_instances ORDER BY rowid"  # noqa: S608
    ).fetchall()
    records = {row[0]: _record(row) for row in rows}
    stack = tuple(
        row[0] for row in conn.execute("SELECT instance_id FROM app_focus_stack ORDER BY position")
    )
    focus = conn.execute("SELECT instance_id FROM app_focus WHERE id = 1").fetchone()
    return Instances(records, stack, None if focus is None else focus[0])


def save(conn: Sql, before: Instances, after: Instances) -> None:
    """Store ``after`` over ``before`` (the value stored now): new and changed
    records, the stack and focus when they changed, and the deletion of records
    ``after`` no longer holds."""
    for instance_id, record in after.records.items():
        if before.records.get(instance_id) == record:
            continue
        conn.execute(
            "INSERT INTO app_instances (instance_id, app_scope, conversation_id, state,"
            " parent_instance_id, started_at, stopped_at, error, app_name, ordinal)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
            " ON CONFLICT (instance_id) DO UPDATE SET state = excluded.state,"
            " stopped_at = excluded.stopped_at, error = excluded.error",
            (
                record.instance_id,
                record.app_scope,
                record.conversation_id,
                record.state.value,
                record.parent_instance_id,
                _format(record.started_at),
                _format(record.stopped_at),
                record.error,
                record.name,
                record.ordinal,
            ),
        )
    if after.stack != before.stack:
        conn.execute("DELETE FROM app_focus_stack")
        conn.executemany(
            "INSERT INTO app_focus_stack (position, instance_id) VALUES (?, ?)",
            list(enumerate(after.stack)),
        )
    if after.focus != before.focus:
        conn.execute(
            "INSERT INTO app_focus (id, instance_id) VALUES (1, ?)"
            " ON CONFLICT (id) DO UPDATE SET instance_id = excluded.instance_id",
            (after.focus,),
        )
    gone = [i for i in before.records if i not in after.records]
    conn.executemany("DELETE FROM app_instances WHERE instance_id = ?", [(i,) for i in gone])


def app_session_of(conn: Sql, instance_id: str) -> str | None:
    row = conn.execute(
        "SELECT app_session_id FROM app_instances WHERE instance_id = ?", (instance_id,)
    ).fetchone()
    return None if row is None else row[0]


def app_session_envelope_id(app_session_id: str, kind: str) -> str:
    """``kind`` is ``opened`` or ``closed``: one envelope of each per sub-session."""
    digest = hashlib.sha256(f"{app_session_id}\x00{kind}".encode()).hexdigest()[:32]
    return f"as{kind[0]}_{digest}"


# --- the one transaction -------------------------------------------------------------------


def _run(value: Instances, op: Op, now: datetime, name: str = "") -> Outcome:
    a = op.action
    i = op.instance_id
    if a is Action.OPEN:
        return value.open(
            i,
            op.app_scope,
            now=now,
            conversation_id=op.conversation_id,
            parent_instance_id=op.parent_instance_id,
            foreground=op.foreground,
            max_live=op.max_live,
            name=name,
        )
    if a is Action.STARTED:
        return value.started(i)
    if a is Action.REQUEST_FOREGROUND:
        return value.request_foreground(i)
    if a is Action.REQUEST_BACKGROUND:
        return value.request_background(i)
    if a is Action.REQUEST_CLOSE:
        return value.request_close(i)
    if a is Action.CLOSED:
        return value.closed(i, now=now, reason=op.reason)
    if a is Action.FAIL:
        return value.fail(i, now=now, error=op.reason or "failed")
    if a is Action.SUSPEND:
        return value.suspend(i)
    if a is Action.RESUME:
        return value.resume(i)
    if a is Action.RECOVER:
        return recover(value, max_final=op.max_final)
    raise ValueError(f"unknown lifecycle action {a!r}")


def apply_lifecycle(txn: RuntimeTxn, op: Op, now: str) -> LifecycleResult:
    """Run ``op`` on the stored value and store everything it decided, atomically;
    after the commit the kernel adopts the new value and hosts hear the effects."""
    when = datetime.fromisoformat(now)
    before = load(txn)
    subject = op.instance_id or "-"
    refusal: ErrorCode | None = None
    if (
        op.action is Action.OPEN
        and op.conversation_id is not None
        and _agent_of(txn, op.conversation_id) is None
    ):
        refusal = ErrorCode.LIFECYCLE_DENIED  # no such conversation: nothing to attach to
        outcome = Outcome(before, refusal=refusal)
    elif op.action is Action.OPEN and _disabled(txn, op.app_scope):
        refusal = ErrorCode.APP_DISABLED
        outcome = Outcome(before, refusal=refusal)
    else:
        name = _app_name(txn, op.app_scope) if op.action is Action.OPEN else ""
        outcome = _run(before, op, when, name)
        refusal = outcome.refusal
    if refusal is not None:
        audit(txn, now, op.actor, f"app.{op.action.value}", subject, "refused", refusal)
        return LifecycleResult(op, before, refusal=refusal)
    after = outcome.value
    save(txn, before, after)
    if op.action is not Action.RECOVER or outcome.effects:
        audit(txn, now, op.actor, f"app.{op.action.value}", subject, "accepted")
    outbox: list[OutboxItem] = []
    calls: list[StoredToolCall] = []
    for effect in outcome.effects:
        _carry_out(txn, effect, after, now, op, outbox, calls)
    changed = tuple(
        record
        for instance_id, record in after.records.items()
        if before.records.get(instance_id) != record
    )
    dropped = tuple(i for i in before.records if i not in after.records)
    txn.emit(AppsChanged(after, outcome.effects))
    return LifecycleResult(
        op,
        after,
        effects=outcome.effects,
        outbox=tuple(outbox),
        records=changed,
        dropped=dropped,
        tool_calls=tuple(calls),
    )


def _carry_out(
    txn: RuntimeTxn,
    effect: Effect,
    value: Instances,
    now: str,
    op: Op,
    outbox: list[OutboxItem],
    calls: list[StoredToolCall],
) -> None:
    if isinstance(effect, InstanceOpened):
        record = effect.record
        audit(txn, now, op.actor, "app.instance", record.instance_id, "opened", None)
    elif isinstance(effect, OpenAppSession):
        item = _open_app_session(txn, value.records[effect.instance_id], now)
        if item is not None:
            outbox.append(item)
    elif isinstance(effect, InstanceStateChanged):
        audit(txn, now, "runtime", "app.state", effect.instance_id, effect.new.value)
    elif isinstance(effect, FocusChanged):
        audit(txn, now, "runtime", "app.focus", effect.new or "-", "focused")
    elif isinstance(effect, StopToolDelivery):
        audit(txn, now, "runtime", "app.tools", effect.instance_id, "stopped")
    elif isinstance(effect, CancelBoundTools):
        for ended in tool_call_store.close_instance(txn, effect.instance_id, now, effect.reason):
            if ended.call is not None:
                calls.append(ended.call)
            if ended.outbox is not None:
                outbox.append(ended.outbox)
        capability_calls.cancel_for_app(txn, effect.instance_id, now)
    elif isinstance(effect, CloseSurfaces):
        audit(txn, now, "runtime", "app.surfaces", effect.instance_id, "closed")
    elif isinstance(effect, EndAppSession):
        item = _end_app_session(txn, value.records[effect.instance_id], effect.reason, now)
        if item is not None:
            outbox.append(item)
    elif isinstance(effect, InstanceDropped):
        audit(txn, now, "runtime", "app.instance", effect.instance_id, "dropped")
    else:  # pragma: no cover - every effect is handled above
        raise TypeError(f"unknown effect {effect!r}")


def _disabled(conn: Sql, app_scope: str) -> bool:
    """Whether ``app_scope`` belongs to a registered app that is disabled (a scope no
    app registered is the kernel's own business: tests and the Runtime's own apps)."""
    row = conn.execute("SELECT enabled FROM apps WHERE app_scope = ?", (app_scope,)).fetchone()
    return row is not None and not row[0]


class _Named(msgspec.Struct):
    name: str = ""


def _app_name(conn: Sql, app_scope: str) -> str:
    """The display name of the app that has ``app_scope`` (its version in use), or
    ``""`` for a scope no app registered."""
    row = conn.execute(
        "SELECT v.manifest FROM apps a JOIN app_versions v"
        " ON v.app_id = a.app_id AND v.version = a.version WHERE a.app_scope = ?",
        (app_scope,),
    ).fetchone()
    if row is None:
        return ""
    return msgspec.json.decode(bytes(row[0]), type=_Named).name  # validated when stored


def _agent_of(conn: Sql, conversation_id: str) -> str | None:
    row = conn.execute(
        "SELECT agent_id FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    return None if row is None else str(row[0])


def _open_app_session(
    txn: RuntimeTxn, record: MiniAppInstanceRecord, now: str
) -> OutboxItem | None:
    if record.conversation_id is None:
        return None  # no conversation, no agent: no sub-session
    agent_id = _agent_of(txn, record.conversation_id)
    assert agent_id is not None  # checked before the operation ran
    app_session_id = f"as_{uuid.uuid4().hex}"
    continues = _continued_session(txn, record)
    interaction_store.open_app_session(
        txn,
        app_session_id,
        record.conversation_id,
        agent_id,
        record.app_scope,
        record.instance_id,
        now,
        continues,
        name=record.name,
        ordinal=record.ordinal,
    )
    txn.execute(
        "UPDATE app_instances SET app_session_id = ? WHERE instance_id = ?",
        (app_session_id, record.instance_id),
    )
    audit(txn, now, "runtime", "app_session", app_session_id, "opened")
    return queue_from_runtime(
        txn,
        AppSessionOpenedEnvelope,
        app_session_envelope_id(app_session_id, "opened"),
        record.conversation_id,
        payloads.AppSessionOpened(
            agent_id=agent_id,
            app_session_id=app_session_id,
            app_scope=record.app_scope,
            instance_id=record.instance_id,
            continues_app_session_id=continues,
        ),
        now,
    )


def _continued_session(conn: Sql, record: MiniAppInstanceRecord) -> str | None:
    """The sub-session a new instance continues: its parent's, when the parent is
    of the same app and conversation (it is referenced, never reopened)."""
    if record.parent_instance_id is None:
        return None
    row = conn.execute(
        "SELECT id FROM app_sessions WHERE instance_id = ? AND conversation_id = ?"
        " AND app_scope = ?",
        (record.parent_instance_id, record.conversation_id, record.app_scope),
    ).fetchone()
    return None if row is None else str(row[0])


def _end_app_session(
    txn: RuntimeTxn, record: MiniAppInstanceRecord, reason: str | None, now: str
) -> OutboxItem | None:
    app_session_id = app_session_of(txn, record.instance_id)
    if app_session_id is None or record.conversation_id is None:
        return None
    if not interaction_store.close_app_session(txn, app_session_id, now):
        return None  # already closed: it was announced once
    row = txn.execute(
        "SELECT agent_id FROM app_sessions WHERE id = ?", (app_session_id,)
    ).fetchone()
    pending = [
        r[0]
        for r in txn.execute(
            "SELECT call_id FROM interactions WHERE app_session_id = ? AND state = 'pending'"
            " ORDER BY created_at, rowid LIMIT ?",
            (app_session_id, MAX_LIST_ITEMS),
        )
    ]
    audit(txn, now, "runtime", "app_session", app_session_id, "closed")
    return queue_from_runtime(
        txn,
        AppSessionClosedEnvelope,
        app_session_envelope_id(app_session_id, "closed"),
        record.conversation_id,
        payloads.AppSessionClosed(
            agent_id=row[0],
            app_session_id=app_session_id,
            app_scope=record.app_scope,
            instance_id=record.instance_id,
            reason=None if reason is None else reason[:MAX_LABEL_CHARS],
            pending_interaction_call_ids=pending,
        ),
        now,
    )


def close_scope(txn: RuntimeTxn, app_scope: str, now: str, *, reason: str = "app_disabled") -> None:
    """Close every live instance of ``app_scope`` at once, inside the caller's
    transaction (the accepted close order, then ``closed`` with ``reason``)."""
    for record in load(txn).live():
        if record.app_scope != app_scope:
            continue
        apply_lifecycle(txn, Op(Action.REQUEST_CLOSE, record.instance_id), now)
        apply_lifecycle(txn, Op(Action.CLOSED, record.instance_id, reason=reason), now)
