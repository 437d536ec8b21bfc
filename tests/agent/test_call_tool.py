"""``conversation.call_tool`` end to end: the agent SDK calls a MiniApp's tool through
a real AppServer and a syncing Runtime that routes it; the app's result comes back,
and every other outcome raises ``ToolCallError`` with its status and code."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lineup.agent import Agent, AppInstance, MemoryCursorStore, ToolCallError
from lineup.runtime import Runtime
from tests.agent.test_agent import running as agent_running
from tests.conftest import Pair
from tests.runtime.apps.test_scenarios import installed
from tests.runtime.test_runtime import FAST, EventLog, running
from tests.support.appserver import AppServerProcess


async def only_call_id(runtime: Runtime, tool: str) -> str:
    rows = await runtime.store.db.read(
        lambda conn: conn.execute(
            "SELECT call_id FROM tool_calls WHERE tool = ?", (tool,)
        ).fetchall()
    )
    [(call_id,)] = rows
    return str(call_id)


async def test_call_tool_returns_the_app_s_result_and_raises_otherwise(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await installed(appserver, pair, tmp_path)
    log = EventLog(runtime)
    agent = Agent(appserver.url, pair.agent_key, cursor_store=MemoryCursorStore(), backoff=FAST)
    async with running(runtime), agent_running(agent):
        conversation = agent.conversations[pair.conversation_id]
        opening = asyncio.create_task(conversation.call_tool("test-app.open"))
        await log.until(lambda: runtime.apps.instances().records)
        (instance_id,) = runtime.apps.instances().records
        assert (await runtime.tools.app_started(instance_id)).accepted
        call_id = await only_call_id(runtime, "test-app.open")
        done = await runtime.tools.app_complete(instance_id, call_id, {"instance_id": instance_id})
        assert done.accepted
        assert await asyncio.wait_for(opening, 20) == {"instance_id": instance_id}

        with pytest.raises(ToolCallError) as refused:
            await asyncio.wait_for(conversation.call_tool("test-app.echo", {"text": 5}), 20)
        assert (refused.value.status, refused.value.code) == ("rejected", "tool_input_invalid")
        with pytest.raises(ToolCallError) as unknown:
            await asyncio.wait_for(conversation.call_tool("test-app.nope"), 20)
        assert unknown.value.code == "tool_not_advertised"

        held = asyncio.create_task(conversation.call_tool("test-app.echo", {"text": "hold"}))
        await log.until_async(
            lambda: runtime.store.db.read(
                lambda conn: conn.execute(
                    "SELECT 1 FROM tool_calls WHERE tool = 'test-app.echo' AND state = 'running'"
                ).fetchone()
            )
        )
        assert (await runtime.apps.request_close(instance_id)).accepted
        with pytest.raises(ToolCallError) as closed:
            await asyncio.wait_for(held, 20)
        assert (closed.value.status, closed.value.code) == ("cancelled", "app_closed")
    await runtime.close()


async def opened(runtime: Runtime, log: EventLog, opening: asyncio.Task[AppInstance]) -> str:
    """Play the test app: start the instance the pending ``open`` launched and answer it."""
    known = set(runtime.apps.instances().records)

    async def launched() -> str | None:
        rows = await runtime.store.db.read(
            lambda conn: conn.execute(
                "SELECT instance_id FROM tool_calls WHERE tool = 'test-app.open'"
            ).fetchall()
        )
        fresh = [str(r[0]) for r in rows if r[0] not in known and r[0] is not None]
        return fresh[0] if fresh else None

    await log.until_async(launched)
    instance_id = await launched()
    assert instance_id is not None
    assert (await runtime.tools.app_started(instance_id)).accepted
    rows = await runtime.store.db.read(
        lambda conn: conn.execute(
            "SELECT call_id FROM tool_calls WHERE instance_id = ?", (instance_id,)
        ).fetchall()
    )
    [(call_id,)] = rows
    done = await runtime.tools.app_complete(instance_id, call_id, {"instance_id": instance_id})
    assert done.accepted
    return instance_id


async def test_open_app_gives_a_handle_whose_calls_never_reach_a_sibling(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await installed(appserver, pair, tmp_path)
    log = EventLog(runtime)
    agent = Agent(appserver.url, pair.agent_key, cursor_store=MemoryCursorStore(), backoff=FAST)
    async with running(runtime), agent_running(agent):
        conversation = agent.conversations[pair.conversation_id]
        first_task = asyncio.create_task(conversation.open_app("test-app.open"))
        a = await opened(runtime, log, first_task)
        first = await asyncio.wait_for(first_task, 20)
        assert (first.instance_id, first.result) == (a, {"instance_id": a})
        assert first.app_session_id == await runtime.apps.app_session_id(a)
        second_task = asyncio.create_task(conversation.open_app("test-app.open"))
        b = await opened(runtime, log, second_task)
        second = await asyncio.wait_for(second_task, 20)
        assert second.instance_id == b != a

        # Two are open: a call naming neither is refused, and says why.
        with pytest.raises(ToolCallError) as ambiguous:
            await asyncio.wait_for(conversation.call_tool("test-app.echo", {"text": "?"}), 20)
        assert (ambiguous.value.status, ambiguous.value.code) == (
            "rejected",
            "app_instance_ambiguous",
        )

        # The handle's calls go to its own instance, whichever holds focus.
        assert (await runtime.apps.request_foreground(b)).accepted
        echo = asyncio.create_task(first.call("test-app.echo", {"text": "to a"}))
        instance_id, call_id = await running_echo(runtime, log)
        assert instance_id == a
        assert (await runtime.tools.app_complete(a, call_id, {"text": "to a"})).accepted
        assert await asyncio.wait_for(echo, 20) == {"text": "to a"}

        # Closed, it is refused (and says so) while its sibling is open and untouched.
        assert (await runtime.apps.request_close(a)).accepted
        assert (await runtime.apps.closed(a)).accepted
        b_calls = await calls_on(runtime, b)
        with pytest.raises(ToolCallError) as closed:
            await asyncio.wait_for(first.call("test-app.echo", {"text": "late"}), 20)
        assert (closed.value.code, closed.value.message) == (
            "app_instance_not_found",
            "the instance is closed",
        )
        with pytest.raises(ToolCallError):  # the same through call_tool(instance_id=)
            await asyncio.wait_for(
                conversation.call_tool("test-app.echo", {"text": "late"}, instance_id=a), 20
            )
        assert await calls_on(runtime, b) == b_calls
        assert conversation.app(b).instance_id == b
    await runtime.close()


async def running_echo(runtime: Runtime, log: EventLog) -> tuple[str, str]:
    found: list[tuple[str, str]] = []

    async def check() -> bool:
        rows = await runtime.store.db.read(
            lambda conn: conn.execute(
                "SELECT instance_id, call_id FROM tool_calls"
                " WHERE tool = 'test-app.echo' AND state = 'running'"
            ).fetchall()
        )
        found[:] = [(str(i), str(c)) for i, c in rows]
        return bool(found)

    await log.until_async(check)
    return found[0]


async def calls_on(runtime: Runtime, instance_id: str) -> list[tuple[str, str]]:
    rows = await runtime.store.db.read(
        lambda conn: conn.execute(
            "SELECT call_id, state FROM tool_calls WHERE instance_id = ? ORDER BY call_id",
            (instance_id,),
        ).fetchall()
    )
    return [(str(c), str(s)) for c, s in rows]
