"""The life of one ordinary tool call, as a pure state machine (spec 002 §7.2, §8).

An ordinary tool (``direct``, ``launch``, ``foreground`` or ``operation``; interactive
tools live in ``lineup.runtime.interactions``) starts ``received``. The router
``route``s it (descriptor, arguments, scope and permissions are fine) or
``reject``s it with a stable code. A routed call is ``deliver``ed to a ready
instance (``running``), or waits for its instance to start or come to the front
(``await_app``, then ``app_ready``). The app reports ``progress`` and then asks to
``complete`` or ``fail`` the call; the Runtime accepts the result (``submitted``)
and, in the same move, writes the call's single ``tool.result`` outbox row. The
AppServer's ack of that row (``delivered``) makes the call ``completed`` or
``failed``. Three things end a call early, each writing that single row too: the
app's own ``app_cancel``, the close of its instance (``app_closed``, spec 002 §7.2:
only from ``received``, ``routing``, ``waiting_for_app`` and ``running``; a
``submitted`` result goes out unchanged) and the deadline from ``timeout_ms``.

Choices, for the Runtime that persists these decisions:

- A result that fails the tool's output schema is a refused request
  (``tool_output_invalid``), not a move: the call stays ``running``, and the app may
  complete it again with a valid result, fail it or cancel it. The deadline and the
  close of the instance still bound it.
- A timeout is terminal ``failed`` with code ``tool_timeout`` (``cancelled`` is kept
  for someone deciding to stop the call: the app or the close of its instance). The
  deadline is ``received_at + timeout_ms``: the agent waits for the whole call,
  instance start-up included.
- The deadline wins, as for interactions: anything that reaches a live call at or
  after its deadline finds it timed out (the timer had simply not fired yet). The
  move applied is ``timeout``, and the request itself is refused with
  ``call_already_final``. So the outcome never depends on when the timer runs; a
  close of an overdue call's instance ends that call as ``failed(tool_timeout)``.
- A call that is ``submitted`` or final (``SETTLED``) refuses everything with
  ``call_already_final``; any other move the table does not hold is refused with
  ``lifecycle_denied``. A refusal changes nothing.
- Idempotency on the call id: every refused request on a settled call gets the same
  ``Receipt`` (``call_already_final`` and the call's single result), before and after
  ``delivered``, whichever of complete / fail / cancel it repeats.
- An app may only act on calls bound to its own instance; any other call id is
  answered ``call_not_found`` with nothing about the call (``app_request``).

Every allowed move is in ``TRANSITIONS``; the Runtime asks ``decide`` and writes what
it returns, so the rules live here and nowhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from enum import StrEnum

from lineup.protocol import ErrorCode
from lineup.protocol.payloads import ToolResultStatus

__all__ = [
    "APP_CANCELLED",
    "APP_CLOSED",
    "APP_EVENTS",
    "CALL_NOT_FOUND",
    "FINAL",
    "LIVE",
    "REJECT_CODES",
    "RESULT_ERROR",
    "RESULT_STATUS",
    "SETTLED",
    "TOOL_TIMEOUT",
    "TRANSITIONS",
    "Decision",
    "Event",
    "Outcome",
    "Receipt",
    "State",
    "ToolCallRecord",
    "app_request",
    "apply",
    "close_instance",
    "deadline",
    "decide",
    "due",
    "next_deadline",
    "receive",
]

# Result and refusal codes of MiniApp tool calls.
APP_CLOSED = ErrorCode.APP_CLOSED
"""The call's instance was closed before the call had a result (``cancelled``)."""
APP_CANCELLED = ErrorCode.APP_CANCELLED
"""The app cancelled the call itself (``cancelled``)."""
TOOL_TIMEOUT = ErrorCode.TOOL_TIMEOUT
"""The call reached ``received_at + timeout_ms`` without a result (``failed``)."""
CALL_NOT_FOUND = ErrorCode.CALL_NOT_FOUND
"""An app named a call that is not bound to its instance (or no call at all)."""


class State(StrEnum):
    RECEIVED = "received"
    ROUTING = "routing"
    WAITING_FOR_APP = "waiting_for_app"
    RUNNING = "running"
    SUBMITTED = "submitted"  # the result is accepted and its row written, not yet acked
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    REJECTED = "rejected"


