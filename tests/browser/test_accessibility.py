"""axe-core over every state of the shell and the reference MiniApps (issue 23, part 3):
the login page, the conversation (empty, every card kind in each of its states, a send
that failed), the consent dialog, the permissions panel, the App centre, the app area
with the question overlay open and folded, the dock with two apps, the Whiteboard,
Draw-and-Guess, the Task Dashboard and the Focus Timer card; in both languages (the
context's locale) and in the light and dark colour schemes. No serious or critical
violation of the WCAG 2.2 A/AA rules (colour contrast included) may be found.

axe-core comes from the npm registry (tests/support/axe.py) and is injected into the
shell and into each sandboxed surface; each state is checked where it is shown, and
every test reports all it found at the end, state by state."""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass, field
from datetime import timedelta

import pytest
from playwright.async_api import FrameLocator, Locator, Page, expect

from lineup.host.surface.document import compose
from lineup.miniapps import bundle_dir, install_bundled
from tests.browser.test_subsessions import CHOICE, NOTES, choice, open_started
from tests.support.appserver import AppServerProcess
from tests.support.axe import AxeUnavailable, Violation, axe_script, describe, serious_violations
from tests.support.browser import PageWatch, save_screenshot
from tests.support.browser_interactions import (
    PASSWORD,
    ShiftClock,
    card,
    chat_id,
    dismiss,
    log_in,
    tool_call,
)
from tests.support.capability_calls import app_call
from tests.support.sdk_agent import sdk_conversation
from tests.support.webhost import Client

LOCALES = ("en", "zh-CN")
SCHEMES = ("light", "dark")
CONFIRM, INPUT, NOTICE = "interact.confirm", "interact.input", "interact.notice"
APP_FRAME = "#app-area-frame iframe.app-frame:not([hidden])"
# A surface's <html lang> is the person's language once the surface origin is told it
# (compose(lang=...), branch i18n-miniapps); until then that one rule waits, in frames.
WAITING_FRAME_RULES = (
    frozenset() if "lang" in inspect.signature(compose).parameters else {"html-has-lang"}
)


@pytest.fixture(scope="session", autouse=True)
def _axe_installed() -> None:
    try:
        axe_script()
    except AxeUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@dataclass
class Audit:
    """axe over each state as it is shown, in both colour schemes; ``assert_clean``
    at the end reports every state that had a serious or critical violation."""

    page: Page
    name: str
    found: dict[str, list[Violation]] = field(default_factory=dict)
    states: list[str] = field(default_factory=list)

    async def check(self, state: str) -> None:
        self.states.append(state)
        await save_screenshot(self.page, self.name, state)  # what was checked, to look at
        for scheme in SCHEMES:
            await self.page.emulate_media(color_scheme=scheme)
            violations = [
                v
                for v in await serious_violations(self.page)
                if v.frame == "the shell" or v.rule not in WAITING_FRAME_RULES
            ]
            if violations:
                self.found[f"{state} ({scheme})"] = violations
        await self.page.emulate_media(color_scheme="light")

    def assert_clean(self) -> None:
        assert self.states, "no state was checked"
        report = "\n".join(f"== {state}:\n{describe(v)}" for state, v in self.found.items())
        assert not self.found, f"axe found serious or critical violations:\n{report}"


@pytest.fixture
def audit(page: Page, request: pytest.FixtureRequest) -> Audit:
    return Audit(page, request.node.name)


def state_of(row: Locator, state: str) -> object:
    return expect(row).to_have_attribute("data-interaction-state", state)


