"""The pure rules of an ordinary tool call's life (``lineup.runtime.apps.tool_calls``):
every (state, event) pair without a deadline, before it, at it and after it; the
router's codes, output validation, ownership, receipts, the accepted close and the
deadline helpers."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest

from lineup.protocol import ErrorCode
from lineup.protocol.payloads import ToolResult
from lineup.runtime.apps.tool_calls import (
    APP_EVENTS,
    FINAL,
    LIVE,
    REJECT_CODES,
    RESULT_ERROR,
    RESULT_STATUS,
    SETTLED,
    TRANSITIONS,
    Decision,
    Event,
    Outcome,
    Receipt,
    State,
    ToolCallRecord,
    app_request,
    apply,
    close_instance,
    deadline,
    decide,
    due,
    next_deadline,
    receive,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
DEADLINE = T0 + timedelta(seconds=30)
BEFORE = DEADLINE - timedelta(milliseconds=1)
AFTER = DEADLINE + timedelta(hours=1)

EVENT_CODE = "<the event's code>"
"""Stands for the code a ``reject`` (the router's) or a ``fail`` (the app's) brings."""

EXPECTED: dict[str, dict[str, tuple[str, tuple[str, str | None] | None]]] = {
    "received": {
        "route": ("routing", None),
        "reject": ("rejected", ("rejected", EVENT_CODE)),
        "app_closed": ("cancelled", ("cancelled", "app_closed")),
        "timeout": ("failed", ("failed", "tool_timeout")),
    },
    "routing": {
        "deliver": ("running", None),
        "await_app": ("waiting_for_app", None),
        "reject": ("rejected", ("rejected", EVENT_CODE)),
        "app_closed": ("cancelled", ("cancelled", "app_closed")),
        "timeout": ("failed", ("failed", "tool_timeout")),
    },
    "waiting_for_app": {
        "app_ready": ("running", None),
        "app_closed": ("cancelled", ("cancelled", "app_closed")),
        "timeout": ("failed", ("failed", "tool_timeout")),
    },
    "running": {
        "progress": ("running", None),
        "complete": ("submitted", ("completed", None)),
        "fail": ("submitted", ("failed", EVENT_CODE)),
        "app_cancel": ("cancelled", ("cancelled", "app_cancelled")),
        "app_closed": ("cancelled", ("cancelled", "app_closed")),
        "timeout": ("failed", ("failed", "tool_timeout")),
    },
    # ``delivered`` on a submitted call: see DELIVERED_TO.
}
"""state -> event -> (new state, (status, code) of the result row the move writes, or
None): written out here, independently of ``TRANSITIONS``, so a changed table is
noticed."""

DELIVERED_TO = {"completed": "completed", "failed": "failed"}
"""A submitted call's result status -> its final state once the AppServer acked it."""

ALL_STATES = [
    "received",
    "routing",
    "waiting_for_app",
    "running",
    "submitted",
    "completed",
    "failed",
    "cancelled",
    "rejected",
]
WITH_RESULT = ["submitted", "completed", "failed", "cancelled", "rejected"]
WITHOUT_RESULT = ["received", "routing", "waiting_for_app", "running"]

STORED: dict[str, Outcome | None] = {
    "received": None,
    "routing": None,
    "waiting_for_app": None,
    "running": None,
    "submitted": Outcome("completed"),
    "completed": Outcome("completed"),
    "failed": Outcome("failed", "tool_timeout"),
    "cancelled": Outcome("cancelled", "app_closed"),
    "rejected": Outcome("rejected", "tool_input_invalid"),
}
"""A result each state may hold, given to ``decide`` as the stored result."""

CODES = {Event.REJECT: "tool_not_advertised", Event.FAIL: "photo_too_large"}
ALL_PAIRS = list(itertools.product(State, Event))
SIMPLE_PAIRS = [p for p in ALL_PAIRS if p != (State.SUBMITTED, Event.DELIVERED)]
"""Every pair but ``delivered`` on a submitted call, whose target depends on the
stored result (test_delivered_settles_a_submitted_call_as_its_result_says)."""


def code_for(event: Event) -> str | None:
    return CODES.get(event)


