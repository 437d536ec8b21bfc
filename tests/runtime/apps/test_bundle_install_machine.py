"""Hypothesis drives many installs through ``lineup.runtime.apps.bundle_install``: from
the catalog and from a release at hand, each step going well, missing from the
catalog, or stopping with a check's code or an I/O code, in any order, with events
sent out of turn and to installs that already ended. The installer's part is played
here: each decision is applied and its effects are counted.

After every step: an ended install never moves again; every move matches a model
written from the expected table of test_bundle_install.py; a stopped install has its
code, is audited at most once (exactly when it stopped under the lock, or was not in
the catalog even after a refresh) and has the cache swept exactly when it stopped
under the lock; a recorded install went through every step in order and is logged
once; an install from a release at hand never looked anything up. At the end every
open install goes well to the end.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, rule

from lineup.runtime.apps.bundle_install import (
    AuditRefusal,
    Event,
    LogInstalled,
    State,
    SweepCache,
    decide,
)
from tests.runtime.apps.test_bundle_install import CHAIN, EXPECTED

CODES = ("catalog_unavailable", "cache_unavailable", "digest_mismatch", "key_unknown")
IO = {"catalog_unavailable", "cache_unavailable"}
UNDER_LOCK = {"found", "checked", "fetched", "verified", "cached"}
ENDED = {"recorded", "refused", "failed"}
MAX_INSTALLS = 8


@dataclass
class Install:
    """The model of one install and what was done for it."""

    state: str
    path: list[str]
    code: str | None = None
    stopped_from: str | None = None
    audits: int = 0
    sweeps: int = 0
    logs: int = 0
    frozen: tuple[str, str | None] | None = None


def model(state: str, ev: str, code: str | None) -> tuple[str, str | None]:
    """(state after, code) for ``ev`` on an install in ``state``, independently of the
    code under test."""
    if state in ENDED:
        return state, None
    if ev == "error":
        return ("failed" if code in IO else "refused"), code
    if ev in ("refused", "failed"):
        return ev, code
    to = EXPECTED[state].get(ev)
    if to is None:
        return state, None
    return to, ("not_in_catalog" if to == "refused" else None)


class InstallMachine(RuleBasedStateMachine):
    installs = Bundle("installs")

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, Install] = {}
        self.names = itertools.count(1)

    @rule(target=installs, given=st.booleans())
    def start(self, given: bool) -> str:
        name = f"install-{next(self.names)}"
        first = "found" if given else "requested"
        if len(self.model) < MAX_INSTALLS:
            self.model[name] = Install(first, [first])
        return name

    @rule(
        name=installs,
        ev=st.sampled_from([Event.OK] * 4 + [Event.MISSING, Event.ERROR, Event.REFUSED]),
        code=st.sampled_from(CODES),
    )
    def step(self, name: str, ev: Event, code: str) -> None:
        if name in self.model:
            self.apply(name, ev, code)

    @rule(name=installs, ev=st.sampled_from(list(Event)), code=st.sampled_from(CODES))
    def anything(self, name: str, ev: Event, code: str) -> None:
        """Any event, in or out of turn (the installer's mistake is refused)."""
        if name in self.model:
            self.apply(name, ev, code)

    def apply(self, name: str, ev: Event, code: str) -> None:
        install = self.model[name]
        takes_code = ev in (Event.ERROR, Event.REFUSED, Event.FAILED)
        given = code if takes_code else None
        expected = model(install.state, str(ev), given)
        decision = decide(State(install.state), ev, code=given)
        after = install.state if decision.to is None else str(decision.to)
        assert (after, decision.code) == expected, (install, ev, decision)
        if decision.to is None:
            assert decision.refusal is not None
            assert decision.effects == ()
            return
        before = install.state
        install.state = after
        install.path.append(after)
        event(f"{before} -> {after}")
        for effect in decision.effects:
            if isinstance(effect, AuditRefusal):
                install.audits += 1
            elif isinstance(effect, SweepCache):
                install.sweeps += 1
            elif isinstance(effect, LogInstalled):
                install.logs += 1
        if after in ("refused", "failed"):
            install.code, install.stopped_from = decision.code, before

    # --- checks --------------------------------------------------------------------------

    @invariant()
    def ended_installs_never_move(self) -> None:
        for install in self.model.values():
            if install.state in ENDED:
                snapshot = (install.state, install.code)
                if install.frozen is None:
                    install.frozen = snapshot
                assert install.frozen == snapshot
                assert install.path[-1] == install.state
                assert install.path.count(install.state) == 1

    @invariant()
    def what_follows_each_end(self) -> None:
        for install in self.model.values():
            under_lock = install.stopped_from in UNDER_LOCK
            unlisted = install.code == "not_in_catalog"
            assert install.audits == int(under_lock or unlisted)
            assert install.sweeps == int(under_lock)
            assert install.logs == int(install.state == "recorded")
            if install.state in ("refused", "failed"):
                assert install.code
            if unlisted:
                assert install.stopped_from == "refreshing"

    @invariant()
    def steps_go_in_order(self) -> None:
        for install in self.model.values():
            path = [s for s in install.path if s not in ("refused", "failed", "refreshing")]
            assert tuple(path) == CHAIN[CHAIN.index(path[0]) : CHAIN.index(path[0]) + len(path)]
            if install.path[0] == "found":
                assert not {"requested", "refreshing"} & set(install.path)

    def teardown(self) -> None:
        for name, install in self.model.items():
            while install.state not in ENDED:
                self.apply(name, Event.OK, CODES[0])
            if install.state == "recorded":
                assert install.path[-6:] == list(CHAIN[1:])


InstallMachine.TestCase.settings = settings(
    max_examples=300,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestInstallMachine = InstallMachine.TestCase