class Event(StrEnum):
    ROUTE = "route"  # router: descriptor, arguments, scope and permissions are fine
    REJECT = "reject"  # router: refused, with one of REJECT_CODES
    DELIVER = "deliver"  # handed to a live, ready instance
    AWAIT_APP = "await_app"  # the instance is starting or must first come to the front
    APP_READY = "app_ready"  # that instance is ready and now holds the call
    PROGRESS = "progress"  # app
    COMPLETE = "complete"  # app, with a result
    FAIL = "fail"  # app, with its own error code
    APP_CANCEL = "app_cancel"  # app
    APP_CLOSED = "app_closed"  # the Runtime accepted the close of the call's instance
    TIMEOUT = "timeout"  # the deadline timer
    DELIVERED = "delivered"  # the AppServer acked the submitted result


LIVE = frozenset({State.RECEIVED, State.ROUTING, State.WAITING_FOR_APP, State.RUNNING})
"""Calls without a result yet: these time out, and these a close cancels."""
FINAL = frozenset({State.COMPLETED, State.FAILED, State.CANCELLED, State.REJECTED})
SETTLED = FINAL | {State.SUBMITTED}
"""Calls that have their single result row."""

APP_EVENTS = frozenset({Event.PROGRESS, Event.COMPLETE, Event.FAIL, Event.APP_CANCEL})
"""The requests of the MiniApp tool API (``reportProgress``, ``complete``, ``fail``,
``cancel``)."""

REJECT_CODES = frozenset(
    {
        ErrorCode.INVENTORY_REVISION_MISMATCH,
        ErrorCode.TOOL_NOT_ADVERTISED,
        ErrorCode.TOOL_INPUT_INVALID,
        ErrorCode.APP_DISABLED,
        ErrorCode.APP_INSTANCE_NOT_FOUND,
        ErrorCode.APP_INSTANCE_AMBIGUOUS,
        ErrorCode.APP_SCOPE_MISMATCH,
        ErrorCode.LIFECYCLE_DENIED,
        ErrorCode.CAPABILITY_DENIED,
    }
)
"""The codes the router may reject a call with (spec 002 §8)."""

TRANSITIONS: Mapping[tuple[State, Event], State | Mapping[ToolResultStatus, State]] = {
    (State.RECEIVED, Event.ROUTE): State.ROUTING,
    (State.RECEIVED, Event.REJECT): State.REJECTED,
    (State.RECEIVED, Event.APP_CLOSED): State.CANCELLED,
    (State.RECEIVED, Event.TIMEOUT): State.FAILED,
    (State.ROUTING, Event.DELIVER): State.RUNNING,
    (State.ROUTING, Event.AWAIT_APP): State.WAITING_FOR_APP,
    (State.ROUTING, Event.REJECT): State.REJECTED,
    (State.ROUTING, Event.APP_CLOSED): State.CANCELLED,
    (State.ROUTING, Event.TIMEOUT): State.FAILED,
    (State.WAITING_FOR_APP, Event.APP_READY): State.RUNNING,
    (State.WAITING_FOR_APP, Event.APP_CLOSED): State.CANCELLED,
    (State.WAITING_FOR_APP, Event.TIMEOUT): State.FAILED,
    (State.RUNNING, Event.PROGRESS): State.RUNNING,
    (State.RUNNING, Event.COMPLETE): State.SUBMITTED,
    (State.RUNNING, Event.FAIL): State.SUBMITTED,
    (State.RUNNING, Event.APP_CANCEL): State.CANCELLED,
    (State.RUNNING, Event.APP_CLOSED): State.CANCELLED,
    (State.RUNNING, Event.TIMEOUT): State.FAILED,
    # The one move whose target depends on the call's stored result: the status of
    # the row that was submitted names the final state.
    (State.SUBMITTED, Event.DELIVERED): {"completed": State.COMPLETED, "failed": State.FAILED},
}
"""The only moves. Every other (state, event) pair leaves the call as it is."""

RESULT_STATUS: Mapping[Event, ToolResultStatus] = {
    Event.REJECT: "rejected",
    Event.COMPLETE: "completed",
    Event.FAIL: "failed",
    Event.APP_CANCEL: "cancelled",
    Event.APP_CLOSED: "cancelled",
    Event.TIMEOUT: "failed",
}
"""A move on one of these events writes the call's single ``tool.result`` row, with
this status. No other move writes a row; ``delivered`` only acknowledges it."""