def expected_without_deadline(state: str, event: str) -> Decision:
    """What ``decide`` must return when no deadline is involved, from EXPECTED."""
    stored = STORED[state]
    if event == "timeout" and state in WITHOUT_RESULT:
        # No deadline, or not yet: the timer fired early, which is not a move and not
        # a refusal either.
        return Decision(None, Event.TIMEOUT, None, None, stored)
    move = EXPECTED.get(state, {}).get(event)
    if move is not None:
        to, row = move
        writes = None
        if row is not None:
            status, code = row
            writes = Outcome(status, code_for(Event(event)) if code == EVENT_CODE else code)
        return Decision(State(to), Event(event), None, writes, writes or stored)
    refusal = "call_already_final" if state in WITH_RESULT else "lifecycle_denied"
    return Decision(None, Event(event), refusal, None, stored)


# --- the tables --------------------------------------------------------------------------


def test_the_table_holds_exactly_the_expected_moves() -> None:
    expected: dict[tuple[str, str], object] = {
        (state, event): to for state, moves in EXPECTED.items() for event, (to, _) in moves.items()
    }
    expected["submitted", "delivered"] = DELIVERED_TO
    actual = {
        (str(s), str(e)): (str(to) if isinstance(to, State) else {k: str(v) for k, v in to.items()})
        for (s, e), to in TRANSITIONS.items()
    }
    assert actual == expected


def test_rows_are_written_by_exactly_the_expected_events() -> None:
    rows = {
        event: row
        for moves in EXPECTED.values()
        for event, (_, row) in moves.items()
        if row is not None
    }
    assert {str(e): s for e, s in RESULT_STATUS.items()} == {e: s for e, (s, _) in rows.items()}
    assert {str(e): c for e, c in RESULT_ERROR.items()} == {
        e: c for e, (_, c) in rows.items() if c not in (None, EVENT_CODE)
    }


def test_the_state_sets() -> None:
    assert {str(s) for s in State} == set(ALL_STATES)
    assert {str(s) for s in LIVE} == set(WITHOUT_RESULT)
    assert {str(s) for s in SETTLED} == set(WITH_RESULT)
    assert {str(s) for s in FINAL} == {"completed", "failed", "cancelled", "rejected"}
    assert {str(e) for e in APP_EVENTS} == {"progress", "complete", "fail", "app_cancel"}
    assert {str(c) for c in REJECT_CODES} == {
        "inventory_revision_mismatch",
        "tool_not_advertised",
        "tool_input_invalid",
        "app_disabled",
        "app_instance_not_found",
        "app_instance_ambiguous",
        "app_scope_mismatch",
        "lifecycle_denied",
        "capability_denied",
    }


# --- every pair --------------------------------------------------------------------------


def _decide(state: State, event: Event, now: datetime, dl: datetime | None) -> Decision:
    return decide(state, event, now=now, deadline=dl, outcome=STORED[state], code=code_for(event))


@pytest.mark.parametrize(("state", "event"), SIMPLE_PAIRS, ids=str)
def test_every_pair_without_a_deadline(state: State, event: Event) -> None:
    assert _decide(state, event, AFTER, None) == expected_without_deadline(state, event)


@pytest.mark.parametrize(("state", "event"), SIMPLE_PAIRS, ids=str)
def test_every_pair_before_the_deadline(state: State, event: Event) -> None:
    assert _decide(state, event, BEFORE, DEADLINE) == expected_without_deadline(state, event)


@pytest.mark.parametrize("now", [DEADLINE, AFTER], ids=["at", "after"])
@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=str)
def test_every_pair_at_or_after_the_deadline(state: State, event: Event, now: datetime) -> None:
    decision = _decide(state, event, now, DEADLINE)
    if state in WITHOUT_RESULT:
        # Whatever reaches a live call once its time is up finds it timed out; only
        # the timer itself is not refused.
        timed_out = Outcome("failed", "tool_timeout")
        refusal = None if event == "timeout" else "call_already_final"
        assert decision == Decision(State.FAILED, Event.TIMEOUT, refusal, timed_out, timed_out)
    elif (state, event) == (State.SUBMITTED, Event.DELIVERED):
        assert decision == Decision(State.COMPLETED, Event.DELIVERED, None, None, STORED[state])
    else:
        # A call with its result has no deadline any more.
        assert decision == expected_without_deadline(state, event)


@pytest.mark.parametrize(
    ("outcome", "final"),
    [
        (Outcome("completed"), State.COMPLETED),
        (Outcome("failed", "photo_too_large"), State.FAILED),
    ],
)
def test_delivered_settles_a_submitted_call_as_its_result_says(
    outcome: Outcome, final: State
) -> None:
    for now in (BEFORE, AFTER):
        decision = decide(
            State.SUBMITTED, Event.DELIVERED, now=now, deadline=DEADLINE, outcome=outcome
        )
        # The ack writes no new row; the call keeps its one result.
        assert decision == Decision(final, Event.DELIVERED, None, None, outcome)


