"""Hypothesis drives capability calls twice: through the pure rules
(``lineup.runtime.capabilities.calls``) against a model written from the expected
table of test_calls.py, and through a real on-disk store behind the gateway.

The rules: calls of every risk arrive (declared or not, listed or not, valid or not,
expired or not, remembered or not, from agents and apps), and every event reaches
them in and out of turn, with consent steps, provider results and files good and
bad, the timer, the clock and restarts. The Runtime's part is played here: each
decision's effects are counted and the Runtime's own provider is run when asked.

The store: agents' ``app.call`` and apps' requests (and their replays), the person's
decisions, claims, results, picked files, cancels, app closes, revocations, the timer,
the clock and restarts, on ``CapabilityGateway`` over a ``RuntimeStore``.

After every step, both ways: an agent's call has exactly one ``app.result`` once it
is final and none before, an app's call none; a final call never changes again; a
call is claimed and its provider run at most once; an approved or executing call a
restart found is ``failed(interrupted)`` and stays so; every refusal has one of the
rules' codes.
"""

from __future__ import annotations

import itertools
import sqlite3
from collections import Counter
from collections.abc import Coroutine
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import Any

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

from lineup.runtime.capabilities.calls import (
    EXECUTION_LEASE_S,
    Arrival,
    CallFacts,
    Decision,
    Event,
    QueueResult,
    RunInRuntime,
    State,
    decide,
    due,
)
from lineup.runtime.capabilities.calls import (
    REFUSALS as CALL_REFUSALS,
)
from lineup.runtime.capabilities.gateway import CallKey, CapabilityRefused
from tests.runtime.apps.test_router import C1
from tests.runtime.capabilities.test_calls import EVENT_CODE, EXPECTED
from tests.runtime.capabilities.test_gateway import ALL, Harness
from tests.support.app_kernel import queued
from tests.support.interactions import T0
from tests.support.store_machine import StoreMachine

FINAL = {"completed", "rejected", "cancelled", "expired", "unsupported", "failed"}
OPEN = {"awaiting_consent", "approved", "executing"}
REFUSALS = {str(r) for r in CALL_REFUSALS}
RISKS = ("display_only", "user_confirmation", "system_permission", "restricted")
PHRASE = "amber-123"
EXPIRES_S = (-1, 5, 60, 600)
ARRIVAL_EXPIRES_S = (-1, 5, 60, 60, 600, 600, 3600)
NATURAL = {
    State.AWAITING_CONSENT: (Event.ALLOW, Event.DENY),
    State.APPROVED: (Event.CLAIM,),
    State.EXECUTING: (Event.COMPLETE, Event.PICKED, Event.FAIL),
}
"""The next step of a call on its usual way, by state."""
STEPS_S = (1, 4, 5, 30, 60, 121, 600)
MAX_CALLS = 10
EVENTS = [e for e in Event if e is not Event.ARRIVE]


# --- the pure rules -----------------------------------------------------------------------


def expected_arrival(a: Arrival, now: datetime) -> tuple[str, str | None]:
    """(state, code) a call arrives in, independently of the code under test."""
    if not a.declared:
        return "unsupported", "revoked" if a.revoked else "capability_not_declared"
    if not a.listed:
        return "rejected", "capability_denied"
    if not a.input_valid:
        return "rejected", "capability_input_invalid"
    if a.expires_at <= now:
        return "expired", "expired"
    if a.risk == "display_only" or (a.risk == "user_confirmation" and a.remembered):
        return "approved", None
    return "awaiting_consent", None


@dataclass(frozen=True)
class Given:
    """The facts an event comes with."""

    acknowledged: bool = False
    confirmation: str | None = None
    remember: bool = False
    output_valid: bool = True
    input_valid: bool = True
    too_large: bool = False
    code: str | None = None


