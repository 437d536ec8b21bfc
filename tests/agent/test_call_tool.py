"""``conversation.call_tool`` end to end: the agent SDK calls a MiniApp's tool through
a real AppServer and a syncing Runtime that routes it; the app's result comes back,
and every other outcome raises ``ToolCallError`` with its status and code."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lineup.agent import Agent, MemoryCursorStore, ToolCallError
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
