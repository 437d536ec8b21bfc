"""An agent calls a real MCP server's tools through LineUp, end to end (issue 24, part
2): the agent SDK against a real AppServer, the person's Runtime running
``server-everything`` from npm as its child, the tools in the inventory, the server's
policy and the person's consent, progress as ``tool.progress``, a dismissed call
cancelled on the server, a disabled server's tools gone at once, and a Runtime killed
with a call in flight that never runs it twice."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from lineup.agent import Agent, Conversation, MemoryCursorStore, ToolCallError
from lineup.client import Backoff
from lineup.protocol import Envelope, ErrorCode, ToolProgressEnvelope
from lineup.protocol.payloads import ToolProgress
from lineup.runtime import Runtime
from lineup.runtime.mcp import ServerConfig
from lineup.runtime.mcp.call_store import McpCall, McpCallsChanged
from lineup.runtime.mcp.calls import State
from tests.conftest import Pair
from tests.runtime.mcp.conftest import FAULT_SERVER, stdio_config
from tests.support.appserver import AppServerProcess
from tests.support.webhost import Client, serving

WAIT = 30.0
ECHO = "mcp-everything.echo"
LONG = "mcp-everything.trigger-long-running-operation"
ROOT = Path(__file__).resolve().parents[3]


class Inventories:
    """The inventories an agent hears (a handler on it), to wait for a tool to come or go."""

    def __init__(self) -> None:
        self.changed = asyncio.Event()

    def build(self, agent: Agent) -> Agent:
        @agent.on_event("lineup.v1.client.inventory", concurrent=True)
        async def heard(conversation: Conversation, envelope: Envelope) -> None:
            self.changed.set()

        return agent

    async def advertised(
        self, conversation: Conversation, tool: str, *, present: bool = True
    ) -> None:
        """Until the agent's latest inventory lists ``tool`` (or no longer does)."""
        async with asyncio.timeout(WAIT):
            while True:
                self.changed.clear()
                inventory = await conversation.latest_inventory()
                if any(t.id == tool for t in inventory.tools) is present:
                    return
                await self.changed.wait()


async def awaiting_consent(runtime: Runtime, call_id: str | None = None) -> McpCall:
    """Until the Runtime holds the call ``call_id`` (any call, when ``None``) waiting
    for the person; that call."""
    changed = asyncio.Event()
    unsubscribe = runtime.subscribe(
        lambda event: changed.set() if isinstance(event, McpCallsChanged) else None
    )
    try:
        async with asyncio.timeout(WAIT):
            while True:
                for call in await runtime.mcp.open_calls():
                    if call.state is State.AWAITING_CONSENT and call_id in (None, call.call_id):
                        return call
                changed.clear()
                await changed.wait()
    finally:
        unsubscribe()


@asynccontextmanager
async def person_with(
    appserver: AppServerProcess, pair: Pair, data_dir: Path, *configs: ServerConfig
) -> AsyncIterator[Client]:
    async with serving(appserver, pair, data_dir, mcp_servers=configs) as client:
        yield client


@asynccontextmanager
async def agent_for(
    appserver: AppServerProcess, pair: Pair, *hooks: Callable[[Agent], Agent]
) -> AsyncIterator[Conversation]:
    """The agent SDK's conversation with the person, while the agent runs (it does not
    need the person's Runtime to be up)."""
    agent = Agent(
        appserver.url,
        pair.agent_key,
        cursor_store=MemoryCursorStore(),
        backoff=Backoff(base=0.05, cap=0.3),
    )
    for hook in hooks:
        agent = hook(agent)
    task = asyncio.create_task(agent.run())
    try:
        await asyncio.wait_for(agent.ready.wait(), WAIT)
        yield agent.conversations[pair.conversation_id]
    finally:
        await agent.stop()
        await asyncio.wait_for(task, WAIT)


def text_of(result: dict[str, Any]) -> str:
    return "".join(p.get("text", "") for p in result["content"] if p.get("type") == "text")


async def test_a_call_runs_on_the_server_by_policy_or_consent(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path, everything_stdio: ServerConfig
) -> None:
    seen = Inventories()
    async with (
        person_with(appserver, pair, tmp_path / "rt", everything_stdio) as client,
        agent_for(appserver, pair, seen.build) as conversation,
    ):
        await seen.advertised(conversation, ECHO)
        conversation_id = client.pair.conversation_id
        # "ask" (the default): the person allows it in the dialog.
        call = asyncio.create_task(conversation.call_tool(ECHO, {"message": "hi"}, call_id="asked"))
        await awaiting_consent(client.runtime, "asked")
        await client.runtime.mcp.consent(conversation_id, "asked", True)
        result = await asyncio.wait_for(call, WAIT)
        assert (text_of(result), result["isError"]) == ("Echo: hi", False)
        # "allow": it runs without asking.
        await client.runtime.mcp.set_policy("everything", "allow")
        result = await conversation.call_tool(ECHO, {"message": "again"}, call_id="allowed")
        assert text_of(result) == "Echo: again"
        # The person says no: the agent hears why.
        await client.runtime.mcp.set_policy("everything", "ask")
        call = asyncio.create_task(
            conversation.call_tool(ECHO, {"message": "no"}, call_id="denied")
        )
        await awaiting_consent(client.runtime, "denied")
        await client.runtime.mcp.consent(conversation_id, "denied", False)
        with pytest.raises(ToolCallError) as refused:
            await asyncio.wait_for(call, WAIT)
        assert refused.value.code == ErrorCode.CAPABILITY_DENIED


