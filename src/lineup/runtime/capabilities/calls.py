"""One capability call's states and moves, as data (no I/O).

    awaiting_consent --allow--> approved --claim--> executing --complete--> completed
           |                       |                    \\--fail------> failed
           |--deny----> rejected   |--complete/fail (a Runtime provider)
           |--expire--> expired    \\--interrupt--> failed(interrupted)
           \\--cancel--> cancelled

A call still waiting or approved whose requesting app closed is ``cancelled``.
A call the gateway refuses on arrival ends at once: ``unsupported`` (not declared by
this host, or revoked), ``rejected`` (bad input, or an app asking for what its
manifest does not list), ``expired`` (``expires_at`` already passed). ``approved``
and ``executing`` calls that a restart finds are ``failed(interrupted)``: a provider
may have run, so it never runs again (at most once, and exactly one result).
"""

from __future__ import annotations

from enum import StrEnum

__all__ = ["FINAL", "OPEN", "TRANSITIONS", "Move", "State", "next_state"]


class State(StrEnum):
    AWAITING_CONSENT = "awaiting_consent"
    APPROVED = "approved"
    EXECUTING = "executing"
    COMPLETED = "completed"
    REJECTED = "rejected"
    CANCELLED = "cancelled"
    EXPIRED = "expired"
    UNSUPPORTED = "unsupported"
    FAILED = "failed"


class Move(StrEnum):
    ALLOW = "allow"
    DENY = "deny"
    EXPIRE = "expire"
    CANCEL = "cancel"
    CLAIM = "claim"
    COMPLETE = "complete"
    FAIL = "fail"
    INTERRUPT = "interrupt"


OPEN = frozenset({State.AWAITING_CONSENT, State.APPROVED, State.EXECUTING})
FINAL = frozenset(State) - OPEN

_S, _M = State, Move
TRANSITIONS: dict[tuple[State, Move], State] = {
    (_S.AWAITING_CONSENT, _M.ALLOW): _S.APPROVED,
    (_S.AWAITING_CONSENT, _M.DENY): _S.REJECTED,
    (_S.AWAITING_CONSENT, _M.EXPIRE): _S.EXPIRED,
    (_S.AWAITING_CONSENT, _M.CANCEL): _S.CANCELLED,
    (_S.APPROVED, _M.CLAIM): _S.EXECUTING,
    (_S.APPROVED, _M.COMPLETE): _S.COMPLETED,
    (_S.APPROVED, _M.FAIL): _S.FAILED,
    (_S.APPROVED, _M.INTERRUPT): _S.FAILED,
    (_S.APPROVED, _M.EXPIRE): _S.EXPIRED,
    (_S.APPROVED, _M.CANCEL): _S.CANCELLED,
    (_S.EXECUTING, _M.COMPLETE): _S.COMPLETED,
    (_S.EXECUTING, _M.FAIL): _S.FAILED,
    (_S.EXECUTING, _M.INTERRUPT): _S.FAILED,
}
"""Every allowed move; anything else is refused and changes nothing."""


def next_state(state: State, move: Move) -> State | None:
    return TRANSITIONS.get((state, move))
