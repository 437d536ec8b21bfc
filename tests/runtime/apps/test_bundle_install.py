"""The pure rules of a signed bundle install (``lineup.runtime.apps.bundle_install``):
every row of the table and every pair it does not hold, how an ``error`` is applied
(refused or failed, by its code), and what each stop is followed by (audit, cache
sweep, nothing)."""

from __future__ import annotations

import itertools

import pytest

from lineup.delivery.errors import DeliveryErrorCode
from lineup.runtime.apps.bundle_install import (
    FINAL,
    IO_CODES,
    LOCKED,
    OPEN,
    STEP,
    TRANSITIONS,
    AuditRefusal,
    Decision,
    Event,
    LogInstalled,
    Refusal,
    State,
    Step,
    SweepCache,
    decide,
)

CHAIN = ("requested", "found", "checked", "fetched", "verified", "cached", "recorded")
"""An install from the catalog that goes well, step by step."""

EXPECTED: dict[str, dict[str, str]] = {
    "requested": {"ok": "found", "missing": "refreshing"},
    "refreshing": {"ok": "found", "missing": "refused"},
    "found": {"ok": "checked"},
    "checked": {"ok": "fetched"},
    "fetched": {"ok": "verified"},
    "verified": {"ok": "cached"},
    "cached": {"ok": "recorded"},
}
"""state -> event -> new state, besides ``refused`` and ``failed``, which every open
state takes: written out here, independently of ``TRANSITIONS``."""

STEPS = {
    "requested": "look_up",
    "refreshing": "refresh",
    "found": "check",
    "checked": "fetch",
    "verified": "cache",
    "fetched": "verify",
    "cached": "record",
}
CHECK_CODE = "signature_invalid"
IO_CODE = "catalog_unavailable"
ROWS = sorted((str(s), str(e)) for s, e in TRANSITIONS)
OTHER_PAIRS = [
    (s, e)
    for s, e in itertools.product(State, Event)
    if e is not Event.ERROR and (s, e) not in TRANSITIONS
]


def code_for(event: str) -> str | None:
    return {"refused": CHECK_CODE, "failed": IO_CODE, "error": CHECK_CODE}.get(event)


def test_the_table_is_the_expected_one() -> None:
    table = {(str(s), str(e)): str(to) for (s, e), to in TRANSITIONS.items()}
    expected = {(s, e): to for s, moves in EXPECTED.items() for e, to in moves.items()}
    for state in EXPECTED:
        expected[state, "refused"] = "refused"
        expected[state, "failed"] = "failed"
    assert table == expected
    assert {str(s): str(step) for s, step in STEP.items()} == STEPS
    assert set(STEP) == OPEN
    assert {"recorded", "refused", "failed"} == FINAL
    assert {"found", "checked", "fetched", "verified", "cached"} == LOCKED
    assert {"catalog_unavailable", "cache_unavailable"} == IO_CODES


def test_a_good_install_goes_through_every_step_in_order() -> None:
    state = State.REQUESTED
    path = [str(state)]
    while state not in FINAL:
        decision = decide(state, Event.OK)
        assert decision.to is not None
        state = decision.to
        path.append(str(state))
    assert tuple(path) == CHAIN
    assert decide(State.CACHED, Event.OK).effects == (LogInstalled(),)


@pytest.mark.parametrize(("state", "event"), ROWS)
def test_every_move_of_the_table(state: str, event: str) -> None:
    decision = decide(State(state), Event(event), code=code_for(event))
    to = EXPECTED[state].get(event, event)
    assert (decision.to, decision.effective, decision.refusal) == (State(to), Event(event), None)
    if to in ("refused", "failed"):
        expected_code = code_for(event) or DeliveryErrorCode.NOT_IN_CATALOG
        assert decision.code == expected_code
    else:
        assert decision.code is None


@pytest.mark.parametrize(("state", "event"), OTHER_PAIRS, ids=str)
def test_every_pair_not_in_the_table_is_refused(state: State, event: Event) -> None:
    decision = decide(state, event, code=code_for(event))
    expected = "install_ended" if state in FINAL else "install_step_unexpected"
    assert decision == Decision(None, event, Refusal(expected))


@pytest.mark.parametrize("state", sorted(FINAL), ids=str)
def test_an_ended_install_takes_no_error_either(state: State) -> None:
    decision = decide(state, Event.ERROR, code=IO_CODE)
    assert (decision.to, decision.refusal) == (None, Refusal.ENDED)


@pytest.mark.parametrize("state", sorted(OPEN), ids=str)
@pytest.mark.parametrize(
    "code", ["catalog_unavailable", "cache_unavailable", "digest_mismatch", "app_not_found"]
)
def test_an_error_is_a_failure_for_io_codes_and_a_refusal_otherwise(
    state: State, code: str
) -> None:
    decision = decide(state, Event.ERROR, code=code)
    io = code in ("catalog_unavailable", "cache_unavailable")
    assert decision.to is (State.FAILED if io else State.REFUSED)
    assert decision.effective is (Event.FAILED if io else Event.REFUSED)
    assert decision.code == code


@pytest.mark.parametrize("state", sorted(OPEN), ids=str)
def test_what_follows_a_stop(state: State) -> None:
    """Under the lock: audited and the cache swept. Before it (the lookup): nothing,
    except a release the catalog does not list even fetched again, which is audited."""
    decision = decide(state, Event.ERROR, code=CHECK_CODE)
    if state in LOCKED:
        assert decision.effects == (AuditRefusal(), SweepCache())
    else:
        assert decision.effects == ()
    unlisted = decide(State.REFRESHING, Event.MISSING)
    assert (unlisted.to, unlisted.code) == (State.REFUSED, "not_in_catalog")
    assert unlisted.effects == (AuditRefusal(),)
    assert decide(State.REQUESTED, Event.MISSING).effects == ()  # look once more first


@pytest.mark.parametrize("state", sorted(OPEN - {State.CACHED}), ids=str)
def test_a_step_that_goes_well_is_followed_by_nothing(state: State) -> None:
    assert decide(state, Event.OK).effects == ()


def test_codes_go_with_stops_only() -> None:
    for event in (Event.ERROR, Event.REFUSED, Event.FAILED):
        with pytest.raises(ValueError, match="code"):
            decide(State.FOUND, event)
        with pytest.raises(ValueError, match="code"):
            decide(State.FOUND, event, code="")
    for event in (Event.OK, Event.MISSING):
        with pytest.raises(ValueError, match="no code"):
            decide(State.REQUESTED, event, code=CHECK_CODE)


def test_steps_keep_their_names() -> None:
    assert {str(s) for s in Step} == set(STEPS.values())
