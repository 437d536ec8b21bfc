"""The Tool Router (spec 002 §8): where an agent's ordinary ``tool.call`` goes.

``route`` runs inside the apply transaction that stores the call's timeline row.
It checks, in order: the sender (the conversation's agent, ``sender_mismatch``), the
inventory revision (``inventory_revision_mismatch``), that the current inventory
advertises the tool (``registry.advertised_tool``: an enabled app declares it,
else ``tool_not_advertised`` / ``app_disabled``; the policy grants every one of its
permissions, else ``capability_denied``), the
arguments against the compiled input schema
(``tool_input_invalid``, with the path), and that the envelope's ``target`` and the
``app_session_context`` name the tool's own scope and agree on the instance
(``app_scope_mismatch``; ``app_session_not_found`` for a sub-session that is not
this conversation's). Then
it picks or opens the instance (by ``handling``) and only then stores the call.

Revoked things get a deterministic result, never a fallback. Disabling an app or
revoking a capability changes the advertised content, so it always bumps the
revision: a call citing the revision it was advertised under is
``inventory_revision_mismatch``. A call citing the current revision for a tool of a
disabled app is ``app_disabled``, and one of an enabled app whose permissions are not
all granted is ``capability_denied``: the agent learns why (neither was advertised).
A tool no app declares is ``tool_not_advertised``. Disabling an app also closes its live
instances (``AppRegistry.disable``), so no call finds one.

How a call finds its instance (docs/miniapps.md, "How a tool call finds its
instance"); focus and the stack never choose, so a call never moves to a sibling:

- A call is **bound** when the envelope's ``target.instance_id`` or the
  ``app_session_context`` (its sub-session's instance) names one instance. It goes
  there, or is refused ``app_instance_not_found`` with a message saying what became
  of it: closed, stopping, failed, not of this conversation, or no such instance.
- An **unbound** call goes to the one live instance of its scope in this
  conversation. With several it is refused ``app_instance_ambiguous``: the agent
  must say which.
- ``launch``: opens a new instance of the app in this conversation (in front when
  ``target.requires_foreground``; continuing the bound one, if any) and binds the
  call to it: ``waiting_for_app`` until the app reports it started.
- ``foreground``: the instance found as above, brought to the front; an unbound call
  with no live instance opens one.
- ``direct`` / ``operation``: the instance found as above (brought to the front when
  ``target.requires_foreground``); none is ``app_instance_not_found``.

Every ``tool.result`` of a stored call names its instance in the envelope's
``target.instance_id``, so the agent learns which instance a ``launch`` opened.

A live instance is one of this conversation (or of none) that is not ``stopping``.
A bound call on a ready instance (``foreground`` / ``background``) is ``running``;
on a ``starting`` or ``suspended`` one it is ``waiting_for_app``. A refused call
stores no call row: it spends the call id in ``refused_calls`` and queues its one
``rejected`` result (``interaction_store.refuse_call``). A call id already spent
does nothing at all.

Lifecycle operations run inside the same transaction
(``instance_store.apply_lifecycle``); what they queue is sent, and the kernel adopts
the new value, after the commit (the unit of work, ``RuntimeTxn``).

``ToolRouter`` is the app side (the bridge's): ``app_started``, ``app_progress``,
``app_complete`` (the result checked against the compiled output schema:
``tool_output_invalid`` is refused and the call stays ``running``), ``app_fail``,
``app_cancel``, each answered with a ``tool_calls.Receipt``; ``delivered`` when the
AppServer acknowledged a result envelope; ``due`` for timeouts.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import msgspec

from lineup.formats.manifest import compiled_tools
from lineup.protocol import AppSessionOpenedEnvelope, ErrorCode, ToolCallEnvelope, decode
from lineup.protocol.fields import ERROR_CODE_PATTERN
from lineup.protocol.payloads import ToolProgress

from .. import interaction_store
from ..events import ToolCallsChanged
from ..mcp import call_store as mcp_call_store
from ..mcp import servers as mcp_servers
from ..records import Received, ToolCallIntent
from ..store import RuntimeStore
from ..tables import audit, call_spent
from ..txn import RuntimeTxn, Sql
from . import instance_store, registry, tool_call_store
from .focus import Instances
from .instance_store import Action, LifecycleResult, Op
from .kernel import Receipt as LifecycleReceipt
from .lifecycle import BINDABLE, READY, MiniAppInstanceRecord
from .lifecycle import State as AppState
from .tool_call_store import CallOutcome, StoredToolCall
from .tool_calls import CALL_NOT_FOUND, SETTLED, Event, Receipt, State

__all__ = [
    "Routed",
    "ToolRouter",
    "app_request",
    "delivered",
    "is_ordinary",
    "restore_focus",
    "route",
]

_CODE = re.compile(ERROR_CODE_PATTERN)


@dataclass(frozen=True, slots=True)
class Routed:
    """What routing one call did. ``code``: the rejection code, or ``None`` when the
    call was stored (``call``)."""

    call: StoredToolCall | None = None
    code: str | None = None


class _Refused(Exception):
    def __init__(self, code: str, message: str | None = None) -> None:
        super().__init__(code)
        self.code = code
        self.message = message or code


def _agent(conn: Sql, conversation_id: str) -> str | None:
    row = conn.execute(
        "SELECT agent_id FROM conversations WHERE id = ?", (conversation_id,)
    ).fetchone()
    return None if row is None else str(row[0])


def _session_instance(
    conn: Sql, app_session_id: str, conversation_id: str, agent_id: str, scope: str
) -> str:
    row = conn.execute(
        "SELECT app_scope, instance_id FROM app_sessions"
        " WHERE id = ? AND conversation_id = ? AND agent_id = ?",
        (app_session_id, conversation_id, agent_id),
    ).fetchone()
    if row is None:
        raise _Refused(ErrorCode.APP_SESSION_NOT_FOUND, "no such app session here")
    if row[0] != scope:
        raise _Refused(ErrorCode.APP_SCOPE_MISMATCH, "the app session belongs to another app")
    return str(row[1])


_ENDED = {
    AppState.STOPPING: "the instance is stopping (its close is under way)",
    AppState.STOPPED: "the instance is closed",
    AppState.FAILED: "the instance failed",
}


def _bound_instance(
    value: Instances, scope: str, conversation_id: str, instance_id: str
) -> MiniAppInstanceRecord:
    """The instance a bound call names, if it can take the call now; else the refusal,
    whose message says what became of it. Never another instance."""
    record = value.records.get(instance_id)
    if record is None:
        raise _Refused(ErrorCode.APP_INSTANCE_NOT_FOUND, "no such instance (or it closed long ago)")
    if record.app_scope != scope:
        raise _Refused(ErrorCode.APP_SCOPE_MISMATCH, "the target is another app")
    if record.conversation_id not in (None, conversation_id):
        raise _Refused(ErrorCode.APP_INSTANCE_NOT_FOUND, "the instance is not of this conversation")
    if record.state not in BINDABLE:
        raise _Refused(ErrorCode.APP_INSTANCE_NOT_FOUND, _ENDED.get(record.state, "not live"))
    return record


_OPENED = "lineup.v1.app_session.opened"
_FOREIGN_SCAN = 500
"""The newest ``app_session.opened`` rows looked at for another Runtime's instance."""


