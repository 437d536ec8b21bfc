"""Surfaces an agent opens (spec 000 §4), in the real shell, in Chromium: ``ui.open``
shows the app's surface as a card in the conversation (bridge only, no MiniApp SDK);
``ui.patch`` reaches the running frame's ``onState`` without reloading it and can
carry no code; the person's events reach the agent as ``ui.event``; a surface that
is not available shows a safe notice and the agent gets ``surface_unavailable``; a
second ``ui.open`` of the same instance replaces the first; closing it from the card
sends the agent ``close``."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.conftest import Screenshot
from tests.browser.test_app_surfaces import BUNDLE
from tests.support.browser import PageWatch
from tests.support.browser_interactions import chat_id, log_in
from tests.support.webhost import Client

APP_ID = "dev.lineup.test-app"
RELOAD_LIMIT = 3  # surface_host.js: remounts allowed in 30 s


async def agent_sends(client: Client, kind: str, payload: dict[str, Any]) -> int:
    conversation = await chat_id(client)
    body = client.pair.agent.envelope(conversation, kind=f"lineup.v1.{kind}", payload=payload)
    response = await client.pair.agent.post(conversation, body)
    return int(response.status_code)


def open_payload(instance_id: str, state: dict[str, Any], **app: Any) -> dict[str, Any]:
    target = {"id": APP_ID, "version": "1.0.0", "surface": "card", "name": "Test card", **app}
    return {"instance_id": instance_id, "app": target, "state": state}


async def agent_got(
    client: Client, kind: str, fits: Callable[[list[dict[str, Any]]], bool] = bool
) -> list[dict[str, Any]]:
    """Payloads of ``kind`` the agent can read, once ``fits`` holds for them."""
    agent = client.pair.agent
    conversation = await chat_id(client)
    async with asyncio.timeout(20):
        while True:
            stored = await agent.read_all(conversation)
            found = [
                s["envelope"]["payload"]
                for s in stored
                if s["envelope"]["type"] == f"lineup.v1.{kind}"
            ]
            if fits(found):
                return found
            await agent.read(conversation, stored[-1]["seq"] if stored else 0, wait=5)


async def test_an_agent_surface_opens_patches_sends_events_and_closes(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)

    assert await agent_sends(client, "ui.open", open_payload("card-1", {"text": "hello"})) == 201
    card = page.locator('.item.surface[data-instance-id="card-1"]')
    await expect(card.locator(".surface-name")).to_have_text("Test card")
    frame = card.frame_locator("iframe")
    await expect(frame.locator("#text")).to_have_text("hello")
    assert await frame.locator("body").get_attribute("data-has-app") == "false"  # bridge only
    assert await card.locator("iframe").get_attribute("sandbox") == "allow-scripts"

    # A patch reaches the running frame (not a reload: the update count goes on).
    assert (
        await agent_sends(
            client, "ui.patch", {"instance_id": "card-1", "state": {"text": "patched"}}
        )
        == 201
    )
    await expect(frame.locator("#text")).to_have_text("patched")
    await expect(frame.locator("#updates")).to_have_text("2")
    # A patch can never carry code: the AppServer refuses it and nothing changes.
    sneaky = {"instance_id": "card-1", "state": {"text": "x"}, "html": "<b>x</b>"}
    assert await agent_sends(client, "ui.patch", sneaky) >= 400
    await screenshot("agent-surface-patched")

    # The person's event reaches the agent as ui.event.
    await frame.get_by_role("button", name="Ping").click()
    [event] = await agent_got(client, "ui.event")
    assert event == {"instance_id": "card-1", "event": "ping", "data": {"n": 1}}

    # Not available: a safe notice, and one error to the agent naming the envelope.
    assert await agent_sends(client, "ui.open", open_payload("card-2", {}, version="9.9.9")) == 201
    missing = page.locator('.item.surface[data-instance-id="card-2"]')
    await expect(missing.locator(".surface-notice-text")).to_have_text(
        "This surface is not available here."
    )
    await expect(missing.locator("iframe")).to_have_count(0)
    [error] = await agent_got(client, "error")
    assert error["code"] == "surface_unavailable"

    # A second ui.open of card-1 replaces the first.
    assert await agent_sends(client, "ui.open", open_payload("card-1", {"text": "again"})) == 201
    cards = page.locator('.item.surface[data-instance-id="card-1"]')
    await expect(cards).to_have_count(2)
    await expect(cards.first).to_have_attribute("data-surface-status", "replaced")
    await expect(cards.first.locator("iframe")).to_have_count(0)
    newest = cards.last
    await expect(newest.frame_locator("iframe").locator("#text")).to_have_text("again")

    # Closed from the card: the agent hears `close`, the frame goes.
    await newest.get_by_role("button", name="Close Test card").click()
    await expect(newest).to_have_attribute("data-surface-status", "closed")
    await expect(newest.locator("iframe")).to_have_count(0)
    events = await agent_got(client, "ui.event", lambda found: len(found) == 2)
    assert events[-1] == {"instance_id": "card-1", "event": "close"}  # empty data omitted
    assert client.web.surfaces.mounts() == []
    await screenshot("agent-surfaces-closed")
    page_watch.assert_clean()


LOOP_APP = Path(__file__).parents[1] / "support" / "apps" / "loop-app"
STOPPED_TEXT = "This app keeps reloading itself, so it was stopped."


@pytest.mark.parametrize("mode", ["href", "replace", "meta"])
async def test_a_surface_that_keeps_navigating_itself_is_stopped_once_and_can_be_reopened(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot, mode: str
) -> None:
    await client.runtime.registry.install_bundle(LOOP_APP, enable=True)
    await log_in(page, client)
    history = await page.evaluate("() => history.length")
    target = {"id": "dev.lineup.loop-app", "version": "1.0.0", "surface": "card"}
    payload = {"instance_id": "loop-1", "app": target, "state": {"mode": mode}}
    assert await agent_sends(client, "ui.open", payload) == 201
    card = page.locator('.item.surface[data-instance-id="loop-1"]')

    # Mounted once and afresh RELOAD_LIMIT times, then stopped: the card says so and
    # offers Reopen; each run told the agent "started", and the agent heard one error.
    await expect(card).to_have_attribute("data-stopped", "true")
    await expect(card.locator(".surface-notice-text")).to_have_text(STOPPED_TEXT)
    await expect(card.get_by_role("button", name="Reopen")).to_be_visible()
    await expect(card.locator("iframe")).to_have_count(0)
    started = await agent_got(client, "ui.event", lambda found: len(found) >= 1 + RELOAD_LIMIT)
    assert len(started) == 1 + RELOAD_LIMIT
    [error] = await agent_got(client, "error")
    stored = await client.pair.agent.read_all(await chat_id(client))
    (open_id,) = [
        s["envelope"]["id"] for s in stored if s["envelope"]["type"] == "lineup.v1.ui.open"
    ]
    assert error["code"] == "surface_reloading"
    assert error["ref_id"] == open_id
    # Titled by the app's own name (the agent gave none); the app id is the tooltip.
    await expect(card.locator(".surface-name")).to_have_text("Loop App")
    assert await card.locator(".surface-name").get_attribute("title") == (
        "dev.lineup.loop-app 1.0.0"
    )
    await expect(card.locator(".surface-status")).to_have_text("")  # open: no status
    await screenshot(f"surface-keeps-reloading-{mode}")

    # Reopen mounts it again: it loops again and is stopped again; the agent is not
    # told twice.
    await card.get_by_role("button", name="Reopen").click()
    await expect(card).to_have_attribute("data-stopped", "false")
    await expect(card).to_have_attribute("data-stopped", "true")
    # The agent fixes it; Reopen now shows it steady.
    patch = {"instance_id": "loop-1", "state": {"mode": "steady"}}
    assert await agent_sends(client, "ui.patch", patch) == 201
    await card.get_by_role("button", name="Reopen").click()
    await expect(card.frame_locator("iframe").locator("#mode")).to_have_text("steady")
    runs = 2 * (1 + RELOAD_LIMIT) + 1
    started = await agent_got(client, "ui.event", lambda found: len(found) >= runs)
    assert len(started) == runs  # bounded: every run, and no more
    errors = await agent_got(client, "error")
    assert [e["code"] for e in errors] == ["surface_reloading"]
    await expect(card.locator(".surface-notice")).to_be_hidden()

    # The shell's remounts add no session history. The frame's own cross-document
    # navigation after its load does (Chromium's joint session history), one per run
    # that left; replace and a meta refresh add none.
    left = 2 * (1 + RELOAD_LIMIT)
    assert await page.evaluate("() => history.length") == history + (left if mode == "href" else 0)
    # The only complaints are the shell's CSP blocking each of its attempts to leave.
    assert all("'http://loop.attacker.test/'" in e for e in page_watch.console_errors)
    page_watch.console_errors.clear()
    page_watch.assert_clean()


async def test_a_card_says_its_status_once_and_what_replaced_it(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)
    assert await agent_sends(client, "ui.open", open_payload("card-1", {"text": "one"})) == 201
    cards = page.locator('.item.surface[data-instance-id="card-1"]')
    await expect(cards.frame_locator("iframe").locator("#text")).to_have_text("one")
    assert await agent_sends(client, "ui.open", open_payload("card-1", {"text": "two"})) == 201
    await expect(cards).to_have_count(2)
    first = cards.first
    await expect(first).to_have_attribute("data-surface-status", "replaced")
    await expect(first.locator(".surface-status")).to_have_text("Replaced")  # same version
    await expect(first.locator(".surface-notice")).to_be_hidden()
    await expect(cards.last.frame_locator("iframe").locator("#text")).to_have_text("two")
    await cards.last.get_by_role("button", name="Close Test card").click()
    await expect(cards.last.locator(".surface-status")).to_have_text("Closed")
    await expect(cards.last.locator(".surface-notice")).to_be_hidden()
    await expect(page.locator(".item.surface").get_by_text("Closed", exact=True)).to_have_count(1)
    await screenshot("surface-status-once")
    page_watch.assert_clean()