@pytest.mark.parametrize("page_locale", LOCALES)
async def test_login_conversation_cards_and_dialogs(
    page: Page, page_watch: PageWatch, audit: Audit, ui: Client, clock: ShiftClock, page_locale: str
) -> None:
    await page.goto(ui.url + "/")
    await expect(page).to_have_url(ui.url + "/login")
    await expect(page.locator("html")).to_have_attribute("lang", page_locale)
    await audit.check("login")
    await page.fill("input[name=username]", ui.pair.user_name)
    await page.fill("input[name=password]", "not the password")
    await page.click("button[type=submit]")
    await expect(page.locator("input[name=password]")).to_be_visible()
    await audit.check("login, wrong password")
    await page.fill("input[name=username]", ui.pair.user_name)
    await page.fill("input[name=password]", PASSWORD)
    await page.click("button[type=submit]")
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
    await expect(page.locator("html")).to_have_attribute("lang", page_locale)
    await audit.check("empty conversation")

    conversation = await chat_id(ui)
    await page.fill("#input", "Can you plan the team offsite?")
    await page.keyboard.press("Enter")
    await expect(page.locator(".item.from-user")).to_have_attribute("data-state", "sent")
    await ui.pair.agent.send_text(conversation, "Sure! A few questions first.")
    await expect(page.locator(".item.from-agent")).to_have_count(1)
    # notice (with its toast), pending choice (single and multiple), confirm, input
    await tool_call(ui, NOTICE, {"text": "Your report is ready.", "title": "Report"}, "n1")
    await tool_call(
        ui,
        NOTICE,
        {"level": "warning", "text": "Flights are filling up fast.", "toast": False},
        "n2",
    )
    await tool_call(
        ui,
        "interact.choice",
        {
            "prompt": "Was the last offsite useful?",
            "options": [{"id": "y", "label": "Yes"}, {"id": "n", "label": "No"}],
            "expires_in_ms": 60_000,
        },
        "old",
    )
    await tool_call(
        ui,
        "interact.choice",
        {
            "prompt": "Which city?",
            "options": [
                {"id": "lis", "label": "Lisbon"},
                {"id": "ber", "label": "Berlin", "description": "Cheaper flights"},
            ],
        },
        "city",
    )
    await tool_call(
        ui,
        "interact.choice",
        {
            "prompt": "Which activities should we book?",
            "options": [
                {"id": "surf", "label": "Surf lesson", "description": "Half a day"},
                {"id": "food", "label": "Food tour"},
                {"id": "sail", "label": "Sailing"},
            ],
            "multiple": True,
            "max_selected": 2,
        },
        "fun",
    )
    await tool_call(ui, CONFIRM, {"prompt": "Book a dinner for 12?"}, "dinner")
    await tool_call(
        ui,
        CONFIRM,
        {"prompt": "Cancel last year's booking?", "confirm_label": "Cancel it", "danger": True},
        "cancel",
    )
    await tool_call(ui, INPUT, {"prompt": "Team name?", "max_length": 30}, "team")
    await tool_call(
        ui,
        INPUT,
        {"prompt": "Any dietary needs?", "multiline": True, "placeholder": "One per line"},
        "diet",
    )
    await tool_call(ui, INPUT, {"prompt": "Who gets the invoice?"}, "invoice")
    await expect(page.locator(".item.interaction")).to_have_count(10)
    await expect(page.locator("#toasts .toast")).to_have_count(1)
    await card(page, "Which activities").locator("input[type=checkbox]").nth(0).check()
    await card(page, "Team name").locator("input").fill("x" * 3)
    await audit.check("every card pending, a toast")

    # a refused answer: the card says why
    await tool_call(ui, INPUT, {"prompt": "Your PIN hint?", "pattern": "[0-9]{4}"}, "pin")
    pin = card(page, "Your PIN hint?")
    await pin.locator("input").fill("12ab")
    await pin.locator("button.primary").click()
    await expect(pin.get_by_role("alert")).to_be_visible()
    await audit.check("a refused answer")

    # answered, dismissed, expired
    await card(page, "Which city?").locator("input[type=radio]").nth(0).check()
    await card(page, "Which city?").locator("button.primary").click()
    await state_of(card(page, "Which city?"), "answered")
    await card(page, "dinner").locator("button.secondary").click()
    await state_of(card(page, "dinner"), "answered")
    await card(page, "Team name").locator("input").press("Enter")
    await state_of(card(page, "Team name"), "answered")
    await card(page, "dietary").locator("textarea").fill("2 vegetarian")
    await card(page, "dietary").locator("textarea").press("Control+Enter")
    await state_of(card(page, "dietary"), "answered")
    await dismiss(ui, "invoice", "ctl-invoice")
    await state_of(card(page, "invoice"), "dismissed")
    clock.advance(timedelta(seconds=61))
    assert await ui.runtime.expire_due() == 1
    await state_of(card(page, "last offsite"), "expired")
    await audit.check("cards answered, dismissed and expired")

    # the consent dialog
    await page.locator("#input").focus()
    await app_call(ui, "clipboard.write", {"text": "line one\nline two"}, "clip")
    consent = page.locator("dialog#consent")
    await expect(consent).to_be_visible()
    await audit.check("consent dialog (clipboard)")
    await consent.locator(".consent-deny").click()
    await expect(consent).to_be_hidden()
    await app_call(ui, "app.open_url", {"url": ui.url + "/static/style.css"}, "open")
    await expect(consent).to_be_visible()
    await audit.check("consent dialog (open a link)")
    await page.keyboard.press("Escape")
    await expect(consent).to_be_hidden()

    # the permissions panel
    await page.locator("#settings-open").click()
    settings = page.locator("dialog#settings")
    await expect(settings).to_be_visible()
    await audit.check("permissions panel")
    await page.keyboard.press("Escape")
    await expect(settings).to_be_hidden()

    # the App centre, with the bundled apps installed
    await install_bundled(ui.runtime)
    await page.locator("#apps-open").click()
    apps = page.locator("dialog#apps")
    await expect(apps).to_be_visible()
    await expect(apps.locator(".apps-installed .apps-row")).not_to_have_count(0)
    await audit.check("app centre")
    await page.keyboard.press("Escape")
    await expect(apps).to_be_hidden()

    audit.assert_clean()
    page_watch.assert_clean()