def _opened_elsewhere(conn: Sql, conversation_id: str, instance_id: str) -> bool:
    """Whether another Runtime of the person (a second device, the desktop window
    beside the demo) opened ``instance_id``: its ``app_session.opened`` came in on the
    conversation's stream, and this Runtime never ran the instance. Such a call is that
    Runtime's to answer, not this one's."""
    mine = conn.execute(
        "SELECT 1 FROM app_sessions WHERE instance_id = ? LIMIT 1", (instance_id,)
    ).fetchone()
    if mine is not None:
        return False
    rows = conn.execute(
        "SELECT body FROM timeline WHERE conversation_id = ? AND type = ? ORDER BY id DESC LIMIT ?",
        (conversation_id, _OPENED, _FOREIGN_SCAN),
    ).fetchall()
    for (body,) in rows:
        opened = decode(bytes(body))  # stored only once it had decoded
        if isinstance(opened, AppSessionOpenedEnvelope) and (
            opened.payload.instance_id == instance_id
        ):
            return True
    return False


def _only_live(value: Instances, scope: str, conversation_id: str) -> MiniAppInstanceRecord | None:
    """The one live instance of ``scope`` in this conversation, ``None`` when there is
    none; several are ``app_instance_ambiguous``: focus and the stack never choose."""
    usable = [
        r
        for r in value.live()
        if r.app_scope == scope
        and r.state in BINDABLE
        and r.conversation_id in (None, conversation_id)
    ]
    if len(usable) > 1:
        raise _Refused(
            ErrorCode.APP_INSTANCE_AMBIGUOUS,
            f"{len(usable)} instances of the app are open here: name one (target.instance_id)",
        )
    return usable[0] if usable else None


