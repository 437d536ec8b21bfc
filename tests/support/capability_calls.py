"""Capability calls from the agent's side, for the host and browser tests.

The agent posts a raw ``lineup.v1.app.call`` through the real AppServer and reads its
``lineup.v1.app.result`` back (long-poll, no sleeping)."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

from tests.support.browser_interactions import chat_id, result_of, results_of
from tests.support.webhost import Client

__all__ = ["app_call", "app_result", "app_results", "chat_id"]


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
    return await results_of(client, call_id, "app.result")


async def app_result(client: Client, call_id: str, within: float = 20) -> dict[str, Any]:
    return await result_of(client, call_id, "app.result", within)
