"""The pure rules of a capability call's life (``lineup.runtime.capabilities.calls``):
every row of the table and every pair it does not hold, the arrival rules, consent
per risk, the deadline, the output and file checks, the Runtime's own provider, the
effects each decision asks for, and the timer."""

from __future__ import annotations

import itertools
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.capabilities.calls import (
    AUDIT_ACTION,
    CODES,
    EXECUTION_LEASE_S,
    FINAL,
    INITIAL,
    OPEN,
    REFUSALS,
    TRANSITIONS,
    Announce,
    Arrival,
    Audit,
    CallFacts,
    Decision,
    Event,
    KeepArtifact,
    MakePhrase,
    NoteReplay,
    QueueResult,
    RememberConsent,
    RunInRuntime,
    State,
    TellApp,
    WatchDeadline,
    decide,
    due,
)

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
LATER = T0 + timedelta(minutes=5)

EVENT_CODE = "<the provider's code>"
"""Stands for the code a ``fail`` or ``run_failed`` brings."""

EXPECTED: dict[str, dict[str, tuple[str, str | None]]] = {
    "awaiting_consent": {
        "allow": ("approved", None),
        "deny": ("rejected", "capability_denied"),
        "expire": ("expired", "expired"),
        "cancel": ("cancelled", "cancelled"),
        "app_closed": ("cancelled", "app_closed"),
    },
    "approved": {
        "claim": ("executing", None),
        "ran": ("completed", None),
        "run_failed": ("failed", EVENT_CODE),
        "interrupt": ("failed", "interrupted"),
        "expire": ("expired", "expired"),
        "cancel": ("cancelled", "cancelled"),
        "app_closed": ("cancelled", "app_closed"),
    },
    "executing": {
        "complete": ("completed", None),
        "picked": ("completed", None),
        "fail": ("failed", EVENT_CODE),
        "interrupt": ("failed", "interrupted"),
    },
}
"""state -> event -> (new state, the call's code after it): written out here,
independently of ``TRANSITIONS``, so a changed table is noticed."""

AUDITED = {
    "allow": "capability.allow",
    "deny": "capability.deny",
    "claim": "capability.claim",
    "complete": "capability.complete",
    "picked": "capability.complete",
    "ran": "capability.complete",
    "fail": "capability.fail",
    "run_failed": "capability.fail",
    "expire": "capability.expire",
    "cancel": "capability.cancel",
    "app_closed": "capability.cancel",
    "interrupt": "capability.interrupt",
}
"""The audit action of each move, as the audit rows have always named them."""

PROVIDER_CODE = "clipboard_denied"
ROWS = sorted((str(s), str(e)) for s, e in TRANSITIONS)
OTHER_PAIRS = [
    (s, e)
    for s, e in itertools.product(State, Event)
    if e is not Event.ARRIVE and (s, e) not in TRANSITIONS
]


