"""An MCP server's form end to end without a browser: the agent SDK calls
``server-everything``'s ``trigger-elicitation-request`` through the real AppServer
and the person's Runtime; the Runtime shows the form (a timeline row) and the
person's answer, given to the Runtime as a host gives it, reaches the server, whose
result reaches the agent. Dismissing the call cancels its form."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import msgspec

from lineup.runtime import Runtime
from lineup.runtime.events import TimelineChanged
from lineup.runtime.mcp import ServerConfig
from lineup.runtime.mcp.elicitation_store import ELICITATION_ROW
from lineup.runtime.mcp.elicitations import State
from tests.conftest import Pair
from tests.runtime.mcp.test_gateway import Inventories, agent_for, person_with, text_of
from tests.support.appserver import AppServerProcess

TOOL = "mcp-everything.trigger-elicitation-request"
WAIT = 30.0


async def shown_form(runtime: Runtime, state: str = "pending") -> dict[str, object]:
    """Until a form's card in ``state`` is shown; its body."""
    forms: list[dict[str, object]] = []
    changed = asyncio.Event()

    def heard(event: object) -> None:
        if isinstance(event, TimelineChanged) and event.item.type == ELICITATION_ROW:
            forms.append(msgspec.json.decode(event.item.body))
            changed.set()

    unsubscribe = runtime.subscribe(heard)
    try:
        async with asyncio.timeout(WAIT):
            while not any(f["state"] == state for f in forms):
                changed.clear()
                await changed.wait()
    finally:
        unsubscribe()
    return next(f for f in forms if f["state"] == state)


async def test_the_persons_answer_reaches_the_server_and_the_agent(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path, everything_stdio: ServerConfig
) -> None:
    seen = Inventories()
    async with (
        person_with(appserver, pair, tmp_path / "rt", everything_stdio) as client,
        agent_for(appserver, pair, seen.build) as conversation,
    ):
        await seen.advertised(conversation, TOOL)
        runtime = client.runtime
        await runtime.mcp.set_policy("everything", "allow")
        waiting = asyncio.create_task(shown_form(runtime))
        call = asyncio.create_task(conversation.call_tool(TOOL, {}, call_id="form"))
        form = await waiting
        assert form["message"] == "Please provide inputs for the following fields:"
        assert form["server_name"] == "everything"
        conversation_id = client.pair.conversation_id
        content = {"name": "Ada", "integer": 7, "check": True}
        await runtime.answer_elicitation(
            str(form["elicitation_id"]), conversation_id, "accept", content
        )
        result = await asyncio.wait_for(call, WAIT)
        text = text_of(result)
        assert "- Name: Ada" in text and "- Favorite Integer: 7" in text
        raw = json.loads(text.split("Raw result: ", 1)[1])
        assert (raw["action"], raw["content"]) == ("accept", content)

        # The agent takes a call back: its open form ends cancelled.
        waiting = asyncio.create_task(shown_form(runtime))
        call = asyncio.create_task(conversation.call_tool(TOOL, {}, call_id="taken-back"))
        form = await waiting
        ended = asyncio.create_task(shown_form(runtime, "cancelled"))
        await conversation.dismiss("taken-back")
        await ended
        stored = await runtime.elicitor.get(str(form["elicitation_id"]))
        assert stored is not None and stored.state is State.CANCELLED
        call.cancel()