def expected_move(
    call: CallFacts, ev: str, now: datetime, g: Given
) -> tuple[str | None, str | None, str | None]:
    """(new state or None, refusal or None, code) for ``ev`` on ``call``."""
    state = str(call.state)
    row = EXPECTED.get(state, {}).get(ev)
    if row is None:
        return None, "call_already_final" if state in FINAL else "capability_call_busy", None
    if ev == "expire" and now < call.expires_at:
        return None, None, None
    if ev == "picked" and not call.picks_file:
        return None, "capability_call_busy", None
    if ev in ("allow", "deny") and now >= call.expires_at:
        return "expired", None, "expired"
    if ev == "allow":
        if call.risk == "system_permission" and not g.acknowledged:
            return None, "confirmation_required", None
        typed = (g.confirmation or "").strip()
        if call.risk == "restricted" and (not g.confirmation or typed != call.phrase):
            return None, "confirmation_required", None
    if ev == "complete" and not g.output_valid:
        return "failed", None, "capability_output_invalid"
    if ev == "ran" and not g.input_valid:
        return "failed", None, "capability_input_invalid"
    if ev in ("picked", "ran") and g.too_large:
        return "failed", None, "artifact_too_large"
    to, code = row
    return to, None, (g.code or "provider_failed") if code == EVENT_CODE else code


@dataclass
class Modelled:
    facts: CallFacts
    results: int = 0
    claims: int = 0
    runs: int = 0
    interrupted: bool = False
    frozen: tuple[str, str | None] | None = None
    code: str | None = None


given_facts = st.builds(
    Given,
    acknowledged=st.booleans(),
    confirmation=st.sampled_from([None, "", PHRASE, f" {PHRASE} ", "wrong"]),
    remember=st.booleans(),
    output_valid=st.sampled_from([True, True, False]),
    input_valid=st.sampled_from([True, True, False]),
    too_large=st.sampled_from([False, False, True]),
    code=st.sampled_from([None, "clipboard_denied"]),
)


