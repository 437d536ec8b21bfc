"""Hypothesis drives many tool calls, bound to a few app instances, through
``lineup.runtime.apps.tool_calls``: the router's moves and refusals, the apps'
requests from the right and the wrong instance (and their replays), invalid
results, instance closes, the timer and the clock, and the AppServer's acks. The
Runtime's part is played here: each decision is applied and the row it writes goes
to an outbox that the checks count.

After every step: each call has at most one result row, and exactly one once it is
submitted or final; a final call never moves again; a submitted result is never
rewritten (by a close or anything else); ``cancelled(app_closed)`` only comes from
``received``/``routing``/``waiting_for_app``/``running``; every move matches a model
written from the expected table of test_tool_calls.py; refused requests on a settled
call all get the same receipt. At the end every instance closes and every result is
acked: every call is final with exactly one row.
"""

from __future__ import annotations

import itertools
from collections import Counter
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from lineup.runtime.apps.tool_calls import (
    REJECT_CODES,
    Decision,
    Event,
    Outcome,
    Receipt,
    State,
    ToolCallRecord,
    app_request,
    apply,
    close_instance,
    decide,
    due,
    next_deadline,
    receive,
)
from tests.runtime.apps.test_tool_calls import DELIVERED_TO, EVENT_CODE, EXPECTED

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
INSTANCES = ("inst-a", "inst-b", "inst-c")
TIMEOUTS = (None, 1, 500, 2_000, 10_000)
STEPS_MS = (0, 1, 100, 250, 499, 500, 501, 1_999, 2_000, 10_000)
FAIL_CODES = ("photo_too_large", "upstream_unavailable")
APP_REQUESTS = (Event.PROGRESS, Event.COMPLETE, Event.FAIL, Event.APP_CANCEL)
RUNTIME_EVENTS = (
    Event.ROUTE,
    Event.DELIVER,
    Event.AWAIT_APP,
    Event.APP_READY,
    Event.APP_CLOSED,
    Event.TIMEOUT,
    Event.DELIVERED,
)
MAX_CALLS = 10
NATURAL = {
    State.RECEIVED: (Event.ROUTE,),
    State.ROUTING: (Event.DELIVER, Event.AWAIT_APP),
    State.WAITING_FOR_APP: (Event.APP_READY,),
    State.SUBMITTED: (Event.DELIVERED,),
}
"""The next step of a call on its usual way, by state."""
FOUR = {"received", "routing", "waiting_for_app", "running"}
WITH_RESULT = {"submitted", "completed", "failed", "cancelled", "rejected"}
FINAL = {"completed", "failed", "cancelled", "rejected"}
STATUS_OF = {
    "completed": {"completed"},
    "failed": {"failed"},
    "cancelled": {"cancelled"},
    "rejected": {"rejected"},
    "submitted": {"completed", "failed"},
}


def model(
    call: ToolCallRecord, event: str, now: datetime, code: str | None, valid: bool
) -> tuple[str, Outcome | None]:
    """(state after, row written or None) for ``event`` from the call's owner, from the
    expected table and the deadline rule, independently of the code under test."""
    state = str(call.state)
    if state in FOUR and call.deadline is not None and now >= call.deadline:
        return "failed", Outcome("failed", "tool_timeout")
    if state == "submitted" and event == "delivered":
        assert call.outcome is not None
        return DELIVERED_TO[call.outcome.status], None
    move = EXPECTED.get(state, {}).get(event)
    if move is None or event == "timeout" or (event == "complete" and not valid):
        return state, None
    to, row = move
    if row is None:
        return to, None
    status, row_code = row
    return to, Outcome(status, code if row_code == EVENT_CODE else row_code)


