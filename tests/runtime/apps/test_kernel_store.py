"""The MiniApp kernel persisted (``instance_store``, ``tool_call_store``, ``AppKernel``)
on a real SQLite file with an injected clock: every decision is stored with its audit
and outbox rows in one writer transaction, reloads equal, the close order of spec 002
§7.2 shows in the queued rows, refusals write only an audit row, and a reopened store
recovers."""

from __future__ import annotations

import asyncio
import functools
import random
from collections.abc import AsyncIterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from lineup.protocol import interactions as ix
from lineup.runtime import Runtime, RuntimeEvent, Session
from lineup.runtime.apps import tool_call_store
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
from lineup.runtime.apps.instance_store import Action, LifecycleResult, Op
from lineup.runtime.apps.kernel import AppKernel, AppLifecycleRefused
from lineup.runtime.apps.lifecycle import State
from lineup.runtime.apps.tool_calls import Event
from lineup.runtime.apps.tool_calls import Outcome as Result
from lineup.runtime.apps.tool_calls import State as CallState
from lineup.runtime.events import AppsChanged
from tests.support.app_kernel import (
    APP,
    KernelHarness,
    check_focus,
    check_recovered,
    last_row,
    queued,
    sessions,
)
from tests.support.interactions import T0, VALID_ANSWER, Conversation, FrozenClock, dump

A = Conversation("conv-a", "agent-a")
B = Conversation("conv-b", "agent-b")

KERNEL_TABLES = (
    "app_instances",
    "app_focus_stack",
    "app_focus",
    "tool_calls",
    "app_sessions",
    "interactions",
    "outbox",
    "timeline",
)


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[KernelHarness]:
    harness = KernelHarness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(A, B)
    yield harness
    await harness.close()


async def started(h: KernelHarness, conversation: Conversation | None, **kw: Any) -> str:
    record = await h.k.open_instance(
        APP, conversation_id=None if conversation is None else conversation.id, **kw
    )
    receipt = await h.k.started(record.instance_id)
    assert receipt.accepted
    return record.instance_id


async def sub_session(h: KernelHarness, instance_id: str) -> str:
    found = await h.k.app_session_id(instance_id)
    assert found is not None
    return found


async def interaction(h: KernelHarness, call_id: str, app_session_id: str | None) -> str:
    applied = await h.call(A, call_id, ix.CHOICE, app_session_id=app_session_id)
    (item,) = applied.items
    assert item.interaction is not None, "refused"
    return item.interaction.id


def effects_since(h: KernelHarness, n: int) -> list[Any]:
    return [e for event in h.events[n:] for e in event.effects]


def pure(value: Instances, op: Op, now: datetime) -> Outcome:
    """What the pure rules decide for ``op`` (written out here, not taken from the store)."""
    i = op.instance_id
    if op.action is Action.STARTED:
        return value.started(i)
    if op.action is Action.REQUEST_FOREGROUND:
        return value.request_foreground(i)
    if op.action is Action.REQUEST_BACKGROUND:
        return value.request_background(i)
    if op.action is Action.REQUEST_CLOSE:
        return value.request_close(i)
    if op.action is Action.CLOSED:
        return value.closed(i, now=now, reason=op.reason)
    if op.action is Action.FAIL:
        assert op.reason is not None
        return value.fail(i, now=now, error=op.reason)
    if op.action is Action.SUSPEND:
        return value.suspend(i)
    assert op.action is Action.RESUME
    return value.resume(i)


# --- stored and reloaded -------------------------------------------------------------------


