"""Hypothesis drives ``Instances`` through random opens (in front and behind),
starts, foreground and background requests, closes (at once and in two steps),
failures, suspends, resumes and restarts, against a small model written
independently of ``lineup.runtime.apps``. After every step: focus names a live
instance (none when none is live), at most one instance is in the foreground and it
is the top of the stack, the stack holds exactly the live instances, stopped and
failed instances never come back, effects agree with the change of value, close
effects come in the order of spec 002 §7.2, and a restart leaves nothing starting or
stopping. Instances of two app scopes are opened (some continuing an earlier one): each
gets the lowest ordinal no live instance of its scope holds (its parent's when that is
free), live instances of a scope never share one, and an ordinal never changes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from lineup.protocol import ErrorCode
from lineup.runtime.apps.focus import (
    CancelBoundTools,
    CloseSurfaces,
    EndAppSession,
    FocusChanged,
    InstanceDropped,
    InstanceOpened,
    Instances,
    InstanceStateChanged,
    OpenAppSession,
    Outcome,
    StopToolDelivery,
    recover,
)
from lineup.runtime.apps.lifecycle import FINAL, State

T0 = datetime(2026, 8, 4, 9, 0, tzinfo=UTC)
MAX_LIVE = 4
ALIVE = {"starting", "foreground", "background", "suspended", "stopping"}
ENDED = {"stopped", "failed"}
CAN_HOLD_FOCUS = {"starting", "foreground", "stopping"}

pick = st.integers(min_value=0, max_value=63)
"""An index into the ids opened so far; 0 names an unknown id."""


@dataclass
class Model:
    """What should be true, restated from the rules in the module docstrings."""

    state: dict[str, str] = field(default_factory=dict)
    stack: list[str] = field(default_factory=list)  # bottom first
    focus: str | None = None
    ended_at: dict[str, datetime] = field(default_factory=dict)
    opened_at: dict[str, datetime] = field(default_factory=dict)
    scope: dict[str, str] = field(default_factory=dict)
    ordinal: dict[str, int] = field(default_factory=dict)

    def hand_focus_on(self, leaving: str) -> list[object]:
        """The effects of giving focus to the highest instance that is running in
        the background, or to nobody."""
        self.focus = None
        effects: list[object] = []
        for iid in self.stack[::-1]:
            if iid != leaving and self.state[iid] == "background":
                self.stack.remove(iid)
                self.stack.append(iid)
                self.state[iid] = "foreground"
                self.focus = iid
                effects.append(InstanceStateChanged(iid, State.BACKGROUND, State.FOREGROUND))
                break
        return [*effects, FocusChanged(leaving, self.focus)]


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.value = Instances()
        self.model = Model()
        self.ids: list[str] = []
        self.ever_ended: set[str] = set()
        self.dropped: set[str] = set()
        self.clock = T0

    # helpers

    def tick(self) -> datetime:
        self.clock += timedelta(seconds=1)
        return self.clock

    def choose(self, index: int) -> str:
        return self.ids[index % len(self.ids)] if self.ids and index else "ghost"

    def expect_refusal(self, out: Outcome, iid: str, allowed: set[str]) -> bool:
        """Check a refusal when one is due; True when the operation was accepted."""
        current = self.model.state.get(iid)
        if current is None:
            assert out == Outcome(self.value, (), ErrorCode.APP_INSTANCE_NOT_FOUND)
            event("not found")
            return False
        if current not in allowed:
            assert out == Outcome(self.value, (), ErrorCode.LIFECYCLE_DENIED)
            assert out.value is self.value
            event("denied")
            return False
        assert out.refusal is None
        return True

    def accept(self, out: Outcome, expected_effects: list[object] | None = None) -> None:
        before, after = self.value, out.value
        # Effects agree with the change of value.
        replayed = {iid: r.state for iid, r in before.records.items()}
        for e in out.effects:
            if isinstance(e, InstanceStateChanged):
                assert replayed[e.instance_id] is e.old
                assert e.old is not e.new
                replayed[e.instance_id] = e.new
            elif isinstance(e, InstanceOpened):
                assert e.record.instance_id not in replayed
                replayed[e.record.instance_id] = e.record.state
            elif isinstance(e, InstanceDropped):
                del replayed[e.instance_id]
        assert replayed == {iid: r.state for iid, r in after.records.items()}
        focus_changes = [e for e in out.effects if isinstance(e, FocusChanged)]
        if before.focus == after.focus:
            assert focus_changes == []
        else:
            assert focus_changes == [FocusChanged(before.focus, after.focus)]
        if expected_effects is not None:
            assert list(out.effects) == expected_effects
        for e in focus_changes:
            event(f"focus {'handed on' if e.old and e.new else 'taken' if e.new else 'dropped'}")
        self.value = after

    # rules

    @rule(
        front=st.booleans(),
        scope=st.sampled_from(["test-app", "other-app"]),
        parent=st.none() | pick,
    )
    def open(self, front: bool, scope: str, parent: int | None) -> None:
        iid = f"app-{len(self.ids)}"
        now = self.tick()
        parent_id = None if parent is None else self.choose(parent)
        out = self.value.open(
            iid,
            scope,
            now=now,
            foreground=front,
            max_live=MAX_LIVE,
            parent_instance_id=parent_id,
            name=scope.title(),
        )
        m = self.model
        if sum(s in ALIVE for s in m.state.values()) >= MAX_LIVE:
            assert out == Outcome(self.value, (), ErrorCode.LIFECYCLE_DENIED)
            event("open refused: full")
            return
        self.ids.append(iid)
        assert isinstance(out.effects[0], InstanceOpened)
        assert out.effects[0].record.started_at == now
        assert out.effects[0].record.name == scope.title()
        assert out.effects[1] == OpenAppSession(iid)
        taken = {m.ordinal[i] for i, s in m.state.items() if s in ALIVE and m.scope[i] == scope}
        lowest = min(n for n in range(1, MAX_LIVE + 2) if n not in taken)
        kept = parent_id in m.state and m.scope[parent_id] == scope
        if kept and m.ordinal[parent_id] not in taken:
            lowest = m.ordinal[parent_id]
            event("open: continues with its parent's ordinal")
        assert out.effects[0].record.ordinal == lowest
        event(f"open: ordinal {lowest}")
        m.scope[iid] = scope
        m.ordinal[iid] = lowest
        m.state[iid] = "starting"
        m.opened_at[iid] = now
        if front:
            old = m.focus
            rest: list[object] = []
            if old is not None and m.state[old] == "foreground":
                m.state[old] = "background"
                rest.append(InstanceStateChanged(old, State.FOREGROUND, State.BACKGROUND))
            m.stack.append(iid)
            m.focus = iid
            rest.append(FocusChanged(old, iid))
            assert list(out.effects[2:]) == rest
        else:
            m.stack.insert(0, iid)
            assert len(out.effects) == 2
        self.accept(out)

    @rule(index=pick)
    def started(self, index: int) -> None:
        self.start(self.choose(index))

    def start(self, iid: str) -> None:
        out = self.value.started(iid)
        if self.expect_refusal(out, iid, {"starting"}):
            new = "foreground" if self.model.focus == iid else "background"
            self.model.state[iid] = new
            self.accept(out, [InstanceStateChanged(iid, State.STARTING, State(new))])

    @rule(index=pick)
    def request_foreground(self, index: int) -> None:
        iid = self.choose(index)
        out = self.value.request_foreground(iid)
        allowed = {"starting", "foreground", "background", "suspended"}
        if not self.expect_refusal(out, iid, allowed):
            return
        m = self.model
        if m.focus != iid:
            old = m.focus
            if old is not None and m.state[old] == "foreground":
                m.state[old] = "background"
            m.stack.remove(iid)
            m.stack.append(iid)
            if m.state[iid] != "starting":
                m.state[iid] = "foreground"
            m.focus = iid
        self.accept(out)

    @rule(index=pick)
    def request_background(self, index: int) -> None:
        iid = self.choose(index)
        out = self.value.request_background(iid)
        allowed = {"starting", "foreground", "background", "suspended"}
        if not self.expect_refusal(out, iid, allowed):
            return
        m = self.model
        effects: list[object] = []
        if m.state[iid] == "foreground":
            m.state[iid] = "background"
            effects.append(InstanceStateChanged(iid, State.FOREGROUND, State.BACKGROUND))
        if m.focus == iid:  # back to the chat: nobody else is brought forward
            m.stack.remove(iid)
            m.stack.insert(0, iid)
            m.focus = None
            effects.append(FocusChanged(iid, None))
        self.accept(out, effects)

    def _close_start(self, iid: str) -> list[object]:
        old = State(self.model.state[iid])
        self.model.state[iid] = "stopping"
        return [
            StopToolDelivery(iid),
            CancelBoundTools(iid, "app_closed"),
            CloseSurfaces(iid),
            InstanceStateChanged(iid, old, State.STOPPING),
        ]

    def _end(self, iid: str, to: str, now: datetime, reason: str | None) -> list[object]:
        m = self.model
        old = State(m.state[iid])
        m.state[iid] = to
        m.ended_at[iid] = now
        m.stack.remove(iid)
        self.ever_ended.add(iid)
        effects: list[object] = [
            InstanceStateChanged(iid, old, State(to)),
            EndAppSession(iid, reason),
        ]
        if m.focus == iid:
            effects += m.hand_focus_on(iid)
        return effects

    @rule(index=pick)
    def request_close(self, index: int) -> None:
        iid = self.choose(index)
        out = self.value.request_close(iid)
        allowed = {"starting", "foreground", "background", "suspended", "stopping"}
        if self.expect_refusal(out, iid, allowed):
            under_way = self.model.state[iid] == "stopping"
            self.accept(out, [] if under_way else self._close_start(iid))

    @rule(index=pick)
    def closed(self, index: int) -> None:
        self.finish_stop(self.choose(index))

    def finish_stop(self, iid: str) -> None:
        now = self.tick()
        out = self.value.closed(iid, now=now, reason="bye")
        if self.expect_refusal(out, iid, {"stopping"}):
            self.accept(out, self._end(iid, "stopped", now, "bye"))
            event("closed in two steps")

    def pending(self, state: str, index: int) -> str | None:
        candidates = [i for i in self.ids if self.model.state.get(i) == state]
        if not candidates:
            event(f"nothing {state}")
            return None
        return candidates[index % len(candidates)]

    @rule(index=pick)
    def a_pending_start_finishes(self, index: int) -> None:
        if (iid := self.pending("starting", index)) is not None:
            self.start(iid)

    @rule(index=pick)
    def a_pending_stop_finishes(self, index: int) -> None:
        if (iid := self.pending("stopping", index)) is not None:
            self.finish_stop(iid)

    @rule(index=pick)
    def close(self, index: int) -> None:
        iid = self.choose(index)
        now = self.tick()
        out = self.value.close(iid, now=now)
        allowed = {"starting", "foreground", "background", "suspended", "stopping"}
        if self.expect_refusal(out, iid, allowed):
            under_way = self.model.state[iid] == "stopping"
            first = [] if under_way else self._close_start(iid)
            self.accept(out, first + self._end(iid, "stopped", now, None))
            event("closed at once")

    @rule(index=pick)
    def fail(self, index: int) -> None:
        iid = self.choose(index)
        now = self.tick()
        out = self.value.fail(iid, now=now, error="boom")
        if not self.expect_refusal(out, iid, ALIVE):
            return
        effects: list[object] = []
        if self.model.state[iid] != "stopping":
            effects = [
                StopToolDelivery(iid),
                CancelBoundTools(iid, "app_failed"),
                CloseSurfaces(iid),
            ]
        self.accept(out, effects + self._end(iid, "failed", now, "boom"))
        assert out.value.records[iid].error == "boom"

    @rule(index=pick)
    def suspend(self, index: int) -> None:
        iid = self.choose(index)
        out = self.value.suspend(iid)
        if not self.expect_refusal(out, iid, {"foreground", "background", "suspended"}):
            return
        m = self.model
        m.state[iid] = "suspended"
        if m.focus == iid:
            m.hand_focus_on(iid)
        self.accept(out)

    @rule(index=pick)
    def resume(self, index: int) -> None:
        iid = self.choose(index)
        out = self.value.resume(iid)
        if self.expect_refusal(out, iid, {"suspended"}):
            self.model.state[iid] = "background"
            self.accept(out, [InstanceStateChanged(iid, State.SUSPENDED, State.BACKGROUND)])

    @rule(max_final=st.sampled_from([0, 1, 3, 64]), reload=st.booleans())
    def restart(self, max_final: int, reload: bool) -> None:
        stored = self.value
        if reload:  # as read back from rows: plain containers, no shared objects
            stored = Instances(dict(stored.records), tuple(list(stored.stack)), stored.focus)
        out = recover(stored, max_final=max_final)
        m = self.model
        for iid, s in m.state.items():
            if s in {"starting", "stopping"}:
                m.state[iid] = "suspended"
        if m.focus is not None and m.state[m.focus] == "suspended":
            m.hand_focus_on(m.focus)
        ended = sorted(
            (i for i, s in m.state.items() if s in ENDED),
            key=lambda i: (m.ended_at[i], m.opened_at[i]),
        )
        gone = ended[: max(len(ended) - max_final, 0)]
        for iid in gone:
            del m.state[iid]
            self.dropped.add(iid)
        assert [e for e in out.effects if isinstance(e, InstanceDropped)] == [
            InstanceDropped(i) for i in sorted(gone, key=lambda i: m.ended_at[i], reverse=True)
        ]
        self.value = stored
        self.accept(out)
        assert not {r.state for r in self.value.records.values()} & {
            State.STARTING,
            State.STOPPING,
        }
        assert recover(self.value, max_final=max_final) == Outcome(self.value, ())
        event(f"restart, {len(gone)} dropped")

    # invariants

    @invariant()
    def matches_the_model(self) -> None:
        v, m = self.value, self.model
        assert {i: str(r.state) for i, r in v.records.items()} == m.state
        assert list(v.stack) == m.stack
        assert v.focus == m.focus

    @invariant()
    def focus_and_stack_rules(self) -> None:
        v = self.value
        live = [i for i, r in v.records.items() if r.state not in {State.STOPPED, State.FAILED}]
        assert sorted(v.stack) == sorted(live)  # exactly the live ones, once each
        if v.focus is not None:
            assert v.records[v.focus].state in {State(s) for s in CAN_HOLD_FOCUS}
            assert v.stack[-1] == v.focus
        if not live:
            assert v.focus is None
        in_front = [i for i, r in v.records.items() if r.state is State.FOREGROUND]
        assert len(in_front) <= 1
        if in_front:
            assert in_front == [v.focus] == [v.stack[-1]] == [v.foreground]

    @invariant()
    def ordinals_tell_live_instances_of_a_scope_apart(self) -> None:
        live = [r for r in self.value.records.values() if r.state not in FINAL]
        for scope in {r.app_scope for r in live}:
            ordinals = [r.ordinal for r in live if r.app_scope == scope]
            assert len(ordinals) == len(set(ordinals))
        for iid, record in self.value.records.items():
            assert record.ordinal == self.model.ordinal[iid]  # never renumbered

    @invariant()
    def ended_instances_never_come_back(self) -> None:
        for iid in self.ever_ended:
            record = self.value.records.get(iid)
            if record is None:
                assert iid in self.dropped
            else:
                assert record.state in {State.STOPPED, State.FAILED}
                assert record.stopped_at == self.model.ended_at[iid]


LifecycleMachine.TestCase.settings = settings(
    max_examples=400,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_lifecycle_and_focus = LifecycleMachine.TestCase