class ToolCallMachine(RuleBasedStateMachine):
    calls = Bundle("calls")

    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.records: dict[str, ToolCallRecord] = {}
        self.outbox: list[tuple[str, Outcome]] = []
        self.settled_receipts: dict[str, set[Receipt]] = {}
        self.requests: dict[str, list[tuple[str, Event, str | None, bool]]] = {}
        self.names = itertools.count(1)

    # --- the Runtime's part ------------------------------------------------------------

    def apply(self, call_id: str, decision: Decision, expected: tuple[str, Outcome | None]) -> None:
        before = self.records[call_id]
        after = apply(before, decision)
        assert (str(after.state), decision.writes) == expected, (before, decision)
        if decision.writes is not None:
            self.outbox.append((call_id, decision.writes))
            if decision.writes.code == "app_closed":
                assert decision.effective is Event.APP_CLOSED
                assert str(before.state) in FOUR
            if decision.writes.code == "tool_timeout":
                assert before.deadline is not None
                assert self.now >= before.deadline
        if str(before.state) in FINAL:
            assert after == before
        if before.state is State.SUBMITTED:
            # The accepted result goes out as it is; only the ack settles the call.
            assert after.outcome == before.outcome
            assert before.outcome is not None
            assert str(after.state) in {"submitted", DELIVERED_TO[before.outcome.status]}
        if after != before:
            event(f"{before.state} -> {after.state}")
        self.records[call_id] = after

    def answer(self, call_id: str, asker: str, decision: Decision, was: ToolCallRecord) -> None:
        receipt = decision.receipt(call_id)
        if was.instance_id != asker:
            assert receipt == Receipt(call_id, False, "call_not_found", None)
        elif str(was.state) in WITH_RESULT or receipt.code == "call_already_final":
            # A settled call (or one found overdue) answers every request alike.
            outcome = self.records[call_id].outcome
            assert receipt == Receipt(call_id, False, "call_already_final", outcome)
            seen = self.settled_receipts.setdefault(call_id, set())
            seen.add(receipt)
            assert len(seen) == 1
        else:
            assert receipt.outcome == decision.writes

    # --- rules -------------------------------------------------------------------------

    @precondition(lambda self: len(self.records) < MAX_CALLS)
    @rule(
        target=calls,
        instance=st.sampled_from(INSTANCES),
        timeout_ms=st.sampled_from(TIMEOUTS),
    )
    def receive_call(self, instance: str, timeout_ms: int | None) -> str:
        call_id = f"call-{next(self.names)}"
        self.records[call_id] = receive(
            call_id, received_at=self.now, timeout_ms=timeout_ms, instance_id=instance
        )
        return call_id

    @initialize(
        target=calls,
        setup=st.lists(
            st.tuples(st.sampled_from(INSTANCES), st.sampled_from(TIMEOUTS)),
            min_size=1,
            max_size=6,
        ),
    )
    def some_calls(self, setup: list[tuple[str, int | None]]) -> object:
        return multiple(*(self.receive_call(instance, ms) for instance, ms in setup))

    @rule(call_id=calls, ev=st.sampled_from(RUNTIME_EVENTS))
    def runtime_event(self, call_id: str, ev: Event) -> None:
        call = self.records[call_id]
        expected = model(call, ev, self.now, None, True)
        decision = decide(
            call.state, ev, now=self.now, deadline=call.deadline, outcome=call.outcome
        )
        self.apply(call_id, decision, expected)

    @rule(call_id=calls, code=st.sampled_from(sorted(REJECT_CODES)))
    def reject(self, call_id: str, code: str) -> None:
        call = self.records[call_id]
        expected = model(call, "reject", self.now, code, True)
        decision = decide(call.state, Event.REJECT, now=self.now, deadline=call.deadline, code=code)
        self.apply(call_id, decision, expected)

    @precondition(lambda self: any(c.state in NATURAL for c in self.records.values()))
    @rule(data=st.data(), pick=st.integers(0, 1))
    def move_along(self, data: st.DataObject, pick: int) -> None:
        """The natural next step for a call on its way, so that many calls get far."""
        moving = sorted(c for c, call in self.records.items() if call.state in NATURAL)
        call_id = data.draw(st.sampled_from(moving))
        options = NATURAL[self.records[call_id].state]
        self.runtime_event(call_id, options[pick % len(options)])

    @rule(
        call_id=calls,
        ev=st.sampled_from(APP_REQUESTS),
        from_owner=st.booleans(),
        other=st.sampled_from(INSTANCES),
        fail_code=st.sampled_from(FAIL_CODES),
        valid=st.sampled_from((True, True, False)),
    )
    def app(
        self, call_id: str, ev: Event, from_owner: bool, other: str, fail_code: str, valid: bool
    ) -> None:
        call = self.records[call_id]
        asker = call.instance_id if from_owner and call.instance_id else other
        code = fail_code if ev is Event.FAIL else None
        self.request(call_id, asker, ev, code, valid)
        self.requests.setdefault(call_id, []).append((asker, ev, code, valid))

    @precondition(lambda self: any(c.state is State.RUNNING for c in self.records.values()))
    @rule(
        data=st.data(),
        ev=st.sampled_from(APP_REQUESTS),
        fail_code=st.sampled_from(FAIL_CODES),
        valid=st.sampled_from((True, True, False)),
    )
    def app_on_running(self, data: st.DataObject, ev: Event, fail_code: str, valid: bool) -> None:
        """An app request on a running call, from its own instance: the busy case."""
        running = sorted(c for c, call in self.records.items() if call.state is State.RUNNING)
        call_id = data.draw(st.sampled_from(running))
        asker = self.records[call_id].instance_id
        assert asker is not None
        code = fail_code if ev is Event.FAIL else None
        self.request(call_id, asker, ev, code, valid)
        self.requests.setdefault(call_id, []).append((asker, ev, code, valid))

    def request(self, call_id: str, asker: str, ev: Event, code: str | None, valid: bool) -> None:
        call = self.records[call_id]
        decision = app_request(call, asker, ev, now=self.now, code=code, output_valid=valid)
        if asker == call.instance_id:
            expected = model(call, ev, self.now, code, valid)
        else:
            expected = (str(call.state), None)
        self.apply(call_id, decision, expected)
        self.answer(call_id, asker, decision, call)

    @precondition(lambda self: self.requests)
    @rule(data=st.data())
    def replay(self, data: st.DataObject) -> None:
        call_id = data.draw(st.sampled_from(sorted(self.requests)))
        asker, ev, code, valid = data.draw(st.sampled_from(self.requests[call_id]))
        self.request(call_id, asker, ev, code, valid)

    @precondition(lambda self: any(c.state is State.RUNNING for c in self.records.values()))
    @rule(data=st.data(), ev=st.sampled_from((Event.COMPLETE, Event.FAIL)))
    def submit_then_close(self, data: st.DataObject, ev: Event) -> None:
        """The app's result is accepted, then its instance closes before the ack: the
        result must go out as it was (spec 002 §7.2)."""
        running = sorted(c for c, call in self.records.items() if call.state is State.RUNNING)
        call_id = data.draw(st.sampled_from(running))
        owner = self.records[call_id].instance_id
        assert owner is not None
        code = FAIL_CODES[0] if ev is Event.FAIL else None
        self.request(call_id, owner, ev, code, True)
        self.requests.setdefault(call_id, []).append((owner, ev, code, True))
        submitted = self.records[call_id]
        self.close(owner)
        assert self.records[call_id] == submitted or submitted.state is not State.SUBMITTED

    @rule(instance=st.sampled_from(INSTANCES), now=st.integers(0, 2))
    def close_sometimes(self, instance: str, now: int) -> None:
        """An accepted close (a third of the time, so that calls live long enough)."""
        if now == 0:
            self.close(instance)

    def close(self, instance: str) -> None:
        before = dict(self.records)
        decisions = close_instance(before.values(), instance, now=self.now)
        assert [c for c, _ in decisions] == [
            c for c, call in before.items() if call.instance_id == instance
        ]
        for call_id, decision in decisions:
            call = before[call_id]
            self.apply(call_id, decision, model(call, "app_closed", self.now, None, True))
            if str(call.state) in WITH_RESULT:
                assert self.records[call_id] == call

    @rule()
    def timer(self) -> None:
        for call_id, decision in due(self.records.values(), self.now):
            call = self.records[call_id]
            assert decision.to is State.FAILED
            self.apply(call_id, decision, model(call, "timeout", self.now, None, True))
        first = next_deadline(self.records.values())
        assert first is None or first > self.now

    @rule(ms=st.sampled_from(STEPS_MS))
    def advance(self, ms: int) -> None:
        self.now += timedelta(milliseconds=ms)

    # --- checks ------------------------------------------------------------------------

    @invariant()
    def one_row_per_settled_call(self) -> None:
        rows = Counter(call_id for call_id, _ in self.outbox)
        assert max(rows.values(), default=0) <= 1
        written = dict(self.outbox)
        for call_id, call in self.records.items():
            if str(call.state) in WITH_RESULT:
                assert rows[call_id] == 1
                row = written[call_id]
                assert call.outcome == row
                assert row.status in STATUS_OF[str(call.state)]
            else:
                assert rows[call_id] == 0
                assert call.outcome is None

    def teardown(self) -> None:
        # The end of every story: each instance closes, each result is acked.
        for instance in INSTANCES:
            self.close(instance)
        for call_id, call in list(self.records.items()):
            if call.state is State.SUBMITTED:
                self.runtime_event(call_id, Event.DELIVERED)
        rows = Counter(call_id for call_id, _ in self.outbox)
        for call_id, call in self.records.items():
            assert str(call.state) in FINAL
            assert rows[call_id] == 1


ToolCallMachine.TestCase.settings = settings(
    max_examples=400,
    stateful_step_count=100,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestToolCallMachine = ToolCallMachine.TestCase