@pytest.mark.parametrize("page_locale", LOCALES)
async def test_dock_app_area_and_question_overlay(
    page: Page, page_watch: PageWatch, audit: Audit, client: Client
) -> None:
    await log_in(page, client)
    await open_started(client, "planner")
    _, sid = await open_started(client, NOTES)
    await expect(page.locator(".dock-item")).to_have_count(2)
    await expect(page.locator("#app-area")).to_be_visible()
    await audit.check("dock with two apps, app area")

    await tool_call(client, CHOICE, choice("Tea with the notes?"), "o1",
                    app_session_context={"app_session_id": sid})  # fmt: skip
    overlay = page.locator("#app-overlay")
    await expect(overlay.locator(".item.interaction")).to_have_count(1)
    await audit.check("question overlay open")
    await page.locator("#app-overlay-fold").click()
    await expect(overlay).to_be_hidden()
    await expect(page.locator("#app-overlay-bar")).to_be_visible()
    await audit.check("question overlay folded")

    await page.locator("#app-area-back").click()
    await expect(page.locator("#app-area")).to_be_hidden()
    group = page.locator(f'.items > .item.app-session[data-app-session-id="{sid}"]')
    await group.locator(".group-head").click()
    await expect(group.locator(".item.interaction")).to_have_count(1)
    await audit.check("back to chat, the app's group open with its question")

    audit.assert_clean()
    page_watch.assert_clean()


def app_frame(page: Page) -> FrameLocator:
    return page.frame_locator(APP_FRAME)


@pytest.mark.parametrize("page_locale", LOCALES)
async def test_reference_miniapps(
    page: Page, page_watch: PageWatch, audit: Audit, client: Client
) -> None:
    for name in ("whiteboard", "draw_guess", "task_dashboard"):
        await client.runtime.registry.install_bundle(bundle_dir(name), enable=True)
    await log_in(page, client)
    async with sdk_conversation(client) as conversation:
        await conversation.call_tool("whiteboard.open")
        frame = app_frame(page)
        await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
        await conversation.call_tool(
            "whiteboard.draw",
            {"strokes": [{"kind": "rect", "points": [[40, 40], [200, 120]], "color": "#e03131",
                          "width": 6}]},
        )  # fmt: skip
        await expect(frame.locator("#count")).to_have_text(re.compile("1"))
        await audit.check("whiteboard")

        await conversation.call_tool(
            "draw-guess.start_round_a", {"word_length": 3, "hint": "Look up", "seconds": 120}
        )
        frame = app_frame(page)
        await expect(frame.locator("#app")).to_have_attribute("data-phase", "a")
        await audit.check("draw and guess, round A")

        await conversation.call_tool("task-dashboard.open")
        frame = app_frame(page)
        await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
        live = [
            r for r in client.runtime.apps.instances().live() if r.app_scope == "task-dashboard"
        ]
        sid = await client.runtime.apps.app_session_id(live[-1].instance_id)
        for title in ("Book the venue", "Send the invitations"):
            await conversation.call_tool(
                "task-dashboard.add_task", {"title": title}, app_session_id=sid
            )
        await expect(frame.locator(".card")).to_have_count(2)
        await audit.check("task dashboard")
        await expect(page.locator(".dock-item")).to_have_count(3)
        await audit.check("dock with three apps")

    audit.assert_clean()
    page_watch.assert_clean()


@pytest.mark.parametrize("page_locale", LOCALES)
async def test_focus_timer_card_and_a_failed_send(
    page: Page,
    page_watch: PageWatch,
    audit: Audit,
    client_own_server: Client,
    own_appserver: AppServerProcess,
) -> None:
    from tests.browser.test_signed_delivery import open_focus_timer

    client = client_own_server
    timer = await open_focus_timer(page, client, own_appserver)
    await expect(timer.locator("iframe")).to_have_attribute("data-ready", "true")
    await expect(timer.frame_locator("iframe").locator("body")).to_contain_text("5:00")
    await audit.check("focus timer card")

    # The AppServer goes away: a message waits; the AppServer refuses it: it failed.
    own_appserver.stop()
    await expect(page.locator("#connection")).not_to_have_attribute("data-state", "connected")
    await page.fill("#input", "Are you there?")
    await page.keyboard.press("Enter")
    mine = page.locator(".item.from-user")
    await expect(mine).to_have_attribute("data-state", "sending")
    await audit.check("offline, a message waiting")
    (item,) = [
        i
        for i in await client.runtime.store.timeline(await chat_id(client), limit=50)
        if i.state == "sending"
    ]
    await client.runtime.store.mark_failed(item.conversation_id, item.envelope_id, "not_found")
    await expect(mine).to_have_attribute("data-state", "failed")
    await audit.check("offline, a failed send")
    audit.assert_clean()
    page_watch.failed_requests.clear()  # the surface origin's requests while it went away
    assert not page_watch.page_errors, page_watch.page_errors
