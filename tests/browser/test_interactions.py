"""The standard interactions in a real Chromium: an agent asks through the real
AppServer (raw ``tool.call`` envelopes), the person answers on the cards in the
Interact timeline, and the agent reads exactly one ``tool.result`` back."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from playwright.async_api import Browser, Page, expect

from tests.browser.conftest import Screenshot
from tests.support.browser import PageWatch, new_watched_page, save_screenshot
from tests.support.browser_interactions import (
    DraftWatch,
    ShiftClock,
    card,
    chat_id,
    dismiss,
    log_in,
    tool_call,
    tool_result,
)
from tests.support.webhost import Client

CHOICE = "interact.choice"
CONFIRM = "interact.confirm"
INPUT = "interact.input"
NOTICE = "interact.notice"
CONTROLS = "input, textarea, button"


@pytest.mark.headed_path
async def test_each_interaction_is_answered_in_the_page(
    page: Page, page_watch: PageWatch, ui: Client, screenshot: Screenshot
) -> None:
    await page.clock.install()
    await log_in(page, ui)

    # notice: a read-only card, a toast that goes away by itself, "accepted" at once
    await tool_call(
        ui,
        NOTICE,
        {"text": "Your report is ready.", "title": "Report", "level": "success"},
        "n1",
    )
    notice = card(page, "Your report is ready.")
    await expect(notice).to_have_attribute("data-interaction-state", "accepted")
    await expect(notice.locator(".card-head")).to_have_text("Report")
    assert await notice.locator(CONTROLS).count() == 0
    toast = page.locator("#toasts .toast")
    await expect(toast).to_have_count(1)
    await expect(toast).to_have_attribute("role", "status")
    await expect(toast).to_contain_text("Your report is ready.")
    result = await tool_result(ui, "n1")
    assert result["status"] == "accepted"
    assert result.get("result", {}) == {}
    await page.clock.fast_forward(7000)
    await expect(toast).to_have_count(0)
    await expect(notice).to_be_visible()  # the card is the record

    # choice, with the keyboard only: arrows pick, Tab reaches Submit, Enter sends
    await tool_call(
        ui,
        CHOICE,
        {
            "prompt": "Tea or coffee?",
            "options": [
                {"id": "tea", "label": "Tea"},
                {"id": "coffee", "label": "Coffee", "description": "Freshly ground"},
                {"id": "water", "label": "Water"},
            ],
        },
        "c1",
    )
    choice = card(page, "Tea or coffee?")
    await expect(choice).to_have_attribute("data-interaction-state", "pending")
    countdown = choice.locator(".countdown")
    await expect(countdown).to_have_text(re.compile(r"Expires in 1[45] minutes"))
    # The countdown ticks by changing its own text: the row is not rebuilt.
    ticking = await countdown.element_handle()
    await page.clock.fast_forward("02:00")
    await expect(countdown).to_have_text(re.compile(r"Expires in 1[23] minutes"))
    assert await ticking.evaluate("(element) => element.isConnected")
    group = choice.get_by_role("radiogroup", name="Tea or coffee?")
    await expect(group.get_by_role("radio")).to_have_count(3)
    submit = choice.get_by_role("button", name="Submit")
    await expect(submit).to_be_disabled()
    await group.get_by_role("radio", name="Tea").focus()
    await page.keyboard.press("ArrowDown")
    await expect(group.get_by_role("radio", name="Coffee Freshly ground")).to_be_checked()
    await expect(submit).to_be_enabled()
    await page.keyboard.press("Tab")
    await expect(submit).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(choice).to_have_attribute("data-interaction-state", "answered")
    await expect(choice.locator(".chip")).to_have_text(["Coffee"])
    await expect(choice.locator(".final")).to_have_text("Answered")
    assert await choice.locator(CONTROLS).count() == 0
    assert await tool_result(ui, "c1") == {
        "call_id": "c1",
        "status": "completed",
        "result": {"selected": ["coffee"]},
    }

    # confirm: a destructive action has a destructive button
    await tool_call(
        ui,
        CONFIRM,
        {
            "prompt": "Delete the draft report?",
            "confirm_label": "Delete",
            "cancel_label": "Keep it",
            "danger": True,
        },
        "k1",
    )
    confirm = card(page, "Delete the draft report?")
    delete = confirm.get_by_role("button", name="Delete")
    await expect(delete).to_have_class(re.compile(r"\bdanger\b"))
    await expect(confirm.get_by_role("button", name="Keep it")).to_be_enabled()
    await delete.click()
    await expect(confirm).to_have_attribute("data-interaction-state", "answered")
    await expect(confirm.locator(".chip")).to_have_text("Yes · Delete")
    assert await confirm.locator(CONTROLS).count() == 0
    assert await tool_result(ui, "k1") == {
        "call_id": "k1",
        "status": "completed",
        "result": {"confirmed": True},
    }

    # input: single line, Enter submits
    await tool_call(
        ui,
        INPUT,
        {"prompt": "What should the report be called?", "placeholder": "A title", "max_length": 40},
        "i1",
    )
    asked = card(page, "What should the report be called?")
    field = asked.get_by_role("textbox", name="What should the report be called?")
    await expect(field).to_have_attribute("placeholder", "A title")
    await field.fill("Quarterly numbers")
    await expect(asked.locator(".counter")).to_have_text("17 / 40")
    await field.press("Enter")
    await expect(asked).to_have_attribute("data-interaction-state", "answered")
    await expect(asked.locator(".answer-text")).to_have_text("Quarterly numbers")
    assert await asked.locator(CONTROLS).count() == 0
    assert await tool_result(ui, "i1") == {
        "call_id": "i1",
        "status": "completed",
        "result": {"text": "Quarterly numbers"},
    }
    await screenshot("answered")
    await page.reload()  # a notice already shown is a card, not a toast, after a reload
    await expect(card(page, "Your report is ready.")).to_be_visible()
    await expect(page.locator("#toasts .toast")).to_have_count(0)
    page_watch.assert_clean()


async def test_multiple_choice_needs_between_min_and_max(
    page: Page, page_watch: PageWatch, ui: Client
) -> None:
    await log_in(page, ui)
    await tool_call(
        ui,
        CHOICE,
        {
            "prompt": "Which days work?",
            "options": [{"id": f"d{n}", "label": day} for n, day in enumerate("MTWRF")],
            "multiple": True,
            "min_selected": 2,
            "max_selected": 3,
        },
        "m1",
    )
    asked = card(page, "Which days work?")
    boxes = asked.get_by_role("group", name="Which days work?").get_by_role("checkbox")
    await expect(boxes).to_have_count(5)
    submit = asked.get_by_role("button", name="Submit")
    hint = asked.locator(".card-hint")
    await expect(submit).to_be_disabled()
    await expect(hint).to_have_text("Choose 2 to 3 · 0 selected")
    await boxes.nth(4).check()
    await expect(submit).to_be_disabled()
    await boxes.nth(1).press("Space")  # the keyboard works too
    await expect(boxes.nth(1)).to_be_checked()
    await expect(submit).to_be_enabled()
    await boxes.nth(0).check()
    await expect(submit).to_be_enabled()
    await boxes.nth(2).check()
    await expect(hint).to_have_text("Choose 2 to 3 · 4 selected")
    await expect(hint).to_have_class(re.compile(r"\binvalid\b"))
    await expect(submit).to_be_disabled()
    await boxes.nth(0).uncheck()
    await expect(submit).to_be_enabled()
    await submit.click()
    await expect(asked).to_have_attribute("data-interaction-state", "answered")
    await expect(asked.locator(".chip")).to_have_text(["T", "W", "F"])
    assert await tool_result(ui, "m1") == {
        "call_id": "m1",
        "status": "completed",
        "result": {"selected": ["d1", "d2", "d4"]},  # in the agent's order
    }
    page_watch.assert_clean()


async def test_a_refused_answer_is_shown_on_the_card_which_stays_open(
    page: Page, page_watch: PageWatch, ui: Client, screenshot: Screenshot
) -> None:
    await log_in(page, ui)
    await tool_call(
        ui,
        INPUT,
        {"prompt": "Your 4-digit PIN hint?", "pattern": "[0-9]{4}", "min_length": 4},
        "p1",
    )
    asked = card(page, "Your 4-digit PIN hint?")
    field = asked.get_by_role("textbox")
    submit = asked.get_by_role("button", name="Submit")
    await field.fill("12")
    await expect(submit).to_be_disabled()  # too short: the length is checked here
    await field.fill("12ab")
    # The pattern is only a hint here; the Runtime decides.
    await expect(asked.locator(".card-hint")).to_have_text(
        "This does not look like the requested format"
    )
    await expect(field).to_have_attribute("aria-invalid", "true")
    await submit.click()
    alert = asked.get_by_role("alert")
    await expect(alert).to_have_text("That answer does not fit the question.")
    await expect(asked).to_have_attribute("data-interaction-state", "pending")
    await expect(field).to_be_enabled()
    await expect(field).to_have_value("12ab")
    await screenshot("refused")
    await field.fill("1234")
    await field.press("Enter")
    await expect(asked).to_have_attribute("data-interaction-state", "answered")
    await expect(alert).to_have_count(0)
    assert await tool_result(ui, "p1") == {
        "call_id": "p1",
        "status": "completed",
        "result": {"text": "1234"},
    }
    page_watch.assert_clean()


async def test_expiry_is_shown_and_enforced(
    browser: Browser, page: Page, page_watch: PageWatch, ui: Client, clock: ShiftClock
) -> None:
    await page.clock.install()
    await log_in(page, ui)
    context_b, other, other_watch = await new_watched_page(browser)
    try:
        await log_in(other, ui)
        await tool_call(
            ui,
            CHOICE,
            {
                "prompt": "Ship it today?",
                "options": [{"id": "yes", "label": "Yes"}, {"id": "no", "label": "No"}],
                "expires_in_ms": 60_000,
            },
            "late",
        )
        await tool_call(
            ui, CONFIRM, {"prompt": "Restart the build?", "expires_in_ms": 60_000}, "timeout"
        )
        for tab in (page, other):
            for prompt in ("Ship it today?", "Restart the build?"):
                shown = card(tab, prompt)
                await expect(shown).to_have_attribute("data-interaction-state", "pending")
                await expect(shown.locator(".countdown")).to_have_text(
                    re.compile(r"Expires in (1 minute|\d\d? seconds?)")
                )

        # This tab's own countdown runs out: the cards close by themselves.
        await page.clock.fast_forward("01:01")
        for prompt in ("Ship it today?", "Restart the build?"):
            shown = card(page, prompt)
            await expect(shown).to_have_attribute("data-interaction-state", "expired")
            await expect(shown.locator(".final")).to_have_text("Expired")
            assert await shown.locator(CONTROLS).count() == 0

        # The Runtime's time is up too, before its timer fired; the other tab still
        # shows the question open and answers it: refused, and the agent hears "expired".
        clock.advance(timedelta(seconds=61))
        stale = card(other, "Ship it today?")
        await expect(stale).to_have_attribute("data-interaction-state", "pending")
        await stale.get_by_role("radio", name="Yes").check()
        await stale.get_by_role("button", name="Submit").click()
        await expect(stale.get_by_role("alert")).to_have_text("This question has expired.")
        await expect(stale).to_have_attribute("data-interaction-state", "expired")
        assert await stale.locator(CONTROLS).count() == 0
        await save_screenshot(other, "test_expiry_is_shown_and_enforced", "stale-tab")
        late = await tool_result(ui, "late")
        assert (late["status"], late["error"]["code"]) == ("expired", "interaction_expired")

        # The Runtime's timer fires: every tab shows it, the agent hears it.
        assert await ui.runtime.expire_due() == 1
        timed_out = card(other, "Restart the build?")
        await expect(timed_out).to_have_attribute("data-interaction-state", "expired")
        await expect(timed_out.locator(".final")).to_have_text("Expired")
        assert await timed_out.locator(CONTROLS).count() == 0
        result = await tool_result(ui, "timeout")
        assert (result["status"], result["error"]["code"]) == ("expired", "interaction_expired")
        other_watch.assert_clean()
    finally:
        await context_b.close()
    page_watch.assert_clean()


async def test_an_answer_in_one_tab_closes_the_card_in_the_other(
    page: Page, page_watch: PageWatch, ui: Client
) -> None:
    await log_in(page, ui)
    other = await page.context.new_page()
    await other.goto(ui.url + "/")
    await expect(other.locator("#connection")).to_have_attribute("data-state", "connected")
    await tool_call(ui, CONFIRM, {"prompt": "Send the invoice now?"}, "two")
    here, there = card(page, "Send the invoice now?"), card(other, "Send the invoice now?")
    await expect(there.get_by_role("button", name="Confirm")).to_be_enabled()
    await here.get_by_role("button", name="Cancel").click()
    await expect(here).to_have_attribute("data-interaction-state", "answered")
    await expect(there).to_have_attribute("data-interaction-state", "answered")
    await expect(there.locator(".chip")).to_have_text("No · Cancel")
    assert await there.locator(CONTROLS).count() == 0
    await expect(other.locator("#announcer")).to_have_text("Question answered.")
    assert await tool_result(ui, "two") == {
        "call_id": "two",
        "status": "completed",
        "result": {"confirmed": False},
    }
    await other.close()
    page_watch.assert_clean()


async def test_reload_shows_the_question_again_with_its_expiry_and_draft(
    page: Page, page_watch: PageWatch, ui: Client, clock: ShiftClock
) -> None:
    # The Runtime's clock is two hours behind the browser's: time left must still be
    # counted on the Runtime's clock.
    clock.advance(timedelta(hours=-2))
    drafts = DraftWatch(ui.runtime)
    await log_in(page, ui)
    await tool_call(
        ui,
        INPUT,
        {"prompt": "Anything to add?", "multiline": True, "expires_in_ms": 900_000},
        "r1",
    )
    asked = card(page, "Anything to add?")
    countdown = asked.locator(".countdown")
    await expect(countdown).to_have_text(re.compile(r"Expires in 1[45] minutes"))
    (record,) = [
        i.interaction
        for i in await ui.runtime.store.timeline(await chat_id(ui), limit=50)
        if i.interaction is not None
    ]
    await expect(countdown).to_have_attribute("data-expires-at", str(record.expires_at))
    field = asked.get_by_role("textbox", name="Anything to add?")
    await field.fill("half-typed")
    await drafts.until(record.id, "half-typed")  # sent on its own, after a pause

    await page.reload()
    asked = card(page, "Anything to add?")
    await expect(asked).to_have_attribute("data-interaction-state", "pending")
    await expect(asked.locator(".countdown")).to_have_attribute(
        "data-expires-at", str(record.expires_at)
    )
    await expect(asked.locator(".countdown")).to_have_text(re.compile(r"Expires in 1[45] minutes"))
    field = asked.get_by_role("textbox", name="Anything to add?")
    await expect(field).to_have_value("half-typed")
    await field.press("End")
    await field.press_sequentially(" answer")
    await field.press("Control+Enter")
    await expect(asked).to_have_attribute("data-interaction-state", "answered")
    assert await tool_result(ui, "r1") == {
        "call_id": "r1",
        "status": "completed",
        "result": {"text": "half-typed answer"},
    }
    assert record.id not in ui.runtime.drafts()
    page_watch.assert_clean()


async def test_timeline_with_every_kind_of_card(
    page: Page, page_watch: PageWatch, ui: Client, clock: ShiftClock, screenshot: Screenshot
) -> None:
    await page.set_viewport_size({"width": 1280, "height": 2400})
    await log_in(page, ui)
    conversation = await chat_id(ui)
    agent = ui.pair.agent
    await page.fill("#input", "Can you plan the team offsite?")
    await page.keyboard.press("Enter")
    await expect(page.locator(".item.from-user")).to_have_attribute("data-state", "sent")
    await agent.send_text(conversation, "Sure! A few questions first.")
    await tool_call(
        ui,
        CHOICE,
        {
            "prompt": "Was the last offsite useful?",
            "options": [{"id": "y", "label": "Yes"}, {"id": "n", "label": "No"}],
            "expires_in_ms": 60_000,
        },
        "old",
    )
    await tool_call(
        ui,
        CHOICE,
        {
            "prompt": "Which city?",
            "options": [
                {"id": "lis", "label": "Lisbon"},
                {"id": "ber", "label": "Berlin"},
                {"id": "kra", "label": "Kraków"},
            ],
        },
        "city",
    )
    await card(page, "Which city?").get_by_role("radio", name="Lisbon").check()
    await card(page, "Which city?").get_by_role("button", name="Submit").click()
    await expect(card(page, "Which city?")).to_have_attribute("data-interaction-state", "answered")
    await tool_call(
        ui,
        NOTICE,
        {
            "title": "Hotel held",
            "text": "Hotel Avenida holds 12 rooms until Friday.",
            "toast": False,
        },
        "held",
    )
    await tool_call(
        ui,
        CHOICE,
        {
            "prompt": "Which activities should we book? Pick one or two.",
            "options": [
                {"id": "surf", "label": "Surf lesson", "description": "Half a day, all levels"},
                {"id": "food", "label": "Food tour", "description": "Alfama, 3 hours"},
                {"id": "sail", "label": "Sailing on the Tagus"},
                {"id": "none", "label": "Nothing, just talks"},
            ],
            "multiple": True,
            "max_selected": 2,
            "expires_in_ms": 3 * 3_600_000,
        },
        "fun",
    )
    await card(page, "Which activities").get_by_role("checkbox", name="Food tour").check()
    await tool_call(
        ui,
        CONFIRM,
        {"prompt": "Also book a dinner for 12 on Thursday?", "confirm_label": "Book dinner"},
        "dinner",
    )
    await card(page, "dinner for 12").get_by_role("button", name="Cancel").click()
    await expect(card(page, "dinner for 12")).to_have_attribute(
        "data-interaction-state", "answered"
    )
    await tool_call(ui, INPUT, {"prompt": "Who should the invoice go to?"}, "invoice")
    await tool_call(
        ui,
        INPUT,
        {"prompt": "Team name for the booking?", "max_length": 30},
        "team",
    )
    await card(page, "Team name").get_by_role("textbox").fill("Platform crew")
    await card(page, "Team name").get_by_role("textbox").press("Enter")
    await expect(card(page, "Team name")).to_have_attribute("data-interaction-state", "answered")
    await dismiss(ui, "invoice", "ctl-invoice")
    await expect(card(page, "invoice")).to_have_attribute("data-interaction-state", "dismissed")
    await expect(card(page, "invoice").locator(".final")).to_have_text("Withdrawn by the agent")
    await tool_call(
        ui,
        NOTICE,
        {"level": "warning", "text": "Flights from Berlin are filling up fast.", "toast": False},
        "warn",
    )
    await tool_call(
        ui,
        CONFIRM,
        {
            "prompt": "Cancel last year's booking at Hotel Mar? This cannot be undone.",
            "confirm_label": "Cancel booking",
            "cancel_label": "Keep it",
            "danger": True,
            "expires_in_ms": 600_000,
        },
        "cancel",
    )
    await tool_call(
        ui,
        INPUT,
        {
            "prompt": "Any dietary needs I should pass on?",
            "multiline": True,
            "placeholder": "One per line",
            "max_length": 500,
        },
        "diet",
    )
    await card(page, "dietary").get_by_role("textbox").fill("2 vegetarian\n1 gluten-free")
    await card(page, "dietary").get_by_role("textbox").blur()
    clock.advance(timedelta(seconds=61))
    assert await ui.runtime.expire_due() == 1
    await expect(card(page, "last offsite")).to_have_attribute("data-interaction-state", "expired")
    await expect(page.locator(".item.interaction")).to_have_count(10)
    await expect(page.locator("#older")).to_be_hidden()  # nothing older than the inventory
    await screenshot("desktop")
    timeline = page.locator("#timeline")
    await page.set_viewport_size({"width": 375, "height": 1500})
    await timeline.evaluate("(element) => { element.scrollTop = 0; }")
    await screenshot("phone-top")
    await timeline.evaluate("(element) => { element.scrollTop = element.scrollHeight; }")
    await screenshot("phone-bottom")
    page_watch.assert_clean()