async def test_open_foreground_background_close_fail_are_stored_and_reload_equal(
    h: KernelHarness,
) -> None:
    shadow = Instances()
    ids: dict[str, str] = {}

    async def step(name: str, op: Op, pure: Any) -> None:
        nonlocal shadow
        h.clock.advance(seconds=1)
        expected: Outcome = pure(shadow)
        result = await h.k.apply(op)
        assert result.refusal is None, (name, result.refusal)
        assert result.effects == expected.effects, name
        shadow = expected.value
        assert h.k.instances() == shadow, name
        assert await h.stored() == shadow, name
        check_focus(shadow)

    def now() -> Any:
        return h.clock.now + timedelta(seconds=1)

    for name, conversation, foreground in (("x", A, True), ("y", None, False), ("z", B, True)):
        ids[name] = f"{APP}.{name}"
        await step(
            f"open {name}",
            Op(
                Action.OPEN,
                ids[name],
                app_scope=APP,
                conversation_id=None if conversation is None else conversation.id,
                foreground=foreground,
            ),
            functools.partial(
                Instances.open,
                instance_id=ids[name],
                app_scope=APP,
                now=now(),
                conversation_id=None if conversation is None else conversation.id,
                foreground=foreground,
            ),
        )
        await step(
            f"started {name}",
            Op(Action.STARTED, ids[name]),
            functools.partial(Instances.started, instance_id=ids[name]),
        )
    x, y, z = ids["x"], ids["y"], ids["z"]
    simple = {
        Action.REQUEST_FOREGROUND: Instances.request_foreground,
        Action.REQUEST_BACKGROUND: Instances.request_background,
        Action.REQUEST_CLOSE: Instances.request_close,
        Action.SUSPEND: Instances.suspend,
        Action.RESUME: Instances.resume,
    }
    script: list[tuple[Action, str]] = [
        (Action.REQUEST_FOREGROUND, y),
        (Action.REQUEST_BACKGROUND, y),
        (Action.FAIL, z),
        (Action.REQUEST_CLOSE, x),
        (Action.CLOSED, x),
        (Action.SUSPEND, y),
        (Action.RESUME, y),
        (Action.REQUEST_FOREGROUND, y),
    ]
    for action, instance_id in script:
        if action is Action.FAIL:
            pure = functools.partial(Instances.fail, instance_id=instance_id, now=now(), error="x")
            op = Op(action, instance_id, reason="x")
        elif action is Action.CLOSED:
            pure = functools.partial(Instances.closed, instance_id=instance_id, now=now())
            op = Op(action, instance_id)
        else:
            pure = functools.partial(simple[action], instance_id=instance_id)
            op = Op(action, instance_id)
        await step(f"{action} {instance_id}", op, pure)
    assert {i: r.state for i, r in shadow.records.items()} == {
        x: State.STOPPED,
        y: State.FOREGROUND,
        z: State.FAILED,
    }
    assert shadow.records[z].error == "x"
    assert shadow.records[x].stopped_at == T0 + timedelta(seconds=11)

    events = len(h.events)
    await h.restart()
    assert h.k.instances() == shadow == await h.stored()
    assert len(h.events) == events, "recovering a clean store changes nothing"


async def test_random_operations_store_exactly_what_the_pure_rules_decide(
    h: KernelHarness,
) -> None:
    """Seeded random runs of every operation, with restarts: after each, the stored
    value equals the pure value, and the effects are the pure effects."""
    rng = random.Random(20260804)
    shadow = Instances()
    opened = 0
    actions = [a for a in Action if a not in (Action.OPEN, Action.RECOVER)]
    for n in range(240):
        h.clock.advance(seconds=1)
        now = h.clock.now
        if n % 40 == 39:
            await h.restart()
            expected = recover(shadow)
            shadow = expected.value
            assert h.k.instances() == shadow == await h.stored()
            check_recovered(shadow)
            continue
        known = [*shadow.records, "nobody"]
        if rng.random() < 0.25:
            opened += 1
            conversation = rng.choice([A.id, B.id, None])
            fg = rng.random() < 0.7
            op = Op(
                Action.OPEN,
                f"{APP}.{opened}",
                app_scope=APP,
                conversation_id=conversation,
                foreground=fg,
                max_live=6,
            )
            expected = shadow.open(
                op.instance_id,
                APP,
                now=now,
                conversation_id=conversation,
                foreground=fg,
                max_live=6,
            )
        else:
            action = rng.choice(actions)
            instance_id = rng.choice(known)
            op = Op(action, instance_id, reason="boom" if action is Action.FAIL else None)
            expected = pure(shadow, op, now)
        result = await h.k.apply(op)
        assert (result.refusal, result.effects) == (expected.refusal, expected.effects), op
        shadow = expected.value
        assert result.value == shadow == await h.stored()
        check_focus(shadow)
    # Every sub-session opened was announced once, every one closed once.
    rows = queued(h.path)
    opened_ids = [q.payload["app_session_id"] for q in rows if q.type.endswith("opened")]
    closed_ids = [q.payload["app_session_id"] for q in rows if q.type.endswith("closed")]
    assert len(opened_ids) == len(set(opened_ids)) == len(sessions(h.path))
    assert len(closed_ids) == len(set(closed_ids))
    assert set(closed_ids) == {s[0] for s in sessions(h.path) if s[5] == "closed"}


