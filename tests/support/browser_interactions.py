"""Standard interactions from the agent's side, for the browser tests.

The agent starts an interaction by posting a raw ``lineup.v1.tool.call`` through the
real AppServer and learns the outcome by reading the conversation back (long-poll,
no sleeping). The Runtime runs with a ``ShiftClock``: real time plus an offset the
test moves, so expiry can be reached without waiting a minute, and the Runtime's
clock can disagree with the browser's.
"""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from typing import Any

from playwright.async_api import Locator, Page, expect

from lineup.runtime import Runtime
from tests.support.webhost import Client

PASSWORD = "correct horse battery"


class ShiftClock:
    """``datetime.now(UTC) + shift``; ``advance`` moves the Runtime's time forward."""

    def __init__(self, shift: timedelta = timedelta(0)) -> None:
        self.shift = shift

    def __call__(self) -> datetime:
        return datetime.now(UTC) + self.shift

    def advance(self, delta: timedelta) -> None:
        self.shift += delta


async def chat_id(client: Client) -> str:
    """The conversation the shell shows (the first one the Runtime knows)."""
    return (await client.runtime.store.conversations())[0].id


async def log_in(page: Page, client: Client) -> None:
    await page.goto(client.url + "/")
    await expect(page).to_have_url(client.url + "/login")
    await page.fill("input[name=username]", client.pair.user_name)
    await page.fill("input[name=password]", PASSWORD)
    await page.click("button[type=submit]")
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")


async def tool_call(
    client: Client, tool: str, arguments: dict[str, Any], call_id: str, **payload: Any
) -> None:
    """The agent asks: a raw ``tool.call`` for one of the interactive tools."""
    agent = client.pair.agent
    conversation = await chat_id(client)
    body = agent.envelope(
        conversation,
        kind="lineup.v1.tool.call",
        payload={
            "call_id": call_id,
            "tool": tool,
            "inventory_revision": client.runtime.inventory.revision,
            "arguments": arguments,
            **payload,
        },
    )
    response = await agent.post(conversation, body)
    assert response.status_code == 201, response.text


async def dismiss(client: Client, call_id: str, control_id: str) -> None:
    """The agent stops waiting: ``interaction.dismiss``."""
    agent = client.pair.agent
    conversation = await chat_id(client)
    body = agent.envelope(
        conversation,
        kind="lineup.v1.interaction.dismiss",
        payload={"control_id": control_id, "call_id": call_id},
    )
    response = await agent.post(conversation, body)
    assert response.status_code == 201, response.text


async def results_of(
    client: Client, call_id: str, kind: str = "tool.result"
) -> list[dict[str, Any]]:
    """Every ``lineup.v1.<kind>`` payload for ``call_id`` the agent can read."""
    stored = await client.pair.agent.read_all(await chat_id(client))
    return [
        s["envelope"]["payload"]
        for s in stored
        if s["envelope"]["type"] == f"lineup.v1.{kind}"
        and s["envelope"]["payload"]["call_id"] == call_id
    ]


async def result_of(
    client: Client, call_id: str, kind: str = "tool.result", within: float = 20
) -> dict[str, Any]:
    """The one ``lineup.v1.<kind>`` the agent gets for ``call_id``: waits for it on the
    AppServer's long-poll, then checks there is exactly one."""
    agent = client.pair.agent
    conversation = await chat_id(client)
    since = 0
    async with asyncio.timeout(within):
        while True:
            page = await agent.read(conversation, since, wait=5, limit=500)
            if any(
                s["envelope"]["type"] == f"lineup.v1.{kind}"
                and s["envelope"]["payload"]["call_id"] == call_id
                for s in page
            ):
                break
            if page:
                since = page[-1]["seq"]
    results = await results_of(client, call_id, kind)
    assert len(results) == 1, results
    return results[0]


async def tool_results(client: Client, call_id: str) -> list[dict[str, Any]]:
    return await results_of(client, call_id, "tool.result")


async def tool_result(client: Client, call_id: str, within: float = 20) -> dict[str, Any]:
    return await result_of(client, call_id, "tool.result", within)


class DraftWatch:
    """Every draft the Runtime was given, and a way to wait for one (no sleeping)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.texts: list[tuple[str, str]] = []
        self._changed = asyncio.Event()
        original = runtime.set_draft

        def set_draft(interaction_id: str, text: str) -> bool:
            kept = original(interaction_id, text)
            self.texts.append((interaction_id, text))
            self._changed.set()
            return kept

        runtime.set_draft = set_draft  # type: ignore[method-assign]

    async def until(self, interaction_id: str, text: str, within: float = 10) -> None:
        async with asyncio.timeout(within):
            while True:
                self._changed.clear()
                if self.runtime.drafts().get(interaction_id) == text:
                    return
                await self._changed.wait()


def card(page: Page, text: str) -> Locator:
    """The timeline row of the interaction whose prompt (or notice text) has ``text``."""
    return page.locator(".item.interaction").filter(has=page.locator(".card-prompt", has_text=text))
