"""Spec 002 §11 scenarios, end to end: a real AppServer process, a logged-in Runtime
syncing over real sockets, and an agent speaking HTTP. Each test walks one item of
the acceptance list and checks what the agent received, not just what was stored.

- item 2: ``test_tools_launch_switch_answer_fail_refocus_and_survive_a_restart``;
- item 5: ``test_sub_sessions_open_keep_close_and_stay_apart``;
- item 6 (read-only history, "continue"): tests/host/test_subsessions.py and
  tests/browser/test_subsessions.py;
- item 7 (questions over the app in front): tests/browser/test_overlay.py and
  ``test_an_app_can_neither_answer_fail_nor_cancel_an_interaction`` in test_router.py.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from lineup.runtime import Runtime
from lineup.runtime.apps.lifecycle import State as AppState
from tests.conftest import Pair
from tests.runtime.apps.test_router import MANIFEST
from tests.runtime.test_runtime import FAST, EventLog, logged_in, running
from tests.support.appserver import AppServerProcess
from tests.support.interactions import results


async def call(
    pair: Pair,
    runtime: Runtime,
    call_id: str,
    tool: str,
    *,
    instance_id: str | None = None,
    **payload: Any,
) -> None:
    """The agent posts one ``tool.call`` citing the current inventory (bound to
    ``instance_id`` when given: ``target.instance_id``)."""
    body = pair.agent.envelope(
        pair.conversation_id,
        kind="lineup.v1.tool.call",
        payload={
            "call_id": call_id,
            "tool": tool,
            "inventory_revision": runtime.inventory.revision,
            "arguments": payload.pop("arguments", {}),
            **payload,
        },
    )
    if instance_id is not None:
        body["target"] = {"instance_id": instance_id}
    assert (await pair.agent.post(pair.conversation_id, body)).status_code == 201


async def agent_got(
    pair: Pair, log: EventLog, fits: Callable[[list[dict[str, Any]]], bool]
) -> list[dict[str, Any]]:
    """What the agent can read, once ``fits`` holds for it (each Runtime change wakes
    the check; the AppServer holds what the Runtime sent)."""
    found: list[dict[str, Any]] = []

    async def check() -> bool:
        nonlocal found
        found = [s["envelope"] for s in await pair.agent.read_all(pair.conversation_id)]
        return fits(found)

    await log.until_async(check, within=30)
    return found


def of_kind(envelopes: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e["payload"] for e in envelopes if e["type"] == f"lineup.v1.{kind}"]


def result_of(envelopes: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [p for p in of_kind(envelopes, "tool.result") if p["call_id"] == call_id]


def has_result(call_id: str) -> Callable[[list[dict[str, Any]]], bool]:
    return lambda envelopes: bool(result_of(envelopes, call_id))


async def installed(appserver: AppServerProcess, pair: Pair, data_dir: Path) -> Runtime:
    runtime = await logged_in(appserver, pair, data_dir)
    await runtime.registry.install(MANIFEST.read_bytes(), enable=True)
    return runtime


async def test_tools_launch_switch_answer_fail_refocus_and_survive_a_restart(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await installed(appserver, pair, tmp_path)
    log = EventLog(runtime)
    async with running(runtime):
        # A launch tool opens the app in front; its result reaches the agent once.
        await call(pair, runtime, "open-a", "test-app.open")
        await log.until(lambda: runtime.apps.instances().records)
        (a,) = runtime.apps.instances().records
        assert (await runtime.tools.app_started(a)).accepted
        assert (await runtime.tools.app_complete(a, "open-a", {"instance_id": a})).accepted
        await agent_got(pair, log, has_result("open-a"))

        # A second instance comes to the front; the person switches back and forth.
        await call(pair, runtime, "open-b", "test-app.open")
        await log.until(lambda: len(runtime.apps.instances().records) == 2)
        b = runtime.apps.instances().focus
        assert b is not None and b != a
        assert (await runtime.tools.app_started(b)).accepted
        # open-b restores the previous focus once it is answered (its descriptor says so).
        assert (await runtime.tools.app_complete(b, "open-b", {"instance_id": b})).accepted
        assert runtime.apps.instances().foreground == a
        assert (await runtime.apps.request_foreground(b)).accepted
        assert runtime.apps.instances().foreground == b

        # Work for b, which the calls name (two are open, so an unnamed call would be
        # refused): one answered, one still running when b fails.
        await call(
            pair, runtime, "echo-1", "test-app.echo", instance_id=b, arguments={"text": "hi"}
        )
        await call(pair, runtime, "slow-1", "test-app.slow", instance_id=b, arguments={"steps": 3})

        async def bound_running() -> bool:
            calls = await runtime.store.db.read(
                lambda conn: conn.execute(
                    "SELECT call_id, state, instance_id FROM tool_calls"
                    " WHERE call_id IN ('echo-1', 'slow-1')"
                ).fetchall()
            )
            return sorted(calls) == [("echo-1", "running", b), ("slow-1", "running", b)]

        await log.until_async(bound_running)
        assert (await runtime.tools.app_complete(b, "echo-1", {"text": "hi"})).accepted
        assert (await runtime.apps.fail(b, error="renderer_crashed")).accepted
        # Focus falls back to a, the previous valid instance.
        assert runtime.apps.instances().focus == a
        assert runtime.apps.instances().foreground == a
        got = await agent_got(pair, log, has_result("slow-1"))
        assert result_of(got, "echo-1") == [
            {"call_id": "echo-1", "status": "completed", "result": {"text": "hi"}}
        ]
        [failed] = result_of(got, "slow-1")
        assert (failed["status"], failed["error"]["code"]) == ("cancelled", "app_failed")

        # Another call, naming no instance: a is the only one open, so it goes there.
        # Then an accepted close: exactly one app_closed cancel.
        await call(pair, runtime, "slow-2", "test-app.slow", arguments={"steps": 1})

        async def slow2_running() -> bool:
            row = await runtime.store.db.read(
                lambda conn: conn.execute(
                    "SELECT state FROM tool_calls WHERE call_id = 'slow-2'"
                ).fetchone()
            )
            return row is not None and row[0] == "running"

        await log.until_async(slow2_running)
        assert (await runtime.apps.request_close(a)).accepted
        assert (await runtime.apps.request_close(a)).accepted  # twice: still one cancel
        assert (await runtime.apps.closed(a)).accepted
        assert runtime.apps.instances().focus is None
        got = await agent_got(pair, log, has_result("slow-2"))
        [cancelled] = result_of(got, "slow-2")
        assert (cancelled["status"], cancelled["error"]["code"]) == ("cancelled", "app_closed")

        # A third instance caught starting by a stop...
        await call(pair, runtime, "open-c", "test-app.open")
        await log.until(lambda: runtime.apps.instances().focus not in (None, a, b))
        c = runtime.apps.instances().focus
        assert c is not None
    await runtime.close()

    # ...comes back suspended after the restart, never shown as done, and its call
    # waits for it; once resumed, the call completes, once.
    again = Runtime(tmp_path, backoff=FAST)
    await again.open()
    record = again.apps.record(c)
    assert record is not None and record.state is AppState.SUSPENDED
    log = EventLog(again)
    async with running(again):
        resumed = await again.apps.resume(c)  # the app is ready again
        assert resumed.accepted and resumed.record is not None
        assert resumed.record.state in (AppState.FOREGROUND, AppState.BACKGROUND)
        assert (await again.tools.app_complete(c, "open-c", {"instance_id": c})).accepted
        got = await agent_got(pair, log, has_result("open-c"))
    await again.close()
    every = await results(pair)
    ids = [r["call_id"] for r in every]
    assert sorted(ids) == sorted(set(ids))  # one result per call, whatever happened
    assert set(ids) == {"open-a", "open-b", "echo-1", "slow-1", "slow-2", "open-c"}
    assert result_of(got, "open-c")[0]["status"] == "completed"


async def test_sub_sessions_open_keep_close_and_stay_apart(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await installed(appserver, pair, tmp_path)
    log = EventLog(runtime)
    conversation = pair.conversation_id
    async with running(runtime):
        first = await runtime.apps.open_instance("test-app", conversation_id=conversation)
        second = await runtime.apps.open_instance("test-app", conversation_id=conversation)
        for record in (first, second):
            assert (await runtime.apps.started(record.instance_id)).accepted
        got = await agent_got(pair, log, lambda e: len(of_kind(e, "app_session.opened")) == 2)
        opened = {o["instance_id"]: o for o in of_kind(got, "app_session.opened")}
        s1 = opened[first.instance_id]["app_session_id"]
        s2 = opened[second.instance_id]["app_session_id"]
        assert s1 != s2
        [conv] = [c for c in await runtime.store.conversations() if c.id == conversation]
        assert opened[first.instance_id]["agent_id"] == conv.agent_id
        assert opened[first.instance_id]["app_scope"] == "test-app"

        # A question in each sub-session; background and suspend keep them open.
        question = {"prompt": "Keep?", "options": [{"id": "y", "label": "Yes"}]}
        for call_id, sid in (("q1", s1), ("q2", s2)):
            await call(
                pair,
                runtime,
                call_id,
                "interact.choice",
                arguments=question,
                app_session_context={"app_session_id": sid},
            )

        async def asked() -> bool:
            rows = await runtime.store.db.read(
                lambda conn: conn.execute(
                    "SELECT call_id, app_session_id FROM interactions ORDER BY call_id"
                ).fetchall()
            )
            return rows == [("q1", s1), ("q2", s2)]  # each in its own sub-session

        await log.until_async(asked)
        assert (await runtime.apps.request_background(first.instance_id)).accepted
        assert (await runtime.apps.suspend(first.instance_id)).accepted
        assert await runtime.apps.app_session_id(first.instance_id) == s1
        assert of_kind(await agent_got(pair, log, bool), "app_session.closed") == []

        # Closing the first lists its pending question and does not cancel it.
        assert (await runtime.apps.request_close(first.instance_id)).accepted
        assert (await runtime.apps.closed(first.instance_id)).accepted
        got = await agent_got(pair, log, lambda e: bool(of_kind(e, "app_session.closed")))
        [closed] = of_kind(got, "app_session.closed")
        assert (closed["app_session_id"], closed["pending_interaction_call_ids"]) == (s1, ["q1"])
        assert result_of(got, "q1") == []  # not cancelled
        interaction = await runtime.store.db.read(
            lambda conn: conn.execute("SELECT id FROM interactions WHERE call_id = 'q1'").fetchone()
        )
        await runtime.answer(interaction[0], conversation, {"selected": ["y"]})
        got = await agent_got(pair, log, has_result("q1"))
        assert result_of(got, "q1") == [
            {"call_id": "q1", "status": "completed", "result": {"selected": ["y"]}}
        ]
        assert result_of(got, "q2") == []  # the other sub-session is untouched
    await runtime.close()

    # After a restart: the closed one stays closed, the other is still open.
    again = Runtime(tmp_path, backoff=FAST)
    await again.open()
    states = await again.store.db.read(
        lambda conn: dict(conn.execute("SELECT id, state FROM app_sessions").fetchall())
    )
    assert states == {s1: "closed", s2: "open"}
    await again.close()
