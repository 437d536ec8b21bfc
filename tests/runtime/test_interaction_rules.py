"""The pure rules of an interaction's life (``lineup.runtime.interactions``): every
(state, event) pair, before and at/after ``expires_at``."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.interactions import (
    FINAL,
    REFUSAL,
    RESULT_ERROR,
    RESULT_STATUS,
    TRANSITIONS,
    Decision,
    Event,
    State,
    decide,
)

EXPIRES = datetime(2026, 3, 1, 12, 15, tzinfo=UTC)
BEFORE = EXPIRES - timedelta(milliseconds=1)
AFTER = EXPIRES + timedelta(hours=1)

MOVES = {
    Event.ANSWER: State.ANSWERED,
    Event.DISMISS: State.DISMISSED,
    Event.EXPIRE: State.EXPIRED,
    Event.FAIL: State.FAILED,
}
"""What each event does to a pending interaction before its time: written out here,
independently of ``TRANSITIONS``, so a changed table is noticed."""

FINAL_REFUSAL = {
    State.ACCEPTED: ErrorCode.CALL_ALREADY_FINAL,
    State.ANSWERED: ErrorCode.CALL_ALREADY_FINAL,
    State.DISMISSED: ErrorCode.CALL_ALREADY_FINAL,
    State.FAILED: ErrorCode.CALL_ALREADY_FINAL,
    State.EXPIRED: ErrorCode.INTERACTION_EXPIRED,
}

ALL_PAIRS = list(itertools.product(State, Event))


def test_the_table_holds_exactly_the_four_moves_out_of_pending() -> None:
    assert dict(TRANSITIONS) == {(State.PENDING, e): to for e, to in MOVES.items()}
    assert set(FINAL) == set(State) - {State.PENDING}
    assert dict(REFUSAL) == FINAL_REFUSAL


@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=lambda v: str(v))
def test_every_pair_before_expiry(state: State, event: Event) -> None:
    decision = decide(state, event, now=BEFORE, expires_at=EXPIRES)
    if state is State.PENDING and event is Event.EXPIRE:
        # A timer that fired early is not a move, and not a refusal either.
        assert decision == Decision(None, Event.EXPIRE, None)
    elif state is State.PENDING:
        assert decision == Decision(MOVES[event], event, None)
    else:
        assert decision == Decision(None, event, FINAL_REFUSAL[state])


@pytest.mark.parametrize("now", [EXPIRES, AFTER], ids=["at", "after"])
@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=lambda v: str(v))
def test_every_pair_at_or_after_expiry(state: State, event: Event, now: datetime) -> None:
    decision = decide(state, event, now=now, expires_at=EXPIRES)
    if state is State.PENDING:
        # Whatever arrives once time is up finds the interaction expired; only the
        # timer itself is not refused.
        refusal = None if event is Event.EXPIRE else ErrorCode.INTERACTION_EXPIRED
        assert decision == Decision(State.EXPIRED, Event.EXPIRE, refusal)
    else:
        assert decision == Decision(None, event, FINAL_REFUSAL[state])


@pytest.mark.parametrize("event", list(Event))
def test_answer_and_dismiss_one_millisecond_before_expiry_still_win(event: Event) -> None:
    decision = decide(State.PENDING, event, now=BEFORE, expires_at=EXPIRES)
    if event is Event.EXPIRE:
        assert decision.to is None
    else:
        assert decision.to is MOVES[event] and decision.refusal is None


@pytest.mark.parametrize("event", list(Event))
@pytest.mark.parametrize("now", [BEFORE, EXPIRES, AFTER], ids=["before", "at", "after"])
def test_a_notice_has_no_expiry_and_refuses_everything(event: Event, now: datetime) -> None:
    decision = decide(State.ACCEPTED, event, now=now, expires_at=None)
    assert decision.to is None
    assert decision.refusal == ErrorCode.CALL_ALREADY_FINAL


def test_expire_without_an_expiry_is_not_a_move() -> None:
    assert decide(State.PENDING, Event.EXPIRE, now=AFTER, expires_at=None) == Decision(
        None, Event.EXPIRE, None
    )


def test_every_final_state_sends_one_status_and_only_failures_carry_errors() -> None:
    assert dict(RESULT_STATUS) == {
        State.ACCEPTED: "accepted",
        State.ANSWERED: "completed",
        State.DISMISSED: "dismissed",
        State.EXPIRED: "expired",
        State.FAILED: "failed",
    }
    assert {state: code for state, (code, _) in RESULT_ERROR.items()} == {
        State.DISMISSED: ErrorCode.INTERACTION_DISMISSED,
        State.EXPIRED: ErrorCode.INTERACTION_EXPIRED,
        State.FAILED: ErrorCode.RUNTIME_FAILED,
    }
