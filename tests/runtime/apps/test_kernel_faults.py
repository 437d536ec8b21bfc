"""The MiniApp kernel against real faults and a real AppServer: a Runtime SIGKILLed
between the steps of an app close (and right after opening an instance) recovers to a
valid state, and finishing the close then cancels each bound tool once and announces
the end of the sub-session once; end to end, the agent hears ``app_session.opened``
and then ``app_session.closed`` (listing the still-pending interaction) exactly once
each, and that interaction is still answered."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup.protocol import interactions as ix
from lineup.protocol.interactions import MAX_EXPIRES_IN_MS
from lineup.runtime import Runtime
from lineup.runtime.apps import tool_call_store
from lineup.runtime.apps.lifecycle import State
from lineup.runtime.apps.tool_calls import State as CallState
from tests.conftest import Pair
from tests.runtime.test_runtime import FAST, ROOT, EventLog, logged_in, outbox_empty, running
from tests.support.app_kernel import APP, KernelHarness, check_recovered, queued, sessions
from tests.support.appserver import AppServerProcess
from tests.support.interactions import (
    CHOICE_ARGS,
    T0,
    VALID_ANSWER,
    Conversation,
    call,
    record_of,
)

A = Conversation("conv-a", "agent-a")
BOUND = ("t-received", "t-routing", "t-waiting", "t-running")
"""Calls bound to the closed instance that have no result yet: each is cancelled once."""


async def readline(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    return (await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 30)).strip()


async def killed_after(data_dir: Path, step: str, instance_id: str) -> dict[str, Any]:
    """Run the child Runtime up to ``step``; it SIGKILLs itself once that committed."""
    child = subprocess.Popen(  # noqa: ASYNC220 - starts a child and returns at once
        [
            sys.executable,
            "-m",
            "tests.support.app_kernel_child",
            str(data_dir),
            step,
            instance_id,
            A.id,
            (T0 + timedelta(hours=1)).isoformat(),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        seen: dict[str, Any] = msgspec.json.decode(await readline(child))
        assert await asyncio.to_thread(child.wait, 30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        assert child.stdout is not None
        child.stdout.close()
    return seen


@pytest.mark.parametrize("step", ["open", "request_close", "closed"])
async def test_a_close_interrupted_by_sigkill_finishes_once_after_a_restart(
    tmp_path: Path, step: str
) -> None:
    h = KernelHarness(tmp_path / "runtime.sqlite3")
    await h.open()
    await h.setup(A)
    other = (await h.k.open_instance(APP, conversation_id=A.id, foreground=False)).instance_id
    assert (await h.k.started(other)).accepted
    x = (await h.k.open_instance(APP, conversation_id=A.id)).instance_id
    assert (await h.k.started(x)).accepted
    sid = await h.k.app_session_id(x)
    assert sid is not None
    for call_id in ("q-app", "q-main"):
        applied = await h.call(
            A,
            call_id,
            ix.CHOICE,
            arguments=CHOICE_ARGS | {"expires_in_ms": MAX_EXPIRES_IN_MS},
            app_session_id=sid if call_id == "q-app" else None,
        )
        assert applied.items[0].interaction is not None
    for call_id, state in zip(
        (*BOUND, "t-submitted"),
        ("received", "routing", "waiting_for_app", "running", "submitted"),
        strict=True,
    ):
        await h.call_in(A, call_id, state, instance_id=x)
    await h.call_in(A, "t-other", "running", instance_id=other)
    await h.close()

    seen = await killed_after(tmp_path, step, x)
    assert (
        seen["state"]
        == {"open": "starting", "request_close": "stopping", "closed": "stopped"}[step]
    )

    h.clock.set(T0 + timedelta(hours=2))
    await h.open()  # recovers, as Runtime.open does
    value = await h.stored()
    assert value == h.k.instances()
    check_recovered(value)
    assert (
        value.records[x].state
        is {
            "open": State.FOREGROUND,  # the new instance was suspended; focus came back
            "request_close": State.SUSPENDED,  # caught stopping: never shown as stopped
            "closed": State.STOPPED,
        }[step]
    )
    if step == "open":
        assert value.records[seen["instance_id"]].state is State.SUSPENDED
        assert value.focus == x
    else:
        assert value.focus == other
    rows = queued(h.path)
    if step != "open":
        assert {q.payload["call_id"] for q in rows if q.type.endswith("tool.result")} >= set(BOUND)
    assert [q.short for q in rows].count("app_session.closed") == (step == "closed")

    # Finish the close from wherever it stopped.
    for _ in range(3):
        state = h.k.instances().records[x].state
        if state is State.STOPPED:
            break
        receipt = await (h.k.closed(x) if state is State.STOPPING else h.k.request_close(x))
        assert receipt.accepted, receipt
    value = await h.stored()
    check_recovered(value)
    assert value.records[x].state is State.STOPPED
    assert value.focus == other and value.records[other].state is State.FOREGROUND

    rows = queued(h.path)
    results = Counter(q.short for q in rows if q.type.endswith("tool.result"))
    assert results == Counter(
        {f"tool.result:{c}:cancelled:app_closed": 1 for c in BOUND}
        | {"tool.result:t-submitted:completed:None": 1}
    )
    calls = {c.call_id: c for c in await h.db.db.read(tool_call_store.all_calls)}
    assert calls["t-submitted"].state is CallState.SUBMITTED
    assert calls["t-other"].state is CallState.RUNNING
    closed = [q for q in rows if q.short == "app_session.closed"]
    opened = [q for q in rows if q.short == "app_session.opened"]
    assert [q.payload["app_session_id"] for q in closed] == [sid]
    assert closed[0].payload["pending_interaction_call_ids"] == ["q-app"]
    assert Counter(q.payload["app_session_id"] for q in opened) == Counter(
        {s[0]: 1 for s in sessions(h.path)}
    )
    # Nothing was sent twice into the outbox, and nothing was lost from it.
    assert len({q.envelope_id for q in rows}) == len(rows)
    assert [q.envelope_id for q in queued(h.path, table="outbox")] == [q.envelope_id for q in rows]
    # The sub-session's question survived it all and is still answered.
    (pending,) = [r for r in await h.db.pending_interactions() if r.call_id == "q-app"]
    assert (await h.db.answer(pending.id, A.id, VALID_ANSWER[ix.CHOICE])).won

    events = len(h.events)
    await h.restart()
    assert len(h.events) == events, "a finished close recovers to itself"
    await h.close()


# --- end to end ----------------------------------------------------------------------------


async def envelopes(pair: Pair, kind: str) -> list[dict[str, Any]]:
    stored = await pair.agent.read_all(pair.conversation_id)
    return [{"seq": s["seq"], **s["envelope"]} for s in stored if s["envelope"]["type"] == kind]


OPENED = "lineup.v1.app_session.opened"
CLOSED = "lineup.v1.app_session.closed"
RESULT = "lineup.v1.tool.result"


async def test_the_agent_hears_a_sub_session_open_and_close_exactly_once(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    log = EventLog(runtime)
    async with running(runtime):
        record = await runtime.apps.open_instance(APP, conversation_id=pair.conversation_id)
        x = record.instance_id
        await log.until_async(lambda: envelopes(pair, OPENED))
        (opened,) = await envelopes(pair, OPENED)
        sid = opened["payload"]["app_session_id"]
        assert runtime.session is not None
        assert opened["sender"] == {"kind": "runtime", "id": runtime.session.user_id}
        assert opened["payload"] == {
            "agent_id": pair.agent.id,
            "app_session_id": sid,
            "app_scope": APP,
            "instance_id": x,
        }
        # The agent asks inside the sub-session, and once in the main chat.
        await call(
            pair, ix.CHOICE, CHOICE_ARGS, "q-in-app", app_session_context={"app_session_id": sid}
        )
        await call(pair, ix.CONFIRM, {"prompt": "Sure?"}, "q-main")
        await log.until(
            lambda: record_of(log, "q-in-app") is not None and record_of(log, "q-main") is not None
        )
        in_app = record_of(log, "q-in-app")
        assert in_app is not None and in_app.app_session_id == sid

        assert (await runtime.apps.started(x)).accepted
        assert (await runtime.apps.request_close(x)).accepted
        assert (await runtime.apps.closed(x, reason="closed by the user")).accepted
        await log.until_async(lambda: envelopes(pair, CLOSED))
        # Closing the app did not end the question: it is answered afterwards.
        answered = await runtime.answer(in_app.id, pair.conversation_id, {"selected": ["b"]})
        assert answered.state == "answered"
        await log.until_async(lambda: envelopes(pair, RESULT))
        await log.until_async(outbox_empty(runtime))
    await runtime.close()

    # A restart sends nothing again.
    again = Runtime(tmp_path, backoff=FAST)
    await again.open()
    async with running(again):
        await EventLog(again).until_async(outbox_empty(again))
    await again.close()

    (opened,) = await envelopes(pair, OPENED)
    (closed,) = await envelopes(pair, CLOSED)
    assert opened["seq"] < closed["seq"]
    assert closed["payload"] == {
        "agent_id": pair.agent.id,
        "app_session_id": sid,
        "app_scope": APP,
        "instance_id": x,
        "reason": "closed by the user",
        "pending_interaction_call_ids": ["q-in-app"],
    }
    results = await envelopes(pair, RESULT)
    assert [(r["payload"]["call_id"], r["payload"]["status"]) for r in results] == [
        ("q-in-app", "completed")
    ]
    assert results[0]["seq"] > closed["seq"]