def route(txn: RuntimeTxn, received: Received, intent: ToolCallIntent, now: str) -> Routed | None:
    """Check, bind and store one ordinary ``tool.call`` whose timeline row was just
    stored; ``None`` for a call id already spent (nothing is sent again) and for a call
    bound to an instance another Runtime of the person opened (that one answers). The app of
    the instance the call is bound to hears of it after the commit."""
    conversation_id = received.conversation_id
    call_id = intent.call_id
    envelope_id = received.envelope_id or ""
    if call_spent(txn, conversation_id, call_id):
        subject = f"{conversation_id}/{call_id}"
        audit(txn, now, "agent", "tool.call", subject, "duplicate", ErrorCode.CALL_ALREADY_FINAL)
        return None
    try:
        envelope = decode(received.body)
        if not isinstance(envelope, ToolCallEnvelope):  # classify already decoded it
            raise _Refused(ErrorCode.MALFORMED_ENVELOPE)
        p = envelope.payload
        agent_id = _agent(txn, conversation_id)
        if agent_id is None or agent_id != intent.sender_id:
            raise _Refused(ErrorCode.SENDER_MISMATCH)
        current = registry.revision(txn)
        if registry.published_elsewhere(p.inventory_revision, current):
            # Another Runtime of the person's advertised that inventory: it answers.
            audit(txn, now, "agent", "tool.call", f"{conversation_id}/{call_id}", "elsewhere")
            return None
        if p.inventory_revision != current:
            raise _Refused(
                ErrorCode.INVENTORY_REVISION_MISMATCH,
                f"the current inventory revision is {current}",
            )
        if mcp_servers.is_mcp_tool(p.tool):
            return _route_mcp(txn, envelope, agent_id, envelope_id, now)
        found = registry.advertised_tool(txn, p.tool)
        if found is None:
            declared = registry.find_tool(txn, p.tool)
            if declared is None:
                raise _Refused(ErrorCode.TOOL_NOT_ADVERTISED, f"{current} does not list this tool")
            if not declared.entry.enabled:
                raise _Refused(ErrorCode.APP_DISABLED, "the tool's app is disabled")
            raise _Refused(ErrorCode.CAPABILITY_DENIED, "a permission it needs is not granted")
        problem = found.compiled.validate_input(p.arguments)
        if problem is not None:
            raise _Refused(ErrorCode.TOOL_INPUT_INVALID, problem.describe())
        descriptor = found.descriptor
        assert descriptor.target is not None  # manifests have no interactive tools
        scope = descriptor.target.app_scope
        if envelope.target is not None and envelope.target.app_scope not in (None, scope):
            raise _Refused(ErrorCode.APP_SCOPE_MISMATCH, "the target is another app")
        bound = None
        if p.app_session_context is not None:
            bound = _session_instance(
                txn, p.app_session_context.app_session_id, conversation_id, agent_id, scope
            )
        value = instance_store.load(txn)
        named = None if envelope.target is None else envelope.target.instance_id
        if named is not None:
            target_record = value.records.get(named)
            if target_record is not None and target_record.app_scope != scope:
                raise _Refused(ErrorCode.APP_SCOPE_MISMATCH, "the target is another app")
            if bound is not None and bound != named:
                raise _Refused(ErrorCode.APP_SCOPE_MISMATCH, "the target is another instance")
            bound = named
        front = descriptor.target.requires_foreground or descriptor.handling == "foreground"
        before = value.focus
        record = None
        if descriptor.handling != "launch":
            if bound is not None:
                if bound not in value.records and _opened_elsewhere(txn, conversation_id, bound):
                    subject = f"{conversation_id}/{call_id}"
                    audit(txn, now, "agent", "tool.call", subject, "elsewhere", None)
                    return None
                record = _bound_instance(value, scope, conversation_id, bound)
            else:
                record = _only_live(value, scope, conversation_id)
            if record is None and descriptor.handling != "foreground":
                raise _Refused(
                    ErrorCode.APP_INSTANCE_NOT_FOUND, "no instance of the app is open here"
                )
        if record is None:
            opened = Op(
                Action.OPEN,
                f"{scope}.{uuid.uuid4().hex[:16]}",
                app_scope=scope,
                conversation_id=conversation_id,
                parent_instance_id=bound,
                foreground=front,
                actor="agent",
            )
            record = _lifecycle(txn, opened, now)
        elif front and value.focus != record.instance_id:
            wanted = Op(Action.REQUEST_FOREGROUND, record.instance_id, actor="agent")
            record = _lifecycle(txn, wanted, now)
        brought = front and before != record.instance_id
    except _Refused as refused:
        interaction_store.refuse_call(
            txn, conversation_id, call_id, envelope_id, refused.code, refused.message, now
        )
        return Routed(code=refused.code)
    inserted = tool_call_store.insert(
        txn,
        conversation_id,
        call_id,
        envelope_id,
        p.tool,
        now,
        timeout_ms=descriptor.timeout_ms,
        instance_id=record.instance_id,
    )
    assert inserted.call is not None  # the call id was checked above
    assert not inserted.duplicate
    txn.execute(
        "UPDATE tool_calls SET app_id = ?, app_version = ? WHERE conversation_id = ?"
        " AND call_id = ?",
        (found.manifest.id, found.manifest.version, conversation_id, call_id),
    )
    if brought and descriptor.target.restore_previous_focus and before is not None:
        txn.execute(
            "UPDATE tool_calls SET restore_focus_to = ? WHERE conversation_id = ? AND call_id = ?",
            (before, conversation_id, call_id),
        )
    tool_call_store.act(txn, conversation_id, call_id, Event.ROUTE, now)
    step = Event.DELIVER if record.state in READY else Event.AWAIT_APP
    moved = tool_call_store.act(txn, conversation_id, call_id, step, now)
    txn.emit(ToolCallsChanged(frozenset({record.instance_id})))
    txn.deadline_added()  # the call's timeout
    return Routed(call=moved.call)