# --- the close order ---------------------------------------------------------------------


async def test_close_cancels_bound_tools_then_ends_the_sub_session_in_order(
    h: KernelHarness,
) -> None:
    other = await started(h, A, foreground=False)
    x = await started(h, A)
    sid = await sub_session(h, x)
    assert sessions(h.path)[1] == (sid, A.id, A.agent_id, APP, x, "open")
    q_app = await interaction(h, "q-app", sid)
    q_done = await interaction(h, "q-done", sid)
    await interaction(h, "q-main", None)
    answered = await h.db.answer(q_done, A.id, VALID_ANSWER[ix.CHOICE])
    assert answered.won
    for call_id, state in (
        ("t-received", "received"),
        ("t-submitted", "submitted"),
        ("t-routing", "routing"),
        ("t-app-failed", "failed_by_app"),
        ("t-waiting", "waiting_for_app"),
        ("t-app-cancelled", "cancelled_by_app"),
        ("t-running", "running"),
    ):
        h.clock.advance(milliseconds=10)
        await h.call_in(A, call_id, state, instance_id=x)
    await h.call_in(A, "t-other", "running", instance_id=other)
    before = {c.call_id: c for c in await h.db.db.read(tool_call_store.all_calls)}
    mark, events, sent = last_row(h.path), len(h.events), len(h.sent)

    receipt = await h.k.request_close(x)
    assert (receipt.accepted, receipt.code) == (True, None)
    assert receipt.record is not None and receipt.record.state is State.STOPPING
    assert effects_since(h, events) == [
        StopToolDelivery(x),
        CancelBoundTools(x, "app_closed"),
        CloseSurfaces(x),
        InstanceStateChanged(x, State.FOREGROUND, State.STOPPING),
    ]
    cancelled = [
        "tool.result:t-received:cancelled:app_closed",
        "tool.result:t-routing:cancelled:app_closed",
        "tool.result:t-waiting:cancelled:app_closed",
        "tool.result:t-running:cancelled:app_closed",
    ]
    assert [q.short for q in queued(h.path, since=mark)] == cancelled
    assert [s.envelope_id for s in h.sent[sent:]] == [
        q.envelope_id for q in queued(h.path, since=mark)
    ]
    # The sub-session is still open while the instance stops; focus stays with it.
    assert sessions(h.path)[1][5] == "open"
    assert h.k.instances().focus == x

    events, sent = len(h.events), len(h.sent)
    receipt = await h.k.closed(x, reason="closed by the user")
    assert receipt.accepted
    assert effects_since(h, events) == [
        InstanceStateChanged(x, State.STOPPING, State.STOPPED),
        EndAppSession(x, "closed by the user"),
        InstanceStateChanged(other, State.BACKGROUND, State.FOREGROUND),
        FocusChanged(x, other),
    ]
    rows = queued(h.path, since=mark)
    assert [q.short for q in rows] == [*cancelled, "app_session.closed"]
    assert rows[-1].payload == {
        "agent_id": A.agent_id,
        "app_session_id": sid,
        "app_scope": APP,
        "instance_id": x,
        "reason": "closed by the user",
        "pending_interaction_call_ids": ["q-app"],
    }
    assert [s.envelope_id for s in h.sent[sent:]] == [rows[-1].envelope_id]
    assert {q.envelope_id for q in rows} <= {o.envelope_id for o in await h.db.outbox()}
    assert sessions(h.path)[1][5] == "closed"

    # Everything the instance's life queued, in order: nothing twice.
    assert [q.short for q in queued(h.path)] == [
        "app_session.opened",
        "app_session.opened",
        "tool.result:q-done:completed:None",
        "tool.result:t-submitted:completed:None",
        "tool.result:t-app-failed:failed:disk_full",
        "tool.result:t-app-cancelled:cancelled:app_cancelled",
        *cancelled,
        "app_session.closed",
    ]
    # Submitted and final calls, and the other instance's call, are untouched.
    after = {c.call_id: c for c in await h.db.db.read(tool_call_store.all_calls)}
    for call_id in ("t-submitted", "t-app-failed", "t-app-cancelled", "t-other"):
        assert after[call_id] == before[call_id]
    assert after["t-submitted"].state is CallState.SUBMITTED
    for call_id in ("t-received", "t-routing", "t-waiting", "t-running"):
        assert after[call_id].state is CallState.CANCELLED
        assert after[call_id].outcome == Result("cancelled", "app_closed")
    # The submitted result is still delivered normally, without a second row.
    delivered = await h.act(A, "t-submitted", Event.DELIVERED)
    assert delivered.call is not None and delivered.call.state is CallState.COMPLETED
    assert delivered.outbox is None

    # The pending interaction of the sub-session is not cancelled: it is answered.
    pending = {r.call_id for r in await h.db.pending_interactions()}
    assert pending == {"q-app", "q-main"}
    won = await h.db.answer(q_app, A.id, {"selected": ["c"]})
    assert won.won and won.outbox is not None
    assert queued(h.path)[-1].short == "tool.result:q-app:completed:None"

    # Reloaded, all of it is the same.
    value = h.k.instances()
    await h.restart()
    assert h.k.instances() == value == await h.stored()


