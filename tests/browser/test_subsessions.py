"""App sub-sessions in the IM, in a real Chromium: an instance opened in the chat shows
as one collapsible group where it opened; the agent's questions that name its
sub-session are shown inside it (never as loose cards) and answered there; after the
instance closes the group is read-only history, and a question still pending in it
can still be answered (closing an app does not cancel its questions)."""

from __future__ import annotations

from typing import Any

from playwright.async_api import Locator, Page, expect

from tests.browser.conftest import Screenshot
from tests.support.browser import PageWatch
from tests.support.browser_interactions import (
    chat_id,
    log_in,
    tool_call,
    tool_result,
    tool_results,
)
from tests.support.webhost import Client

NOTES = "notes"
CHOICE = "interact.choice"


def choice(prompt: str) -> dict[str, Any]:
    return {
        "prompt": prompt,
        "options": [{"id": "tea", "label": "Tea"}, {"id": "coffee", "label": "Coffee"}],
    }


async def open_started(client: Client, app_scope: str) -> tuple[str, str]:
    """The Runtime opens an instance in the chat, the app reports it started: the
    instance id and its sub-session's."""
    conversation = await chat_id(client)
    record = await client.runtime.apps.open_instance(app_scope, conversation_id=conversation)
    assert (await client.runtime.apps.started(record.instance_id)).accepted
    app_session_id = await client.runtime.apps.app_session_id(record.instance_id)
    assert app_session_id is not None
    return record.instance_id, app_session_id


def card_in(group: Locator, page: Page, prompt: str) -> Locator:
    return group.locator(".item.interaction").filter(
        has=page.locator(".card-prompt", has_text=prompt)
    )


async def answer(page: Page, card: Locator, label: str) -> None:
    await card.get_by_role("radio", name=label).check()
    await card.get_by_role("button", name="Submit").click()
    await expect(card).to_have_attribute("data-interaction-state", "answered")
    await expect(card.locator(".chip")).to_have_text([label])


