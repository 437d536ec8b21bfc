"""The life of one MiniApp instance, as a pure state machine (spec 002 §6, §7.2-7.3).

An instance is ``starting`` until its app reports it ``started``; it then runs in the
``foreground`` (it holds focus) or the ``background`` (alive, out of focus), may be
``suspended`` by the Runtime, and ends ``stopped`` (an accepted close that finished,
through ``stopping``) or ``failed``. Apps, the person and agent tools only *request*
foreground, background or close; the Runtime asks ``decide`` and does what it
returns. A refused request changes nothing and is answered ``lifecycle_denied``;
one naming no instance gets ``app_instance_not_found``.

Every allowed move is in ``TRANSITIONS``; ``lineup.runtime.apps.focus`` applies them
to the set of instances and the focus stack, so the rules live here and nowhere
else.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from lineup.protocol import ErrorCode

__all__ = [
    "BINDABLE",
    "FINAL",
    "LIVE",
    "MOUNTABLE",
    "READY",
    "TRANSITIONS",
    "Decision",
    "Event",
    "MiniAppInstanceRecord",
    "State",
    "decide",
]


class State(StrEnum):
    STARTING = "starting"
    FOREGROUND = "foreground"
    BACKGROUND = "background"
    SUSPENDED = "suspended"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"


class Event(StrEnum):
    STARTED = "started"  # the app finished starting
    REQUEST_FOREGROUND = "request_foreground"
    REQUEST_BACKGROUND = "request_background"
    REQUEST_CLOSE = "request_close"
    CLOSED = "closed"  # the stop that an accepted close began has finished
    FAIL = "fail"
    SUSPEND = "suspend"  # the Runtime pauses a running instance
    RESUME = "resume"  # ... and lets it run again, out of focus
    RESTART_RECOVERY = "restart_recovery"  # the Runtime came back after a stop or a crash


_S = State
_E = Event

TRANSITIONS: Mapping[tuple[State, Event], State] = {
    # Starting. Foreground and background requests are accepted but only move the
    # instance in the focus stack; the app lands in the background when it has
    # started, and is then brought to the front if it holds focus (see focus.py).
    (_S.STARTING, _E.STARTED): _S.BACKGROUND,
    (_S.STARTING, _E.REQUEST_FOREGROUND): _S.STARTING,
    (_S.STARTING, _E.REQUEST_BACKGROUND): _S.STARTING,
    (_S.STARTING, _E.REQUEST_CLOSE): _S.STOPPING,
    (_S.STARTING, _E.FAIL): _S.FAILED,
    (_S.STARTING, _E.RESTART_RECOVERY): _S.SUSPENDED,  # never shown as started
    # Foreground.
    (_S.FOREGROUND, _E.REQUEST_FOREGROUND): _S.FOREGROUND,
    (_S.FOREGROUND, _E.REQUEST_BACKGROUND): _S.BACKGROUND,
    (_S.FOREGROUND, _E.REQUEST_CLOSE): _S.STOPPING,
    (_S.FOREGROUND, _E.FAIL): _S.FAILED,
    (_S.FOREGROUND, _E.SUSPEND): _S.SUSPENDED,
    (_S.FOREGROUND, _E.RESTART_RECOVERY): _S.FOREGROUND,
    # Background.
    (_S.BACKGROUND, _E.REQUEST_FOREGROUND): _S.FOREGROUND,
    (_S.BACKGROUND, _E.REQUEST_BACKGROUND): _S.BACKGROUND,
    (_S.BACKGROUND, _E.REQUEST_CLOSE): _S.STOPPING,
    (_S.BACKGROUND, _E.FAIL): _S.FAILED,
    (_S.BACKGROUND, _E.SUSPEND): _S.SUSPENDED,
    (_S.BACKGROUND, _E.RESTART_RECOVERY): _S.BACKGROUND,
    # Suspended: bringing it to the front resumes it; ``resume`` alone keeps it out
    # of focus.
    (_S.SUSPENDED, _E.REQUEST_FOREGROUND): _S.FOREGROUND,
    (_S.SUSPENDED, _E.REQUEST_BACKGROUND): _S.SUSPENDED,
    (_S.SUSPENDED, _E.REQUEST_CLOSE): _S.STOPPING,
    (_S.SUSPENDED, _E.FAIL): _S.FAILED,
    (_S.SUSPENDED, _E.SUSPEND): _S.SUSPENDED,
    (_S.SUSPENDED, _E.RESUME): _S.BACKGROUND,
    (_S.SUSPENDED, _E.RESTART_RECOVERY): _S.SUSPENDED,
    # Stopping: the close is under way; asking again is accepted and does nothing.
    (_S.STOPPING, _E.REQUEST_CLOSE): _S.STOPPING,
    (_S.STOPPING, _E.CLOSED): _S.STOPPED,
    (_S.STOPPING, _E.FAIL): _S.FAILED,
    (_S.STOPPING, _E.RESTART_RECOVERY): _S.SUSPENDED,  # never shown as stopped
    # Final: nothing brings an instance back; a restart leaves it as it is.
    (_S.STOPPED, _E.RESTART_RECOVERY): _S.STOPPED,
    (_S.FAILED, _E.RESTART_RECOVERY): _S.FAILED,
}
"""The only moves; a pair that maps a state to itself is an accepted request that
changes nothing. Every other (state, event) pair is refused with
``lifecycle_denied`` and leaves the instance as it is."""

FINAL = frozenset({State.STOPPED, State.FAILED})
LIVE = frozenset(State) - FINAL
"""Live instances are in the focus stack; final ones never are, and never move."""

READY = frozenset({State.FOREGROUND, State.BACKGROUND})
"""Instances that run a tool call now: a call handed to one is ``running`` at once."""

BINDABLE = READY | {State.STARTING, State.SUSPENDED}
"""Instances a tool call may be bound to (the router picks among them; a call to one
not ``READY`` waits until it is), and that focus may be given back to. A
``stopping`` instance takes no new work: its close is under way."""

MOUNTABLE = LIVE - {State.STOPPING}
"""Instances a host may show a surface of (a stopping one's surfaces are coming down)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MiniAppInstanceRecord:
    """One running (or finished) app instance, as spec 002 §6 defines it."""

    instance_id: str
    app_scope: str
    conversation_id: str | None = None
    state: State
    parent_instance_id: str | None = None  # "continue" on old work names the old one
    started_at: datetime
    stopped_at: datetime | None = None  # set when it becomes stopped or failed
    error: str | None = None  # why it failed
    name: str = ""
    """The app's display name when the instance opened (its manifest's ``name``); empty
    for a scope no registered app has. Kept for the instance's life, like ``ordinal``."""
    ordinal: int = 1
    """Which instance of its app this is, for people: the lowest number no other live
    instance of the same scope held when it opened (``focus.Instances.open``). Never
    changes while it lives, so "Task Dashboard 2" stays 2 when the first one closes."""


@dataclass(frozen=True, slots=True)
class Decision:
    """``to`` is the state after the event, or ``None`` with the ``refusal`` code."""

    to: State | None
    refusal: ErrorCode | None = None


def decide(state: State | None, event: Event) -> Decision:
    """What ``event`` does to an instance in ``state`` (``None``: no such instance)."""
    if state is None:
        return Decision(None, ErrorCode.APP_INSTANCE_NOT_FOUND)
    to = TRANSITIONS.get((state, event))
    if to is None:
        return Decision(None, ErrorCode.LIFECYCLE_DENIED)
    return Decision(to)