@pytest.mark.parametrize(
    "outcome", [None, Outcome("cancelled", "app_closed"), Outcome("rejected", "app_disabled")]
)
def test_delivered_without_a_submitted_result_is_a_misuse(outcome: Outcome | None) -> None:
    with pytest.raises(ValueError, match="submitted result"):
        decide(State.SUBMITTED, Event.DELIVERED, now=T0, outcome=outcome)


def test_a_move_that_would_write_a_second_result_is_a_misuse() -> None:
    with pytest.raises(ValueError, match="second result"):
        decide(State.RUNNING, Event.COMPLETE, now=T0, outcome=Outcome("completed"))


# --- codes -------------------------------------------------------------------------------


@pytest.mark.parametrize("state", [State.RECEIVED, State.ROUTING])
@pytest.mark.parametrize("code", sorted(REJECT_CODES))
def test_every_router_code_rejects_with_that_code(state: State, code: str) -> None:
    decision = decide(state, Event.REJECT, now=T0, code=code)
    row = Outcome("rejected", code)
    assert decision == Decision(State.REJECTED, Event.REJECT, None, row, row)


@pytest.mark.parametrize(
    "code",
    [None, "", "tool_output_invalid", "call_already_final", "app_closed", "photo_too_large"],
)
def test_reject_needs_a_router_code(code: str | None) -> None:
    with pytest.raises(ValueError, match="router"):
        decide(State.RECEIVED, Event.REJECT, now=T0, code=code)


@pytest.mark.parametrize("code", [None, ""])
def test_fail_needs_the_apps_code(code: str | None) -> None:
    with pytest.raises(ValueError, match="app's error code"):
        decide(State.RUNNING, Event.FAIL, now=T0, code=code)


@pytest.mark.parametrize("event", [e for e in Event if e not in (Event.REJECT, Event.FAIL)])
def test_other_events_take_no_code(event: Event) -> None:
    with pytest.raises(ValueError, match="takes no code"):
        decide(State.RUNNING, event, now=T0, code="tool_input_invalid")


def test_every_row_is_a_valid_tool_result() -> None:
    rows = {
        Outcome("completed"),
        Outcome("failed", "photo_too_large"),
        Outcome("failed", "tool_timeout"),
        Outcome("cancelled", "app_cancelled"),
        Outcome("cancelled", "app_closed"),
        *(Outcome("rejected", code) for code in REJECT_CODES),
    }
    for row in rows:
        body: dict[str, Any] = {"call_id": "call-1", "status": row.status}
        if row.code is None:
            body["result"] = {"ok": True}
        else:
            body["error"] = {"code": row.code, "message": "why"}
        result = msgspec.convert(body, ToolResult)
        assert (result.status, result.error.code if result.error else None) == (
            row.status,
            row.code,
        )


# --- output validation -------------------------------------------------------------------


def test_an_invalid_result_is_a_refused_request_not_a_move() -> None:
    decision = decide(State.RUNNING, Event.COMPLETE, now=T0, output_valid=False)
    assert decision == Decision(None, Event.COMPLETE, ErrorCode.TOOL_OUTPUT_INVALID, None, None)
    # The call is still running: a valid result may follow.
    again = decide(State.RUNNING, Event.COMPLETE, now=T0)
    assert again == Decision(
        State.SUBMITTED, Event.COMPLETE, None, Outcome("completed"), Outcome("completed")
    )


@pytest.mark.parametrize("state", [s for s in State if s is not State.RUNNING])
def test_an_invalid_result_elsewhere_is_refused_as_any_complete(state: State) -> None:
    decision = decide(
        State(state), Event.COMPLETE, now=T0, outcome=STORED[state], output_valid=False
    )
    assert decision == expected_without_deadline(state, "complete")


def test_an_invalid_result_after_the_deadline_finds_the_call_timed_out() -> None:
    decision = decide(
        State.RUNNING, Event.COMPLETE, now=DEADLINE, deadline=DEADLINE, output_valid=False
    )
    timed_out = Outcome("failed", "tool_timeout")
    assert decision == Decision(
        State.FAILED, Event.TIMEOUT, "call_already_final", timed_out, timed_out
    )


# --- records, ownership and receipts -----------------------------------------------------


def test_receive_computes_the_deadline_once() -> None:
    assert receive("c1", received_at=T0) == ToolCallRecord("c1", State.RECEIVED)
    assert receive("c1", received_at=T0, timeout_ms=30_000, instance_id="i1") == ToolCallRecord(
        "c1", State.RECEIVED, "i1", DEADLINE, None
    )