async def test_a_failure_ends_tools_with_app_failed_then_the_sub_session(
    h: KernelHarness,
) -> None:
    back = await started(h, None, foreground=False)
    x = await started(h, B)
    sid = await sub_session(h, x)
    await h.call_in(B, "t-running", "running", instance_id=x)
    await h.call_in(B, "t-submitted", "submitted", instance_id=x)
    mark, events = last_row(h.path), len(h.events)
    receipt = await h.k.fail(x, error="renderer crashed")
    assert receipt.accepted and receipt.record is not None
    assert (receipt.record.state, receipt.record.error) == (State.FAILED, "renderer crashed")
    assert receipt.record.stopped_at == h.clock.now
    assert effects_since(h, events) == [
        StopToolDelivery(x),
        CancelBoundTools(x, "app_failed"),
        CloseSurfaces(x),
        InstanceStateChanged(x, State.FOREGROUND, State.FAILED),
        EndAppSession(x, "renderer crashed"),
        InstanceStateChanged(back, State.BACKGROUND, State.FOREGROUND),
        FocusChanged(x, back),
    ]
    rows = queued(h.path, since=mark)
    assert [q.short for q in rows] == [
        "tool.result:t-running:cancelled:app_failed",
        "app_session.closed",
    ]
    assert rows[0].payload["error"]["message"] == "The app failed before the call finished"
    assert rows[1].payload["app_session_id"] == sid
    assert rows[1].payload["reason"] == "renderer crashed"
    assert "pending_interaction_call_ids" not in rows[1].payload  # [] is the default
    assert h.k.instances().focus == back
    assert (await h.stored()).records[x].error == "renderer crashed"


async def test_focus_returns_to_the_previous_live_instance_after_close_and_failure(
    h: KernelHarness,
) -> None:
    a = await started(h, A)
    b = await started(h, A)
    c = await started(h, None)
    suspended = await started(h, None, foreground=False)
    assert (await h.k.suspend(suspended)).accepted
    assert (await h.stored()).stack == (suspended, a, b, c)
    assert (await h.k.request_close(c)).accepted
    assert h.k.instances().focus == c, "focus stays while the instance stops"
    assert (await h.k.closed(c)).accepted
    stored = await h.stored()
    assert (stored.focus, stored.records[b].state) == (b, State.FOREGROUND)
    assert (await h.k.fail(b, error="oops")).accepted
    stored = await h.stored()
    assert (stored.focus, stored.records[a].state) == (a, State.FOREGROUND)
    assert (await h.k.request_close(a)).accepted
    assert (await h.k.closed(a)).accepted
    stored = await h.stored()
    assert stored.focus is None, "a suspended instance does not take focus"
    assert stored.stack == (suspended,)
    check_focus(stored)
    await h.restart()
    assert await h.stored() == stored == h.k.instances()