class CallRulesMachine(RuleBasedStateMachine):
    calls = Bundle("calls")

    def __init__(self) -> None:
        super().__init__()
        self.now = T0
        self.model: dict[str, Modelled] = {}
        self.names = itertools.count(1)

    def apply(self, name: str, decision: Decision, given: Given) -> None:
        """Carry out ``decision`` as the store does (the Runtime's run included)."""
        call = self.model[name]
        if decision.to is None:
            return
        before = str(call.facts.state)
        call.facts = replace(call.facts, state=decision.to, updated_at=self.now)
        call.code = decision.code
        event(f"{before} -> {decision.to}")
        for effect in decision.effects:
            if isinstance(effect, QueueResult):
                call.results += 1
            elif isinstance(effect, RunInRuntime):
                ran = decide(
                    call.facts,
                    Event.RAN,
                    now=self.now,
                    input_valid=given.input_valid,
                    too_large=given.too_large,
                )
                assert ran.to in (State.COMPLETED, State.FAILED)
                call.runs += 1
                self.apply(name, ran, given)
        if decision.effective is Event.CLAIM:
            call.claims += 1

    @precondition(lambda self: len(self.model) < MAX_CALLS)
    @rule(
        target=calls,
        from_app=st.booleans(),
        risk=st.sampled_from(RISKS),
        declared=st.sampled_from([True] * 9 + [False]),
        revoked=st.booleans(),
        listed=st.sampled_from([True] * 9 + [False]),
        input_valid=st.sampled_from([True] * 9 + [False]),
        remembered=st.booleans(),
        runs_in_runtime=st.sampled_from([False, False, True]),
        expires_s=st.sampled_from(ARRIVAL_EXPIRES_S),
        given=given_facts,
    )
    def arrive(
        self,
        from_app: bool,
        risk: str,
        declared: bool,
        revoked: bool,
        listed: bool,
        input_valid: bool,
        remembered: bool,
        runs_in_runtime: bool,
        expires_s: int,
        given: Given,
    ) -> str:
        name = f"call-{next(self.names)}"
        arrival = Arrival(
            from_app=from_app,
            expires_at=self.now + timedelta(seconds=expires_s),
            declared=declared,
            revoked=revoked and not declared,
            risk=risk if declared else None,
            listed=listed or not from_app,
            input_valid=input_valid,
            remembered=remembered,
            runs_in_runtime=runs_in_runtime,
        )
        decision = decide(None, Event.ARRIVE, now=self.now, arrival=arrival)
        state, code = expected_arrival(arrival, self.now)
        assert (str(decision.to), decision.code) == (state, code)
        facts = CallFacts(
            state=State(state),
            from_app=from_app,
            risk=risk if declared else "unknown",
            expires_at=arrival.expires_at,
            updated_at=self.now,
            phrase=PHRASE if declared and risk == "restricted" else None,
            runs_in_runtime=runs_in_runtime,
            picks_file=risk == "system_permission",
        )
        self.model[name] = Modelled(facts)
        self.apply(name, replace(decision, to=State(state)), given)
        replay = decide(self.model[name].facts, Event.ARRIVE, now=self.now, arrival=arrival)
        assert replay.refusal is None and not replay.accepted
        return name

    @rule(
        name=calls, ev=st.sampled_from([e for e in Event if e is not Event.ARRIVE]), g=given_facts
    )
    def act(self, name: str, ev: Event, g: Given) -> None:
        if name not in self.model:
            return
        call = self.model[name]
        to, refusal, code = expected_move(call.facts, str(ev), self.now, g)
        decision = decide(
            call.facts,
            ev,
            now=self.now,
            acknowledged=g.acknowledged,
            confirmation=g.confirmation,
            remember=g.remember,
            output_valid=g.output_valid,
            input_valid=g.input_valid,
            too_large=g.too_large,
            code=g.code,
        )
        assert (None if decision.to is None else str(decision.to), decision.refusal) == (
            to,
            refusal,
        ), (call, ev, g, decision)
        if to is not None:
            assert decision.code == code
        self.apply(name, decision, g)

    @precondition(lambda self: any(c.facts.state in NATURAL for c in self.model.values()))
    @rule(data=st.data(), pick=st.integers(0, 2), g=given_facts)
    def move_along(self, data: st.DataObject, pick: int, g: Given) -> None:
        """The natural next step of an open call (with the consent steps its risk
        needs, most of the time), so that many calls get far."""
        moving = sorted(n for n, c in self.model.items() if c.facts.state in NATURAL)
        name = data.draw(st.sampled_from(moving))
        options = NATURAL[self.model[name].facts.state]
        steps = replace(g, acknowledged=True, confirmation=PHRASE) if pick else g
        self.act(name, options[pick % len(options)], steps)

    @rule()
    def timer(self) -> None:
        for name, call in self.model.items():
            ev = due(call.facts, self.now)
            state = str(call.facts.state)
            held = (self.now - call.facts.updated_at).total_seconds()
            if state in ("awaiting_consent", "approved") and call.facts.expires_at <= self.now:
                assert ev is Event.EXPIRE
            elif state == "executing" and held > EXECUTION_LEASE_S:
                assert ev is Event.INTERRUPT
            else:
                assert ev is None
            if ev is not None:
                self.apply(name, decide(call.facts, ev, now=self.now), Given())

    @rule()
    def restart(self) -> None:
        for name, call in self.model.items():
            decision = decide(call.facts, Event.INTERRUPT, now=self.now)
            was = str(call.facts.state)
            assert decision.accepted is (was in ("approved", "executing"))
            if decision.accepted:
                call.interrupted = True
                self.apply(name, decision, Given())

    @rule(seconds=st.sampled_from(STEPS_S))
    def advance(self, seconds: int) -> None:
        self.now += timedelta(seconds=seconds)

    @invariant()
    def one_result_per_agent_call_once_final(self) -> None:
        for call in self.model.values():
            final = str(call.facts.state) in FINAL
            assert call.results == (0 if call.facts.from_app or not final else 1), call

    @invariant()
    def final_calls_never_move(self) -> None:
        for call in self.model.values():
            if str(call.facts.state) in FINAL:
                snapshot = (str(call.facts.state), call.code)
                call.frozen = call.frozen or snapshot
                assert call.frozen == snapshot

    @invariant()
    def at_most_once(self) -> None:
        for call in self.model.values():
            assert call.claims <= 1
            assert call.runs <= 1
            assert call.claims + call.runs <= 1  # a call runs in a tab or in the Runtime
            if call.interrupted:
                assert (call.facts.state, call.code) == (State.FAILED, "interrupted")


CallRulesMachine.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestCallRules = CallRulesMachine.TestCase


# --- the store, through the gateway -------------------------------------------------------

"""One fresh directory per example, on tmpfs when there is one (see
tests/runtime/test_interaction_machine.py)."""

ARGUMENTS: dict[str, dict[str, Any]] = {
    "app.open_url": {"url": "https://example.com/"},
    "clipboard.write": {"text": "x"},
    "device.pick_file": {},
    "artifact.save": {"name": "a.txt", "media_type": "text/plain", "text": "x"},
    "notification.show": {"title": "t"},
    "camera.take_photo": {},
}
RESULTS: dict[str, dict[str, Any]] = {
    "app.open_url": {"opened": True},
    "clipboard.write": {"written": True},
    "notification.show": {"shown": True},
}
CAPABILITIES = sorted(ARGUMENTS) + [c for c in sorted(ARGUMENTS) if c != "camera.take_photo"] * 2
"""What is asked for: mostly what the host declares."""
CALL_EXPIRES_S = (5, 60, 600, 600, 3600, 3600)
INSTANCES = ("notes.abc", "notes.def")
STATUS = {s: s for s in FINAL}


