"""The shell with the keyboard alone (issue 23, part 3), in a real Chromium: no click,
no ``fill``, no ``focus()`` after the page loads; only ``page.keyboard``. The person
logs in, pages back through history ("Show earlier messages"), sends a message,
answers a choice, a confirm and an input, dismisses a notice's toast, consents to a
capability request, switches between and closes apps in the dock, and folds and unfolds
the question over an app. Focus moves to a new question or dialog and comes back to
where it was after; dialogs keep focus inside and close on Escape where the spec lets
them; a new message is said once by the announcer, the timeline itself is no live
region. In both languages: the walk names nothing the shell translates."""

from __future__ import annotations

import pytest
from playwright.async_api import Page, expect

from tests.browser.test_subsessions import CHOICE, NOTES, choice, open_started
from tests.browser.test_timeline_scroll import talk
from tests.support.browser import PageWatch
from tests.support.browser_interactions import PASSWORD, chat_id, log_in, tool_call, tool_result
from tests.support.capability_calls import app_call, app_result
from tests.support.webhost import Client

ACTIVE = "() => { const a = document.activeElement; return a ? a.outerHTML.slice(0, 120) : '' }"

# Every text the announcer says, in order (a MutationObserver, set up before anything).
LISTEN = """() => {
  window.__said = [];
  const region = document.getElementById("announcer");
  new MutationObserver(() => {
    const text = region.textContent.trim();
    if (text) window.__said.push(text);
  }).observe(region, { childList: true, characterData: true, subtree: true });
}"""


async def tab_to(page: Page, selector: str, *, back: bool = False, most: int = 60) -> None:
    """Tab (or Shift+Tab) until the focused element matches ``selector``."""
    key = "Shift+Tab" if back else "Tab"
    for _ in range(most):
        if await page.evaluate(
            "(s) => !!document.activeElement && document.activeElement.matches(s)", selector
        ):
            return
        await page.keyboard.press(key)
    raise AssertionError(f"{key} never reached {selector}; at {await page.evaluate(ACTIVE)}")


async def focused_in(page: Page, selector: str) -> bool:
    return bool(await page.evaluate("(s) => !!document.activeElement?.closest(s)", selector))


async def said(page: Page) -> list[str]:
    return list(await page.evaluate("() => window.__said"))


