"""The life of one standard interaction, as a pure state machine (spec 002 §7.3).

An answerable interaction starts ``pending``. Four things race to end it: the
person's answer, the agent's ``interaction.dismiss``, expiry and a Runtime failure.
Whatever the store applies first wins, and that same transaction writes the single
``tool.result``; anything later is answered with a receipt and changes nothing.
A notice is ``accepted`` as soon as its card is stored.

Every allowed move is in ``TRANSITIONS``; the store asks ``decide`` and writes what
it returns, so the rules live here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from lineup.protocol import ErrorCode
from lineup.protocol.payloads import ToolResultStatus


class State(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"  # a notice, stored and shown
    ANSWERED = "answered"
    DISMISSED = "dismissed"
    EXPIRED = "expired"
    FAILED = "failed"


class Event(StrEnum):
    ANSWER = "answer"
    DISMISS = "dismiss"
    EXPIRE = "expire"
    FAIL = "fail"


TRANSITIONS: Mapping[tuple[State, Event], State] = {
    (State.PENDING, Event.ANSWER): State.ANSWERED,
    (State.PENDING, Event.DISMISS): State.DISMISSED,
    (State.PENDING, Event.EXPIRE): State.EXPIRED,
    (State.PENDING, Event.FAIL): State.FAILED,
}
"""The only moves. Every other (state, event) pair leaves the interaction as it is."""

FINAL = frozenset(State) - {State.PENDING}

RESULT_STATUS: Mapping[State, ToolResultStatus] = {
    State.ACCEPTED: "accepted",
    State.ANSWERED: "completed",
    State.DISMISSED: "dismissed",
    State.EXPIRED: "expired",
    State.FAILED: "failed",
}
"""The ``tool.result`` status each final state sends, exactly once."""

RESULT_ERROR: Mapping[State, tuple[ErrorCode, str]] = {
    State.DISMISSED: (ErrorCode.INTERACTION_DISMISSED, "The agent stopped waiting"),
    State.EXPIRED: (ErrorCode.INTERACTION_EXPIRED, "Nobody answered in time"),
    State.FAILED: (ErrorCode.RUNTIME_FAILED, "The Runtime could not complete the interaction"),
}

REFUSAL: Mapping[State, ErrorCode] = {
    State.EXPIRED: ErrorCode.INTERACTION_EXPIRED,
    **{state: ErrorCode.CALL_ALREADY_FINAL for state in FINAL - {State.EXPIRED}},
}
"""What a late action is told, by the state that already won."""


@dataclass(frozen=True, slots=True)
class Decision:
    """``to`` is the new final state when this action wins, else ``None``.

    ``effective`` is the event that was applied: an answer or a dismiss that arrives
    at or after ``expires_at`` applies ``EXPIRE`` (the interaction had already run
    out; the timer just had not fired), so the result is ``expired`` and the late
    action is refused.
    """

    to: State | None
    effective: Event
    refusal: ErrorCode | None


def decide(state: State, event: Event, *, now: datetime, expires_at: datetime | None) -> Decision:
    effective = event
    if state is State.PENDING and expires_at is not None and now >= expires_at:
        effective = Event.EXPIRE
    elif event is Event.EXPIRE and (expires_at is None or now < expires_at):
        # Too early (a timer that fired before its time, or a notice): not a move.
        return Decision(None, event, REFUSAL.get(state))
    to = TRANSITIONS.get((state, effective))
    refusal: ErrorCode | None = None
    if to is None:
        refusal = REFUSAL.get(state, ErrorCode.CALL_ALREADY_FINAL)
    elif effective is not event:
        refusal = ErrorCode.INTERACTION_EXPIRED
    return Decision(to, effective, refusal)
