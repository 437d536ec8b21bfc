"""The demo agent's ``/mcp`` against the real ``server-everything`` (issue 24, part 5):
a real AppServer, the person's Runtime running the server, the demo agent. ``/mcp``
lists what the inventory advertises; ``/mcp TOOL {json}`` calls one and says what it
answered; a refusal, arguments that do not fit, a typo and broken JSON each get their
own line, in words."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineup.agent import Agent
from lineup.agent.demo import build_demo_agent
from lineup.runtime.mcp import ServerConfig
from tests.agent.test_agent import FAST, running
from tests.agent.test_demo_interactions import agent_replies
from tests.conftest import Pair
from tests.runtime.mcp.conftest import stdio_config
from tests.runtime.mcp.test_gateway import ECHO, awaiting_consent
from tests.runtime.test_runtime import EventLog
from tests.support.appserver import AppServerProcess
from tests.support.npm import EVERYTHING, npm_package
from tests.support.webhost import serving


@pytest.fixture
def everything_stdio() -> ServerConfig:
    root = npm_package(*EVERYTHING, marker="dist/index.js")
    return stdio_config("everything", "node", str(root / "dist" / "index.js"), "stdio")


async def test_mcp_lists_and_calls_a_server_s_tools(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path, everything_stdio: ServerConfig
) -> None:
    async with serving(appserver, pair, tmp_path / "rt", mcp_servers=(everything_stdio,)) as client:
        runtime = client.runtime
        await runtime.locale_seen("en")
        log = EventLog(runtime)
        agent = build_demo_agent(
            Agent(appserver.url, pair.agent_key, backoff=FAST, cursor_path=tmp_path / "c.json")
        )
        conversation_id = pair.conversation_id

        async def say(text: str) -> str:
            count = len(agent_replies(log))
            await runtime.send_message(conversation_id, text)
            await log.until(lambda: len(agent_replies(log)) > count)
            return agent_replies(log)[-1]

        async with running(agent):
            await log.until(lambda: len(agent_replies(log)) >= 1)  # the greeting
            await log.until(lambda: any(t.id == ECHO for t in runtime.inventory.tools))
            listed = await say("/mcp")
            assert f"`{ECHO}`" in listed and "`mcp-everything.get-sum`" in listed

            await runtime.mcp.set_policy("everything", "allow")
            assert "Echo: hi there" in await say('/mcp echo {"message": "hi there"}')
            summed = await say('/mcp get-sum {"a": 2, "b": 40}')
            assert "42" in summed
            assert "does not take those arguments" in await say('/mcp get-sum {"a": "two"}')
            assert "No MCP server has a tool `get-some`" in await say("/mcp get-some {}")
            assert "not valid JSON" in await say('/mcp echo {"message": ')

            await runtime.mcp.set_policy("everything", "ask")
            count = len(agent_replies(log))
            await runtime.send_message(conversation_id, '/mcp echo {"message": "no"}')
            call = await awaiting_consent(runtime)
            await runtime.mcp.consent(conversation_id, call.call_id, False)
            await log.until(lambda: len(agent_replies(log)) > count)
            assert agent_replies(log)[-1] == "You said no, so I did not run `mcp-everything.echo`."
