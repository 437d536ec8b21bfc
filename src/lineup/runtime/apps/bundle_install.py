"""The life of one signed bundle install, as a pure state machine (spec 002 §9.2).

An install from the catalog starts ``requested`` (an app id and an exact version);
one from a release at hand (a file, a test) starts ``found``. Each open state names
the one step the installer does next (``STEP``), and the step reports how it went:
``ok``, ``missing`` (the lookup: the catalog does not list the release) or ``error``
with the code of what stopped it::

    requested --ok--> found --ok--> checked --ok--> fetched --ok--> verified --ok--> cached
        |               ^ok                                                            |
        \\--missing--> refreshing --missing--> refused(not_in_catalog)       recorded <--ok--/

    any open state --error--> refused(code) | failed(code)

- ``look_up`` (``requested``): the stored catalog lists the release (and a catalog
  client can download it); ``refresh`` (``refreshing``): the catalog is fetched again
  and looked up once more.
- ``check`` (``found``): installable here before anything is downloaded (not
  revoked, no downgrade, no other bytes under this version) and signed by a trusted,
  unrevoked key.
- ``fetch`` (``checked``): the artifact is downloaded into memory (never more than its
  stated length).
- ``verify`` (``fetched``): length, SHA-256, archive, bundle and release match.
- ``cache`` (``verified``): written to the verified cache (temp file, fsync, rename).
- ``record`` (``cached``): in one transaction, the version in use.

An ``error`` whose code says the step's I/O could not be done (``IO_CODES``: the
network, the cache) makes the install ``failed``; any other code is a refusal
(``refused``): the release, the store or the person's trust said no. Either way the
code is the one the step raised, and nothing the registry names changed.

What follows an install that stops is decided here too: from a step under the
install lock (``LOCKED``, from ``found`` on) it is audited (one ``app.release`` row
with the code) and the verified cache is swept (a file written for a refused install
goes at once); a release the catalog does not list, even fetched again, is audited
only; a catalog that could not be reached at all (not logged in, network) is
neither, as nothing was asked of the store. A recorded install is logged.

Every allowed move is in ``TRANSITIONS``; the installer asks ``decide`` and does what
it returns, so the rules live here and nowhere else. Any other (state, event) pair
is refused with a typed code and changes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from lineup.delivery.errors import DeliveryErrorCode

__all__ = [
    "FINAL",
    "IO_CODES",
    "LOCKED",
    "OPEN",
    "STEP",
    "TRANSITIONS",
    "AuditRefusal",
    "Decision",
    "Effect",
    "Event",
    "LogInstalled",
    "Refusal",
    "State",
    "Step",
    "SweepCache",
    "decide",
]


class State(StrEnum):
    REQUESTED = "requested"  # an app id and version, to find in the catalog
    REFRESHING = "refreshing"  # not in the stored catalog: fetch it and look again
    FOUND = "found"  # the signed release is at hand (looked up, or given)
    CHECKED = "checked"  # installable here and signed by a trusted key
    FETCHED = "fetched"  # the artifact's bytes are in memory
    VERIFIED = "verified"  # the artifact is exactly the release's bundle
    CACHED = "cached"  # it is in the verified cache
    RECORDED = "recorded"  # final: the version in use
    REFUSED = "refused"  # final: a check said no
    FAILED = "failed"  # final: a step's I/O could not be done


class Event(StrEnum):
    OK = "ok"  # the step did what it must
    MISSING = "missing"  # the lookup: the catalog does not list the release
    ERROR = "error"  # the step stopped with a code (applied as refused or failed)
    REFUSED = "refused"  # a check said no
    FAILED = "failed"  # the step's I/O could not be done


class Step(StrEnum):
    LOOK_UP = "look_up"
    REFRESH = "refresh"
    CHECK = "check"
    FETCH = "fetch"
    VERIFY = "verify"
    CACHE = "cache"
    RECORD = "record"


class Refusal(StrEnum):
    """Why an event was refused (the installer's own mistake; nothing changes)."""

    ENDED = "install_ended"
    UNEXPECTED = "install_step_unexpected"


FINAL = frozenset({State.RECORDED, State.REFUSED, State.FAILED})
OPEN = frozenset(State) - FINAL

STEP: Mapping[State, Step] = {
    State.REQUESTED: Step.LOOK_UP,
    State.REFRESHING: Step.REFRESH,
    State.FOUND: Step.CHECK,
    State.CHECKED: Step.FETCH,
    State.FETCHED: Step.VERIFY,
    State.VERIFIED: Step.CACHE,
    State.CACHED: Step.RECORD,
}
"""The one step the installer does in each open state."""

LOCKED = frozenset({State.FOUND, State.CHECKED, State.FETCHED, State.VERIFIED, State.CACHED})
"""The steps run under the install lock (one install, revocation or removal at a
time), so the cache sweep never deletes a file another install is writing."""

IO_CODES = frozenset({DeliveryErrorCode.CATALOG_UNAVAILABLE, DeliveryErrorCode.CACHE_UNAVAILABLE})
"""Codes that mean a step could not be done (``failed``), not that it said no."""

_NEXT: Mapping[State, State] = {
    State.REQUESTED: State.FOUND,
    State.REFRESHING: State.FOUND,
    State.FOUND: State.CHECKED,
    State.CHECKED: State.FETCHED,
    State.FETCHED: State.VERIFIED,
    State.VERIFIED: State.CACHED,
    State.CACHED: State.RECORDED,
}

TRANSITIONS: Mapping[tuple[State, Event], State] = {
    **{(state, Event.OK): after for state, after in _NEXT.items()},
    (State.REQUESTED, Event.MISSING): State.REFRESHING,
    (State.REFRESHING, Event.MISSING): State.REFUSED,
    **{(state, Event.REFUSED): State.REFUSED for state in OPEN},
    **{(state, Event.FAILED): State.FAILED for state in OPEN},
}
"""Every move. ``error`` is not a row: it is applied as ``refused`` or ``failed``."""


@dataclass(frozen=True, slots=True)
class AuditRefusal:
    """One ``app.release`` audit row (``refused`` with the code) and a warning log
    line with the subject and the code."""


@dataclass(frozen=True, slots=True)
class SweepCache:
    """Remove from the verified cache every file no release row names."""


@dataclass(frozen=True, slots=True)
class LogInstalled:
    """One log line: the app id, version and size of the installed release."""


Effect = AuditRefusal | SweepCache | LogInstalled


@dataclass(frozen=True, slots=True)
class Decision:
    """What one event does to an install. ``to``: the new state, or ``None`` with
    the ``refusal``. ``effective``: the event applied (``refused`` or ``failed`` for an
    ``error``). ``code``: why the install stopped (``None`` while it goes on, and
    once recorded). ``effects``: what the installer does, in order."""

    to: State | None
    effective: Event
    refusal: Refusal | None = None
    code: str | None = None
    effects: tuple[Effect, ...] = ()


def _effective(state: State, event: Event, code: str | None) -> tuple[Event, str | None]:
    if event in (Event.ERROR, Event.REFUSED, Event.FAILED):
        if not code:
            raise ValueError(f"`{event}` needs the code of what stopped the step")
        if event is Event.ERROR:
            return (Event.FAILED if code in IO_CODES else Event.REFUSED), code
        return event, code
    if code is not None:
        raise ValueError(f"`{event}` takes no code")
    if event is Event.MISSING and state is State.REFRESHING:
        return event, DeliveryErrorCode.NOT_IN_CATALOG
    return event, None


def decide(state: State, event: Event, *, code: str | None = None) -> Decision:
    """Decide ``event`` (the outcome of ``STEP[state]``) for an install in ``state``.
    ``code``: what stopped the step, for ``error``, ``refused`` and ``failed``.
    Raises ``ValueError`` only for a misuse (a missing or unexpected code)."""
    effective, stopped = _effective(state, event, code)
    to = TRANSITIONS.get((state, effective))
    if to is None:
        refusal = Refusal.ENDED if state in FINAL else Refusal.UNEXPECTED
        return Decision(None, event, refusal)
    effects: tuple[Effect, ...] = ()
    if to is State.RECORDED:
        effects = (LogInstalled(),)
    elif to in (State.REFUSED, State.FAILED):
        if state in LOCKED:
            effects = (AuditRefusal(), SweepCache())
        elif effective is Event.MISSING:
            effects = (AuditRefusal(),)  # not in the catalog, even fetched again
    return Decision(to, effective, None, None if stopped is None else str(stopped), effects)