async def test_a_sub_session_is_one_group_answered_inside_and_kept_after_close(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    await client.pair.agent.send_text(await chat_id(client), "Let me open your notes.")
    await expect(page.locator(".item.from-agent")).to_have_count(1)
    instance_id, sid = await open_started(client, NOTES)
    await page.get_by_role("button", name="Back to chat (send notes to background)").click()
    await expect(page.locator("#app-area")).to_be_hidden()

    # One group row, after the message before it, running and empty.
    group = page.locator(f'.items > .item.app-session[data-app-session-id="{sid}"]')
    await expect(group).to_have_count(1)
    await expect(page.locator(".items > .item").last).to_have_attribute("data-app-session-id", sid)
    head = group.locator(".group-head")
    await expect(head.locator(".group-name")).to_have_text(NOTES)
    await expect(head.locator(".group-state")).to_have_text("running")
    await expect(head.locator(".group-count")).to_have_text("0 interactions")
    await expect(head.locator(".group-waiting")).to_be_hidden()

    # The agent asks twice in the sub-session and once in the chat itself.
    context = {"app_session_context": {"app_session_id": sid}}
    await tool_call(client, CHOICE, choice("Tea for the notes?"), "g1", **context)
    await tool_call(client, CHOICE, choice("Coffee later?"), "g2", **context)
    await tool_call(client, CHOICE, choice("Loose question?"), "l1")
    await expect(head.locator(".group-waiting")).to_have_text("waiting for your answer")
    await expect(head.locator(".group-count")).to_have_text("2 interactions")
    await expect(group).to_have_attribute("data-waiting", "true")
    loose = page.locator(".items > .item.interaction")
    await expect(loose).to_have_count(1)  # only the chat's own question is a loose card
    await expect(loose.locator(".card-prompt")).to_have_text("Loose question?")
    first = card_in(group, page, "Tea for the notes?")
    second = card_in(group, page, "Coffee later?")
    await expect(first).to_be_hidden()  # collapsed
    await screenshot("group-waiting-collapsed")

    # Expand it and answer the first question inside the group.
    await head.click()
    await expect(first).to_be_visible()
    await expect(first).to_have_attribute("data-interaction-state", "pending")
    await answer(page, first, "Tea")
    assert await tool_result(client, "g1") == {
        "call_id": "g1",
        "status": "completed",
        "result": {"selected": ["tea"]},
    }
    await expect(head.locator(".group-waiting")).to_have_text("waiting for your answer")
    await screenshot("group-expanded-one-answered")

    # The instance closes: the group is read-only history; its question stays open.
    await page.get_by_role("button", name="Close notes").click()
    await expect(page.locator("#dock")).to_be_hidden()
    record = client.runtime.apps.record(instance_id)
    assert record is not None and record.state == "stopped"
    await expect(head.locator(".group-state")).to_have_text("closed · read-only")
    await expect(group).to_have_attribute("data-session-state", "closed")
    await expect(head.locator(".group-waiting")).to_be_visible()
    await expect(first).to_have_attribute("data-interaction-state", "answered")
    await expect(second).to_have_attribute("data-interaction-state", "pending")
    await screenshot("group-closed-question-pending")
    await answer(page, second, "Coffee")
    await expect(head.locator(".group-waiting")).to_be_hidden()
    await expect(group).to_have_attribute("data-waiting", "false")
    result = await tool_result(client, "g2")
    assert (result["status"], result["result"]) == ("completed", {"selected": ["coffee"]})
    assert len(await tool_results(client, "g1")) == 1
    await screenshot("group-closed-all-answered")

    # A reload shows the same: one closed group, its two answered cards, one loose card.
    await page.reload()
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
    await expect(group.locator(".group-state")).to_have_text("closed · read-only")
    await expect(group.locator(".group-count")).to_have_text("2 interactions")
    await expect(page.locator(".items > .item.interaction")).to_have_count(1)
    await group.locator(".group-head").click()
    await expect(group.locator(".item.interaction")).to_have_count(2)
    for prompt in ("Tea for the notes?", "Coffee later?"):
        await expect(card_in(group, page, prompt)).to_have_attribute(
            "data-interaction-state", "answered"
        )
    page_watch.assert_clean()


async def test_continue_opens_new_work_beside_the_closed_group_at_375px(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.set_viewport_size({"width": 375, "height": 740})
    await log_in(page, client)
    old_instance, old_sid = await open_started(client, NOTES)
    context = {"app_session_context": {"app_session_id": old_sid}}
    await tool_call(client, CHOICE, choice("Keep the draft?"), "k1", **context)
    old = page.locator(f'.items > .item.app-session[data-app-session-id="{old_sid}"]')
    await expect(old.locator(".group-waiting")).to_be_visible()
    await expect(old.locator(".group-continue")).to_be_hidden()  # running: nothing to continue
    await page.get_by_role("button", name="Close notes").click()
    await expect(old).to_have_attribute("data-session-state", "closed")

    continue_button = old.get_by_role("button", name="Continue this notes work")
    await expect(continue_button).to_be_visible()
    box = await continue_button.bounding_box()
    assert box is not None and box["x"] + box["width"] <= 375 and box["height"] >= 36
    await screenshot("closed-group-continue-375")
    await continue_button.click()

    groups = page.locator(".items > .item.app-session")
    await expect(groups).to_have_count(2)
    new = groups.last
    await expect(new.locator(".group-state")).to_have_text("running")
    await expect(new.locator(".group-continues")).to_have_text("Continues earlier work")
    await expect(new.locator(".group-count")).to_have_text("0 interactions")
    await expect(new.locator(".group-continue")).to_be_hidden()
    new_sid = await new.get_attribute("data-app-session-id")
    assert new_sid not in (None, old_sid)
    # The old question stays in the old, closed group: not revived in the new one.
    await expect(old.locator(".group-count")).to_have_text("1 interaction")
    await expect(old.locator(".group-waiting")).to_be_visible()
    front = page.locator("#dock .dock-item.focused")
    await expect(front).to_have_count(1)
    assert await front.get_attribute("data-instance-id") != old_instance
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, width  # nothing sideways at phone width
    await page.get_by_role("button", name="Back to chat (send notes to background)").click()
    await new.scroll_into_view_if_needed()
    await screenshot("continued-group-375")
    page_watch.assert_clean()


async def test_continue_twice_and_from_a_second_tab_gives_one_new_instance(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    other = await page.context.new_page()
    await other.goto(client.url + "/")
    await expect(other.locator("#connection")).to_have_attribute("data-state", "connected")
    old_instance, old_sid = await open_started(client, NOTES)
    assert (await client.runtime.apps.request_close(old_instance, actor="user")).accepted
    groups = f'.items > .item.app-session[data-app-session-id="{old_sid}"]'
    for tab in (page, other):
        await expect(tab.locator(groups)).to_have_attribute("data-session-state", "closed")
    button = "Continue this notes work"
    await page.locator(groups).get_by_role("button", name=button).click()
    await expect(page.locator(".items > .item.app-session")).to_have_count(2)
    # The same ended work, continued again: from the other tab, then here once more.
    await other.locator(groups).get_by_role("button", name=button).click()
    await page.get_by_role("button", name="Back to chat (send notes to background)").click()
    await page.locator(groups).get_by_role("button", name=button).click()
    for tab in (page, other):
        await expect(tab.locator(".items > .item.app-session")).to_have_count(2)
        await expect(tab.locator("#dock .dock-item")).to_have_count(1)
        await expect(tab.locator("#dock .dock-item.focused")).to_have_count(1)
    live = [r for r in client.runtime.apps.instances().live() if r.app_scope == NOTES]
    assert [r.parent_instance_id for r in live] == [old_instance]
    await screenshot("continued-once")
    await other.close()
    page_watch.assert_clean()
