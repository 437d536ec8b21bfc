"""The rules of one MCP tool call (``lineup.runtime.mcp.calls``), from plain values:
where a call starts by the server's policy, every move of the table and every refusal,
the deadline winning, and which moves write the one result or stop the server's work."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.mcp.calls import (
    FINAL,
    OPEN,
    TRANSITIONS,
    CallFacts,
    Event,
    State,
    decide,
    starts_executing,
)

NOW = datetime(2026, 12, 2, 12, 0, tzinfo=UTC)
LATER = NOW + timedelta(minutes=10)


def facts(state: State) -> CallFacts:
    return CallFacts(state, LATER)


@pytest.mark.parametrize(
    ("policy", "read_only", "remembered", "runs"),
    [
        ("ask", False, False, False),
        ("ask", True, False, False),
        ("ask", False, True, True),
        ("read_only", True, False, True),
        ("read_only", False, False, False),
        ("allow", False, False, True),
    ],
)
def test_the_policy_decides_where_a_call_starts(
    policy: str, read_only: bool, remembered: bool, runs: bool
) -> None:
    decided = starts_executing(policy, read_only=read_only, remembered=remembered)  # type: ignore[arg-type]
    assert decided is runs


def test_allow_forwards_and_writes_no_result_yet() -> None:
    decision = decide(facts(State.AWAITING_CONSENT), Event.ALLOW, now=NOW)
    assert decision.to is State.EXECUTING
    assert decision.forward and not decision.queue_result and not decision.cancel_on_server


@pytest.mark.parametrize(
    ("state", "event", "to", "code", "cancels"),
    [
        (State.AWAITING_CONSENT, Event.DENY, State.REJECTED, ErrorCode.CAPABILITY_DENIED, False),
        (State.AWAITING_CONSENT, Event.DISMISS, State.DISMISSED, ErrorCode.CALL_DISMISSED, False),
        (State.AWAITING_CONSENT, Event.DISABLE, State.CANCELLED, ErrorCode.APP_DISABLED, False),
        (State.EXECUTING, Event.COMPLETE, State.COMPLETED, None, False),
        (State.EXECUTING, Event.DISMISS, State.DISMISSED, ErrorCode.CALL_DISMISSED, True),
        (State.EXECUTING, Event.DISABLE, State.CANCELLED, ErrorCode.APP_DISABLED, True),
        (State.EXECUTING, Event.INTERRUPT, State.FAILED, ErrorCode.INTERRUPTED, False),
    ],
)
def test_each_ending_move_writes_the_one_result(
    state: State, event: Event, to: State, code: str | None, cancels: bool
) -> None:
    decision = decide(facts(state), event, now=NOW)
    assert (decision.to, decision.code) == (to, code)
    assert decision.queue_result
    assert decision.cancel_on_server is cancels
    assert not decision.forward


def test_a_failure_keeps_the_connection_layer_s_code() -> None:
    decision = decide(facts(State.EXECUTING), Event.FAIL, now=NOW, code="mcp_timeout")
    assert (decision.to, decision.code) == (State.FAILED, "mcp_timeout")
    assert not decision.cancel_on_server  # the server already failed it


def test_the_deadline_wins_over_a_late_answer_and_stops_the_server() -> None:
    late = LATER + timedelta(milliseconds=1)
    decision = decide(facts(State.EXECUTING), Event.COMPLETE, now=late)
    assert (decision.to, decision.event, decision.code) == (
        State.FAILED,
        Event.EXPIRE,
        ErrorCode.TOOL_TIMEOUT,
    )
    assert decision.cancel_on_server and decision.queue_result
    consent = decide(facts(State.AWAITING_CONSENT), Event.ALLOW, now=late)
    assert (consent.to, consent.code, consent.forward) == (
        State.FAILED,
        ErrorCode.TOOL_TIMEOUT,
        False,
    )


def test_a_timer_that_fires_early_moves_nothing() -> None:
    decision = decide(facts(State.EXECUTING), Event.EXPIRE, now=NOW)
    assert decision.to is None and decision.refusal is None


REFUSED = [(s, e) for s in State for e in Event if (s, e) not in TRANSITIONS]


@pytest.mark.parametrize(("state", "event"), REFUSED)
def test_every_pair_outside_the_table_is_refused(state: State, event: Event) -> None:
    decision = decide(facts(state), event, now=NOW)
    assert decision.to is None
    expected = ErrorCode.CALL_ALREADY_FINAL if state in FINAL else ErrorCode.LIFECYCLE_DENIED
    assert decision.refusal == expected


def test_only_open_calls_move() -> None:
    assert {s for s, _ in TRANSITIONS} == set(OPEN)
    assert set(TRANSITIONS.values()) <= set(State)