async def test_progress_reaches_the_agent_and_a_dismiss_cancels_on_the_server(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path, everything_stdio: ServerConfig
) -> None:
    seen = Inventories()
    reports: list[ToolProgress] = []
    reported = asyncio.Event()

    def on_progress(agent: Agent) -> Agent:
        @agent.on_event("lineup.v1.tool.progress", concurrent=True)
        async def progress(conversation: Conversation, envelope: Envelope) -> None:
            if isinstance(envelope, ToolProgressEnvelope):
                reports.append(envelope.payload)
                reported.set()

        return agent

    async with (
        person_with(appserver, pair, tmp_path / "rt", everything_stdio) as client,
        agent_for(appserver, pair, seen.build, on_progress) as conversation,
    ):
        await client.runtime.mcp.set_policy("everything", "allow")
        await seen.advertised(conversation, LONG)
        result = await conversation.call_tool(LONG, {"duration": 1, "steps": 4}, call_id="p")
        assert "completed" in text_of(result).lower()
        mine = [r for r in reports if r.call_id == "p"]
        # Coalesced (at most one per interval) and in order; the last step may be folded
        # into the result itself (a report held past the result is dropped).
        assert mine and all(r.total == 4 for r in mine)
        assert [r.current for r in mine] == sorted({r.current for r in mine})
        reported.clear()
        call = asyncio.create_task(
            conversation.call_tool(LONG, {"duration": 60, "steps": 60}, call_id="long")
        )
        await asyncio.wait_for(reported.wait(), WAIT)  # it runs on the server
        ended = await conversation.dismiss("long")
        assert (ended.status, ended.error and ended.error.code) == (
            "dismissed",
            ErrorCode.CALL_DISMISSED,
        )
        with pytest.raises(ToolCallError):
            await asyncio.wait_for(call, WAIT)
        # The server took the cancel and goes on serving.
        result = await conversation.call_tool(ECHO, {"message": "after"}, call_id="after")
        assert text_of(result) == "Echo: after"


async def test_a_disabled_server_leaves_the_inventory_at_once(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path, everything_stdio: ServerConfig
) -> None:
    seen = Inventories()
    async with (
        person_with(appserver, pair, tmp_path / "rt", everything_stdio) as client,
        agent_for(appserver, pair, seen.build) as conversation,
    ):
        await seen.advertised(conversation, ECHO)
        await client.runtime.mcp.set_enabled("everything", False)
        await seen.advertised(conversation, ECHO, present=False)
        assert client.runtime.mcp.state_of("everything") == "stopped"
        await client.runtime.mcp.set_enabled("everything", True)
        await seen.advertised(conversation, ECHO)
        await client.runtime.mcp.set_policy("everything", "allow")
        result = await conversation.call_tool(ECHO, {"message": "back"}, call_id="back")
        assert text_of(result) == "Echo: back"


async def test_a_runtime_killed_mid_call_never_runs_it_twice(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path
) -> None:
    """The person's Runtime (a child process) forwards a call to the fault server and
    kills itself with SIGKILL at the call's first progress report, the server still
    running it. Started again, the Runtime answers the call ``failed(interrupted)``; the
    server was sent it once."""
    record = tmp_path / "record.log"
    fault = stdio_config(
        "faults", sys.executable, str(FAULT_SERVER), env={"FAULT_RECORD": str(record)}
    )
    data_dir = tmp_path / "rt"
    seen = Inventories()
    async with person_with(appserver, pair, data_dir, fault) as client:
        await client.runtime.mcp.set_policy("faults", "allow")
    async with agent_for(appserver, pair, seen.build) as conversation:
        child = subprocess.Popen(  # noqa: ASYNC220 - starts a child and returns at once
            [sys.executable, "-m", "tests.support.mcp_runtime_child", str(data_dir), str(record)],
            cwd=ROOT,
        )
        try:
            await seen.advertised(conversation, "mcp-faults.slow")
            call = asyncio.create_task(
                conversation.call_tool("mcp-faults.slow", {"n": 1000}, call_id="k")
            )
            assert await asyncio.to_thread(child.wait, WAIT) == -signal.SIGKILL
        finally:
            if child.poll() is None:
                child.kill()
                child.wait()
        async with person_with(appserver, pair, data_dir, fault):
            with pytest.raises(ToolCallError) as ended:
                await asyncio.wait_for(call, WAIT)
    assert ended.value.code == ErrorCode.INTERRUPTED
    assert record.read_text().splitlines().count("started slow") == 1
