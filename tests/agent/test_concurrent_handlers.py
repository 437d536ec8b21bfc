"""Handlers registered ``concurrent=True`` run beside the conversation's queue: they
answer while a queued handler waits, and the saved cursor never passes an envelope
whose handler has not finished (a stop replays it; its calls and sends happen once).
A real AppServer process; the user's side is played over HTTP (``FakeRuntime``)."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lineup.agent import Agent, Conversation, FileCursorStore, MemoryCursorStore
from lineup.protocol import MessageEnvelope
from tests.agent.test_agent import user_texts, wait_for_texts
from tests.agent.test_interactions_sdk import WAIT, harness
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess


async def test_a_concurrent_handler_answers_while_a_queued_one_waits(
    pair: Pair, appserver: AppServerProcess
) -> None:
    store = MemoryCursorStore()

    def install(agent: Agent) -> None:
        @agent.on_message
        async def asks(conversation: Conversation, message: MessageEnvelope) -> None:
            if message.payload.text == "ask":
                sure = await conversation.ask_confirm("Sure?")
                await conversation.send_markdown(f"sure={sure}", envelope_id=f"r.{message.id}")

        @agent.on_message(concurrent=True)
        async def pongs(conversation: Conversation, message: MessageEnvelope) -> None:
            if message.payload.text == "ping":
                await conversation.send_markdown("pong", envelope_id=f"p.{message.id}")

    async with harness(pair, appserver, store, install) as live:
        await live.publish_inventory()
        await pair.user.send_text(pair.conversation_id, "ask")
        call = await asyncio.wait_for(live.runtime.next_call(), WAIT)
        ping_seq = await pair.user.send_text(pair.conversation_id, "ping")
        # The queued handler still waits for its answer; the concurrent one replied.
        assert await asyncio.wait_for(wait_for_texts(pair, 1), WAIT) == ["pong"]
        await live.runtime.answer(call["call_id"], result={"confirmed": True})
        assert await asyncio.wait_for(wait_for_texts(pair, 2), WAIT) == ["pong", "sure=True"]
    assert store.load()[pair.conversation_id] >= ping_seq  # both finished: past them


async def test_the_cursor_stays_before_an_unfinished_concurrent_handler(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    store = FileCursorStore(tmp_path / "cursors.json")
    started: asyncio.Queue[str] = asyncio.Queue()

    def install(agent: Agent) -> None:
        @agent.on_message(concurrent=True)
        async def asks(conversation: Conversation, message: MessageEnvelope) -> None:
            if message.payload.text == "ask":
                await started.put(message.id)
                sure = await conversation.ask_confirm("Sure?")
                await conversation.send_markdown(f"sure={sure}", envelope_id=f"r.{message.id}")

        @agent.on_message
        async def echoes(conversation: Conversation, message: MessageEnvelope) -> None:
            if message.payload.text == "hi":
                await conversation.send_markdown("hi back", envelope_id=f"e.{message.id}")

    async with harness(pair, appserver, store, install) as first:
        await first.publish_inventory()
        ask_seq = await pair.user.send_text(pair.conversation_id, "ask")
        asked = await asyncio.wait_for(started.get(), WAIT)
        call = await asyncio.wait_for(first.runtime.next_call(), WAIT)
        hi_seq = await pair.user.send_text(pair.conversation_id, "hi")
        # The queue moved past "ask" (its queued handlers had nothing to do) and
        # answered "hi"; "ask"'s concurrent handler still waits.
        assert await asyncio.wait_for(wait_for_texts(pair, 1), WAIT) == ["hi back"]
        # Stopped now: the saved cursor stops before "ask", though "hi" was handled.
    assert store.load()[pair.conversation_id] < ask_seq < hi_seq

    async with harness(pair, appserver, store, install) as second:
        assert await asyncio.wait_for(started.get(), WAIT) == asked  # replayed
        await second.runtime.answer(call["call_id"], result={"confirmed": True})
        assert await asyncio.wait_for(wait_for_texts(pair, 2), WAIT) == ["hi back", "sure=True"]
        calls = await second.runtime.stored("lineup.v1.tool.call")
        assert [c["payload"]["call_id"] for c in calls] == [call["call_id"]]  # asked once
    assert await user_texts(pair) == ["hi back", "sure=True"]  # "hi back" not sent twice
    assert store.load()[pair.conversation_id] >= hi_seq
