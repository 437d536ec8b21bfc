"""A pending question against real faults: a Runtime that SIGKILLs itself right after
storing it, and an AppServer killed and restarted under a running Runtime. The
question stays pending with the same ``expires_at``, can be answered afterwards, and
the agent gets exactly one ``tool.result``; once its time has passed, it expires as
soon as the Runtime runs."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup.protocol import interactions as ix
from lineup.runtime import InteractionRefused, Runtime
from tests.conftest import Pair, make_pair
from tests.runtime.test_runtime import FAST, ROOT, EventLog, logged_in, outbox_empty, running
from tests.support.appserver import AppServerProcess
from tests.support.interactions import CHOICE_ARGS, FrozenClock, at, call, record_of, result_id

ONE_HOUR = 3_600_000


async def results_for(pair: Pair, call_id: str) -> list[dict[str, Any]]:
    """Every ``tool.result`` for ``call_id`` the AppServer stored, with its envelope id."""
    stored = await pair.agent.read_all(pair.conversation_id)
    return [
        {"id": s["envelope"]["id"], **s["envelope"]["payload"]}
        for s in stored
        if s["envelope"]["type"] == "lineup.v1.tool.result"
        and s["envelope"]["payload"]["call_id"] == call_id
    ]


async def has_result(pair: Pair, call_id: str) -> bool:
    return bool(await results_for(pair, call_id))


@asynccontextmanager
async def fresh_pair(server: AppServerProcess) -> AsyncIterator[Pair]:
    pair = await make_pair(server)
    try:
        yield pair
    finally:
        await pair.user.aclose()
        await pair.agent.aclose()


async def readline(child: subprocess.Popen[str]) -> str:
    assert child.stdout is not None
    return (await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 30)).strip()


async def question_stored_by_a_killed_runtime(
    server: AppServerProcess, pair: Pair, data_dir: Path, call_id: str
) -> dict[str, Any]:
    """A child Runtime stores the agent's question and SIGKILLs itself at once; returns
    the record it saw."""
    setup = await logged_in(server, pair, data_dir)
    await setup.open_conversation(pair.agent.id, conversation_id=pair.conversation_id)
    await setup.close()
    child = subprocess.Popen(  # noqa: ASYNC220 - starts a child and returns at once
        [sys.executable, "-m", "tests.support.interaction_child", str(data_dir), call_id],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert await readline(child) == "ready"
        await call(pair, ix.CHOICE, CHOICE_ARGS | {"expires_in_ms": ONE_HOUR}, call_id)
        seen: dict[str, Any] = msgspec.json.decode(await readline(child))
        assert await asyncio.to_thread(child.wait, 30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        assert child.stdout is not None
        child.stdout.close()
    assert seen["state"] == "pending"
    assert at(seen["expires_at"]) == at(seen["created_at"]) + timedelta(hours=1)
    # It died before answering anything.
    assert await results_for(pair, call_id) == []
    return seen


async def test_a_question_survives_a_runtime_sigkill_and_is_answered_once(
    appserver: AppServerProcess, tmp_path: Path
) -> None:
    async with fresh_pair(appserver) as pair:
        seen = await question_stored_by_a_killed_runtime(appserver, pair, tmp_path, "q-kill")

        runtime = Runtime(tmp_path, backoff=FAST)
        await runtime.open()
        (pending,) = await runtime.store.pending_interactions()
        assert (pending.id, pending.state, pending.expires_at) == (
            seen["id"],
            "pending",
            seen["expires_at"],
        )
        log = EventLog(runtime)
        async with running(runtime):
            # In sync again, with the expiry task running: still pending, same deadline.
            again = await runtime.store.interaction(seen["id"])
            assert again is not None
            assert (again.state, again.expires_at) == ("pending", seen["expires_at"])
            answered = await runtime.answer(seen["id"], pair.conversation_id, {"selected": ["c"]})
            assert answered.state == "answered"
            with pytest.raises(InteractionRefused) as refused:
                await runtime.answer(seen["id"], pair.conversation_id, {"selected": ["a"]})
            assert refused.value.code == "call_already_final"
            await log.until_async(lambda: has_result(pair, "q-kill"))
            await log.until_async(outbox_empty(runtime))
        assert await results_for(pair, "q-kill") == [
            {
                "id": result_id(pair.conversation_id, "q-kill"),
                "call_id": "q-kill",
                "status": "completed",
                "result": {"selected": ["c"]},
            }
        ]
        # Exactly one interaction, and the call was applied once (no second card).
        assert len(await runtime.store.db.read(_interaction_ids)) == 1
        await runtime.close()


async def test_a_question_whose_time_ran_out_while_the_runtime_was_dead_expires_on_run(
    appserver: AppServerProcess, tmp_path: Path
) -> None:
    async with fresh_pair(appserver) as pair:
        seen = await question_stored_by_a_killed_runtime(appserver, pair, tmp_path, "q-late")

        expires_at = at(seen["expires_at"])
        clock = FrozenClock(expires_at + timedelta(seconds=1))
        runtime = Runtime(tmp_path, backoff=FAST, clock=clock)
        await runtime.open()
        (pending,) = await runtime.store.pending_interactions()
        assert (pending.id, pending.expires_at) == (seen["id"], seen["expires_at"])
        log = EventLog(runtime)
        async with running(runtime):
            # No answer, no timer tick: running is enough.
            await log.until(lambda: getattr(record_of(log, "q-late"), "state", "") == "expired")
            await log.until_async(lambda: has_result(pair, "q-late"))
            with pytest.raises(InteractionRefused) as refused:
                await runtime.answer(seen["id"], pair.conversation_id, {"selected": ["a"]})
            assert refused.value.code == "interaction_expired"
            await log.until_async(outbox_empty(runtime))
        expired = await runtime.store.interaction(seen["id"])
        assert expired is not None
        assert (expired.state, expired.expires_at) == ("expired", seen["expires_at"])
        assert expired.final_at is not None and at(expired.final_at) == clock.now
        assert await results_for(pair, "q-late") == [
            {
                "id": result_id(pair.conversation_id, "q-late"),
                "call_id": "q-late",
                "status": "expired",
                "error": {"code": "interaction_expired", "message": "Nobody answered in time"},
            }
        ]
        await runtime.close()


async def test_a_question_survives_an_appserver_restart_and_is_answered_once(
    own_appserver: AppServerProcess, tmp_path: Path
) -> None:
    async with fresh_pair(own_appserver) as pair:
        runtime = await logged_in(own_appserver, pair, tmp_path)
        log = EventLog(runtime)
        async with running(runtime):
            await call(pair, ix.CHOICE, CHOICE_ARGS | {"expires_in_ms": ONE_HOUR}, "q-down")
            await call(pair, ix.CONFIRM, {"prompt": "Sure?"}, "q-after")
            await log.until(lambda: record_of(log, "q-after") is not None)
            before = {r.call_id: r for r in await runtime.store.pending_interactions()}
            assert set(before) == {"q-down", "q-after"}

            own_appserver.kill()
            await log.until(lambda: runtime.state == "reconnecting")
            # Answered while the AppServer is down: the result waits in the outbox.
            down = before["q-down"]
            answered = await runtime.answer(down.id, pair.conversation_id, {"selected": ["a"]})
            assert answered.state == "answered"
            outbox = await runtime.store.outbox()
            assert result_id(pair.conversation_id, "q-down") in {o.envelope_id for o in outbox}

            own_appserver.start()
            await log.until(lambda: runtime.state == "connected")
            await log.until_async(outbox_empty(runtime))
            # The other question is still pending, with the same deadline.
            (still,) = await runtime.store.pending_interactions()
            assert still == before["q-after"]
            confirmed = await runtime.answer(still.id, pair.conversation_id, {"confirmed": False})
            assert confirmed.state == "answered"
            await log.until_async(lambda: has_result(pair, "q-after"))
            await log.until_async(outbox_empty(runtime))
        assert [r["status"] for r in await results_for(pair, "q-down")] == ["completed"]
        assert await results_for(pair, "q-after") == [
            {
                "id": result_id(pair.conversation_id, "q-after"),
                "call_id": "q-after",
                "status": "completed",
                "result": {"confirmed": False},
            }
        ]
        assert len(await runtime.store.db.read(_interaction_ids)) == 2
        await runtime.close()


def _interaction_ids(conn: Any) -> list[str]:
    return [row[0] for row in conn.execute("SELECT id FROM interactions")]