async def test_an_instance_without_a_conversation_has_no_sub_session(h: KernelHarness) -> None:
    mark = last_row(h.path)
    x = await started(h, None)
    await h.call_in(A, "t1", "running", instance_id=x)
    assert await h.k.app_session_id(x) is None
    assert (await h.k.request_close(x)).accepted
    assert (await h.k.closed(x)).accepted
    assert [q.short for q in queued(h.path, since=mark)] == ["tool.result:t1:cancelled:app_closed"]
    assert sessions(h.path) == []


async def test_an_overdue_call_times_out_on_its_own_and_at_a_close(h: KernelHarness) -> None:
    x = await started(h, A)
    await h.call_in(A, "t-due", "running", instance_id=x, timeout_ms=1_000)
    await h.call_in(A, "t-late", "waiting_for_app", instance_id=x, timeout_ms=5_000)
    await h.call_in(A, "t-free", "running", instance_id=x)
    assert await h.db.db.read(tool_call_store.next_deadline) == T0 + timedelta(seconds=1)
    h.clock.advance(seconds=1)
    mark = last_row(h.path)
    (timed_out,) = await h.k.tool_calls_due()
    assert timed_out.call is not None and timed_out.call.state is CallState.FAILED
    assert await h.k.tool_calls_due() == []
    h.clock.advance(seconds=10)  # t-late is overdue too, but the timer has not fired
    assert (await h.k.request_close(x)).accepted
    assert [q.short for q in queued(h.path, since=mark)] == [
        "tool.result:t-due:failed:tool_timeout",
        "tool.result:t-late:failed:tool_timeout",
        "tool.result:t-free:cancelled:app_closed",
    ]
    assert [o.envelope_id for o in h.sent[-3:]] == [
        q.envelope_id for q in queued(h.path, since=mark)
    ]


# --- refusals ------------------------------------------------------------------------------


async def refused_lifecycle(
    h: KernelHarness, call: Any, code: str, *, instance_id: str = "-"
) -> None:
    """``call()`` is refused with ``code`` and writes exactly one audit row."""
    before = dump(h.path, *KERNEL_TABLES)
    audit = await h.db.audit()
    events, sent = len(h.events), len(h.sent)
    receipt = await call()
    assert (receipt.accepted, receipt.code) == (False, code)
    assert dump(h.path, *KERNEL_TABLES) == before
    (row,) = (await h.db.audit())[len(audit) :]
    assert (row.outcome, row.code, row.subject) == ("refused", code, instance_id)
    assert (len(h.events), len(h.sent)) == (events, sent)


async def test_every_lifecycle_refusal_writes_only_an_audit_row(h: KernelHarness) -> None:
    k = h.k
    for request in (
        k.started,
        k.request_foreground,
        k.request_background,
        k.request_close,
        k.closed,
        k.suspend,
        k.resume,
        functools.partial(k.fail, error="x"),
    ):
        await refused_lifecycle(
            h, functools.partial(request, "nobody"), "app_instance_not_found", instance_id="nobody"
        )
    x = await started(h, A)
    stopped = await started(h, None)
    assert (await k.request_close(stopped)).accepted
    assert (await k.closed(stopped)).accepted
    for request in (
        k.started,  # already started
        k.closed,  # no close under way
        k.resume,  # not suspended
    ):
        await refused_lifecycle(h, functools.partial(request, x), "lifecycle_denied", instance_id=x)
    for request in (k.request_foreground, k.request_close, k.suspend, k.started):
        await refused_lifecycle(
            h, functools.partial(request, stopped), "lifecycle_denied", instance_id=stopped
        )
    await refused_lifecycle(
        h, functools.partial(k.fail, stopped, error="x"), "lifecycle_denied", instance_id=stopped
    )