def test_deadline() -> None:
    assert deadline(T0, None) is None
    assert deadline(T0, 1) == T0 + timedelta(milliseconds=1)
    assert deadline(T0, 86_400_000) == T0 + timedelta(days=1)
    with pytest.raises(ValueError, match="at least 1"):
        deadline(T0, 0)


def run(call: ToolCallRecord, *events: Event) -> ToolCallRecord:
    for event in events:
        decision = decide(call.state, event, now=T0, deadline=call.deadline, outcome=call.outcome)
        assert decision.accepted, (call, event, decision)
        call = apply(call, decision)
    return call


def test_apply_keeps_the_one_result() -> None:
    call = run(receive("c1", received_at=T0, instance_id="i1"), Event.ROUTE, Event.DELIVER)
    assert call.state is State.RUNNING
    assert apply(call, Decision(None, Event.COMPLETE, "lifecycle_denied")) is call
    progressed = apply(call, decide(State.RUNNING, Event.PROGRESS, now=T0))
    assert progressed == call
    done = apply(call, decide(State.RUNNING, Event.COMPLETE, now=T0))
    assert (done.state, done.outcome) == (State.SUBMITTED, Outcome("completed"))
    settled = run(done, Event.DELIVERED)
    assert (settled.state, settled.outcome) == (State.COMPLETED, Outcome("completed"))
    with pytest.raises(ValueError, match="already has its result"):
        apply(done, Decision(State.CANCELLED, Event.APP_CLOSED, None, Outcome("cancelled", "x")))


def test_waiting_for_the_app() -> None:
    call = run(
        receive("c1", received_at=T0, instance_id="i1"),
        Event.ROUTE,
        Event.AWAIT_APP,
        Event.APP_READY,
    )
    assert call.state is State.RUNNING


def running(
    call_id: str = "c1", instance_id: str = "i1", timeout_ms: int | None = 30_000
) -> ToolCallRecord:
    call = receive(call_id, received_at=T0, timeout_ms=timeout_ms, instance_id=instance_id)
    return run(call, Event.ROUTE, Event.DELIVER)


@pytest.mark.parametrize("event", sorted(APP_EVENTS))
def test_an_app_may_only_act_on_its_own_calls(event: Event) -> None:
    code = code_for(event)
    call = running()
    refused = Decision(None, event, "call_not_found", None, None)
    assert app_request(call, "i2", event, now=T0, code=code) == refused
    unbound = ToolCallRecord("c1", State.RUNNING)
    assert app_request(unbound, "i1", event, now=T0, code=code) == refused
    # Not even a settled call's result leaks, nor does its deadline fire for a stranger.
    settled = apply(call, decide(State.RUNNING, Event.COMPLETE, now=T0))
    assert app_request(settled, "i2", event, now=AFTER, code=code).receipt("c1") == Receipt(
        "c1", False, "call_not_found", None
    )
    assert app_request(call, "i2", event, now=AFTER, code=code) == refused
    assert app_request(call, "i1", event, now=T0, code=code).accepted


@pytest.mark.parametrize("event", sorted(set(Event) - APP_EVENTS))
def test_only_app_requests_go_through_app_request(event: Event) -> None:
    with pytest.raises(ValueError, match="not an app request"):
        app_request(running(), "i1", event, now=T0)


@pytest.mark.parametrize(
    ("first", "outcome"),
    [
        (Event.COMPLETE, Outcome("completed")),
        (Event.FAIL, Outcome("failed", "photo_too_large")),
        (Event.APP_CANCEL, Outcome("cancelled", "app_cancelled")),
    ],
)
def test_replays_get_the_same_receipt(first: Event, outcome: Outcome) -> None:
    call = running()
    decision = app_request(call, "i1", first, now=T0, code=code_for(first))
    assert decision.receipt("c1") == Receipt("c1", True, None, outcome)
    call = apply(call, decision)
    settled = Receipt("c1", False, "call_already_final", outcome)
    receipts = set()
    for stage in range(2):
        if stage == 1 and call.state is State.SUBMITTED:
            call = run(call, Event.DELIVERED)
        for event in (Event.COMPLETE, Event.FAIL, Event.APP_CANCEL, Event.PROGRESS):
            for now in (T0, AFTER):
                again = app_request(call, "i1", event, now=now, code=code_for(event))
                assert again.to is None
                receipts.add(again.receipt("c1"))
    assert receipts == {settled}