@pytest.mark.parametrize("page_locale", ["en", "zh-CN"])
async def test_everything_with_the_keyboard_alone(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    await talk(client, 130)  # more than one page of history
    await page.goto(client.url + "/")
    await expect(page).to_have_url(client.url + "/login")
    await expect(page.locator("input[name=username]")).to_be_focused()  # autofocus
    await page.keyboard.type(client.pair.user_name)
    await page.keyboard.press("Tab")
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press("Enter")
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
    await page.evaluate(LISTEN)
    # The timeline is no live region: what it shows is said by the announcer, once.
    assert await page.evaluate(
        "() => !document.querySelector('#timeline[aria-live], main [aria-live]')"
    )

    # History: "Show earlier messages", by the keyboard.
    shown = await page.locator("#items > li.item").count()
    await tab_to(page, "#older")
    await page.keyboard.press("Enter")
    await expect(page.locator("#items > li.item")).not_to_have_count(shown)
    assert await page.locator("#items > li.item").count() > shown
    assert await page.evaluate("() => document.activeElement !== document.body")

    # Send a message: Tab to the composer, type, Enter.
    await tab_to(page, "#input")
    await page.keyboard.type("Hello from the keyboard")
    await page.keyboard.press("Enter")
    mine = page.locator(".item.from-user")
    await expect(mine).to_have_attribute("data-state", "sent")
    await expect(page.locator("#input")).to_be_focused()
    await expect(page.locator("#input")).to_have_value("")

    # A new message from the agent is announced once, and only it.
    before = len(await said(page))
    await client.pair.agent.send_text(await chat_id(client), "A reply for you")
    await expect(page.locator("#items > li.item").last).to_contain_text("A reply for you")
    await expect(page.locator("#announcer")).to_contain_text("A reply for you")
    # The next message is said after anything the first one would still cause.
    await client.pair.agent.send_text(await chat_id(client), "A second reply")
    await expect(page.locator("#announcer")).to_contain_text("A second reply")
    new = (await said(page))[before:]
    assert [text for text in new if "A reply for you" in text] == [new[0]], new
    assert [text for text in new if "A second reply" in text] == [new[-1]], new
    assert not any("message 1" in text for text in new), new  # not the history

    # A choice: focus moves to the question, arrows pick, Tab reaches Submit, Enter sends,
    # and focus comes back to the composer.
    await tool_call(client, CHOICE, choice("Tea or coffee?"), "c1")
    asked = page.locator(".item.interaction").filter(has_text="Tea or coffee?")
    await expect(asked.locator(".card")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(asked.get_by_role("radio", name="Tea")).to_be_focused()
    await page.keyboard.press("ArrowDown")
    await expect(asked.get_by_role("radio", name="Coffee")).to_be_checked()
    await tab_to(page, ".item.interaction .button.primary")
    await page.keyboard.press("Enter")
    await expect(asked).to_have_attribute("data-interaction-state", "answered")
    await expect(page.locator("#input")).to_be_focused()
    assert (await tool_result(client, "c1"))["result"] == {"selected": ["coffee"]}

    # A confirm: Tab to Confirm, Space.
    await tool_call(client, "interact.confirm", {"prompt": "Ship it?"}, "k1")
    confirm = page.locator(".item.interaction").filter(has_text="Ship it?")
    await expect(confirm.locator(".card")).to_be_focused()
    await tab_to(page, ".item.interaction:not([data-interaction-state=answered]) .button.primary")
    await page.keyboard.press("Space")
    await expect(confirm).to_have_attribute("data-interaction-state", "answered")
    await expect(page.locator("#input")).to_be_focused()
    assert (await tool_result(client, "k1"))["result"] == {"confirmed": True}

    # An input: Tab into the field, type, Enter.
    await tool_call(client, "interact.input", {"prompt": "Your name?"}, "i1")
    field = page.locator(".item.interaction").filter(has_text="Your name?")
    await expect(field.locator(".card")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(field.get_by_role("textbox")).to_be_focused()
    await page.keyboard.type("Ada")
    await page.keyboard.press("Enter")
    await expect(field).to_have_attribute("data-interaction-state", "answered")
    await expect(page.locator("#input")).to_be_focused()
    assert (await tool_result(client, "i1"))["result"] == {"text": "Ada"}

    # While the person types, a new question takes no focus: the announcer says it.
    await page.keyboard.type("half a thought")
    await tool_call(client, "interact.input", {"prompt": "Anything else?"}, "i2")
    await expect(page.locator(".item.interaction").filter(has_text="Anything else?")).to_have_count(
        1
    )
    await expect(page.locator("#announcer")).to_have_text("Anything else?")
    await expect(page.locator("#input")).to_be_focused()
    await expect(page.locator("#input")).to_have_value("half a thought")
    await page.keyboard.press("Control+A")
    await page.keyboard.press("Backspace")

    # A notice: its toast is dismissed with the keyboard (Shift+Tab from the composer).
    await tool_call(client, "interact.notice", {"text": "Saved your notes."}, "n1")
    toast = page.locator("#toasts .toast")
    await expect(toast).to_have_count(1)
    await expect(page.locator("#input")).to_be_focused()  # a notice takes no focus
    await tab_to(page, "#toasts .toast-close")
    await page.keyboard.press("Enter")
    await expect(toast).to_have_count(0)
    assert await page.evaluate("() => document.activeElement !== document.body")

    # Consent: the dialog takes focus, keeps it, Allow with the keyboard; focus comes back.
    await tab_to(page, "#input")
    await app_call(client, "artifact.save", {"name": "a.txt", "media_type": "text/plain",
                                             "text": "kept"}, "save")  # fmt: skip
    dialog = page.locator("dialog#consent")
    await expect(dialog).to_be_visible()
    assert await focused_in(page, "dialog#consent")
    for _ in range(8):
        await page.keyboard.press("Tab")
        assert await focused_in(page, "dialog#consent")
    for _ in range(3):
        await page.keyboard.press("Shift+Tab")
        assert await focused_in(page, "dialog#consent")
    await tab_to(page, "dialog#consent .consent-allow")
    await page.keyboard.press("Enter")
    await expect(dialog).to_be_hidden()
    await expect(page.locator("#input")).to_be_focused()
    assert (await app_result(client, "save"))["status"] == "completed"

    # Permissions and App centre: modal, trap focus, Escape closes, focus comes back.
    for opener, panel in (("#settings-open", "dialog#settings"), ("#apps-open", "dialog#apps")):
        await tab_to(page, opener, back=True)
        await page.keyboard.press("Enter")
        await expect(page.locator(panel)).to_be_visible()
        assert await focused_in(page, panel)
        for _ in range(6):
            await page.keyboard.press("Tab")
            assert await focused_in(page, panel)
        await page.keyboard.press("Escape")
        await expect(page.locator(panel)).to_be_hidden()
        await expect(page.locator(opener)).to_be_focused()

    # Apps: two in the dock; switch between them, fold and unfold a question, close.
    notes, sid = await open_started(client, NOTES)
    planner, _ = await open_started(client, "planner")
    front = page.locator(".dock-item.focused .dock-name")
    await expect(front).to_have_text("planner")
    await tab_to(page, f'.dock-front[data-instance-id="{notes}"]', back=True)
    await page.keyboard.press("Enter")
    await expect(front).to_have_text(NOTES)

    await tool_call(client, CHOICE, choice("Tea with the notes?"), "o1",
                    app_session_context={"app_session_id": sid})  # fmt: skip
    overlay = page.locator("#app-overlay")
    await expect(overlay.locator(".item.interaction")).to_have_count(1)
    await tab_to(page, "#app-overlay-fold")
    await page.keyboard.press("Enter")
    await expect(overlay).to_be_hidden()
    bar = page.locator("#app-overlay-bar")
    await expect(bar).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(overlay).to_be_visible()
    await expect(overlay.locator(".card")).to_be_focused()
    await page.keyboard.press("Tab")
    await page.keyboard.press("Space")  # the first option
    await tab_to(page, "#app-overlay .button.primary")
    await page.keyboard.press("Enter")
    await expect(overlay).to_be_hidden()
    assert (await tool_result(client, "o1"))["result"] == {"selected": ["tea"]}

    for instance in (notes, planner):
        await tab_to(page, f'.dock-close[data-instance-id="{instance}"]', back=True)
        await page.keyboard.press("Enter")
        await expect(page.locator(f'.dock-item[data-instance-id="{instance}"]')).to_have_count(0)
    await expect(page.locator("#dock")).to_be_hidden()
    assert await page.evaluate("() => document.activeElement !== document.body")
    page_watch.assert_clean()


@pytest.mark.parametrize("dialog", ["settings", "apps"])
async def test_focus_the_person_moves_while_a_dialog_closes_stays_there(
    page: Page, page_watch: PageWatch, client: Client, dialog: str
) -> None:
    """Escape, Shift+Tab, Enter typed quickly: the browser handles the keys before the
    dialog's close event (input runs first), and the shell must not pull focus back to
    the opener after the person has moved it (the Enter would open the wrong dialog)."""
    await log_in(page, client)
    await page.locator(f"#{dialog}-open").click()
    await expect(page.locator(f"dialog#{dialog}")).to_be_visible()
    # Close, and move focus on, in one task: the close event comes after both; the
    # test's listener, added after the shell's, hears it once the shell has handled it.
    logout = "form[action='/logout'] button"
    await page.evaluate(
        """([id, logout]) => new Promise((done) => {
          const dialog = document.getElementById(id);
          dialog.addEventListener("close", done, { once: true });
          dialog.close();
          document.querySelector(logout).focus();
        })""",
        [dialog, logout],
    )
    await expect(page.locator(logout)).to_be_focused()
