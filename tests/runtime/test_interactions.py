"""Standard interactions end to end: agent tool.call -> Runtime record -> answer ->
exactly one tool.result at the agent, against a real AppServer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from lineup.runtime import INVENTORY, InteractionRefused, TimelineChanged
from lineup.runtime.records import InteractionRecord
from tests.conftest import Pair
from tests.runtime.test_runtime import EventLog, logged_in, running
from tests.support.appserver import AppServerProcess


async def call(
    pair: Pair,
    tool: str,
    arguments: dict[str, Any],
    call_id: str,
    *,
    revision: str | None = None,
    **payload: Any,
) -> None:
    body = pair.agent.envelope(
        pair.conversation_id,
        kind="lineup.v1.tool.call",
        payload={
            "call_id": call_id,
            "tool": tool,
            "inventory_revision": revision or INVENTORY.revision,
            "arguments": arguments,
            **payload,
        },
    )
    response = await pair.agent.post(pair.conversation_id, body)
    assert response.status_code == 201, response.text


async def results(pair: Pair) -> list[dict[str, Any]]:
    stored = await pair.agent.read_all(pair.conversation_id)
    return [
        s["envelope"]["payload"] for s in stored if s["envelope"]["type"] == "lineup.v1.tool.result"
    ]


def record_of(log: EventLog, call_id: str) -> InteractionRecord | None:
    found = None
    for event in log.events:
        if not isinstance(event, TimelineChanged) or event.item.interaction is None:
            continue
        if event.item.interaction.call_id == call_id:
            found = event.item.interaction
    return found


async def test_choice_answered_once_reaches_the_agent_once(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    log = EventLog(runtime)
    async with running(runtime):
        await call(
            pair,
            "interact.choice",
            {
                "prompt": "Pick one",
                "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}],
            },
            "c1",
        )
        await log.until(lambda: record_of(log, "c1") is not None)
        record = record_of(log, "c1")
        assert record is not None and record.state == "pending"
        answered = await runtime.answer(record.id, pair.conversation_id, {"selected": ["b"]})
        assert answered.state == "answered"
        with pytest.raises(InteractionRefused) as refused:
            await runtime.answer(record.id, pair.conversation_id, {"selected": ["a"]})
        assert refused.value.code == "call_already_final"

        async def one_result() -> bool:
            return len(await results(pair)) == 1

        await log.until_async(one_result)
    assert await results(pair) == [
        {"call_id": "c1", "status": "completed", "result": {"selected": ["b"]}}
    ]
