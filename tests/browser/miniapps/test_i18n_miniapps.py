# ruff: noqa: RUF001 (the Chinese strings have full-width punctuation)
"""The reference MiniApps and the Focus Timer speak the person's language, in Chromium:
each in zh-CN and in English, its own strings (labels, placeholders, aria-labels,
statuses, game texts) in that language, <html lang> set, numbers through Intl. The
language is the person's choice kept by the Runtime, or (the Focus Timer in Chinese)
the browser's, as the tab reported it. And Enter in an input method's composition
never submits a guess; the Enter after ``compositionend`` submits it once."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Browser, FrameLocator, Page, expect

from lineup.miniapps import bundle_dir
from tests.browser.conftest import Screenshot
from tests.browser.miniapps.test_draw_guess import agent_playing
from tests.browser.test_ui_surfaces import agent_got, agent_sends
from tests.support.appserver import AppServerProcess
from tests.support.browser import (
    DEFAULT_TIMEOUT_MS,
    VIEWPORT,
    PageWatch,
    is_local,
    save_screenshot,
)
from tests.support.browser_interactions import log_in
from tests.support.sdk_agent import sdk_conversation
from tests.support.webhost import Client

LOCALES = ["zh-CN", "en"]


def app_frame(page: Page) -> FrameLocator:
    return page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")


async def in_language(page: Page, client: Client, locale: str, bundle: str) -> None:
    """The person chose ``locale`` in the shell (kept by the Runtime); ``bundle``
    installed; the shell logged in."""
    await client.runtime.choose_locale(locale)
    await client.runtime.registry.install_bundle(bundle_dir(bundle), enable=True)
    await log_in(page, client)


async def ready(frame: FrameLocator, locale: str) -> None:
    await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
    await expect(frame.locator("html")).to_have_attribute("lang", locale)


TASKS = {
    "zh-CN": {
        "heads": ["待办", "进行中", "已完成"],
        "empty": "还没有待办事项。添加一个任务开始吧。",
        "summary": "已完成 1/2 个任务",
        "count": "1 个任务",
        "new": "新建任务",
        "title": "新任务的标题",
        "placeholder": "要做什么？",
        "add": "添加",
        "added": "已把“准备周会”添加到“待办”。",
        "move": "把“写周报”移到“进行中”",
        "filter": "筛选任务",
    },
    "en": {
        "heads": ["To do", "Doing", "Done"],
        "empty": "Nothing to do yet. Add a task to get going.",
        "summary": "1 of 2 tasks done",
        "count": "1 task",
        "new": "New task",
        "title": "Title of the new task",
        "placeholder": "What needs doing?",
        "add": "Add",
        "added": "Added “准备周会” to To do.",
        "move": "Move “写周报” to Doing",
        "filter": "Filter tasks",
    },
}


@pytest.mark.parametrize("locale", LOCALES)
async def test_the_task_dashboard_speaks_the_person_s_language(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot, locale: str
) -> None:
    text = TASKS[locale]
    await in_language(page, client, locale, "task_dashboard")
    frame = app_frame(page)
    async with sdk_conversation(client) as conversation:
        await conversation.call_tool("task-dashboard.open")
        await ready(frame, locale)
        await expect(frame.locator(".column-title")).to_have_text(text["heads"])
        await expect(frame.locator("#empty-todo")).to_have_text(text["empty"])
        await expect(frame.get_by_placeholder(text["filter"])).to_be_visible()
        done = await conversation.call_tool("task-dashboard.add_task", {"title": "发布新版本"})
        await conversation.call_tool("task-dashboard.complete_task", {"id": done["task"]["id"]})
        await conversation.call_tool("task-dashboard.add_task", {"title": "写周报"})
        await expect(frame.locator("#summary")).to_have_text(text["summary"])
        await expect(frame.locator("#count-todo")).to_have_attribute("aria-label", text["count"])
        await expect(frame.get_by_role("button", name=text["move"])).to_be_visible()

        # The person adds a task in Chinese from the form, in either language.
        await frame.get_by_role("button", name=text["new"]).click()
        title = frame.get_by_label(text["title"])
        await expect(title).to_have_attribute("placeholder", text["placeholder"])
        await title.fill("准备周会")
        await title.press("Enter")
        await expect(frame.locator("#list-todo .card-title")).to_have_text(["写周报", "准备周会"])
        await expect(frame.locator("#announce")).to_have_text(text["added"])
        await screenshot(f"task-dashboard-{locale}")
    page_watch.assert_clean()


WHITEBOARD = {
    "zh-CN": {
        "pen": "画笔",
        "send": "发送给智能体",
        "count": "2 笔",
        "canvas": "白板绘图，共 2 笔",
        "sent": "已把 2 笔发送给智能体",
        "cleared": "已清空。撤销即可恢复。",
        "colour": "红色",
        "zoom": "放大",
    },
    "en": {
        "pen": "Pen",
        "send": "Send to agent",
        "count": "2 strokes",
        "canvas": "Whiteboard drawing, 2 strokes",
        "sent": "Sent 2 strokes to the agent",
        "cleared": "Cleared. Undo brings it back.",
        "colour": "Red",
        "zoom": "Zoom in",
    },
}


@pytest.mark.parametrize("locale", LOCALES)
async def test_the_whiteboard_speaks_the_person_s_language(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot, locale: str
) -> None:
    text = WHITEBOARD[locale]
    await in_language(page, client, locale, "whiteboard")
    frame = app_frame(page)
    async with sdk_conversation(client) as conversation:
        await conversation.call_tool("whiteboard.open")
        await ready(frame, locale)
        square = {"kind": "rect", "points": [[40, 40], [200, 120]], "color": "#e03131", "width": 4}
        hello = {
            "kind": "text",
            "points": [[40, 170]],
            "color": "#1d2330",
            "width": 4,
            "text": "你好，世界",
        }
        await conversation.call_tool("whiteboard.draw", {"strokes": [square, hello]})
        await expect(frame.locator("#count")).to_have_text(text["count"])
        await expect(frame.locator("#board")).to_have_attribute("aria-label", text["canvas"])
        await expect(frame.get_by_role("radio", name=text["pen"])).to_be_checked()
        await expect(frame.get_by_role("button", name=text["zoom"])).to_be_visible()
        await expect(frame.locator("#zoom-reset")).to_have_text("100%")
        await frame.get_by_role("button", name=text["send"]).click()
        await expect(frame.locator("#notice")).to_have_text(text["sent"])
        await screenshot(f"whiteboard-{locale}")
        await frame.locator("#style-button").click()
        await expect(frame.get_by_role("radio", name=text["colour"])).to_be_visible()
        await frame.locator("#style-button").click()
        await frame.locator("#clear").click()
        await expect(frame.locator("#notice")).to_have_text(text["cleared"])
    page_watch.assert_clean()


GAME = {
    "zh-CN": {
        "mode": "A 轮 · 智能体画",
        "prompt": "猜一猜：_ _（2 个字）",
        "hint": "提示：天上",
        "guess": "你的答案",
        "placeholder": "输入你的答案…",
        "submit": "提交",
        "won": "★ 猜对了！★答案是“太阳” · +10",
        "history": "✓ 太阳 · 你猜中 +10",
        "idle": "等待智能体开始新一轮。",
    },
    "en": {
        "mode": "Round A · the agent draws",
        "prompt": "Guess the word: _ _ (2 letters)",
        "hint": "Hint: 天上",
        "guess": "Your guess",
        "placeholder": "Type your guess…",
        "submit": "Guess",
        "won": "★ You got it! ★It was “太阳” · +10",
        "history": "✓ 太阳 · You guessed +10",
        "idle": "Waiting for your agent to start a round.",
    },
}


@pytest.mark.parametrize("locale", LOCALES)
async def test_draw_and_guess_speaks_the_person_s_language_and_takes_chinese_guesses(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot, locale: str
) -> None:
    text = GAME[locale]
    await in_language(page, client, locale, "draw_guess")
    frame = app_frame(page)
    async with agent_playing(client) as (conversation, events):
        started = await conversation.call_tool(
            "draw-guess.start_round_a", {"word_length": 2, "hint": "天上", "seconds": 120}
        )
        round_id = started["round_id"]
        await ready(frame, locale)
        await expect(frame.locator("#mode")).to_have_text(text["mode"])
        await expect(frame.locator("#prompt")).to_have_text(text["prompt"])
        await expect(frame.locator("#hint")).to_have_text(text["hint"])
        guess = frame.get_by_role("textbox", name=text["guess"])
        await expect(guess).to_have_attribute("placeholder", text["placeholder"])
        await guess.fill("太阳")
        await frame.get_by_role("button", name=text["submit"]).click()
        taken = await conversation.call_tool("draw-guess.next_guess", {"round_id": round_id})
        assert taken == {"guess": "太阳"}
        assert await events.until("guess", guess="太阳")
        await conversation.call_tool("draw-guess.judge", {"round_id": round_id, "correct": True})
        await expect(frame.locator("#banner")).to_have_text(text["won"])
        await expect(frame.locator("#history-list li")).to_have_text([text["history"]])
        await screenshot(f"draw-guess-won-{locale}")
    page_watch.assert_clean()


async def test_enter_during_an_input_method_composition_never_submits_a_guess(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    """Typing 太阳 in pinyin: the Enter that picks the characters (isComposing, keyCode
    229, or between compositionstart and compositionend) sends nothing; the Enter after
    compositionend sends the guess once."""
    await in_language(page, client, "zh-CN", "draw_guess")
    frame = app_frame(page)
    async with agent_playing(client) as (conversation, events):
        await conversation.call_tool("draw-guess.start_round_a", {"word_length": 2, "seconds": 120})
        await ready(frame, "zh-CN")
        guess = frame.locator("#guess-input")
        await guess.focus()
        await guess.evaluate(
            """(input) => {
                 const key = (init) => input.dispatchEvent(new KeyboardEvent("keydown",
                   { key: "Enter", code: "Enter", bubbles: true, cancelable: true, ...init }));
                 input.dispatchEvent(new CompositionEvent("compositionstart", { bubbles: true }));
                 input.value = "taiyang";
                 key({ isComposing: true, keyCode: 229 });  // Chromium's Enter in a composition
                 input.value = "太阳";
                 key({});  // a plain Enter before compositionend: still composing
                 input.dispatchEvent(new CompositionEvent("compositionend",
                   { bubbles: true, data: "太阳" }));
                 key({ keyCode: 229 });  // Safari's Enter right after compositionend
               }"""
        )
        await expect(guess).to_have_value("太阳")
        await expect(frame.locator("#guesses li")).to_have_count(0)
        await guess.press("Enter")  # the composition is over: this one submits
        await expect(frame.locator("#guesses li")).to_have_text(["太阳"])
        await expect(guess).to_have_value("")
        await guess.press("Enter")  # nothing left to send
        await guess.fill("月亮")  # the next guess is handled after that Enter
        await guess.press("Enter")
        await expect(frame.locator("#guesses li")).to_have_text(["太阳", "月亮"])
        await events.until("guess", guess="月亮")  # it reached the agent, after the first
        said = [e["data"]["guess"] for e in events.seen if e["event"] == "guess"]
        assert said == ["太阳", "月亮"]
    page_watch.assert_clean()


@pytest.fixture
async def browser_page(
    browser: Browser, request: pytest.FixtureRequest
) -> AsyncIterator[tuple[Page, PageWatch]]:
    """A page whose browser prefers ``request.param`` (its ``Accept-Language``)."""
    context = await browser.new_context(viewport=VIEWPORT, locale=request.param)
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    watch = PageWatch()
    await context.route(lambda url: not is_local(url), watch.block_non_local)
    page = await context.new_page()
    watch.attach(page)
    yield page, watch
    await context.close()


TIMER: dict[str, dict[str, Any]] = {
    "zh-CN": {
        "focus": "专注",
        "start": "开始",
        "pause": "暂停",
        "ready": "5 分钟专注，准备开始",
        "running": "5 分钟专注，进行中",
        "paused": "5 分钟专注，已暂停",
        "resume": "继续",
        "left_full": "剩余时间：5分钟",
        "started": "已开始：5分钟。",
        "left": re.compile(r"^剩余时间：(5分钟|4分钟5\d秒)$"),
        "announce": re.compile(r"^已暂停，还剩 (5分钟|4分钟5\d秒)。$"),
    },
    "en": {
        "focus": "Focus",
        "start": "Start",
        "pause": "Pause",
        "ready": "5-minute session, ready to start",
        "running": "5-minute session, running",
        "paused": "5-minute session, paused",
        "resume": "Resume",
        "left_full": "Time left: 5 minutes",
        "started": "Started: 5 minutes.",
        "left": re.compile(r"^Time left: (5 minutes|4 minutes, 5\d seconds)$"),
        "announce": re.compile(r"^Paused: (5 minutes|4 minutes, 5\d seconds) left\.$"),
    },
}


@pytest.mark.parametrize(
    ("browser_page", "locale"), [("zh-CN", "zh-CN"), ("en-US", "en")], indirect=["browser_page"]
)
async def test_the_focus_timer_speaks_the_browser_s_language(
    browser_page: tuple[Page, PageWatch],
    client_own_server: Client,
    own_appserver: AppServerProcess,
    request: pytest.FixtureRequest,
    locale: str,
) -> None:
    """The Focus Timer is a card (the bridge only, no context()): its language is <html
    lang>, the person's as the host knows it, here their browser's (no choice made)."""
    from lineup.demo import publish_sample_app

    page, page_watch = browser_page
    text = TIMER[locale]
    client = client_own_server
    published = publish_sample_app(own_appserver.data_dir)
    await client.runtime.delivery.trust_key(published.key)
    await client.runtime.delivery.install("dev.lineup.focus-timer", "1.1.0")
    await log_in(page, client)
    await expect(page.locator("html")).to_have_attribute("lang", locale)
    assert await client.runtime.locale_choice() is None
    app: dict[str, Any] = {"id": "dev.lineup.focus-timer", "version": "1.1.0", "surface": "card"}
    payload = {"instance_id": "t1", "app": app, "state": {"minutes": 5}}
    assert await agent_sends(client, "ui.open", payload) == 201
    frame = page.locator('.item.surface[data-instance-id="t1"]').frame_locator("iframe")
    await expect(frame.locator("html")).to_have_attribute("lang", locale)
    assert await client.runtime.person_locale() == locale  # the tab said so in its hello
    await expect(frame.locator("#label")).to_have_text(text["focus"])
    await expect(frame.locator("#status")).to_have_text(text["ready"])
    await expect(frame.locator("#time")).to_have_text("5:00")
    await expect(frame.locator("#time")).to_have_attribute("aria-label", text["left_full"])
    await frame.get_by_role("button", name=text["start"]).click()
    [started] = await agent_got(client, "ui.event")
    assert started["data"] == {"minutes": 5}
    await expect(frame.locator("#announce")).to_have_text(text["started"])
    await expect(frame.locator("#status")).to_have_text(text["running"])
    await frame.get_by_role("button", name=text["pause"]).click()
    await expect(frame.locator("#status")).to_have_text(text["paused"])
    await expect(frame.get_by_role("button", name=text["resume"])).to_be_focused()
    await expect(frame.locator("#time")).to_have_attribute("aria-label", text["left"])
    await expect(frame.locator("#announce")).to_have_text(text["announce"])
    await save_screenshot(page, request.node.name, f"focus-timer-paused-{locale}")
    page_watch.assert_clean()
