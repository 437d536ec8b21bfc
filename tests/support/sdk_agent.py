"""The agent side of a browser test, with the real agent SDK: an ``Agent`` for the
client's pair, running against the same AppServer, and its ``Conversation`` with the
person (so tests call ``conversation.call_tool(...)``, ``open_surface(...)`` ...)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from lineup.agent import Agent, Conversation, MemoryCursorStore
from lineup.client import Backoff
from tests.support.webhost import Client


@asynccontextmanager
async def sdk_conversation(client: Client) -> AsyncIterator[Conversation]:
    """The agent SDK's conversation with the client's person, while the agent runs."""
    agent = Agent(
        client.runtime.session.server_url if client.runtime.session else "",
        client.pair.agent_key,
        cursor_store=MemoryCursorStore(),
        backoff=Backoff(base=0.05, cap=0.3),
    )
    task = asyncio.create_task(agent.run())
    try:
        await asyncio.wait_for(agent.ready.wait(), 15)
        yield agent.conversations[client.pair.conversation_id]
    finally:
        await agent.stop()
        await asyncio.wait_for(task, 15)