RESULT_ERROR: Mapping[Event, str] = {
    Event.APP_CANCEL: APP_CANCELLED,
    Event.APP_CLOSED: APP_CLOSED,
    Event.TIMEOUT: TOOL_TIMEOUT,
}
"""The row's error code where the move fixes it; ``reject`` and ``fail`` bring their
own code, ``complete`` has none."""


@dataclass(frozen=True, slots=True)
class Outcome:
    """The call's single result: the ``tool.result`` status and its error code."""

    status: ToolResultStatus
    code: str | None = None


@dataclass(frozen=True, slots=True)
class Decision:
    """What one event does to a call.

    ``to``: the new state when the event moves the call (``running`` for accepted
    progress), else ``None``. ``effective``: the event applied (``timeout`` when the
    call was overdue). ``refusal``: the code the requester is told, or ``None``.
    ``writes``: the call's single result row when this move writes it. ``outcome``:
    the call's result after this decision (the one written now or the one stored),
    ``None`` while there is none or when it is not the requester's business.
    """

    to: State | None
    effective: Event
    refusal: str | None = None
    writes: Outcome | None = None
    outcome: Outcome | None = None

    @property
    def accepted(self) -> bool:
        return self.to is not None and self.refusal is None

    def receipt(self, call_id: str) -> Receipt:
        return Receipt(call_id, self.accepted, self.refusal, self.outcome)


@dataclass(frozen=True, slots=True)
class Receipt:
    """What an app's request is answered (the SDK's ``CommandReceipt``).

    Every refused request on a settled call gets the same receipt: the call id,
    ``call_already_final`` and the call's single result.
    """

    call_id: str
    accepted: bool
    code: str | None
    outcome: Outcome | None


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """What the rules need of a persisted call. ``instance_id`` is the instance the
    call is bound to, set by the Runtime as soon as it knows it; ``outcome`` the
    single result, once written."""

    call_id: str
    state: State = State.RECEIVED
    instance_id: str | None = None
    deadline: datetime | None = None
    outcome: Outcome | None = None


def deadline(received_at: datetime, timeout_ms: int | None) -> datetime | None:
    """When a call received at ``received_at`` times out; ``None`` without a timeout."""
    if timeout_ms is None:
        return None
    if timeout_ms < 1:
        raise ValueError("timeout_ms must be at least 1")
    return received_at + timedelta(milliseconds=timeout_ms)


def receive(
    call_id: str,
    *,
    received_at: datetime,
    timeout_ms: int | None = None,
    instance_id: str | None = None,
) -> ToolCallRecord:
    """A new call, ``received``, with its deadline computed once."""
    return ToolCallRecord(
        call_id, State.RECEIVED, instance_id, deadline(received_at, timeout_ms), None
    )


def _check_code(event: Event, code: str | None) -> None:
    if event is Event.REJECT:
        if code not in REJECT_CODES:
            raise ValueError(f"`reject` needs one of the router's codes, not {code!r}")
    elif event is Event.FAIL:
        if not code:
            raise ValueError("`fail` needs the app's error code")
    elif code is not None:
        raise ValueError(f"`{event}` takes no code")


def decide(
    state: State,
    event: Event,
    *,
    now: datetime,
    deadline: datetime | None = None,
    outcome: Outcome | None = None,
    code: str | None = None,
    output_valid: bool = True,
) -> Decision:
    """Decide ``event`` for a call in ``state``.

    ``deadline``: the call's deadline, if any; ``outcome``: its stored result, if any
    (needed for ``delivered``); ``code``: the router's code for ``reject``, the app's
    for ``fail``; ``output_valid``: whether a ``complete``'s result passed the tool's
    output schema. Raises ``ValueError`` only for a misuse (a missing or foreign code,
    ``delivered`` without the stored result).
    """
    _check_code(event, code)
    if state in LIVE and deadline is not None and now >= deadline:
        timed_out = Outcome(RESULT_STATUS[Event.TIMEOUT], RESULT_ERROR[Event.TIMEOUT])
        refusal = None if event is Event.TIMEOUT else ErrorCode.CALL_ALREADY_FINAL
        return Decision(State.FAILED, Event.TIMEOUT, refusal, timed_out, timed_out)
    if event is Event.TIMEOUT and state in LIVE:
        # Too early (a timer that fired before its time) or no deadline: not a move.
        return Decision(None, event, None, None, outcome)
    target = TRANSITIONS.get((state, event))
    if target is None:
        refusal = ErrorCode.CALL_ALREADY_FINAL if state in SETTLED else ErrorCode.LIFECYCLE_DENIED
        return Decision(None, event, refusal, None, outcome)
    if event is Event.COMPLETE and not output_valid:
        return Decision(None, event, ErrorCode.TOOL_OUTPUT_INVALID, None, outcome)
    if isinstance(target, State):
        to = target
    else:
        if outcome is None or outcome.status not in target:
            raise ValueError(f"`{event}` needs the submitted result, not {outcome!r}")
        to = target[outcome.status]
    status = RESULT_STATUS.get(event)
    if status is None:
        return Decision(to, event, None, None, outcome)
    if outcome is not None:
        raise ValueError(f"`{event}` would write a second result for a call that has one")
    written = Outcome(status, RESULT_ERROR.get(event, code))
    return Decision(to, event, None, written, written)