def _route_mcp(
    txn: RuntimeTxn, envelope: ToolCallEnvelope, agent_id: str, envelope_id: str, now: str
) -> Routed:
    """A call of an MCP server's tool (``mcp-<server>.<tool>``): advertised, valid
    arguments, its own scope; then the server's policy decides (``mcp.call_store``).
    It needs no instance: the server runs it."""
    p = envelope.payload
    found = mcp_servers.advertised(txn, p.tool)
    if found is None:
        declared = mcp_servers.find(txn, p.tool)
        if declared is None:
            raise _Refused(ErrorCode.TOOL_NOT_ADVERTISED, "no MCP server lists this tool")
        raise _Refused(ErrorCode.APP_DISABLED, "the tool's MCP server is disabled")
    problem = found.compiled.validate_input(p.arguments)
    if problem is not None:
        raise _Refused(ErrorCode.TOOL_INPUT_INVALID, problem.describe())
    scope = found.entry.scope
    if envelope.target is not None and envelope.target.app_scope not in (None, scope):
        raise _Refused(ErrorCode.APP_SCOPE_MISMATCH, "the target is another app")
    if envelope.target is not None and envelope.target.instance_id is not None:
        raise _Refused(
            ErrorCode.APP_SCOPE_MISMATCH, "an MCP tool runs on its server, not in an instance"
        )
    mcp_call_store.arrive(
        txn,
        envelope.conversation_id,
        p.call_id,
        envelope_id,
        agent_id,
        found,
        p.arguments,
        now,
    )
    return Routed()


def _lifecycle(txn: RuntimeTxn, op: Op, now: str) -> MiniAppInstanceRecord:
    result = instance_store.apply_lifecycle(txn, op, now)
    if result.refusal is not None:
        raise _Refused(str(result.refusal), "the app cannot take the call now")
    return result.value.records[op.instance_id]


# --- the app side --------------------------------------------------------------------------


def _bound(conn: Sql, instance_id: str, call_id: str) -> StoredToolCall | None:
    row = conn.execute(
        "SELECT conversation_id FROM tool_calls WHERE instance_id = ? AND call_id = ?",
        (instance_id, call_id),
    ).fetchone()
    return None if row is None else tool_call_store.get(conn, row[0], call_id)


def _ready_waiting(txn: RuntimeTxn, instance_id: str, now: str) -> list[CallOutcome]:
    """Bound calls ``waiting_for_app`` move to ``running`` once the instance is ready."""
    row = txn.execute(
        "SELECT state FROM app_instances WHERE instance_id = ?", (instance_id,)
    ).fetchone()
    if row is None or AppState(row[0]) not in READY:
        return []
    return [
        tool_call_store.act(txn, c.conversation_id, c.call_id, Event.APP_READY, now)
        for c in tool_call_store.for_instance(txn, instance_id)
        if c.state is State.WAITING_FOR_APP
    ]