@dataclass
class Asked:
    key: CallKey
    capability: str
    instance: str | None = None
    claims: int = 0


class GatewayMachine(StoreMachine):
    calls = Bundle("calls")

    def __init__(self) -> None:
        super().__init__("lineup-capabilities-")
        self.h = Harness(self.dir / "runtime.sqlite3")
        self.asked: dict[str, Asked] = {}
        self.frozen: dict[str, tuple[Any, ...]] = {}
        self.interrupted: set[str] = set()
        self.names = itertools.count(1)
        self.run(self.h.open())
        self.run(self.h.setup(C1))
        self.run(self.h.start())
        self.run(self.h.g.provide(ALL))

    def attempt(self, coro: Coroutine[Any, Any, Any]) -> Any:
        try:
            return self.run(coro)
        except CapabilityRefused as refused:
            code = refused.code
        assert code in REFUSALS, code
        event(f"refused {code}")
        return None

    # --- rules -------------------------------------------------------------------------

    @precondition(lambda self: len(self.asked) < MAX_CALLS)
    @rule(
        target=calls,
        capability=st.sampled_from(CAPABILITIES),
        flaw=st.sampled_from([None] * 10 + ["bad_args", "expired"]),
        expires_s=st.sampled_from(CALL_EXPIRES_S),
    )
    def agent_call(self, capability: str, flaw: str | None, expires_s: int) -> str:
        call_id = f"c{next(self.names)}"
        arguments = {"nonsense": 1} if flaw == "bad_args" else ARGUMENTS[capability]
        expires = timedelta(seconds=-1 if flaw == "expired" else expires_s)
        key = self.run(self.h.call(call_id, capability, arguments, expires_in=expires))
        self.asked[call_id] = Asked(key, capability)
        return call_id

    @precondition(lambda self: len(self.asked) < MAX_CALLS)
    @rule(
        target=calls,
        capability=st.sampled_from(CAPABILITIES),
        instance=st.sampled_from(INSTANCES),
        listed=st.sampled_from([True] * 5 + [False]),
        expires_s=st.sampled_from(CALL_EXPIRES_S),
    )
    def app_call(self, capability: str, instance: str, listed: bool, expires_s: int) -> str:
        call_id = f"a{next(self.names)}"
        key = CallKey(C1.id, call_id, "app")
        asked = Asked(key, capability, instance)
        self.asked[call_id] = asked
        self.app_request(asked, listed, expires_s)
        return call_id

    def app_request(self, asked: Asked, listed: bool, expires_s: int) -> None:
        assert asked.instance is not None
        permissions = [asked.capability] if listed else ["notification.show"]
        expires_at = self.h.clock() + timedelta(seconds=expires_s)
        self.run(
            self.h.g.request_from_app(
                asked.key,
                asked.instance,
                permissions,
                asked.capability,
                ARGUMENTS[asked.capability],
                "why",
                expires_at,
            )
        )

    @rule(call_id=calls)
    def replay(self, call_id: str) -> None:
        """The same call id again: nothing changes (the invariants check it)."""
        asked = self.asked[call_id]
        if asked.instance is None:
            self.run(self.h.call(call_id, asked.capability, ARGUMENTS["app.open_url"]))
        else:
            self.app_request(asked, True, 60)

    @rule(call_id=calls, allow=st.booleans(), remember=st.booleans(), ack=st.booleans())
    def consent(self, call_id: str, allow: bool, remember: bool, ack: bool) -> None:
        key = self.asked[call_id].key
        self.attempt(self.h.g.decide(key, allow, remember=remember, acknowledged=ack))

    @rule(call_id=calls)
    def claim(self, call_id: str) -> None:
        asked = self.asked[call_id]
        if self.attempt(self.h.g.claim(asked.key)) is not None:
            asked.claims += 1

    @rule(call_id=calls, outcome=st.sampled_from(["ok", "ok", "invalid", "fail"]))
    def finish(self, call_id: str, outcome: str) -> None:
        asked = self.asked[call_id]
        if outcome == "fail":
            self.attempt(self.h.g.finish(asked.key, code="clipboard_denied"))
            return
        result = RESULTS.get(asked.capability, {}) if outcome == "ok" else {"zzz": 1}
        self.attempt(self.h.g.finish(asked.key, result=result))

    @rule(call_id=calls, size=st.sampled_from([64, 64, 5 * 1024 * 1024 + 1]))
    def pick(self, call_id: str, size: int) -> None:
        key = self.asked[call_id].key
        self.attempt(self.h.g.finish_with_file(key, "f.png", "image/png", b"0" * size))

    @rule(
        data=st.data(),
        steps=st.integers(1, 3),
        remember=st.booleans(),
        good=st.sampled_from([True, True, False]),
    )
    def move_along(self, data: st.DataObject, steps: int, remember: bool, good: bool) -> None:
        """Up to three natural next steps of one open call, so that many calls get far:
        the person allows it (with the dialog's second step), a tab claims it, the
        provider reports (a good result or file, most of the time)."""
        rows = self.rows()
        moving = sorted(c for c in self.asked if rows[c][2] in OPEN)
        if not moving:
            return
        call_id = data.draw(st.sampled_from(moving))
        asked = self.asked[call_id]
        for _ in range(steps):
            state = self.rows()[call_id][2]
            if state == "awaiting_consent":
                decided = self.h.g.decide(asked.key, True, remember=remember, acknowledged=True)
                self.attempt(decided)
            elif state == "approved":
                self.claim(call_id)
            elif state == "executing" and asked.capability == "device.pick_file":
                self.pick(call_id, 64 if good else 5 * 1024 * 1024 + 1)
            elif state == "executing":
                self.finish(call_id, "ok" if good else "invalid")

    @rule(call_id=calls)
    def cancel(self, call_id: str) -> None:
        self.attempt(self.h.g.cancel(self.asked[call_id].key))

    @rule(instance=st.sampled_from(INSTANCES))
    def close_app(self, instance: str) -> None:
        self.run(self.h.g.cancel_for_app(instance))

    @rule(capability=st.sampled_from(sorted(RESULTS)), revoked=st.booleans())
    def policy(self, capability: str, revoked: bool) -> None:
        self.run(self.h.g.set_revoked(capability, revoked))

    @rule(seconds=st.sampled_from(STEPS_S[:4] + STEPS_S))
    def advance_and_tick(self, seconds: int) -> None:
        self.h.clock.advance(seconds=seconds)
        self.run(self.h.g.due())

    @rule()
    def restart(self) -> None:
        caught = {r[0] for r in self.rows().values() if r[2] in ("approved", "executing")}
        self.run(self.h.close())
        self.run(self.h.open())
        self.run(self.h.start())
        self.interrupted |= caught

    # --- checks ------------------------------------------------------------------------

    def rows(self) -> dict[str, tuple[Any, ...]]:
        conn = sqlite3.connect(f"file:{self.h.path}?mode=ro", uri=True)
        try:
            rows = conn.execute(
                "SELECT call_id, requester_kind, state, code, decision, result"
                " FROM capability_calls"
            ).fetchall()
            kept = Counter(
                r[0] for r in conn.execute("SELECT call_id FROM artifacts") if r[0] is not None
            )
        finally:
            conn.close()
        assert max(kept.values(), default=0) <= 1  # a provider kept one file at most
        return {r[0]: r for r in rows}

    @invariant()
    def every_call_ends_once(self) -> None:
        if not self.asked:
            return
        rows = self.rows()
        results: dict[str, list[dict[str, Any]]] = {}
        for q in queued(self.h.path):
            if q.type == "lineup.v1.app.result":
                results.setdefault(q.payload["call_id"], []).append(q.payload)
        for call_id, asked in self.asked.items():
            row = rows.get(call_id)
            assert row is not None, call_id
            _, kind, state, code, _, _ = row
            sent = results.get(call_id, [])
            if kind == "app" or state not in FINAL:
                assert sent == [], (row, sent)
            else:
                [result] = sent
                assert result["status"] == STATUS[state]
                if state != "completed":
                    assert result["error"]["code"] == code
            if state in FINAL:
                assert self.frozen.setdefault(call_id, row) == row
                event(f"{kind} call {state}({code})")
            assert asked.claims <= 1
            if call_id in self.interrupted:
                assert (state, code) == ("failed", "interrupted")


GatewayMachine.TestCase.settings = settings(
    max_examples=100,
    stateful_step_count=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestGateway = GatewayMachine.TestCase
