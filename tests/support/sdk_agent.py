"""The agent side of a browser test, with the real agent SDK: an ``Agent`` for the
client's pair, running against the same AppServer, and its ``Conversation`` with the
person (so tests call ``conversation.call_tool(...)``, ``open_surface(...)`` ...)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

from lineup.agent import Agent, Conversation, MemoryCursorStore
from lineup.client import Backoff
from tests.support.webhost import Client


@asynccontextmanager
async def running_agent(
    client: Client, build: Callable[[Agent], Agent] = lambda agent: agent
) -> AsyncIterator[Agent]:
    """An agent for the client's pair (``build`` adds its handlers), while it runs."""
    session = client.runtime.session
    assert session is not None
    agent = build(
        Agent(
            session.server_url,
            client.pair.agent_key,
            cursor_store=MemoryCursorStore(),
            backoff=Backoff(base=0.05, cap=0.3),
        )
    )
    task = asyncio.create_task(agent.run())
    try:
        await asyncio.wait_for(agent.ready.wait(), 15)
        yield agent
    finally:
        await agent.stop()
        await asyncio.wait_for(task, 15)


@asynccontextmanager
async def sdk_conversation(client: Client) -> AsyncIterator[Conversation]:
    """The agent SDK's conversation with the client's person, while the agent runs."""
    async with running_agent(client) as agent:
        yield agent.conversations[client.pair.conversation_id]
