"""The pure rules of MiniApp instances and focus (``lineup.runtime.apps.lifecycle`` and
``lineup.runtime.apps.focus``): every (state, event) pair, through ``decide`` and
through the operations on ``Instances``; the focus stack; the close order of spec
002 §7.2; restart recovery and its bounds."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.apps.focus import (
    MAX_LIVE,
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
from lineup.runtime.apps.lifecycle import (
    BINDABLE,
    FINAL,
    LIVE,
    MOUNTABLE,
    READY,
    TRANSITIONS,
    Decision,
    Event,
    MiniAppInstanceRecord,
    State,
    decide,
)

T0 = datetime(2026, 8, 4, 9, 0, tzinfo=UTC)
LATER = T0 + timedelta(minutes=5)

GRID = """
            started  front  back  close  closed  fail  suspend  resume  restart
starting    bg       st     st    sp     -       fa    -        -       su
foreground  -        fg     bg    sp     -       fa    su       -       fg
background  -        fg     bg    sp     -       fa    su       -       bg
suspended   -        fg     su    sp     -       fa    su       bg      su
stopping    -        -      -     sp     sd      fa    -        -       su
stopped     -        -      -     -      -       -     -        -       sd
failed      -        -      -     -      -       -     -        -       fa
"""
"""What every event does in every state, written out here independently of
``TRANSITIONS`` so a changed table is noticed. ``-``: refused (``lifecycle_denied``)."""

SHORT_STATE = {
    "st": State.STARTING,
    "fg": State.FOREGROUND,
    "bg": State.BACKGROUND,
    "su": State.SUSPENDED,
    "sp": State.STOPPING,
    "sd": State.STOPPED,
    "fa": State.FAILED,
}
SHORT_EVENT = {
    "started": Event.STARTED,
    "front": Event.REQUEST_FOREGROUND,
    "back": Event.REQUEST_BACKGROUND,
    "close": Event.REQUEST_CLOSE,
    "closed": Event.CLOSED,
    "fail": Event.FAIL,
    "suspend": Event.SUSPEND,
    "resume": Event.RESUME,
    "restart": Event.RESTART_RECOVERY,
}


def _expected() -> dict[tuple[State, Event], State | None]:
    header, *rows = (line.split() for line in GRID.strip().splitlines())
    table: dict[tuple[State, Event], State | None] = {}
    for row in rows:
        for event, cell in zip(header, row[1:], strict=True):
            to = None if cell == "-" else SHORT_STATE[cell]
            table[State(row[0]), SHORT_EVENT[event]] = to
    return table


EXPECTED = _expected()
ALL_PAIRS = list(itertools.product(State, Event))


def test_the_grid_covers_every_pair_and_matches_the_table() -> None:
    assert set(EXPECTED) == set(ALL_PAIRS)
    assert dict(TRANSITIONS) == {k: v for k, v in EXPECTED.items() if v is not None}
    assert frozenset({State.STOPPED, State.FAILED}) == FINAL
    assert set(State) - FINAL == LIVE


@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=str)
def test_decide_every_pair(state: State, event: Event) -> None:
    to = EXPECTED[state, event]
    if to is None:
        assert decide(state, event) == Decision(None, ErrorCode.LIFECYCLE_DENIED)
    else:
        assert decide(state, event) == Decision(to, None)


@pytest.mark.parametrize("event", list(Event), ids=str)
def test_decide_for_no_instance_is_not_found(event: Event) -> None:
    assert decide(None, event) == Decision(None, ErrorCode.APP_INSTANCE_NOT_FOUND)


# Every pair again, through the operations on one instance alone.


def _record(
    iid: str, state: State, *, started_at: datetime = T0, stopped_at: datetime | None = None
) -> MiniAppInstanceRecord:
    return MiniAppInstanceRecord(
        instance_id=iid,
        app_scope="test-app",
        state=state,
        started_at=started_at,
        stopped_at=stopped_at,
    )


def _alone(state: State) -> Instances:
    """One instance ``a`` in ``state``; it holds focus when its state allows it."""
    live = state in LIVE
    holds = state in {State.STARTING, State.FOREGROUND, State.STOPPING}
    return Instances({"a": _record("a", state)}, ("a",) if live else (), "a" if holds else None)


def _apply(value: Instances, event: Event, iid: str = "a") -> Outcome:
    match event:
        case Event.STARTED:
            return value.started(iid)
        case Event.REQUEST_FOREGROUND:
            return value.request_foreground(iid)
        case Event.REQUEST_BACKGROUND:
            return value.request_background(iid)
        case Event.REQUEST_CLOSE:
            return value.request_close(iid)
        case Event.CLOSED:
            return value.closed(iid, now=LATER)
        case Event.FAIL:
            return value.fail(iid, now=LATER, error="crashed")
        case Event.SUSPEND:
            return value.suspend(iid)
        case Event.RESUME:
            return value.resume(iid)
        case Event.RESTART_RECOVERY:
            return recover(value)


@pytest.mark.parametrize(("state", "event"), ALL_PAIRS, ids=str)
def test_every_pair_through_the_operations(state: State, event: Event) -> None:
    before = _alone(state)
    out = _apply(before, event)
    to = EXPECTED[state, event]
    if to is None:
        assert out == Outcome(before, (), ErrorCode.LIFECYCLE_DENIED)
        assert out.value is before
        return
    if event is Event.STARTED:
        to = State.FOREGROUND  # it held focus, so it comes to the front
    assert out.refusal is None
    assert out.value.records["a"].state is to
    changes = [e for e in out.effects if isinstance(e, InstanceStateChanged)]
    assert changes == ([] if to is state else [InstanceStateChanged("a", state, to)])
    assert out.value.stack == (("a",) if to in LIVE else ())
    if to in FINAL and state in LIVE:
        assert out.value.records["a"].stopped_at == LATER


@pytest.mark.parametrize("event", [e for e in Event if e is not Event.RESTART_RECOVERY], ids=str)
def test_every_request_for_an_unknown_instance_is_not_found(event: Event) -> None:
    value = _alone(State.FOREGROUND)
    out = _apply(value, event, iid="ghost")
    assert out == Outcome(value, (), ErrorCode.APP_INSTANCE_NOT_FOUND)


# Opening and focus.


def _open(value: Instances, iid: str, *, foreground: bool = True, start: bool = True) -> Instances:
    out = value.open(iid, f"app-{iid}", now=T0, conversation_id="conv-1", foreground=foreground)
    assert out.refusal is None
    return out.value.started(iid).value if start else out.value


def _states(value: Instances) -> dict[str, str]:
    return {iid: str(r.state) for iid, r in value.records.items()}


def test_open_in_front_sends_the_old_foreground_back() -> None:
    one = _open(Instances(), "a")
    out = one.open("b", "app-b", now=LATER, conversation_id="conv-1", parent_instance_id="a")
    record = MiniAppInstanceRecord(
        instance_id="b",
        app_scope="app-b",
        conversation_id="conv-1",
        state=State.STARTING,
        parent_instance_id="a",
        started_at=LATER,
    )
    assert out.refusal is None
    assert out.effects == (
        InstanceOpened(record),
        OpenAppSession("b"),
        InstanceStateChanged("a", State.FOREGROUND, State.BACKGROUND),
        FocusChanged("a", "b"),
    )
    assert out.value.stack == ("a", "b")
    assert out.value.focus == "b"
    assert out.value.foreground is None  # b holds focus but has not started yet
    started = out.value.started("b")
    assert started.effects == (InstanceStateChanged("b", State.STARTING, State.FOREGROUND),)
    assert started.value.foreground == "b"


def test_open_in_the_background_starts_at_the_bottom_and_stays_there() -> None:
    value = _open(_open(Instances(), "a"), "b")
    out = value.open("c", "app-c", now=T0, foreground=False)
    assert [type(e) for e in out.effects] == [InstanceOpened, OpenAppSession]
    assert out.value.stack == ("c", "a", "b")
    assert out.value.focus == "b"
    started = out.value.started("c")
    assert started.effects == (InstanceStateChanged("c", State.STARTING, State.BACKGROUND),)
    assert started.value.focus == "b"


def test_open_refuses_a_known_id_and_more_than_max_live() -> None:
    value = _open(Instances(), "a")
    assert value.open("a", "x", now=T0).refusal is ErrorCode.LIFECYCLE_DENIED
    for i in range(1, MAX_LIVE):
        value = _open(value, f"i{i}")
    assert len(value.live()) == MAX_LIVE
    full = value.open("one-more", "x", now=T0)
    assert full == Outcome(value, (), ErrorCode.LIFECYCLE_DENIED)
    value = value.close("i3", now=LATER).value
    assert value.open("one-more", "x", now=T0).refusal is None
    assert Instances().open("a", "x", now=T0, max_live=0).refusal is ErrorCode.LIFECYCLE_DENIED


def test_foreground_moves_to_the_top_and_is_idempotent() -> None:
    value = _open(_open(_open(Instances(), "a"), "b"), "c")
    out = value.request_foreground("a")
    assert out.effects == (
        InstanceStateChanged("c", State.FOREGROUND, State.BACKGROUND),
        InstanceStateChanged("a", State.BACKGROUND, State.FOREGROUND),
        FocusChanged("c", "a"),
    )
    assert out.value.stack == ("b", "c", "a")
    again = out.value.request_foreground("a")
    assert again == Outcome(out.value, ())


def test_background_of_the_focus_sends_it_to_the_bottom_and_focus_to_the_chat() -> None:
    value = _open(_open(_open(Instances(), "a"), "b"), "c")
    out = value.request_background("c")
    assert out.effects == (
        InstanceStateChanged("c", State.FOREGROUND, State.BACKGROUND),
        FocusChanged("c", None),
    )
    assert out.value.stack == ("c", "a", "b")
    assert out.value.focus is None
    assert out.value.foreground is None
    # A background request for something already out of focus changes nothing.
    assert out.value.request_background("a") == Outcome(out.value, ())


def test_background_of_the_only_instance_leaves_nothing_in_focus() -> None:
    value = _open(Instances(), "a")
    out = value.request_background("a")
    assert out.effects == (
        InstanceStateChanged("a", State.FOREGROUND, State.BACKGROUND),
        FocusChanged("a", None),
    )
    assert out.value.focus is None
    assert out.value.stack == ("a",)


def test_focus_returns_past_suspended_starting_and_stopping_instances() -> None:
    value = _open(Instances(), "a")  # the one that will get focus back
    value = _open(value, "s")
    value = value.suspend("s").value
    value = _open(value, "p")
    value = value.request_foreground("p").value
    value = value.request_close("p").value  # still stopping; it keeps focus
    value = _open(value, "n", start=False)  # starting, takes focus from p
    value = value.request_foreground("s").value
    value = _open(value, "top")
    assert value.stack == ("a", "p", "n", "s", "top")
    assert _states(value) == {
        "a": "background",
        "s": "background",
        "p": "stopping",
        "n": "starting",
        "top": "foreground",
    }
    value = value.suspend("s").value
    out = value.close("top", now=LATER)
    assert out.value.focus == "a"
    assert out.value.stack == ("p", "n", "s", "a")
    assert out.effects[-2:] == (
        InstanceStateChanged("a", State.BACKGROUND, State.FOREGROUND),
        FocusChanged("top", "a"),
    )


def test_starting_instances_take_and_give_up_focus_without_changing_state() -> None:
    value = _open(Instances(), "a")
    value = _open(value, "b", start=False)
    out = value.request_background("b")
    assert out.effects == (FocusChanged("b", None),)  # still starting; "a" stays behind
    assert out.value.stack == ("b", "a")
    back = out.value.request_foreground("b")
    assert back.effects == (FocusChanged(None, "b"),)
    assert back.value.started("b").value.foreground == "b"
    started = out.value.started("b").value
    assert (started.foreground, started.records["b"].state) == (None, State.BACKGROUND)


def test_suspend_and_resume() -> None:
    value = _open(_open(Instances(), "a"), "b")
    out = value.suspend("b")
    assert out.effects == (
        InstanceStateChanged("b", State.FOREGROUND, State.SUSPENDED),
        InstanceStateChanged("a", State.BACKGROUND, State.FOREGROUND),
        FocusChanged("b", "a"),
    )
    resumed = out.value.resume("b")
    assert resumed.effects == (InstanceStateChanged("b", State.SUSPENDED, State.BACKGROUND),)
    assert resumed.value.focus == "a"
    front = out.value.request_foreground("b")  # bringing it to the front resumes it
    assert front.value.foreground == "b"
    assert front.value.records["a"].state is State.BACKGROUND


# Closing and failing.

CLOSE_ORDER = (
    StopToolDelivery("b"),
    CancelBoundTools("b", "app_closed"),
    CloseSurfaces("b"),
    InstanceStateChanged("b", State.FOREGROUND, State.STOPPING),
    InstanceStateChanged("b", State.STOPPING, State.STOPPED),
    EndAppSession("b", "done"),
    InstanceStateChanged("a", State.BACKGROUND, State.FOREGROUND),
    FocusChanged("b", "a"),
)
"""spec 002 §7.2: stop new tools, cancel bound ones, close surfaces, stop, end the
sub-session, restore focus. Nothing here touches Interact interactions."""


def test_an_accepted_close_runs_in_the_spec_order() -> None:
    value = _open(_open(Instances(), "a"), "b")
    out = value.close("b", now=LATER, reason="done")
    assert out.refusal is None
    assert out.effects == CLOSE_ORDER
    assert out.value.records["b"].state is State.STOPPED
    assert out.value.records["b"].stopped_at == LATER
    assert out.value.stack == ("a",)
    assert out.value.focus == "a"


def test_a_close_in_two_steps_keeps_focus_until_the_stop_finishes() -> None:
    value = _open(_open(Instances(), "a"), "b")
    first = value.request_close("b")
    assert first.effects == CLOSE_ORDER[:4]
    assert first.value.focus == "b"
    assert first.value.foreground is None
    assert first.value.request_close("b") == Outcome(first.value, ())  # already under way
    for refused in (first.value.request_foreground, first.value.request_background):
        assert refused("b").refusal is ErrorCode.LIFECYCLE_DENIED
    second = first.value.closed("b", now=LATER, reason="done")
    assert second.effects == CLOSE_ORDER[4:]
    assert second.value == value.close("b", now=LATER, reason="done").value
    # stopped for good
    for event in Event:
        if event is not Event.RESTART_RECOVERY:
            assert _apply(second.value, event, "b").refusal is ErrorCode.LIFECYCLE_DENIED


def test_closing_a_background_instance_leaves_focus_alone() -> None:
    value = _open(_open(Instances(), "a"), "b")
    out = value.close("a", now=LATER)
    assert [type(e) for e in out.effects] == [
        StopToolDelivery,
        CancelBoundTools,
        CloseSurfaces,
        InstanceStateChanged,
        InstanceStateChanged,
        EndAppSession,
    ]
    assert out.value.focus == "b"
    assert out.value.stack == ("b",)


def test_a_stopping_instance_that_lost_focus_closes_without_moving_focus() -> None:
    value = _open(_open(Instances(), "a"), "b").request_close("b").value
    value = value.request_foreground("a").value
    assert value.focus == "a"
    out = value.closed("b", now=LATER)
    assert not any(isinstance(e, FocusChanged) for e in out.effects)
    assert out.value.focus == "a"


def test_closing_the_last_instance_leaves_nothing_in_focus() -> None:
    out = _open(Instances(), "a").close("a", now=LATER)
    assert out.effects[-1] == FocusChanged("a", None)
    assert out.value.focus is None
    assert out.value.stack == ()


def test_a_failure_ends_the_instance_in_the_same_order() -> None:
    value = _open(_open(Instances(), "a"), "b")
    out = value.fail("b", now=LATER, error="bridge_lost")
    assert out.effects == (
        StopToolDelivery("b"),
        CancelBoundTools("b", "app_failed"),
        CloseSurfaces("b"),
        InstanceStateChanged("b", State.FOREGROUND, State.FAILED),
        EndAppSession("b", "bridge_lost"),
        InstanceStateChanged("a", State.BACKGROUND, State.FOREGROUND),
        FocusChanged("b", "a"),
    )
    record = out.value.records["b"]
    assert (record.stopped_at, record.error) == (LATER, "bridge_lost")


def test_a_failure_while_stopping_does_not_cancel_twice() -> None:
    value = _open(_open(Instances(), "a"), "b").request_close("b").value
    out = value.fail("b", now=LATER, error="stop_timeout")
    assert out.effects == (
        InstanceStateChanged("b", State.STOPPING, State.FAILED),
        EndAppSession("b", "stop_timeout"),
        InstanceStateChanged("a", State.BACKGROUND, State.FOREGROUND),
        FocusChanged("b", "a"),
    )


def test_operations_never_change_the_value_they_start_from() -> None:
    value = _open(_open(Instances(), "a"), "b")
    snapshot = (dict(value.records), value.stack, value.focus)
    value.close("b", now=LATER)
    value.request_foreground("a")
    value.fail("a", now=LATER, error="x")
    recover(value, max_final=0)
    assert (dict(value.records), value.stack, value.focus) == snapshot
    with pytest.raises(TypeError):
        value.records["c"] = value.records["a"]  # type: ignore[index]


# Restart recovery.


def test_recovery_suspends_starting_and_stopping_and_keeps_the_rest() -> None:
    value = _open(Instances(), "bg")
    value = _open(value, "closing").request_close("closing").value
    value = _open(value, "fg")
    value = value.open("new", "x", now=T0, foreground=False).value
    value = _open(value, "gone").close("gone", now=LATER).value
    out = recover(value)
    assert _states(out.value) == {
        "bg": "background",
        "closing": "suspended",
        "fg": "foreground",
        "new": "suspended",
        "gone": "stopped",
    }
    assert sorted(out.effects, key=repr) == sorted(
        [
            InstanceStateChanged("closing", State.STOPPING, State.SUSPENDED),
            InstanceStateChanged("new", State.STARTING, State.SUSPENDED),
        ],
        key=repr,
    )
    assert out.value.focus == "fg"
    assert out.value.stack == value.stack
    assert recover(out.value) == Outcome(out.value, ())


@pytest.mark.parametrize("caught", [State.STARTING, State.STOPPING])
def test_a_focus_caught_starting_or_stopping_is_suspended_and_focus_moves_on(
    caught: State,
) -> None:
    value = _open(Instances(), "a")
    value = _open(value, "b", start=caught is State.STOPPING)
    if caught is State.STOPPING:
        value = value.request_close("b").value
    out = recover(value)
    assert out.effects == (
        InstanceStateChanged("b", caught, State.SUSPENDED),
        InstanceStateChanged("a", State.BACKGROUND, State.FOREGROUND),
        FocusChanged("b", "a"),
    )
    assert out.value.stack == ("b", "a")
    # A recovered instance is closed like any other: the close order starts again.
    close = out.value.close("b", now=LATER)
    assert [type(e) for e in close.effects][:3] == [
        StopToolDelivery,
        CancelBoundTools,
        CloseSurfaces,
    ]


def test_recovery_repairs_whatever_was_stored() -> None:
    records = {
        "old": _record("old", State.FOREGROUND, started_at=T0),
        "top": _record("top", State.FOREGROUND, started_at=T0 + timedelta(seconds=1)),
        "lost": _record("lost", State.BACKGROUND, started_at=T0 + timedelta(seconds=2)),
        "done": _record("done", State.STOPPED, stopped_at=LATER),
    }
    stored = Instances(records, ("done", "old", "ghost", "top", "old"), focus="ghost")
    out = recover(stored)
    assert out.value.stack == ("lost", "top", "old")
    assert out.value.focus == "old"
    assert _states(out.value)["top"] == "background"
    assert out.effects == (
        InstanceStateChanged("top", State.FOREGROUND, State.BACKGROUND),
        FocusChanged("ghost", "old"),
    )
    # with the stored focus a foreground instance, that one keeps it
    assert recover(Instances(records, ("old", "top"), focus="old")).value.focus == "old"
    # with no foreground at all and no stored focus, nothing is brought to the front
    idle = Instances({"lost": records["lost"]}, (), None)
    assert recover(idle).value == Instances({"lost": records["lost"]}, ("lost",), None)


def test_recovery_keeps_only_the_newest_final_records() -> None:
    value = Instances()
    for i in range(6):
        value = _open(value, f"i{i}")
        value = value.close(f"i{i}", now=T0 + timedelta(minutes=10 - i)).value  # i0 newest
    value = _open(value, "live")
    out = recover(value, max_final=2)
    assert set(out.value.records) == {"i0", "i1", "live"}
    assert out.effects == tuple(InstanceDropped(f"i{i}") for i in (2, 3, 4, 5))
    assert set(recover(value, max_final=0).value.records) == {"live"}
    assert recover(value).value == value  # 64 by default


def test_which_live_states_take_work() -> None:
    """The one place that says it: ready instances run a call at once, bindable ones
    may be given one (it waits until they are ready), mountable ones show surfaces;
    a stopping instance takes nothing new, and no final one takes anything."""
    assert {State.FOREGROUND, State.BACKGROUND} == READY
    assert READY | {State.STARTING, State.SUSPENDED} == BINDABLE
    assert LIVE - {State.STOPPING} == MOUNTABLE
    assert State.STOPPING not in BINDABLE | MOUNTABLE
    assert not (READY | BINDABLE | MOUNTABLE) & FINAL
    # a bindable instance that is not ready becomes ready by a move of the table
    for state in BINDABLE - READY:
        reachable = {to for (start, _), to in TRANSITIONS.items() if start is state}
        assert reachable & READY, state
