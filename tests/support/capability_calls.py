"""Capability calls from the agent's side, for the host and browser tests.

The agent posts a raw ``lineup.v1.app.call`` through the real AppServer and reads its
``lineup.v1.app.result`` back (long-poll, no sleeping)."""

from __future__ import annotations

import asyncio
from datetime import UTC, timedelta
from typing import Any

from tests.support.webhost import Client


async def chat_id(client: Client) -> str:
    """The conversation the shell shows (the first one the Runtime knows)."""
    return (await client.runtime.store.conversations())[0].id


async def app_call(
    client: Client,
    capability: str,
    arguments: dict[str, Any],
    call_id: str,
    *,
    reason: str = "The agent needs this for your task.",
    expires_in: timedelta = timedelta(minutes=5),
) -> None:
    agent = client.pair.agent
    conversation = await chat_id(client)
    expires_at = client.runtime.clock() + expires_in
    body = agent.envelope(
        conversation,
        kind="lineup.v1.app.call",
        payload={
            "call_id": call_id,
            "capability": capability,
            "reason": reason,
            "expires_at": expires_at.astimezone(UTC).isoformat(timespec="milliseconds"),
            "arguments": arguments,
        },
    )
    response = await agent.post(conversation, body)
    assert response.status_code == 201, response.text


async def app_results(client: Client, call_id: str) -> list[dict[str, Any]]:
    stored = await client.pair.agent.read_all(await chat_id(client))
    return [
        s["envelope"]["payload"]
        for s in stored
        if s["envelope"]["type"] == "lineup.v1.app.result"
        and s["envelope"]["payload"]["call_id"] == call_id
    ]


async def app_result(client: Client, call_id: str, within: float = 20) -> dict[str, Any]:
    """The one ``app.result`` the agent gets for ``call_id``: waits for it on the
    AppServer's long-poll, then checks there is exactly one."""
    agent = client.pair.agent
    conversation = await chat_id(client)
    since = 0
    async with asyncio.timeout(within):
        while True:
            page = await agent.read(conversation, since, wait=5, limit=500)
            if any(
                s["envelope"]["type"] == "lineup.v1.app.result"
                and s["envelope"]["payload"]["call_id"] == call_id
                for s in page
            ):
                break
            if page:
                since = page[-1]["seq"]
    results = await app_results(client, call_id)
    assert len(results) == 1, results
    return results[0]