async def test_open_is_refused_past_max_live_and_for_an_unknown_conversation(
    h: KernelHarness,
) -> None:
    small = AppKernel(h.db, clock=h.clock, max_live=2)
    await small.open_instance(APP)
    await small.open_instance(APP, conversation_id=A.id)
    before = dump(h.path, *KERNEL_TABLES)
    with pytest.raises(AppLifecycleRefused) as refused:
        await small.open_instance(APP)
    assert refused.value.code == "lifecycle_denied"
    with pytest.raises(AppLifecycleRefused) as refused:
        await h.k.open_instance(APP, conversation_id="conv-nope")
    assert refused.value.code == "lifecycle_denied"
    assert dump(h.path, *KERNEL_TABLES) == before
    assert [(r.action, r.outcome, r.code) for r in (await h.db.audit())[-2:]] == [
        ("app.open", "refused", "lifecycle_denied"),
        ("app.open", "refused", "lifecycle_denied"),
    ]
    with pytest.raises(ValueError, match="app scope"):
        await h.k.open_instance("Not A Scope")


async def refused_call(
    h: KernelHarness, call_id: str, event: Event, code: str, **kwargs: Any
) -> tool_call_store.CallOutcome:
    before = dump(h.path, *KERNEL_TABLES)
    audit = await h.db.audit()
    outcome = await h.act(A, call_id, event, **kwargs)
    assert (outcome.decision.accepted, outcome.decision.refusal) == (False, code)
    assert outcome.receipt.code == code
    assert dump(h.path, *KERNEL_TABLES) == before
    (row,) = (await h.db.audit())[len(audit) :]
    assert (row.outcome, row.code) == ("refused", code)
    return outcome


async def test_every_tool_call_refusal_writes_only_an_audit_row(h: KernelHarness) -> None:
    x = await started(h, A)
    y = await started(h, None)
    await h.call_in(A, "t-run", "running", instance_id=x)
    await h.call_in(A, "t-new", "received", instance_id=x)
    await h.call_in(A, "t-done", "submitted", instance_id=x)
    unknown = await refused_call(h, "nobody", Event.ROUTE, "call_not_found")
    assert unknown.call is None
    foreign = await refused_call(
        h, "t-run", Event.COMPLETE, "call_not_found", app_instance_id=y, result={}
    )
    assert foreign.call is None and foreign.receipt.outcome is None
    await refused_call(h, "t-new", Event.DELIVER, "lifecycle_denied")
    await refused_call(
        h, "t-run", Event.COMPLETE, "tool_output_invalid", app_instance_id=x, output_valid=False
    )
    again = await refused_call(
        h, "t-done", Event.APP_CANCEL, "call_already_final", app_instance_id=x
    )
    assert again.receipt.outcome == Result("completed", None)
    # A duplicate call id stores nothing: a tool call's, or an interaction's.
    await interaction(h, "q-1", None)
    for call_id in ("t-run", "q-1"):
        inserted = await h.db.db.write(
            tool_call_store.insert, A.id, call_id, "env-dup", "test.do", h.now()
        )
        assert inserted.duplicate
    # Past its deadline a call times out whatever is asked: the request is refused.
    await h.call_in(A, "t-slow", "running", instance_id=x, timeout_ms=500)
    h.clock.advance(seconds=1)
    mark = last_row(h.path)
    late = await h.act(A, "t-slow", Event.COMPLETE, app_instance_id=x, result={"a": 1})
    assert (late.decision.refusal, late.decision.effective) == ("call_already_final", "timeout")
    assert [q.short for q in queued(h.path, since=mark)] == [
        "tool.result:t-slow:failed:tool_timeout"
    ]


# --- bounds and recovery -------------------------------------------------------------------


