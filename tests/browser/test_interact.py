"""Interact's IM in a real Chromium: log in, send, replies, reload, tabs, hostile Markdown,
and toasts that take their own place above the composer (they hide no row)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser.conftest import Screenshot
from tests.conftest import make_pair
from tests.runtime.xss_corpus import XSS_CORPUS
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch, rendered
from tests.support.browser_interactions import tool_call
from tests.support.webhost import Client, serving


async def log_in(page: Page, client: Client) -> None:
    await page.goto(client.url + "/")
    await expect(page).to_have_url(client.url + "/login")
    await page.fill("input[name=username]", client.pair.user_name)
    await page.fill("input[name=password]", "correct horse battery")
    await page.click("button[type=submit]")
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")


LINES = """(element) => {
  const range = document.createRange();
  range.selectNodeContents(element);
  return new Set([...range.getClientRects()].map((rect) => Math.round(rect.top))).size;
}"""
"""How many lines of text an element shows."""


@pytest.mark.headed_path
async def test_a_wrong_password_keeps_the_username_and_focuses_the_password(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.goto(client.url + "/")
    await expect(page).to_have_url(client.url + "/login")
    username = page.locator("input[name=username]")
    password = page.locator("input[name=password]")
    await expect(username).to_be_focused()  # a first visit starts with the username
    await username.fill(client.pair.user_name)
    await password.fill("not the password")
    await page.click("button[type=submit]")

    alert = page.get_by_role("alert")
    await expect(alert).to_have_text("Wrong username or password.")
    await page.set_viewport_size({"width": 375, "height": 740})
    assert await alert.evaluate(LINES) == 1  # one line, even on a phone
    await expect(username).to_have_value(client.pair.user_name)
    await expect(password).to_have_value("")
    await expect(password).to_be_focused()
    await expect(password).to_have_attribute("aria-invalid", "true")
    await expect(password).to_have_accessible_description("Wrong username or password.")
    assert client.pair.user_name not in page.url and "password" not in page.url
    await screenshot("wrong-password")

    # Only the password is typed again.
    await page.keyboard.type("correct horse battery")
    await page.keyboard.press("Enter")
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
    page_watch.assert_clean()


@pytest.mark.headed_path
async def test_log_in_send_see_local_echo_then_the_agents_reply(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    await expect(page.locator("#empty")).to_be_visible()
    await page.fill("#input", "Hello **agent**")
    await page.keyboard.press("Enter")
    mine = page.locator(".item.from-user").last
    await expect(mine.locator(".body strong")).to_have_text("agent")
    await expect(mine).to_have_attribute("data-state", "sent")
    await expect(mine.locator(".delivery")).to_have_text("Sent")
    conversation = (await client.runtime.store.conversations())[0].id
    await client.pair.agent.send_text(
        conversation, "Here is `code` and a [link](https://example.com)."
    )
    reply = page.locator(".item.from-agent").last
    await expect(reply.locator(".body code")).to_have_text("code")
    await expect(reply.locator(".body a")).to_have_attribute("rel", "noopener noreferrer nofollow")
    assert await page.locator("#input").input_value() == ""
    await screenshot("conversation")
    page_watch.assert_clean()


@pytest.mark.headed_path
async def test_offline_then_online_queues_and_then_sends(
    page: Page, client_own_server: Client, own_appserver: AppServerProcess, screenshot: Screenshot
) -> None:
    client = client_own_server
    await log_in(page, client)
    own_appserver.kill()
    await expect(page.locator("#connection")).to_have_attribute("data-state", "reconnecting")
    await page.fill("#input", "queued while offline")
    await page.keyboard.press("Enter")
    mine = page.locator(".item.from-user").last
    await expect(mine).to_have_attribute("data-state", "sending")
    await expect(mine.locator(".delivery")).to_have_text("Sending…")
    await screenshot("offline-sending")
    own_appserver.start()
    await expect(page.locator("#connection")).to_have_attribute(
        "data-state", "connected", timeout=20_000
    )
    await expect(mine).to_have_attribute("data-state", "sent", timeout=20_000)
    conversation = (await client.runtime.store.conversations())[0].id
    texts = [
        s["envelope"]["payload"]["text"]
        for s in await client.pair.agent.read_all(conversation)
        if s["envelope"]["type"] == "lineup.v1.message"
    ]
    assert texts == ["queued while offline"]
    await screenshot("back-online")


@pytest.mark.headed_path
async def test_reload_keeps_history_and_two_tabs_stay_in_sync(
    browser: Browser, page: Page, page_watch: PageWatch, client: Client
) -> None:
    await log_in(page, client)
    await page.fill("#input", "first")
    await page.keyboard.press("Enter")
    await expect(page.locator(".item.from-user")).to_have_count(1)
    second = await page.context.new_page()
    await second.goto(client.url + "/")
    await expect(second.locator(".item.from-user")).to_have_count(1)
    await second.fill("#input", "from the second tab")
    await second.keyboard.press("Enter")
    await expect(page.locator(".item.from-user .body").last).to_have_text("from the second tab")
    await page.reload()
    await expect(page.locator(".item.from-user")).to_have_count(2)
    await expect(page.locator(".item.from-user").first).to_have_attribute("data-state", "sent")
    await second.close()
    page_watch.assert_clean()


def _sendable(text: str) -> bool:
    """Lone surrogates cannot travel as UTF-8: the protocol refuses them upstream."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