def _decide_for(call: ToolCallRecord, event: Event, now: datetime) -> Decision:
    return decide(call.state, event, now=now, deadline=call.deadline, outcome=call.outcome)


def app_request(
    call: ToolCallRecord,
    instance_id: str,
    event: Event,
    *,
    now: datetime,
    code: str | None = None,
    output_valid: bool = True,
) -> Decision:
    """Decide an app's request (``progress``, ``complete``, ``fail``, ``app_cancel``)
    on ``call``, made by the instance ``instance_id``.

    A call bound to another instance (or to none) is answered ``call_not_found``
    and nothing else, whatever its state: an app learns nothing about calls that are
    not its own.
    """
    if event not in APP_EVENTS:
        raise ValueError(f"`{event}` is not an app request")
    if call.instance_id is None or call.instance_id != instance_id:
        _check_code(event, code)
        return Decision(None, event, CALL_NOT_FOUND, None, None)
    return decide(
        call.state,
        event,
        now=now,
        deadline=call.deadline,
        outcome=call.outcome,
        code=code,
        output_valid=output_valid,
    )


def apply(call: ToolCallRecord, decision: Decision) -> ToolCallRecord:
    """``call`` after ``decision`` (what the Runtime persists, in one transaction with
    the row in ``decision.writes``)."""
    if decision.to is None:
        return call
    if decision.writes is not None and call.outcome is not None:
        raise ValueError(f"call {call.call_id} already has its result")
    return dataclasses.replace(call, state=decision.to, outcome=decision.writes or call.outcome)


def close_instance(
    calls: Iterable[ToolCallRecord], instance_id: str, *, now: datetime
) -> list[tuple[str, Decision]]:
    """The accepted close of ``instance_id`` (spec 002 §7.2), for every call bound to it,
    in the order given.

    A live call (``received``, ``routing``, ``waiting_for_app``, ``running``) becomes
    ``cancelled`` with code ``app_closed`` and writes its one row; an overdue one
    becomes ``failed(tool_timeout)`` instead (the deadline wins). A ``submitted`` or
    final call is left exactly as it is (``to`` is ``None``): its result still goes
    out unchanged. Apply every decision in the transaction that accepts the close.
    """
    return [
        (call.call_id, _decide_for(call, Event.APP_CLOSED, now))
        for call in calls
        if call.instance_id is not None and call.instance_id == instance_id
    ]


def due(calls: Iterable[ToolCallRecord], now: datetime) -> list[tuple[str, Decision]]:
    """The timeout decisions for every live call whose deadline is at or before
    ``now``, earliest deadline first."""
    overdue: list[tuple[datetime, str, ToolCallRecord]] = []
    for call in calls:
        if call.state in LIVE and call.deadline is not None and call.deadline <= now:
            overdue.append((call.deadline, call.call_id, call))
    overdue.sort(key=lambda item: item[:2])
    return [(call_id, _decide_for(call, Event.TIMEOUT, now)) for _, call_id, call in overdue]


def next_deadline(calls: Iterable[ToolCallRecord]) -> datetime | None:
    """The earliest deadline of a live call: when to run ``due`` next."""
    deadlines = [c.deadline for c in calls if c.state in LIVE and c.deadline is not None]
    return min(deadlines, default=None)
