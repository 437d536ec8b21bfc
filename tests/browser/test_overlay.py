"""Questions over the app in front (spec 002 §7.3, §11 item 7), in a real Chromium:
a pending question of the focused app's sub-session shows as a card in an overlay
above the app, while its IM group holds a stand-in; switching away folds it and the
group shows the card and "waiting for your answer"; the person can answer in the IM
or back in the app, and the agent gets exactly one result either way."""

from __future__ import annotations

from playwright.async_api import Page, expect

from tests.browser.conftest import Screenshot
from tests.browser.test_subsessions import CHOICE, NOTES, choice, open_started
from tests.support.browser import PageWatch
from tests.support.browser_interactions import log_in, tool_call, tool_result
from tests.support.webhost import Client


async def test_a_question_shows_over_the_app_folds_away_and_is_answered_once(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    _, sid = await open_started(client, NOTES)
    await expect(page.locator("#app-area")).to_be_visible()
    overlay = page.locator("#app-overlay")
    await expect(overlay).to_be_hidden()
    group = page.locator(f'.items > .item.app-session[data-app-session-id="{sid}"]')
    await group.locator(".group-head").click()  # expanded, to see what it holds

    # The agent asks in the app's sub-session: the card is over the app.
    context = {"app_session_context": {"app_session_id": sid}}
    await tool_call(client, CHOICE, choice("Tea with the notes?"), "o1", **context)
    card = overlay.locator(".item.interaction")
    await expect(card).to_have_count(1)
    await expect(card.locator(".card-prompt")).to_have_text("Tea with the notes?")
    await expect(page.locator("#app-overlay-title")).to_have_text("The agent asks")
    assert await page.locator("#app-area-frame").evaluate("f => f.inert")
    # The group holds a stand-in, not a second card, and says it waits.
    await expect(group.locator(".item.interaction")).to_have_count(0)
    await expect(group.locator(".item.overlaid")).to_have_count(1)
    await expect(group.locator(".group-waiting")).to_be_visible()
    await screenshot("question-over-the-app")

    # Back to chat: the overlay folds, the card is answerable in the IM group.
    await page.get_by_role("button", name="Back to chat (send notes to background)").click()
    await expect(page.locator("#app-area")).to_be_hidden()
    in_group = group.locator(".item.interaction")
    await expect(in_group).to_have_count(1)
    await expect(in_group).to_have_attribute("data-interaction-state", "pending")
    await expect(group.locator(".group-waiting")).to_have_text("waiting for your answer")
    await screenshot("folded-into-the-group")

    # Back in the app, the question is over it again; it is answered there.
    await page.get_by_role("button", name="Bring to front: notes").click()
    await expect(card).to_have_count(1)
    await expect(group.locator(".item.interaction")).to_have_count(0)
    await card.get_by_role("radio", name="Tea").check()
    await card.get_by_role("button", name="Submit").click()
    await expect(overlay).to_be_hidden()
    answered = group.locator(".item.interaction")
    await expect(answered).to_have_attribute("data-interaction-state", "answered")
    await expect(answered.locator(".chip")).to_have_text(["Tea"])
    await expect(group.locator(".group-waiting")).to_be_hidden()
    assert not await page.locator("#app-area-frame").evaluate("f => f.inert")
    result = await tool_result(client, "o1")
    assert (result["status"], result["result"]) == ("completed", {"selected": ["tea"]})

    # "Later" folds it by hand: a bar says it waits; the IM answers it; once only.
    await tool_call(client, CHOICE, choice("Coffee later?"), "o2", **context)
    second = overlay.locator(".item.interaction")
    await expect(second.locator(".card-prompt")).to_have_text("Coffee later?")
    await page.get_by_role("button", name="Later").click()
    await expect(overlay).to_be_hidden()
    bar = page.locator("#app-overlay-bar")
    await expect(bar).to_have_text("1 question is waiting · Show")
    await expect(bar).to_be_focused()
    await screenshot("folded-by-hand")
    pending = group.locator(".item.interaction").filter(
        has=page.locator(".card-prompt", has_text="Coffee later?")
    )
    await pending.get_by_role("radio", name="Coffee").check()
    await pending.get_by_role("button", name="Submit").click()
    await expect(pending).to_have_attribute("data-interaction-state", "answered")
    await expect(bar).to_be_hidden()
    await expect(overlay).to_be_hidden()
    result = await tool_result(client, "o2")
    assert (result["status"], result["result"]) == ("completed", {"selected": ["coffee"]})
    page_watch.assert_clean()


async def test_the_stand_in_leads_to_the_card_and_a_reload_keeps_the_overlay(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.set_viewport_size({"width": 375, "height": 740})
    await log_in(page, client)
    _, sid = await open_started(client, NOTES)
    context = {"app_session_context": {"app_session_id": sid}}
    await tool_call(client, CHOICE, choice("Keep this page?"), "s1", **context)
    overlay = page.locator("#app-overlay")
    await expect(overlay.locator(".item.interaction")).to_have_count(1)
    await screenshot("overlay-375")

    await page.reload()
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
    await expect(overlay.locator(".card-prompt")).to_have_text("Keep this page?")
    await page.get_by_role("button", name="Later").click()
    await page.locator("#app-overlay-bar").click()
    await expect(overlay.locator(".card")).to_be_focused()

    group = page.locator(f'.items > .item.app-session[data-app-session-id="{sid}"]')
    await group.locator(".group-head").click()
    await group.get_by_role("button", name="Go to question").click()
    await expect(overlay.locator(".card")).to_be_focused()
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, width
    page_watch.assert_clean()
