"""The life of one capability call, as a pure state machine (spec 000 §5, spec 002 §7.3).

An agent's ``app.call`` or an app's ``capabilities.request`` ``arrive``s. The rules
for arrival (``decide(None, Event.ARRIVE, arrival=...)``) put it in one of
``INITIAL``: ``unsupported`` (this host does not declare the capability now:
``capability_not_declared``, or ``revoked`` when the person revoked it),
``rejected`` (an app asking for what its manifest does not list:
``capability_denied``; arguments that break the input schema:
``capability_input_invalid``), ``expired`` (``expires_at`` already passed),
``approved`` at once (``display_only``: decision ``automatic``; a
``user_confirmation`` one the person allowed this requester earlier in this
session: ``remembered``), or else ``awaiting_consent``.

    awaiting_consent --allow--> approved --claim--> executing --complete--> completed
           |                       |  \\--ran--> completed     |--picked--> completed
           |--deny----> rejected   |  \\--run_failed--> failed \\--fail----> failed
           |--expire--> expired    |--expire--> expired
           |--cancel--> cancelled  |--cancel / app_closed--> cancelled
           \\--app_closed--> cancelled \\--interrupt--> failed(interrupted) <--interrupt--/

Consent: ``deny`` ends the call ``rejected(capability_denied)``; ``allow`` approves
it, but ``system_permission`` needs ``acknowledged`` (the dialog's second step) and
``restricted`` needs the confirmation phrase the dialog showed, typed back (else
``confirmation_required``, and the call keeps waiting). ``remember`` is honoured for
``user_confirmation`` only. A capability that runs in the Runtime (``artifact.save``)
is carried out in the decision's own transaction (``ran`` / ``run_failed``); a shell
one is ``claim``ed by one tab (the first claim wins), which reports ``complete``,
``fail`` or, for ``device.pick_file``, ``picked``.

Choices, for the store that persists these decisions:

- The deadline wins: a consent that reaches a call at or after ``expires_at`` finds it
  expired (the timer had not fired yet), and the effective event is ``expire``. An
  ``expire`` before ``expires_at`` is not a move (a timer that fired early). A claim
  is not checked against ``expires_at``: once claimed, the lease bounds the run.
- A claimed call whose tab never reports ends ``failed(interrupted)`` after
  ``EXECUTION_LEASE_S`` (``due`` says when), and so does every ``approved`` or
  ``executing`` call a restart finds: a provider may have run, so it never runs again
  (at most once, and exactly one result).
- A result that breaks the output schema ends the call ``failed`` with
  ``capability_output_invalid``; a picked or saved file larger than an artifact may
  be, ``failed(artifact_too_large)``; a saved body that does not decode,
  ``failed(capability_input_invalid)``.
- The close of the requesting app instance ends its calls still waiting or approved,
  ``cancelled(app_closed)``; one already running finishes as it will.
- Every pair not in ``TRANSITIONS`` is refused and changes nothing:
  ``call_already_final`` for a final call, ``capability_call_busy`` for one in another
  step, ``capability_call_not_found`` for no call at all, and a call id that arrives
  again is a replay (not a move: one audit row, nothing else).

Every allowed move is in ``TRANSITIONS``; the store asks ``decide`` and carries out
what it returns (``Decision.effects``, in order), so the rules live here and nowhere
else. ``decide`` takes plain values (``CallFacts``, ``Arrival``, keyword facts), never
a row, a catalog or a clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from lineup.protocol import ErrorCode

__all__ = [
    "AUDIT_ACTION",
    "CODES",
    "EXECUTION_LEASE_S",
    "FINAL",
    "INITIAL",
    "OPEN",
    "REFUSALS",
    "TRANSITIONS",
    "Announce",
    "Arrival",
    "Audit",
    "CallFacts",
    "Decision",
    "Effect",
    "Event",
    "KeepArtifact",
    "MakePhrase",
    "NoteReplay",
    "QueueResult",
    "RememberConsent",
    "RunInRuntime",
    "State",
    "TellApp",
    "WatchDeadline",
    "decide",
    "due",
    "refusal_for",
]

EXECUTION_LEASE_S = 120
"""A claimed call whose tab never reports ends ``failed(interrupted)`` after this."""


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


class Event(StrEnum):
    ARRIVE = "arrive"  # an agent's app.call or an app's capabilities.request
    ALLOW = "allow"  # the person, in the dialog
    DENY = "deny"  # the person, in the dialog
    CLAIM = "claim"  # a tab takes an approved shell call to run it
    COMPLETE = "complete"  # the shell's provider reports its result
    FAIL = "fail"  # ... or that it could not, with its code
    PICKED = "picked"  # device.pick_file: the person picked a file
    RAN = "ran"  # the Runtime's own provider carried the call out
    RUN_FAILED = "run_failed"  # ... or could not
    EXPIRE = "expire"  # the expiry timer
    CANCEL = "cancel"  # someone stops the call
    APP_CLOSED = "app_closed"  # the requesting app instance closed or failed
    INTERRUPT = "interrupt"  # a restart (or an ended lease) found it approved or executing


CODES = frozenset(
    {
        ErrorCode.CAPABILITY_NOT_DECLARED,
        ErrorCode.REVOKED,
        ErrorCode.CAPABILITY_DENIED,
        ErrorCode.CAPABILITY_INPUT_INVALID,
        ErrorCode.EXPIRED,
        ErrorCode.CANCELLED,
        ErrorCode.APP_CLOSED,
        ErrorCode.INTERRUPTED,
        ErrorCode.CAPABILITY_OUTPUT_INVALID,
        ErrorCode.PROVIDER_FAILED,
        ErrorCode.ARTIFACT_TOO_LARGE,
    }
)
"""Why a call did not complete: its stored code and its ``app.result``'s error code
(a shell provider's ``fail`` brings its own)."""

REFUSALS = frozenset(
    {
        ErrorCode.CAPABILITY_CALL_NOT_FOUND,
        ErrorCode.CAPABILITY_CALL_BUSY,
        ErrorCode.CALL_ALREADY_FINAL,
        ErrorCode.CONFIRMATION_REQUIRED,
    }
)
"""Why a request about a call was refused (it changed nothing)."""


OPEN = frozenset({State.AWAITING_CONSENT, State.APPROVED, State.EXECUTING})
FINAL = frozenset(State) - OPEN
INITIAL = frozenset(
    {
        State.UNSUPPORTED,
        State.REJECTED,
        State.EXPIRED,
        State.AWAITING_CONSENT,
        State.APPROVED,
    }
)
"""The states a call can arrive in (``Event.ARRIVE``, decided by the arrival rules)."""

_S, _E = State, Event
TRANSITIONS: Mapping[tuple[State, Event], State] = {
    (_S.AWAITING_CONSENT, _E.ALLOW): _S.APPROVED,
    (_S.AWAITING_CONSENT, _E.DENY): _S.REJECTED,
    (_S.AWAITING_CONSENT, _E.EXPIRE): _S.EXPIRED,
    (_S.AWAITING_CONSENT, _E.CANCEL): _S.CANCELLED,
    (_S.AWAITING_CONSENT, _E.APP_CLOSED): _S.CANCELLED,
    (_S.APPROVED, _E.CLAIM): _S.EXECUTING,
    (_S.APPROVED, _E.RAN): _S.COMPLETED,
    (_S.APPROVED, _E.RUN_FAILED): _S.FAILED,
    (_S.APPROVED, _E.INTERRUPT): _S.FAILED,
    (_S.APPROVED, _E.EXPIRE): _S.EXPIRED,
    (_S.APPROVED, _E.CANCEL): _S.CANCELLED,
    (_S.APPROVED, _E.APP_CLOSED): _S.CANCELLED,
    (_S.EXECUTING, _E.COMPLETE): _S.COMPLETED,
    (_S.EXECUTING, _E.PICKED): _S.COMPLETED,
    (_S.EXECUTING, _E.FAIL): _S.FAILED,
    (_S.EXECUTING, _E.INTERRUPT): _S.FAILED,
}
"""Every move of a stored call; any other pair is refused and changes nothing."""

AUDIT_ACTION: Mapping[Event, str] = {
    _E.ARRIVE: "capability.call",
    _E.ALLOW: "capability.allow",
    _E.DENY: "capability.deny",
    _E.CLAIM: "capability.claim",
    _E.COMPLETE: "capability.complete",
    _E.PICKED: "capability.complete",
    _E.RAN: "capability.complete",
    _E.FAIL: "capability.fail",
    _E.RUN_FAILED: "capability.fail",
    _E.EXPIRE: "capability.expire",
    _E.CANCEL: "capability.cancel",
    _E.APP_CLOSED: "capability.cancel",
    _E.INTERRUPT: "capability.interrupt",
}
"""The audit action of each applied (effective) event."""

_CODE: Mapping[Event, ErrorCode] = {
    _E.DENY: ErrorCode.CAPABILITY_DENIED,
    _E.EXPIRE: ErrorCode.EXPIRED,
    _E.CANCEL: ErrorCode.CANCELLED,
    _E.APP_CLOSED: ErrorCode.APP_CLOSED,
    _E.INTERRUPT: ErrorCode.INTERRUPTED,
}
"""The code a move on these events fixes; ``fail`` and ``run_failed`` bring theirs."""

_CONSENT: Mapping[Event, str] = {_E.ALLOW: "allow", _E.DENY: "deny"}


# --- effects -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MakePhrase:
    """A ``restricted`` call: the store draws the confirmation phrase the dialog shows
    and stores it with the new row."""


@dataclass(frozen=True, slots=True)
class KeepArtifact:
    """The file (picked by the person, or saved by the Runtime) becomes an artifact of
    the conversation; its metadata, never a path, is the call's result."""


@dataclass(frozen=True, slots=True)
class Audit:
    """One audit row for the call as it is after the move (ids, capability, risk,
    requester, state, decision and code; never arguments or reasons)."""

    action: str


@dataclass(frozen=True, slots=True)
class NoteReplay:
    """A call id seen before arrived again: one audit row, nothing else (its one
    result is already on its way or delivered)."""


@dataclass(frozen=True, slots=True)
class QueueResult:
    """The agent's one ``app.result`` is queued (an app reads its own through the SDK)."""


@dataclass(frozen=True, slots=True)
class RunInRuntime:
    """The capability runs in the Runtime: carry it out now, in this transaction, and
    decide ``ran`` / ``run_failed``. The approved step itself is not announced."""


@dataclass(frozen=True, slots=True)
class Announce:
    """Hosts hear the call as it now is (``CapabilitiesChanged``): dialogs open or close."""


@dataclass(frozen=True, slots=True)
class TellApp:
    """The requesting app instance's SDK reads its calls again."""


@dataclass(frozen=True, slots=True)
class WatchDeadline:
    """A new open call: the expiry timer re-reads the next deadline."""


@dataclass(frozen=True, slots=True)
class RememberConsent:
    """The person allowed this requester this capability for the rest of the session."""


Effect = (
    MakePhrase
    | KeepArtifact
    | Audit
    | NoteReplay
    | QueueResult
    | RunInRuntime
    | Announce
    | TellApp
    | WatchDeadline
    | RememberConsent
)


# --- facts and decisions -----------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the rules need of a stored call, as plain values. ``updated_at`` is when it
    last moved (for an ``executing`` call: when it was claimed, which starts its
    lease); ``runs_in_runtime``: its capability runs in the Runtime, not a shell;
    ``picks_file``: its capability is ``device.pick_file``."""

    state: State
    from_app: bool
    risk: str
    expires_at: datetime
    updated_at: datetime
    phrase: str | None = None
    runs_in_runtime: bool = False
    picks_file: bool = False


@dataclass(frozen=True, slots=True)
class Arrival:
    """What the rules need of a call that just arrived. ``declared``: an attached host
    provides the capability and the person has not revoked it (``revoked`` says the
    latter); ``risk``: its risk, when declared; ``listed``: the requesting app's
    manifest lists it (always true for an agent); ``input_valid``: the arguments match
    its input schema; ``remembered``: the person allowed this requester this
    capability earlier in this session."""

    from_app: bool
    expires_at: datetime
    declared: bool
    revoked: bool = False
    risk: str | None = None
    listed: bool = True
    input_valid: bool = True
    remembered: bool = False
    runs_in_runtime: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """What one event does to a call.

    ``to``: the new state, or ``None`` (refused, or not a move). ``effective``: the
    event applied (``expire`` for a consent that came too late; ``fail`` /
    ``run_failed`` for a result that broke a rule). ``refusal``: the code the
    requester is told, or ``None``. ``code``: the call's code after the move (``None``
    for a completed or still open call). ``consent``: the decision to store
    (``allow``, ``deny``, ``automatic``, ``remembered``), ``None`` to keep the stored
    one. ``effects``: what the store carries out, in order.
    """

    to: State | None
    effective: Event
    refusal: ErrorCode | None = None
    code: str | None = None
    consent: str | None = None
    effects: tuple[Effect, ...] = ()

    @property
    def accepted(self) -> bool:
        return self.to is not None and self.refusal is None


def refusal_for(state: State) -> ErrorCode:
    """Why a move the table does not hold is refused: the call already ended, or it is
    in another step."""
    return ErrorCode.CALL_ALREADY_FINAL if state in FINAL else ErrorCode.CAPABILITY_CALL_BUSY


def _followed(
    to: State,
    from_app: bool,
    *,
    audit: Event,
    before: tuple[Effect, ...] = (),
    run: bool = False,
    new: bool = False,
) -> tuple[Effect, ...]:
    """The effects of an accepted move to ``to``: its audit row, then either the
    Runtime's own run (which decides the rest) or the agent's result once final,
    hosts and the app told, and the timer woken for a new open call."""
    effects: list[Effect] = [*before, Audit(AUDIT_ACTION[audit])]
    if run:
        effects.append(RunInRuntime())
        return tuple(effects)
    if to in FINAL and not from_app:
        effects.append(QueueResult())
    effects.append(Announce())
    if from_app:
        effects.append(TellApp())
    if new and to in OPEN:
        effects.append(WatchDeadline())
    return tuple(effects)


def _arrive(arrival: Arrival, now: datetime) -> Decision:
    a = arrival
    consent: str | None = None
    code: str | None = None
    if not a.declared:
        to, code = (
            State.UNSUPPORTED,
            ErrorCode.REVOKED if a.revoked else ErrorCode.CAPABILITY_NOT_DECLARED,
        )
    elif not a.listed:
        to, code = State.REJECTED, ErrorCode.CAPABILITY_DENIED
    elif not a.input_valid:
        to, code = State.REJECTED, ErrorCode.CAPABILITY_INPUT_INVALID
    elif a.expires_at <= now:
        to, code = State.EXPIRED, ErrorCode.EXPIRED
    elif a.risk == "display_only":
        to, consent = State.APPROVED, "automatic"
    elif a.risk == "user_confirmation" and a.remembered:
        to, consent = State.APPROVED, "remembered"
    else:
        to = State.AWAITING_CONSENT
    phrase: tuple[Effect, ...] = (MakePhrase(),) if a.declared and a.risk == "restricted" else ()
    run = to is State.APPROVED and a.runs_in_runtime
    effects = _followed(to, a.from_app, audit=Event.ARRIVE, before=phrase, run=run, new=True)
    return Decision(to, Event.ARRIVE, None, code, consent, effects)


def _consent_refusal(call: CallFacts, acknowledged: bool, confirmation: str | None) -> bool:
    """Whether an ``allow`` lacks the extra step its risk needs."""
    if call.risk == "system_permission":
        return not acknowledged
    if call.risk == "restricted":
        return not confirmation or confirmation.strip() != call.phrase
    return False


def _effective(
    call: CallFacts,
    event: Event,
    now: datetime,
    *,
    code: str | None,
    output_valid: bool,
    input_valid: bool,
    too_large: bool,
) -> tuple[Event, str | None]:
    """The event a rule turns ``event`` into, and the code it fixes."""
    if event in (Event.ALLOW, Event.DENY) and call.expires_at <= now:
        return Event.EXPIRE, ErrorCode.EXPIRED  # the deadline wins
    if event is Event.COMPLETE and not output_valid:
        return Event.FAIL, ErrorCode.CAPABILITY_OUTPUT_INVALID
    if event is Event.PICKED and too_large:
        return Event.FAIL, ErrorCode.ARTIFACT_TOO_LARGE
    if event is Event.RAN and not input_valid:
        return Event.RUN_FAILED, ErrorCode.CAPABILITY_INPUT_INVALID
    if event is Event.RAN and too_large:
        return Event.RUN_FAILED, ErrorCode.ARTIFACT_TOO_LARGE
    if event in (Event.FAIL, Event.RUN_FAILED):
        return event, code or ErrorCode.PROVIDER_FAILED
    return event, _CODE.get(event)


def decide(
    call: CallFacts | None,
    event: Event,
    *,
    now: datetime,
    arrival: Arrival | None = None,
    acknowledged: bool = False,
    confirmation: str | None = None,
    remember: bool = False,
    output_valid: bool = True,
    input_valid: bool = True,
    too_large: bool = False,
    code: str | None = None,
) -> Decision:
    """Decide ``event`` for ``call`` (``None``: no call with this key is stored).

    ``arrival``: the facts of a call that arrives (``Event.ARRIVE``). For ``allow``:
    ``acknowledged`` (the second step of a ``system_permission`` dialog),
    ``confirmation`` (the phrase typed for a ``restricted`` one), ``remember``. For
    ``complete``: ``output_valid`` (the result matched the output schema). For
    ``picked`` and ``ran``: ``too_large`` (the file is larger than an artifact may be);
    for ``ran``: ``input_valid`` (the body to save decoded). For ``fail`` and
    ``run_failed``: the provider's ``code``. Raises ``ValueError`` only for a misuse
    (an arrival without its facts).
    """
    if event is Event.ARRIVE:
        if call is not None:
            return Decision(None, event, effects=(NoteReplay(),))  # a replay: not a move
        if arrival is None:
            raise ValueError("`arrive` needs the arrival's facts")
        return _arrive(arrival, now)
    if call is None:
        return Decision(None, event, ErrorCode.CAPABILITY_CALL_NOT_FOUND)
    if (call.state, event) not in TRANSITIONS:
        return Decision(None, event, refusal_for(call.state))
    if event is Event.EXPIRE and now < call.expires_at:
        return Decision(None, event)  # a timer that fired early: not a move
    if event is Event.PICKED and not call.picks_file:
        return Decision(None, event, ErrorCode.CAPABILITY_CALL_BUSY)
    effective, fixed = _effective(
        call,
        event,
        now,
        code=code,
        output_valid=output_valid,
        input_valid=input_valid,
        too_large=too_large,
    )
    if effective is Event.ALLOW and _consent_refusal(call, acknowledged, confirmation):
        return Decision(None, event, ErrorCode.CONFIRMATION_REQUIRED)
    to = TRANSITIONS[call.state, effective]
    remembered = (
        (RememberConsent(),)
        if event is Event.ALLOW and remember and call.risk == "user_confirmation"
        else ()
    )
    before: tuple[Effect, ...] = (KeepArtifact(),) if effective in (Event.PICKED, Event.RAN) else ()
    run = effective is Event.ALLOW and call.runs_in_runtime
    effects = _followed(to, call.from_app, audit=effective, before=before, run=run)
    return Decision(to, effective, None, fixed, _CONSENT.get(effective), effects + remembered)


def due(call: CallFacts, now: datetime) -> Event | None:
    """What the timer applies to an open call at ``now``: ``expire`` to a waiting or
    approved one at or past ``expires_at``, ``interrupt`` to an executing one past its
    lease; ``None`` when neither is due."""
    if call.state in (State.AWAITING_CONSENT, State.APPROVED):
        return Event.EXPIRE if call.expires_at <= now else None
    if call.state is State.EXECUTING:
        held = (now - call.updated_at).total_seconds()
        return Event.INTERRUPT if held > EXECUTION_LEASE_S else None
    return None