def facts(state: State | str, **changes: object) -> CallFacts:
    """A stored agent call waiting until ``LATER``, of a ``user_confirmation`` shell
    capability, claimed (or last moved) at ``T0``."""
    base = CallFacts(
        state=State(state),
        from_app=False,
        risk="user_confirmation",
        expires_at=LATER,
        updated_at=T0,
        picks_file=True,
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def arrival(**changes: object) -> Arrival:
    base = Arrival(from_app=False, expires_at=LATER, declared=True, risk="user_confirmation")
    return replace(base, **changes)  # type: ignore[arg-type]


def move(state: str, event: str, **given: object) -> Decision:
    """``event`` on a call in ``state``, at the time it applies (past ``expires_at``
    for ``expire``), with the provider's code for ``fail`` / ``run_failed``."""
    now = LATER if event == "expire" else T0
    if event in ("fail", "run_failed"):
        given.setdefault("code", PROVIDER_CODE)
    return decide(facts(state), Event(event), now=now, **given)  # type: ignore[arg-type]


# --- the table ----------------------------------------------------------------------------


def test_the_table_is_the_expected_one() -> None:
    table = {(str(s), str(e)): str(to) for (s, e), to in TRANSITIONS.items()}
    expected = {(s, e): to for s, moves in EXPECTED.items() for e, (to, _) in moves.items()}
    assert table == expected
    assert {str(e): a for e, a in AUDIT_ACTION.items() if e is not Event.ARRIVE} == AUDITED
    assert AUDIT_ACTION[Event.ARRIVE] == "capability.call"


def test_open_final_and_initial_states() -> None:
    assert {"awaiting_consent", "approved", "executing"} == OPEN
    assert set(State) - OPEN == FINAL
    assert {"unsupported", "rejected", "expired", "awaiting_consent", "approved"} == INITIAL
    assert not {s for s, _ in TRANSITIONS} & FINAL  # a final call never moves


@pytest.mark.parametrize(("state", "event"), ROWS)
def test_every_move_of_the_table(state: str, event: str) -> None:
    to, code = EXPECTED[state][event]
    decision = move(state, event)
    assert decision.accepted
    assert (decision.to, decision.effective, decision.refusal) == (State(to), Event(event), None)
    assert decision.code == (PROVIDER_CODE if code == EVENT_CODE else code)
    assert decision.effects[0 if event not in ("picked", "ran") else 1] == Audit(AUDITED[event])
    # The agent hears the end of its call once, in the move that ends it.
    assert (QueueResult() in decision.effects) is (State(to) in FINAL)
    assert Announce() in decision.effects
    assert TellApp() not in decision.effects  # an agent's call
    assert WatchDeadline() not in decision.effects  # only a new call wakes the timer


@pytest.mark.parametrize(("state", "event"), ROWS)
def test_an_app_s_call_tells_its_instance_and_queues_nothing(state: str, event: str) -> None:
    now = LATER if event == "expire" else T0
    code = PROVIDER_CODE if event in ("fail", "run_failed") else None
    decision = decide(facts(state, from_app=True), Event(event), now=now, code=code)
    assert decision.accepted
    assert TellApp() in decision.effects
    assert QueueResult() not in decision.effects


@pytest.mark.parametrize(("state", "event"), OTHER_PAIRS, ids=str)
def test_every_pair_not_in_the_table_is_refused(state: State, event: Event) -> None:
    decision = move(state, event)
    expected = "call_already_final" if state in FINAL else "capability_call_busy"
    assert decision == Decision(None, event, ErrorCode(expected))


@pytest.mark.parametrize("event", [e for e in Event if e is not Event.ARRIVE], ids=str)
def test_no_call_is_not_found(event: Event) -> None:
    decision = decide(None, event, now=T0)
    assert decision == Decision(None, event, ErrorCode.CAPABILITY_CALL_NOT_FOUND)
    assert ErrorCode.CAPABILITY_CALL_NOT_FOUND == "capability_call_not_found"


@pytest.mark.parametrize("state", list(State), ids=str)
def test_a_call_id_seen_before_is_a_replay(state: State) -> None:
    decision = decide(facts(state), Event.ARRIVE, now=T0, arrival=arrival())
    assert decision == Decision(None, Event.ARRIVE, effects=(NoteReplay(),))  # not a move


def test_an_arrival_needs_its_facts() -> None:
    with pytest.raises(ValueError, match="arrival"):
        decide(None, Event.ARRIVE, now=T0)


# --- arrival ------------------------------------------------------------------------------

ARRIVALS: list[tuple[str, dict[str, object], str, str | None, str | None]] = [
    (
        "not declared",
        {"declared": False, "risk": None},
        "unsupported",
        "capability_not_declared",
        None,
    ),
    ("revoked", {"declared": False, "revoked": True, "risk": None}, "unsupported", "revoked", None),
    ("not in the manifest", {"listed": False}, "rejected", "capability_denied", None),
    ("bad arguments", {"input_valid": False}, "rejected", "capability_input_invalid", None),
    ("already expired", {"expires_at": T0}, "expired", "expired", None),
    ("display only", {"risk": "display_only"}, "approved", None, "automatic"),
    ("remembered", {"remembered": True}, "approved", None, "remembered"),
    ("asks", {}, "awaiting_consent", None, None),
    (
        "system permission",
        {"risk": "system_permission", "remembered": True},
        "awaiting_consent",
        None,
        None,
    ),
    ("restricted", {"risk": "restricted", "remembered": True}, "awaiting_consent", None, None),
    # The first rule that applies wins.
    (
        "undeclared and bad",
        {"declared": False, "input_valid": False},
        "unsupported",
        "capability_not_declared",
        None,
    ),
    (
        "unlisted and bad",
        {"listed": False, "input_valid": False},
        "rejected",
        "capability_denied",
        None,
    ),
    (
        "bad and expired",
        {"input_valid": False, "expires_at": T0},
        "rejected",
        "capability_input_invalid",
        None,
    ),
    ("expired display", {"risk": "display_only", "expires_at": T0}, "expired", "expired", None),
]


@pytest.mark.parametrize(
    ("facts_", "state", "code", "consent"),
    [case[1:] for case in ARRIVALS],
    ids=[case[0] for case in ARRIVALS],
)
def test_the_arrival_rules(
    facts_: dict[str, object], state: str, code: str | None, consent: str | None
) -> None:
    decision = decide(None, Event.ARRIVE, now=T0, arrival=arrival(**facts_))
    assert decision.accepted
    assert (decision.to, decision.code, decision.consent) == (State(state), code, consent)
    assert decision.to in INITIAL
    assert Audit("capability.call") in decision.effects
    assert (QueueResult() in decision.effects) is (decision.to in FINAL)
    assert (WatchDeadline() in decision.effects) is (decision.to in OPEN)


def test_an_app_s_arrival_tells_it_and_queues_nothing() -> None:
    for facts_ in ({}, {"listed": False}):
        decision = decide(None, Event.ARRIVE, now=T0, arrival=arrival(from_app=True, **facts_))
        assert TellApp() in decision.effects
        assert QueueResult() not in decision.effects


def test_a_restricted_arrival_draws_its_phrase_first() -> None:
    for facts_ in ({}, {"input_valid": False}, {"expires_at": T0}):
        decision = decide(None, Event.ARRIVE, now=T0, arrival=arrival(risk="restricted", **facts_))
        assert decision.effects[0] == MakePhrase()
    plain = decide(None, Event.ARRIVE, now=T0, arrival=arrival())
    assert MakePhrase() not in plain.effects


def test_a_call_approved_on_arrival_that_runs_in_the_runtime_runs_at_once() -> None:
    decision = decide(
        None, Event.ARRIVE, now=T0, arrival=arrival(remembered=True, runs_in_runtime=True)
    )
    assert decision.to is State.APPROVED
    # The run decides the rest: nothing is announced, queued or timed for this step.
    assert decision.effects == (Audit("capability.call"), RunInRuntime())
    waiting = decide(None, Event.ARRIVE, now=T0, arrival=arrival(runs_in_runtime=True))
    assert RunInRuntime() not in waiting.effects


# --- consent ------------------------------------------------------------------------------


@pytest.mark.parametrize("event", [Event.ALLOW, Event.DENY], ids=str)
def test_the_deadline_wins_over_consent(event: Event) -> None:
    for now in (LATER, LATER + timedelta(hours=1)):
        decision = decide(facts(State.AWAITING_CONSENT), event, now=now)
        assert (decision.to, decision.effective, decision.refusal) == (
            State.EXPIRED,
            Event.EXPIRE,
            None,
        )
        assert (decision.code, decision.consent) == ("expired", None)
        assert Audit("capability.expire") in decision.effects
    early = decide(facts(State.AWAITING_CONSENT), event, now=LATER - timedelta(milliseconds=1))
    assert early.effective is event


def test_a_system_permission_needs_its_second_step() -> None:
    call = facts(State.AWAITING_CONSENT, risk="system_permission")
    refused = decide(call, Event.ALLOW, now=T0)
    assert refused == Decision(None, Event.ALLOW, ErrorCode.CONFIRMATION_REQUIRED)
    assert ErrorCode.CONFIRMATION_REQUIRED == "confirmation_required"
    assert decide(call, Event.ALLOW, now=T0, acknowledged=True).to is State.APPROVED
    assert decide(call, Event.DENY, now=T0).to is State.REJECTED  # no step to say no


def test_a_restricted_call_needs_the_typed_phrase() -> None:
    call = facts(State.AWAITING_CONSENT, risk="restricted", phrase="amber-123")
    for typed in (None, "", "wrong", "amber-1234", "AMBER-123"):
        refused = decide(call, Event.ALLOW, now=T0, confirmation=typed, acknowledged=True)
        assert refused.refusal is ErrorCode.CONFIRMATION_REQUIRED, typed
    for typed in ("amber-123", "  amber-123\n"):
        assert decide(call, Event.ALLOW, now=T0, confirmation=typed).to is State.APPROVED


@pytest.mark.parametrize(
    "risk", ["user_confirmation", "system_permission", "restricted", "display_only"]
)
def test_remember_is_honoured_for_user_confirmation_only(risk: str) -> None:
    call = facts(State.AWAITING_CONSENT, risk=risk, phrase="amber-123")
    decision = decide(
        call, Event.ALLOW, now=T0, remember=True, acknowledged=True, confirmation="amber-123"
    )
    assert decision.to is State.APPROVED
    assert (RememberConsent() in decision.effects) is (risk == "user_confirmation")
    denied = decide(call, Event.DENY, now=T0, remember=True)
    assert RememberConsent() not in denied.effects
    unasked = decide(call, Event.ALLOW, now=T0, acknowledged=True, confirmation="amber-123")
    assert RememberConsent() not in unasked.effects


def test_an_allow_that_came_too_late_still_remembers() -> None:
    """The person said yes to this requester: the session remembers it, even if this
    one call had run out meanwhile."""
    decision = decide(facts(State.AWAITING_CONSENT), Event.ALLOW, now=LATER, remember=True)
    assert decision.to is State.EXPIRED
    assert RememberConsent() in decision.effects


def test_an_allowed_call_that_runs_in_the_runtime_runs_in_the_decision() -> None:
    call = facts(State.AWAITING_CONSENT, runs_in_runtime=True)
    decision = decide(call, Event.ALLOW, now=T0)
    assert (decision.to, decision.consent) == (State.APPROVED, "allow")
    assert decision.effects == (Audit("capability.allow"), RunInRuntime())


# --- running ------------------------------------------------------------------------------


def test_results_that_break_a_rule_fail_the_call() -> None:
    cases = [
        (
            State.EXECUTING,
            Event.COMPLETE,
            {"output_valid": False},
            Event.FAIL,
            "capability_output_invalid",
        ),
        (State.EXECUTING, Event.PICKED, {"too_large": True}, Event.FAIL, "artifact_too_large"),
        (
            State.APPROVED,
            Event.RAN,
            {"input_valid": False},
            Event.RUN_FAILED,
            "capability_input_invalid",
        ),
        (State.APPROVED, Event.RAN, {"too_large": True}, Event.RUN_FAILED, "artifact_too_large"),
        (
            State.APPROVED,
            Event.RAN,
            {"input_valid": False, "too_large": True},
            Event.RUN_FAILED,
            "capability_input_invalid",
        ),
        (State.EXECUTING, Event.FAIL, {}, Event.FAIL, "provider_failed"),
        (State.EXECUTING, Event.FAIL, {"code": ""}, Event.FAIL, "provider_failed"),
        (State.APPROVED, Event.RUN_FAILED, {}, Event.RUN_FAILED, "provider_failed"),
    ]
    for state, event, given, effective, code in cases:
        decision = decide(facts(state), event, now=T0, **given)  # type: ignore[arg-type]
        assert (decision.to, decision.effective, decision.code) == (State.FAILED, effective, code)
        assert KeepArtifact() not in decision.effects
        assert Audit("capability.fail") in decision.effects


def test_a_kept_file_is_the_first_effect_of_its_completion() -> None:
    for state, event in ((State.EXECUTING, Event.PICKED), (State.APPROVED, Event.RAN)):
        decision = decide(facts(state), event, now=T0)
        assert decision.effects[:2] == (KeepArtifact(), Audit("capability.complete"))
    assert KeepArtifact() not in decide(facts(State.EXECUTING), Event.COMPLETE, now=T0).effects


def test_only_a_file_picking_call_takes_a_picked_file() -> None:
    decision = decide(facts(State.EXECUTING, picks_file=False), Event.PICKED, now=T0)
    assert decision == Decision(None, Event.PICKED, ErrorCode.CAPABILITY_CALL_BUSY)


def test_an_early_expiry_is_not_a_move() -> None:
    for state in (State.AWAITING_CONSENT, State.APPROVED):
        decision = decide(facts(state), Event.EXPIRE, now=LATER - timedelta(milliseconds=1))
        assert decision == Decision(None, Event.EXPIRE)
        assert not decision.accepted


def test_a_claim_is_not_bounded_by_expires_at() -> None:
    assert decide(facts(State.APPROVED), Event.CLAIM, now=LATER).to is State.EXECUTING


# --- the timer ----------------------------------------------------------------------------


def test_the_timer_expires_waiting_and_approved_calls_and_ends_leases() -> None:
    lease = timedelta(seconds=EXECUTION_LEASE_S)
    for state in (State.AWAITING_CONSENT, State.APPROVED):
        assert due(facts(state), LATER - timedelta(milliseconds=1)) is None
        assert due(facts(state), LATER) is Event.EXPIRE
    executing = facts(State.EXECUTING, expires_at=T0)  # past expires_at: the lease rules
    assert due(executing, T0 + lease) is None
    assert due(executing, T0 + lease + timedelta(milliseconds=1)) is Event.INTERRUPT
    for state in FINAL:
        assert due(facts(state, expires_at=T0), LATER + lease * 2) is None


def test_codes_keep_their_names() -> None:
    assert {str(c) for c in CODES} == {
        "capability_not_declared",
        "revoked",
        "capability_denied",
        "capability_input_invalid",
        "expired",
        "cancelled",
        "app_closed",
        "interrupted",
        "capability_output_invalid",
        "provider_failed",
        "artifact_too_large",
    }
    assert {str(r) for r in REFUSALS} == {
        "capability_call_not_found",
        "capability_call_busy",
        "call_already_final",
        "confirmation_required",
    }