async def test_recovery_drops_old_final_records_but_keeps_their_sub_sessions(
    h: KernelHarness,
) -> None:
    ids = []
    for _ in range(3):
        h.clock.advance(seconds=1)
        x = await started(h, A)
        assert (await h.k.request_close(x)).accepted
        assert (await h.k.closed(x)).accepted
        ids.append(x)
    live = await started(h, None)
    events = len(h.events)
    result: LifecycleResult = await h.k.apply(Op(Action.RECOVER, max_final=1))
    assert result.effects == (InstanceDropped(ids[1]), InstanceDropped(ids[0]))
    assert result.dropped == (ids[0], ids[1])
    assert h.events[events:] == [AppsChanged(result.value, result.effects)]
    stored = await h.stored()
    assert list(stored.records) == [ids[2], live]
    assert len(sessions(h.path)) == 3, "sub-sessions stay as history"
    await h.restart()
    assert await h.stored() == stored == h.k.instances()


async def test_reopening_recovers_instances_caught_starting_or_stopping(
    h: KernelHarness,
) -> None:
    back = await started(h, A, foreground=False)
    stopping = await started(h, A)
    assert (await h.k.request_close(stopping)).accepted
    starting = (await h.k.open_instance(APP, foreground=False)).instance_id
    assert h.k.instances().focus == stopping
    await h.restart()
    (event,) = h.events[-1:]
    assert event.effects == (
        InstanceStateChanged(stopping, State.STOPPING, State.SUSPENDED),
        InstanceStateChanged(starting, State.STARTING, State.SUSPENDED),
        InstanceStateChanged(back, State.BACKGROUND, State.FOREGROUND),
        FocusChanged(stopping, back),
    )
    value = await h.stored()
    check_recovered(value)
    assert value == h.k.instances()
    assert value.focus == back
    # Nothing was announced closed: the stopping instance's sub-session is still open.
    assert [s[5] for s in sessions(h.path)] == ["open", "open"]
    # The close can be asked again; it cancels nothing twice and ends the sub-session once.
    assert (await h.k.request_close(stopping)).accepted
    assert (await h.k.closed(stopping)).accepted
    assert [q.short for q in queued(h.path)].count("app_session.closed") == 1
    events = len(h.events)
    await h.restart()
    assert len(h.events) == events


async def test_the_runtime_recovers_on_open_and_reports_apps_changed(tmp_path: Path) -> None:
    clock = FrozenClock()
    first = Runtime(tmp_path, clock=clock)
    await first.open()
    await first.store.save_session(Session("http://appserver.invalid", "alice", "user-1", "t"))
    await first.store.upsert_conversation(A.id, A.agent_id, "")
    heard: list[RuntimeEvent] = []
    first.subscribe(heard.append)
    record = await first.apps.open_instance(APP, conversation_id=A.id)
    (opened,) = [e for e in heard if isinstance(e, AppsChanged)]
    assert opened.effects[:2] == (InstanceOpened(record), OpenAppSession(record.instance_id))
    # Not running: the envelope waits in the outbox for run().
    assert [o.envelope_id[:4] for o in await first.store.outbox()] == ["aso_"]
    await first.close()

    second = Runtime(tmp_path, clock=clock)
    heard.clear()
    second.subscribe(heard.append)
    await second.open()
    assert heard == [
        AppsChanged(
            second.apps.instances(),
            (
                InstanceStateChanged(record.instance_id, State.STARTING, State.SUSPENDED),
                FocusChanged(record.instance_id, None),
            ),
        )
    ]
    assert second.apps.record(record.instance_id) is not None
    assert second.apps.instances().records[record.instance_id].state is State.SUSPENDED
    await second.close()


async def test_concurrent_requests_are_serialised_and_the_kernel_keeps_the_last_value(
    h: KernelHarness,
) -> None:
    ids = [await started(h, A if n % 2 else None) for n in range(6)]
    receipts = await asyncio.gather(
        *(h.k.request_close(i) for i in ids[:3]),
        *(h.k.request_foreground(i) for i in ids[3:]),
        h.k.fail(ids[0], error="late"),
        h.k.closed(ids[1]),
    )
    assert all(r.accepted for r in receipts)
    stored = await h.stored()
    assert h.k.instances() == stored
    check_focus(stored)
    assert stored.focus == ids[5]
    assert [stored.records[i].state for i in ids] == [
        State.FAILED,
        State.STOPPED,
        State.STOPPING,
        State.BACKGROUND,
        State.BACKGROUND,
        State.FOREGROUND,
    ]
    assert h.events[-1].instances == stored
