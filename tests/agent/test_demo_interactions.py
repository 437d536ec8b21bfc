"""The demo agent's interaction commands, answered through a real Runtime."""

from __future__ import annotations

from pathlib import Path

import msgspec

from lineup.agent import Agent
from lineup.agent.demo import build_demo_agent
from lineup.runtime import InteractionRecord, Runtime, TimelineChanged
from tests.agent.test_agent import FAST, running
from tests.conftest import Pair
from tests.runtime.test_runtime import EventLog, logged_in
from tests.runtime.test_runtime import running as runtime_running
from tests.support.appserver import AppServerProcess


def latest_interaction(log: EventLog, tool: str) -> InteractionRecord | None:
    found = None
    for event in log.events:
        if isinstance(event, TimelineChanged) and event.item.interaction is not None:
            found = event.item.interaction if event.item.interaction.tool == tool else found
    return found


def agent_replies(log: EventLog) -> list[str]:
    texts = []
    for event in log.events:
        item = event.item if isinstance(event, TimelineChanged) else None
        if item is None or item.sender_kind != "agent" or not item.type.endswith(".message"):
            continue
        text = msgspec.json.decode(item.body)["payload"]["text"]
        if text not in texts:
            texts.append(text)
    return texts


async def ask_and_answer(
    runtime: Runtime, log: EventLog, pair: Pair, command: str, tool: str, answer: object
) -> str:
    before = len(agent_replies(log))
    await runtime.send_message(pair.conversation_id, command)
    await log.until(
        lambda: (r := latest_interaction(log, tool)) is not None and r.state == "pending"
    )
    record = latest_interaction(log, tool)
    assert record is not None
    await runtime.answer(record.id, pair.conversation_id, answer)
    await log.until(lambda: len(agent_replies(log)) > before)
    return agent_replies(log)[-1]


async def test_demo_commands_ask_through_the_runtime_and_use_the_answers(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path / "runtime")
    await runtime.locale_seen("en")  # a tab showed English: the agent greets
    log = EventLog(runtime)
    agent = build_demo_agent(
        Agent(appserver.url, pair.agent_key, backoff=FAST, cursor_path=tmp_path / "c.json")
    )
    async with runtime_running(runtime), running(agent):
        await log.until(lambda: len(agent_replies(log)) == 1)  # the greeting
        chose = await ask_and_answer(
            runtime, log, pair, "/choose", "interact.choice", {"selected": ["green"]}
        )
        assert chose == "You chose **Green**."
        many = await ask_and_answer(
            runtime,
            log,
            pair,
            "/choose many",
            "interact.choice",
            {"selected": ["purple", "blue"]},
        )
        assert many == "You picked **Blue**, **Purple**."
        kept = await ask_and_answer(
            runtime, log, pair, "/confirm", "interact.confirm", {"confirmed": False}
        )
        assert kept == "I kept them."
        named = await ask_and_answer(runtime, log, pair, "/ask", "interact.input", {"text": "Ada"})
        assert named == "Nice to meet you, Ada."
        await runtime.send_message(pair.conversation_id, "/notice")
        await log.until(lambda: "I showed you a notice." in agent_replies(log))
        notice = latest_interaction(log, "interact.notice")
        assert notice is not None and notice.state == "accepted"
    await runtime.close()