def test_a_late_request_gets_the_receipt_of_its_replays() -> None:
    call = running()
    late = app_request(call, "i1", Event.COMPLETE, now=DEADLINE)
    timed_out = Outcome("failed", "tool_timeout")
    assert late.receipt("c1") == Receipt("c1", False, "call_already_final", timed_out)
    call = apply(call, late)
    assert (call.state, call.outcome) == (State.FAILED, timed_out)
    replay = app_request(call, "i1", Event.COMPLETE, now=AFTER)
    assert replay.receipt("c1") == late.receipt("c1")


# --- the accepted close ------------------------------------------------------------------


def test_close_cancels_live_calls_and_leaves_results_alone() -> None:
    calls = [
        ToolCallRecord("received", State.RECEIVED, "i1", DEADLINE),
        ToolCallRecord("routing", State.ROUTING, "i1", DEADLINE),
        ToolCallRecord("waiting", State.WAITING_FOR_APP, "i1", None),
        ToolCallRecord("running", State.RUNNING, "i1", DEADLINE),
        ToolCallRecord("submitted", State.SUBMITTED, "i1", DEADLINE, Outcome("completed")),
        ToolCallRecord("failed", State.SUBMITTED, "i1", None, Outcome("failed", "oops")),
        ToolCallRecord("done", State.COMPLETED, "i1", None, Outcome("completed")),
        ToolCallRecord("rejected", State.REJECTED, "i1", None, Outcome("rejected", "app_disabled")),
        ToolCallRecord("other", State.RUNNING, "i2", DEADLINE),
        ToolCallRecord("unbound", State.ROUTING, None, DEADLINE),
    ]
    closed = Outcome("cancelled", "app_closed")
    cancel = Decision(State.CANCELLED, Event.APP_CLOSED, None, closed, closed)

    def untouched(outcome: Outcome) -> Decision:
        return Decision(None, Event.APP_CLOSED, "call_already_final", None, outcome)

    assert close_instance(calls, "i1", now=BEFORE) == [
        ("received", cancel),
        ("routing", cancel),
        ("waiting", cancel),
        ("running", cancel),
        ("submitted", untouched(Outcome("completed"))),
        ("failed", untouched(Outcome("failed", "oops"))),
        ("done", untouched(Outcome("completed"))),
        ("rejected", untouched(Outcome("rejected", "app_disabled"))),
    ]
    # Once the deadline has passed, the overdue calls had already timed out.
    timed_out = Outcome("failed", "tool_timeout")
    late = Decision(State.FAILED, Event.TIMEOUT, "call_already_final", timed_out, timed_out)
    assert [d for _, d in close_instance(calls, "i1", now=DEADLINE)[:4]] == [
        late,
        late,
        cancel,
        late,
    ]
    assert close_instance(calls, "i3", now=T0) == []


def test_a_submitted_result_goes_out_unchanged_after_a_close() -> None:
    call = running()
    call = apply(call, app_request(call, "i1", Event.FAIL, now=T0, code="oops"))
    [(_, decision)] = close_instance([call], "i1", now=T0)
    assert apply(call, decision) is call
    call = run(call, Event.DELIVERED)
    assert (call.state, call.outcome) == (State.FAILED, Outcome("failed", "oops"))


# --- timeouts ----------------------------------------------------------------------------


def test_due_and_next_deadline() -> None:
    def at(ms: int) -> datetime:
        return T0 + timedelta(milliseconds=ms)

    calls = [
        ToolCallRecord("b", State.RUNNING, "i1", at(100)),
        ToolCallRecord("a", State.RUNNING, "i1", at(100)),
        ToolCallRecord("c", State.RECEIVED, "i1", at(50)),
        ToolCallRecord("d", State.WAITING_FOR_APP, "i1", at(101)),
        ToolCallRecord("e", State.SUBMITTED, "i1", at(10), Outcome("completed")),
        ToolCallRecord("f", State.CANCELLED, "i1", at(10), Outcome("cancelled", "app_closed")),
        ToolCallRecord("g", State.ROUTING, "i1", None),
    ]
    timed_out = Outcome("failed", "tool_timeout")
    fire = Decision(State.FAILED, Event.TIMEOUT, None, timed_out, timed_out)
    assert due(calls, at(49)) == []
    assert due(calls, at(100)) == [("c", fire), ("a", fire), ("b", fire)]
    assert [call_id for call_id, _ in due(calls, at(10_000))] == ["c", "a", "b", "d"]
    assert next_deadline(calls) == at(50)
    assert next_deadline(calls[4:]) is None