def _not_found(call_id: str) -> Receipt:
    return Receipt(call_id, False, CALL_NOT_FOUND, None)


def restore_focus(txn: RuntimeTxn, conversation_id: str, call_id: str, now: str) -> None:
    """A call that brought its instance to the front with
    ``target.restore_previous_focus`` has settled: give focus back to the instance
    that held it before, if that one is still live and the call's instance still
    holds focus (a person who moved focus meanwhile keeps their choice). Runs once
    per call: the mark is cleared in the same transaction."""
    row = txn.execute(
        "SELECT restore_focus_to, instance_id, state FROM tool_calls"
        " WHERE conversation_id = ? AND call_id = ?",
        (conversation_id, call_id),
    ).fetchone()
    if row is None or row[0] is None or State(row[2]) not in SETTLED:
        return
    txn.execute(
        "UPDATE tool_calls SET restore_focus_to = NULL WHERE conversation_id = ? AND call_id = ?",
        (conversation_id, call_id),
    )
    value = instance_store.load(txn)
    previous = value.records.get(row[0])
    if value.focus != row[1] or previous is None or previous.state not in BINDABLE:
        return
    instance_store.apply_lifecycle(txn, Op(Action.REQUEST_FOREGROUND, row[0], actor="runtime"), now)


def app_request(
    txn: RuntimeTxn,
    instance_id: str,
    call_id: str,
    event: Event,
    now: str,
    *,
    result: Any = None,
    code: str | None = None,
    message: str | None = None,
    report: ToolProgress | None = None,
) -> Receipt:
    """One app request on one of its calls, in one transaction: with its progress
    report (``report``, for ``progress``) and focus restoration."""
    receipt = _app_request(
        txn, instance_id, call_id, event, now, result=result, code=code, message=message
    )
    call = _bound(txn, instance_id, call_id) if receipt.accepted else None
    if call is not None and event is Event.PROGRESS and report is not None:
        tool_call_store.progress(txn, call.conversation_id, report, now)
    if call is not None and call.state in SETTLED:
        restore_focus(txn, call.conversation_id, call_id, now)
    return receipt


def _app_request(
    txn: RuntimeTxn,
    instance_id: str,
    call_id: str,
    event: Event,
    now: str,
    *,
    result: Any = None,
    code: str | None = None,
    message: str | None = None,
) -> Receipt:
    _ready_waiting(txn, instance_id, now)
    call = _bound(txn, instance_id, call_id)
    if call is None:
        audit(txn, now, "app", f"tool.{event.value}", instance_id, "refused", CALL_NOT_FOUND)
        return _not_found(call_id)
    output_valid = True
    if event is Event.COMPLETE:
        output_valid = isinstance(result, dict) and _output_problem(txn, call, result) is None
    outcome = tool_call_store.act(
        txn,
        call.conversation_id,
        call_id,
        event,
        now,
        app_instance_id=instance_id,
        code=code,
        message=message,
        result=result if output_valid and event is Event.COMPLETE else None,
        output_valid=output_valid,
        actor="app",
    )
    return outcome.receipt if outcome.call is not None else _not_found(call_id)


def _output_problem(conn: Sql, call: StoredToolCall, result: Any) -> str | None:
    row = conn.execute(
        "SELECT app_id, app_version FROM tool_calls WHERE conversation_id = ? AND call_id = ?",
        (call.conversation_id, call.call_id),
    ).fetchone()
    manifest = None if row is None or row[0] is None else registry.manifest_of(conn, row[0], row[1])
    compiled = None if manifest is None else compiled_tools(manifest).get(call.tool)
    if compiled is None:
        return "the tool is no longer known"
    problem = compiled.validate_output(result)
    return None if problem is None else problem.describe()


def delivered(
    txn: RuntimeTxn, conversation_id: str, envelope_id: str, now: str
) -> CallOutcome | None:
    """The AppServer acknowledged ``envelope_id``: a ``submitted`` call whose result
    it is becomes ``completed`` or ``failed``."""
    row = txn.execute(
        "SELECT call_id FROM tool_calls WHERE conversation_id = ? AND result_envelope_id = ?"
        " AND state = ?",
        (conversation_id, envelope_id, State.SUBMITTED.value),
    ).fetchone()
    if row is None:
        return None
    return tool_call_store.act(txn, conversation_id, row[0], Event.DELIVERED, now)


