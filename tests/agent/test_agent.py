"""The agent SDK against a real AppServer process."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from lineup.agent import (
    Agent,
    AuthenticationFailed,
    Backoff,
    Conversation,
    FileCursorStore,
    MemoryCursorStore,
    SendRejected,
    default_cursor_path,
)
from lineup.agent.demo import build_demo_agent
from lineup.protocol import Envelope, MessageEnvelope
from tests.conftest import Pair, make_pair
from tests.support.appserver import AppServerProcess

FAST = Backoff(base=0.05, cap=0.3)


@asynccontextmanager
async def running(agent: Agent) -> AsyncIterator[Agent]:
    task = asyncio.create_task(agent.run())
    try:
        await asyncio.wait_for(agent.ready.wait(), 15)
        yield agent
    finally:
        await agent.stop()
        await asyncio.wait_for(task, 15)


def recorder(agent: Agent) -> asyncio.Queue[tuple[str, str]]:
    seen: asyncio.Queue[tuple[str, str]] = asyncio.Queue()

    @agent.on_message
    async def record(conversation: Conversation, message: MessageEnvelope) -> None:
        await seen.put((conversation.id, message.payload.text))

    return seen


async def user_texts(pair: Pair, sender_kind: str = "agent") -> list[str]:
    stored = await pair.user.read_all(pair.conversation_id)
    return [
        s["envelope"]["payload"]["text"]
        for s in stored
        if s["envelope"]["sender"]["kind"] == sender_kind
        and s["envelope"]["type"].endswith("message")
    ]


async def wait_for_texts(pair: Pair, count: int) -> list[str]:
    """Long-poll until the agent has written ``count`` messages."""
    while True:
        texts = await user_texts(pair)
        if len(texts) >= count:
            return texts
        last = (await pair.user.read_all(pair.conversation_id))[-1]["seq"]
        await pair.user.read(pair.conversation_id, last, wait=5)


async def test_demo_agent_greets_and_answers_help_and_echo(
    pair: Pair, appserver: AppServerProcess
) -> None:
    agent = build_demo_agent(Agent(appserver.url, pair.agent_key, backoff=FAST))
    async with running(agent):
        await pair.user.send_text(pair.conversation_id, "/help")
        await pair.user.send_text(pair.conversation_id, "hi there")
        texts = await asyncio.wait_for(wait_for_texts(pair, 3), 20)
    assert texts[0].startswith("Hello!")
    assert "/help" in texts[1]
    assert texts[2] == "You said: hi there"
    replies = [
        s["envelope"]
        for s in await pair.user.read_all(pair.conversation_id)
        if s["envelope"]["sender"]["kind"] == "agent"
    ]
    users = [
        s["envelope"]["id"]
        for s in await pair.user.read_all(pair.conversation_id)
        if s["envelope"]["sender"]["kind"] == "user"
    ]
    assert [r["payload"].get("reply_to") for r in replies[1:]] == users


async def test_send_helpers_produce_valid_typed_envelopes(
    pair: Pair, appserver: AppServerProcess
) -> None:
    agent = Agent(appserver.url, pair.agent_key, backoff=FAST)
    async with running(agent):
        conversation = agent.conversations[pair.conversation_id]
        seqs = [
            await conversation.send_markdown("**hello**"),
            await conversation.send_status("working", "thinking hard"),
            await conversation.send_progress("job-1", 3, total=10, label="importing"),
            await conversation.send_error("tool_failed", "it broke"),
        ]
    assert seqs == [1, 2, 3, 4]
    stored = await pair.user.read_all(pair.conversation_id)
    assert [s["envelope"]["type"] for s in stored] == [
        "lineup.v1.message",
        "lineup.v1.status",
        "lineup.v1.progress",
        "lineup.v1.error",
    ]
    assert {s["envelope"]["sender"]["id"] for s in stored} == {pair.agent.id}


async def test_invalid_envelope_fails_locally_with_the_servers_code(
    pair: Pair, appserver: AppServerProcess
) -> None:
    agent = Agent(appserver.url, pair.agent_key, backoff=FAST)
    async with running(agent):
        conversation = agent.conversations[pair.conversation_id]
        with pytest.raises(SendRejected) as caught:
            await conversation.send_status("working", "x" * 5000)
        assert caught.value.code == "malformed_envelope"
        assert caught.value.path == "$.payload.text"
    assert await pair.user.read_all(pair.conversation_id) == []


async def test_a_bad_api_key_stops_run_with_authentication_failed(
    appserver: AppServerProcess,
) -> None:
    agent = Agent(appserver.url, "lak_wrong", backoff=FAST)
    with pytest.raises(AuthenticationFailed):
        await asyncio.wait_for(agent.run(), 15)


async def test_event_handlers_and_agent_started_conversations(
    pair: Pair, appserver: AppServerProcess
) -> None:
    agent = Agent(appserver.url, pair.agent_key, backoff=FAST)
    events: asyncio.Queue[Envelope] = asyncio.Queue()

    @agent.on_event("lineup.v1.ui.event")
    async def on_ui_event(conversation: Conversation, envelope: Envelope) -> None:
        await events.put(envelope)

    async with running(agent):
        second = await agent.start_conversation(
            pair.user.id, title="second", conversation_id="second-conv"
        )
        assert second.user_id == pair.user.id
        event = pair.user.envelope(
            "second-conv",
            kind="lineup.v1.ui.event",
            payload={"instance_id": "board.1", "event": "draw", "data": {"x": 1}},
        )
        event["sender"] = {"kind": "runtime", "id": pair.user.id}
        assert (await pair.user.post("second-conv", event)).status_code == 201
        received = await asyncio.wait_for(events.get(), 15)
    assert received.type == "lineup.v1.ui.event"
    assert received.conversation_id == "second-conv"


async def test_reconnects_after_a_server_kill_and_handles_each_message_once(
    own_appserver: AppServerProcess, tmp_path: Path
) -> None:
    pair = await make_pair(own_appserver)
    cursor_file = tmp_path / "cursors.json"
    agent = Agent(own_appserver.url, pair.agent_key, cursor_path=str(cursor_file), backoff=FAST)
    seen = recorder(agent)
    async with running(agent):
        await pair.user.send_text(pair.conversation_id, "m1")
        assert await asyncio.wait_for(seen.get(), 15) == (pair.conversation_id, "m1")
        connects = agent.connection.connects
        own_appserver.kill()
        conversation = agent.conversations[pair.conversation_id]
        # Sent while the server is down: held, resent after the reconnect, acked once.
        pending = asyncio.create_task(conversation.send_markdown("sent while down"))
        own_appserver.start()
        await pair.user.send_text(pair.conversation_id, "m2")
        assert await asyncio.wait_for(seen.get(), 20) == (pair.conversation_id, "m2")
        seq = await asyncio.wait_for(pending, 20)
        assert agent.connection.connects > connects
    assert seen.empty()
    stored = await pair.user.read_all(pair.conversation_id)
    assert [s["envelope"]["payload"]["text"] for s in stored] == [
        "m1",
        "m2",
        "sent while down",
    ] or [s["envelope"]["payload"]["text"] for s in stored] == ["m1", "sent while down", "m2"]
    assert seq in {2, 3}
    assert FileCursorStore(cursor_file).load() == {pair.conversation_id: len(stored)}
    await pair.user.aclose()
    await pair.agent.aclose()


async def test_a_restarted_agent_resumes_from_its_cursor_file(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    cursor_file = tmp_path / "cursors.json"
    first = Agent(appserver.url, pair.agent_key, cursor_path=str(cursor_file), backoff=FAST)
    seen_first = recorder(first)
    async with running(first):
        await pair.user.send_text(pair.conversation_id, "one")
        assert (await asyncio.wait_for(seen_first.get(), 15))[1] == "one"
    await pair.user.send_text(pair.conversation_id, "two (while the agent is away)")

    second = Agent(appserver.url, pair.agent_key, cursor_path=str(cursor_file), backoff=FAST)
    seen_second = recorder(second)
    async with running(second):
        got = await asyncio.wait_for(seen_second.get(), 15)
        await pair.user.send_text(pair.conversation_id, "three")
        got_next = await asyncio.wait_for(seen_second.get(), 15)
    assert [got[1], got_next[1]] == ["two (while the agent is away)", "three"]
    assert seen_second.empty()


async def test_a_failing_handler_does_not_stop_the_conversation(
    pair: Pair, appserver: AppServerProcess
) -> None:
    agent = Agent(appserver.url, pair.agent_key, backoff=FAST)
    seen: asyncio.Queue[str] = asyncio.Queue()

    @agent.on_message
    async def flaky(conversation: Conversation, message: MessageEnvelope) -> None:
        await seen.put(message.payload.text)
        if message.payload.text == "boom":
            raise RuntimeError("handler bug")

    async with running(agent):
        await pair.user.send_text(pair.conversation_id, "boom")
        await pair.user.send_text(pair.conversation_id, "after")
        assert [await asyncio.wait_for(seen.get(), 15) for _ in range(2)] == ["boom", "after"]


async def test_cursors_go_to_a_per_agent_file_by_default(
    pair: Pair, appserver: AppServerProcess
) -> None:
    agent = Agent(appserver.url, pair.agent_key, backoff=FAST)
    seen = recorder(agent)
    async with running(agent):
        await pair.user.send_text(pair.conversation_id, "remember me")
        await asyncio.wait_for(seen.get(), 15)
    path = default_cursor_path(appserver.url, pair.agent.id)
    assert str(path).startswith(os.environ["XDG_STATE_HOME"])
    assert FileCursorStore(path).load() == {pair.conversation_id: 1}


async def test_a_timed_out_send_stays_pending_and_is_stored_once(
    own_appserver: AppServerProcess,
) -> None:
    pair = await make_pair(own_appserver)
    agent = Agent(own_appserver.url, pair.agent_key, cursor_store=MemoryCursorStore(), backoff=FAST)
    async with running(agent):
        conversation = agent.conversations[pair.conversation_id]
        own_appserver.kill()
        envelope = conversation.message("kept", envelope_id="kept-1")
        with pytest.raises(TimeoutError):
            async with asyncio.timeout(0.2):
                await conversation.send(envelope)
        own_appserver.start()
        assert await asyncio.wait_for(conversation.send(envelope), 20) == 1
    stored = await pair.user.read_all(pair.conversation_id)
    assert [s["envelope"]["id"] for s in stored] == ["kept-1"]
    await pair.user.aclose()
    await pair.agent.aclose()