WIRE_CORPUS = [markdown for _, markdown in XSS_CORPUS if _sendable(markdown)]


async def test_hostile_markdown_renders_inert(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.add_init_script(
        "window.__xssHits = []; window.__xss = (name) => window.__xssHits.push(name);"
    )
    await log_in(page, client)
    conversation = (await client.runtime.store.conversations())[0].id
    for markdown in WIRE_CORPUS:
        await client.pair.agent.send_text(conversation, markdown)
    await expect(page.locator(".item.from-agent")).to_have_count(len(WIRE_CORPUS), timeout=30_000)
    # Hover and click over everything that became a link: nothing may run or leave.
    for link in await page.locator(".item .body a").all():
        await link.hover()
    assert await page.evaluate("window.__xssHits") == []
    assert (
        await page.locator(".item .body script, .item .body img, .item .body iframe").count() == 0
    )
    assert not page_watch.blocked_requests, page_watch.blocked_requests
    await screenshot("hostile-markdown")
    page_watch.assert_clean()


async def test_a_runtime_restart_keeps_history_and_drains_the_outbox(
    page: Page, own_appserver: AppServerProcess, tmp_path: Path, screenshot: Screenshot
) -> None:
    pair = await make_pair(own_appserver)
    data_dir = tmp_path / "runtime"
    async with serving(own_appserver, pair, data_dir) as client:
        await log_in(page, client)
        await page.fill("#input", "before the restart")
        await page.keyboard.press("Enter")
        await expect(page.locator(".item.from-user").last).to_have_attribute("data-state", "sent")
        own_appserver.kill()
        await expect(page.locator("#connection")).to_have_attribute("data-state", "reconnecting")
        await page.fill("#input", "queued, then the Runtime stops")
        await page.keyboard.press("Enter")
        await expect(page.locator(".item.from-user").last).to_have_attribute(
            "data-state", "sending"
        )
    await expect(page.locator("#connection")).to_have_attribute("data-state", "shell")
    own_appserver.start()
    async with serving(own_appserver, pair, data_dir) as restarted:
        # The browser session lives in the Runtime's store: no new login.
        await page.goto(restarted.url + "/")
        mine = page.locator(".item.from-user")
        await expect(mine).to_have_count(2)
        await expect(mine.last).to_have_attribute("data-state", "sent", timeout=20_000)
        await screenshot("after-restart")
        conversation = (await restarted.runtime.store.conversations())[0].id
        texts = [
            s["envelope"]["payload"]["text"]
            for s in await pair.agent.read_all(conversation)
            if s["envelope"]["type"] == "lineup.v1.message"
        ]
    assert texts == ["before the restart", "queued, then the Runtime stops"]
    await pair.user.aclose()
    await pair.agent.aclose()


async def test_scrolling_back_pages_through_history(page: Page, client: Client) -> None:
    conversation = (await client.runtime.store.conversations())[0].id
    # The person's tabs showed English before: this tab's hello changes nothing, so no
    # new (hidden) inventory row joins the newest page of 50 rows.
    await client.runtime.locale_seen("en")
    for n in range(120):
        await client.pair.agent.send_text(conversation, f"old message {n}")
    await client.wait_for_items(conversation, 120)
    await log_in(page, client)
    agent_items = page.locator(".item.from-agent")
    await expect(agent_items).to_have_count(50)
    await expect(agent_items.first.locator(".body")).to_have_text("old message 70")
    older = page.locator("#older")
    await older.click()
    await expect(agent_items).to_have_count(100)
    await older.click()
    await expect(agent_items).to_have_count(120)
    await expect(agent_items.first.locator(".body")).to_have_text("old message 0")
    await expect(older).to_be_hidden()


BOXES = """
() => {
  const box = (el) => el.getBoundingClientRect().toJSON();
  const rows = [...document.querySelectorAll("#items > .item")];
  return {
    toasts: [...document.querySelectorAll("#toasts .toast")].map(box),
    timeline: box(document.getElementById("timeline")),
    composer: box(document.getElementById("composer")),
    app: box(document.querySelector(".app")),
    newest: box(rows[rows.length - 1]),
  };
}
"""


def overlaps(a: dict[str, float], b: dict[str, float]) -> bool:
    return (
        a["left"] < b["right"]
        and b["left"] < a["right"]
        and a["top"] < b["bottom"]
        and b["top"] < a["bottom"]
    )


async def test_toasts_sit_above_the_composer_and_hide_no_row(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.clock.install()  # the toasts go away after a while: not during this test
    await log_in(page, client)
    conversation = (await client.runtime.store.conversations())[0].id
    for n in range(12):
        await client.pair.agent.send_text(conversation, f"Line {n} of a long morning.")
    await expect(page.locator(".item.from-agent")).to_have_count(12)
    for n in range(3):
        await tool_call(client, "interact.notice", {"text": f"Report {n} is ready."}, f"n{n}")
    toasts = page.locator("#toasts .toast")
    await expect(toasts).to_have_count(3)
    await expect(page.locator(".item.interaction")).to_have_count(3)
    await toasts.last.evaluate("t => Promise.all(t.getAnimations().map((a) => a.finished))")
    now = await page.evaluate("Date.now()")
    await page.clock.pause_at(datetime.fromtimestamp(now / 1000 + 0.5, UTC))

    for width, height in ((1280, 800), (375, 667)):
        await page.set_viewport_size({"width": width, "height": height})
        await expect(toasts).to_have_count(3)
        await rendered(page)  # what the first frame at this size paints
        boxes = await page.evaluate(BOXES)
        for toast in boxes["toasts"]:
            # Their own place: between the timeline and the composer, in the right corner.
            assert not overlaps(toast, boxes["timeline"]), (width, toast)
            assert not overlaps(toast, boxes["composer"]), (width, toast)
            assert toast["bottom"] <= boxes["composer"]["top"]
            assert boxes["app"]["right"] - toast["right"] <= 24
        # The newest row is in full view above them (the timeline stayed at its end).
        newest, timeline = boxes["newest"], boxes["timeline"]
        assert timeline["top"] <= newest["top"] and newest["bottom"] <= timeline["bottom"] + 1
        await screenshot(f"toasts-{width}")
    page_watch.assert_clean()