def _started_txn(txn: RuntimeTxn, instance_id: str, now: str) -> LifecycleResult:
    result = instance_store.apply_lifecycle(txn, Op(Action.STARTED, instance_id, actor="app"), now)
    _ready_waiting(txn, instance_id, now)
    return result


class ToolRouter:
    """The app side of ordinary tool calls, and their timers and acks."""

    def __init__(self, store: RuntimeStore, *, clock: Callable[[], datetime] | None = None) -> None:
        self._store = store
        self._clock = clock or (lambda: datetime.now(UTC))

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    async def app_started(self, instance_id: str) -> LifecycleReceipt:
        """The app finished starting: the instance is ready and every call waiting
        for it is ``running`` (one transaction)."""
        result = await self._store.db.write(_started_txn, instance_id, self._now())
        return LifecycleReceipt(
            instance_id,
            result.accepted,
            None if result.refusal is None else str(result.refusal),
            result.value.records.get(instance_id),
        )

    async def app_progress(
        self,
        instance_id: str,
        call_id: str,
        *,
        current: float = 0.0,
        total: float | None = None,
        label: str | None = None,
    ) -> Receipt:
        """The app reports progress: accepted on a ``running`` call, and queued to the
        agent as ``tool.progress`` (at most one per call per 250 ms; reports inside
        the window coalesce to the newest, sent when it ends). Raises ``ValueError``
        for a report the protocol refuses."""
        try:
            report = msgspec.convert(
                {"call_id": call_id, "current": current, "total": total, "label": label},
                type=ToolProgress,
            )
        except (msgspec.ValidationError, ValueError) as exc:
            raise ValueError(f"not a progress report: {exc}") from exc
        return await self._request(instance_id, call_id, Event.PROGRESS, report=report)

    async def app_complete(self, instance_id: str, call_id: str, result: Any) -> Receipt:
        """Accept the call's result if it matches the tool's output schema
        (``tool_output_invalid`` otherwise: the call stays ``running``)."""
        return await self._request(instance_id, call_id, Event.COMPLETE, result=result)

    async def app_fail(
        self, instance_id: str, call_id: str, code: str, message: str | None = None
    ) -> Receipt:
        if not _CODE.match(code):
            raise ValueError(f"not an error code: {code!r}")
        return await self._request(instance_id, call_id, Event.FAIL, code=code, message=message)

    async def app_cancel(self, instance_id: str, call_id: str) -> Receipt:
        return await self._request(instance_id, call_id, Event.APP_CANCEL)

    async def _request(
        self, instance_id: str, call_id: str, event: Event, **kwargs: Any
    ) -> Receipt:
        return await self._store.db.write(
            _app_request_txn, instance_id, call_id, event, self._now(), kwargs
        )

    async def delivered(self, conversation_id: str, envelope_id: str) -> CallOutcome | None:
        return await self._store.db.write(delivered, conversation_id, envelope_id, self._now())

    async def due(self) -> list[CallOutcome]:
        """Time out every overdue call (one ``failed(tool_timeout)`` result each,
        focus restored where the call asked for it) and queue every held progress
        report whose window ended."""
        return await self._store.db.write(_due_txn, self._now())

    async def next_deadline(self) -> datetime | None:
        return await self._store.db.read(tool_call_store.next_deadline)


def _app_request_txn(
    txn: RuntimeTxn,
    instance_id: str,
    call_id: str,
    event: Event,
    now: str,
    kwargs: dict[str, Any],
) -> Receipt:
    return app_request(txn, instance_id, call_id, event, now, **kwargs)


def _due_txn(txn: RuntimeTxn, now: str) -> list[CallOutcome]:
    outcomes = tool_call_store.due(txn, now)
    ended = set()
    for outcome in outcomes:
        if outcome.call is not None:
            restore_focus(txn, outcome.call.conversation_id, outcome.call.call_id, now)
            if outcome.call.instance_id:
                ended.add(outcome.call.instance_id)
    tool_call_store.flush_progress(txn, now)
    if ended:
        txn.emit(ToolCallsChanged(frozenset(ended)))
    return outcomes


def is_ordinary(intent: ToolCallIntent) -> bool:
    """A call ``classify`` left to the router (not an interactive tool)."""
    return intent.interaction is None and intent.refusal is None
