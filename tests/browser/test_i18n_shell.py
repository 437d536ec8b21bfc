# ruff: noqa: RUF001 (Chinese text: full-width punctuation is what it is written with)
"""The shell's timeline in both languages, in a real Chromium whose language is English
or Simplified Chinese (the context's locale: navigator.language and Accept-Language,
from which the Web Host picks the page's language).

A conversation with every kind of card in every state (pending, answered, expired,
withdrawn, refused), the "new messages" control in its plural forms, a send the
AppServer refused and the connection's state: the person reads each in their language.
In Chinese, a generic check reads every text the shell shows (and its labels, tooltips
and placeholders) and finds no English word: it catches strings hard-coded in the
shell that the static scan of tests/test_i18n.py misses. What the agent or the test
itself wrote (message bodies, prompts, options, names) is data, not the shell's."""

from __future__ import annotations

import asyncio
import json
import re
from datetime import timedelta
from typing import Any

import pytest
from playwright.async_api import Page, expect

from tests.browser.conftest import Screenshot
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch
from tests.support.browser_interactions import (
    ShiftClock,
    card,
    chat_id,
    dismiss,
    log_in,
    tool_call,
)
from tests.support.timeline import arrived, say
from tests.support.webhost import Client

CHOICE = "interact.choice"
CONFIRM = "interact.confirm"
INPUT = "interact.input"
NOTICE = "interact.notice"

# What the shell says, in each language (the catalogues' words; patterns where a
# number or a time is in them).
WORDS: dict[str, dict[str, Any]] = {
    "en": {
        "sent": "Sent",
        "not_sent": "Not sent",
        "retry": "Retry",
        "reconnecting": "Reconnecting…",
        "connected": "Connected",
        "question": "Question",
        "confirmation": "Confirmation",
        "warning": "Warning",
        "submit": "Submit",
        "cancel": "Cancel",
        "confirm": "Confirm",
        "answered": "Answered",
        "expired": "Expired",
        "withdrawn": "Withdrawn by the agent",
        "your_answer": "Your answer",
        "yes_chip": "Yes · Confirm",
        "expires": re.compile(r"^Expires in 1[45] minutes$"),
        "expires_soon": re.compile(r"^Expires in ([1-9]|10) minutes?$"),
        "placeholder": "Type your answer…",
        "counter": "0 / 40",
        "rule": "Choose 1 to 2 · 0 selected",
        "format": "This does not look like the requested format",
        "refused": "That answer does not fit the question.",
        "jump_1": "1 new message",
        "jump_3": "3 new messages",
        "jump_question": "4 new messages · a question is waiting",
        "dismiss_toast": "Dismiss notification",
        "composer": "Message your agent…",
        "send": "Send",
    },
    "zh-CN": {
        "sent": "已发送",
        "not_sent": "发送失败",
        "retry": "重试",
        "reconnecting": "正在重新连接…",
        "connected": "已连接",
        "question": "问题",
        "confirmation": "确认",
        "warning": "警告",
        "submit": "提交",
        "cancel": "取消",
        "confirm": "确认",
        "answered": "已回答",
        "expired": "已过期",
        "withdrawn": "智能体已撤回",
        "your_answer": "你的回答",
        "yes_chip": "是 · 确认",
        "expires": re.compile(r"^1[45]分钟后过期$"),
        "expires_soon": re.compile(r"^([1-9]|10)分钟后过期$"),
        "placeholder": "输入你的回答…",
        "counter": "0 / 40",
        "rule": "选择 1–2 项 · 已选 0 项",
        "format": "格式似乎不符合要求",
        "refused": "这个回答不符合问题的要求。",
        "jump_1": "1 条新消息",
        "jump_3": "3 条新消息",
        "jump_question": "4 条新消息 · 有问题等你回答",
        "dismiss_toast": "关闭通知",
        "composer": "给你的智能体发消息…",
        "send": "发送",
    },
}

BOTH = pytest.mark.parametrize("page_locale", ["en", "zh-CN"])

# Where the shell shows data (what the agent, the apps or the person wrote, and names):
# not the shell's own words.
DATA = ", ".join(
    [
        ".body",
        ".card-prompt",
        ".option-label",
        ".option-description",
        ".chips",
        ".answer-text",
        ".answer-field",
        ".toast-title",
        ".toast-text",
        "#agent-name",
        "#conversation-title",
        ".avatar",
        ".dock-name",
        "#app-area-title",
        ".group-name",
        ".surface-name",
        ".artifact-name",
        "#input",
    ]
)
# Words a Chinese product writes in Latin letters: the product's name, key names.
LATIN_OK = {"LineUp", "Ctrl", "Enter"}

READ = """(data) => {
  const texts = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    const element = node.parentElement;
    if (!element || element.closest("script, style") || element.closest(data)) continue;
    const sr = element.closest(".sr-only");  // read by screen readers: counts too
    if (!sr && !element.checkVisibility()) continue;
    const text = node.textContent.trim();
    if (text) texts.push(text);
  }
  for (const element of document.querySelectorAll("[aria-label], [title], [placeholder]")) {
    if (element.closest(data) || !element.checkVisibility()) continue;
    for (const name of ["aria-label", "title", "placeholder"]) {
      const value = element.getAttribute(name);
      if (value) texts.push(value);
    }
  }
  return [...texts, document.title];
}"""


async def english_words(page: Page, data: list[str]) -> list[str]:
    """Every English word (3+ letters) in what the shell shows, once ``data`` (texts
    the test or the agent wrote) is taken out."""
    texts: list[str] = await page.evaluate(READ, DATA)
    found = []
    for text in texts:
        for known in data:
            text = text.replace(known, " ")
        found += [w for w in re.findall(r"[A-Za-z]{3,}", text) if w not in LATIN_OK]
    return found


@BOTH
async def test_the_timeline_and_every_card_speak_the_person_s_language(
    page: Page,
    page_watch: PageWatch,
    ui: Client,
    clock: ShiftClock,
    page_locale: str,
    screenshot: Screenshot,
) -> None:
    words = WORDS[page_locale]
    await log_in(page, ui)
    await expect(page.locator("html")).to_have_attribute("lang", page_locale)
    await expect(page.locator("#connection")).to_have_text(words["connected"])
    await expect(page.locator("#input")).to_have_attribute("placeholder", words["composer"])
    await expect(page.locator("#send")).to_have_text(words["send"])
    conversation = await chat_id(ui)
    agent = ui.pair.agent

    await page.fill("#input", "周末的团建安排一下")
    await page.keyboard.press("Enter")
    mine = page.locator(".item.from-user").last
    await expect(mine).to_have_attribute("data-state", "sent")
    await expect(mine.locator(".delivery")).to_have_text(words["sent"])
    await agent.send_text(conversation, "好的，先问几个问题。")

    # Pending: a choice with a countdown (and its time as a tooltip), a multiple
    # choice with its rule, a confirm, an input with its placeholder and counter.
    await tool_call(
        ui,
        CHOICE,
        {
            "prompt": "去哪个城市？",
            "options": [{"id": "sh", "label": "上海"}, {"id": "hz", "label": "杭州"}],
        },
        "city",
    )
    city = card(page, "去哪个城市")
    await expect(city.locator(".card-kind")).to_have_text(words["question"])
    await expect(city.locator(".countdown")).to_have_text(words["expires"])
    assert await city.locator(".countdown").get_attribute("title")
    await expect(city.get_by_role("button", name=words["submit"])).to_be_disabled()
    await tool_call(
        ui,
        CHOICE,
        {
            "prompt": "订哪些活动？",
            "options": [
                {"id": "a", "label": "骑行"},
                {"id": "b", "label": "美食之旅"},
                {"id": "c", "label": "游船"},
            ],
            "multiple": True,
            "max_selected": 2,
            "expires_in_ms": 8 * 60_000,
        },
        "fun",
    )
    fun = card(page, "订哪些活动")
    await expect(fun.locator(".card-hint")).to_have_text(words["rule"])
    await expect(fun.locator(".countdown")).to_have_text(words["expires_soon"])
    await tool_call(ui, CONFIRM, {"prompt": "顺便订周四的晚餐吗？"}, "dinner")
    dinner = card(page, "周四的晚餐")
    await expect(dinner.locator(".card-kind")).to_have_text(words["confirmation"])
    await expect(dinner.get_by_role("button", name=words["cancel"])).to_be_visible()
    await tool_call(ui, INPUT, {"prompt": "团队名称？", "max_length": 40}, "team")
    team = card(page, "团队名称")
    field = team.get_by_role("textbox")
    await expect(field).to_have_attribute("placeholder", words["placeholder"])
    await expect(team.locator(".counter")).to_have_text(words["counter"])

    # Refused by the Runtime (the pattern): its code, in the person's words.
    await tool_call(
        ui, INPUT, {"prompt": "四位数字的提示？", "pattern": "[0-9]{4}", "min_length": 4}, "pin"
    )
    pin = card(page, "四位数字")
    await pin.get_by_role("textbox").fill("12ab")
    await expect(pin.locator(".card-hint")).to_have_text(words["format"])
    await pin.get_by_role("button", name=words["submit"]).click()
    await expect(pin.get_by_role("alert")).to_have_text(words["refused"])

    # A notice: its level's name, and a toast that can be dismissed.
    await tool_call(ui, NOTICE, {"level": "warning", "text": "北京出发的航班快满了。"}, "warn")
    notice = card(page, "航班快满了")
    await expect(notice.locator(".card-kind")).to_have_text(words["warning"])
    toast = page.locator("#toasts .toast")
    await expect(toast.locator(".toast-close")).to_have_attribute(
        "aria-label", words["dismiss_toast"]
    )

    # Answered, withdrawn, expired.
    await city.get_by_role("radio", name="杭州").check()
    await city.get_by_role("button", name=words["submit"]).click()
    await expect(city).to_have_attribute("data-interaction-state", "answered")
    await expect(city.locator(".final")).to_have_text(words["answered"])
    await expect(city.locator(".answer-label")).to_have_text(words["your_answer"])
    await dinner.get_by_role("button", name=words["confirm"]).click()
    await expect(dinner.locator(".chip")).to_have_text(words["yes_chip"])
    await tool_call(ui, INPUT, {"prompt": "发票开给谁？"}, "invoice")
    await dismiss(ui, "invoice", "ctl-invoice")
    await expect(card(page, "发票开给谁").locator(".final")).to_have_text(words["withdrawn"])
    await tool_call(
        ui,
        CHOICE,
        {
            "prompt": "上次团建有用吗？",
            "options": [{"id": "y", "label": "有用"}, {"id": "n", "label": "没用"}],
            "expires_in_ms": 60_000,
        },
        "old",
    )
    old = card(page, "上次团建")
    await expect(old).to_have_attribute("data-interaction-state", "pending")
    clock.advance(timedelta(seconds=61))
    assert await ui.runtime.expire_due() == 1
    await expect(old).to_have_attribute("data-interaction-state", "expired")
    await expect(old.locator(".final")).to_have_text(words["expired"])
    await screenshot("cards")

    # The "new messages" control, one and many, and with a question waiting.
    # (Answering scrolled the cards into view: rows came while the person read.)
    jump = page.locator("#jump")
    if await jump.is_visible():
        await jump.click()
    await expect(jump).to_be_hidden()
    timeline = page.locator("#timeline")
    await timeline.evaluate("(t) => { t.scrollTop = 0; }")
    await page.wait_for_function("() => document.getElementById('timeline').scrollTop === 0")
    await arrived(ui, await say(ui, "第一条新消息"))
    await expect(jump).to_have_text(words["jump_1"])
    await say(ui, "第二条新消息")
    await arrived(ui, await say(ui, "第三条新消息"))
    await expect(jump).to_have_text(words["jump_3"])
    await tool_call(
        ui,
        CHOICE,
        {"prompt": "还有一个问题？", "options": [{"id": "a", "label": "好"}]},
        "late",
    )
    await expect(jump).to_have_text(words["jump_question"])
    await screenshot("new-messages")

    if page_locale == "zh-CN":
        assert await english_words(page, []) == []
    await jump.click()
    await expect(jump).to_be_hidden()
    page_watch.assert_clean()


@BOTH
async def test_a_refused_send_and_the_connection_speak_the_person_s_language(
    page: Page,
    page_watch: PageWatch,
    client_own_server: Client,
    own_appserver: AppServerProcess,
    page_locale: str,
    screenshot: Screenshot,
) -> None:
    words = WORDS[page_locale]
    client = client_own_server
    await log_in(page, client)
    await expect(page.locator("#connection")).to_have_text(words["connected"])
    own_appserver.kill()
    await expect(page.locator("#connection")).to_have_attribute("data-state", "reconnecting")
    await expect(page.locator("#connection")).to_have_text(words["reconnecting"])
    await page.fill("#input", "这条消息发不出去")
    await page.keyboard.press("Enter")
    mine = page.locator(".item.from-user").last
    await expect(mine).to_have_attribute("data-state", "sending")
    envelope_id = await mine.get_attribute("data-envelope-id")
    assert envelope_id is not None
    # The AppServer refuses it (as it would an envelope it cannot take): the Runtime
    # marks it failed, the shell says so and offers to send it again.
    await client.runtime.store.mark_failed(await chat_id(client), envelope_id, "envelope_invalid")
    await expect(mine).to_have_attribute("data-state", "failed")
    await expect(mine.locator(".delivery")).to_have_text(words["not_sent"])
    await expect(mine.get_by_role("button", name=words["retry"])).to_be_visible()
    await screenshot("not-sent")
    if page_locale == "zh-CN":
        assert await english_words(page, []) == []
    page_watch.assert_clean()


# Chinese has no spaces: a long run of it must wrap between characters, and a long
# Latin word or URL anywhere, inside its bubble or card, never widening the timeline.
LONG_ZH = "我们下周去杭州团建请大家提前确认行程并把身份证号码发给行政同事以便统一订票和安排住宿" * 6
LONG_WORD = "Donaudampfschifffahrtsgesellschaftskapitaenswitwenrentenversicherung" * 3
LONG_URL = "https://example.com/" + "path/" * 30 + "?q=" + "x" * 120

OVERFLOWING = """(selectors) => {
  const timeline = document.getElementById("timeline").getBoundingClientRect();
  const bad = [];
  const wide = (element) => element.scrollWidth > element.clientWidth + 1;
  for (const row of document.querySelectorAll("#items > li, .group-items > li")) {
    if (!row.checkVisibility()) continue;
    const box = row.getBoundingClientRect();
    if (wide(row) || box.left < timeline.left - 1 || box.right > timeline.right + 1) {
      bad.push(`row ${row.className}: ${row.scrollWidth} > ${row.clientWidth}`);
    }
  }
  for (const selector of selectors) {
    for (const element of document.querySelectorAll(selector)) {
      if (element.checkVisibility() && wide(element)) {
        bad.push(`${selector}: ${element.scrollWidth} > ${element.clientWidth}`);
      }
    }
  }
  for (const scroller of [document.documentElement, document.getElementById("timeline")]) {
    if (wide(scroller)) bad.push(`${scroller.id || "page"} scrolls sideways`);
  }
  return bad;
}"""
WRAPPED = [
    ".bubble",
    ".body",
    ".card",
    ".card-prompt",
    ".option-label",
    ".toast",
    ".dock-item",
    ".dock-name",
    "#app-overlay",
    "#app-overlay-title",
    ".item.overlaid",
    ".group-head",
]


@pytest.mark.parametrize("page_locale", ["zh-CN"])
async def test_long_chinese_and_long_words_wrap_inside_bubbles_cards_dock_and_overlay(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    conversation = await chat_id(client)
    await page.fill("#input", LONG_ZH)
    await page.keyboard.press("Enter")
    await expect(page.locator(".item.from-user")).to_have_attribute("data-state", "sent")
    await page.fill("#input", LONG_WORD)
    await page.keyboard.press("Enter")
    await client.pair.agent.send_text(conversation, LONG_ZH + LONG_WORD)
    await client.pair.agent.send_text(conversation, LONG_URL)
    await tool_call(
        client,
        CHOICE,
        {
            "prompt": LONG_ZH,
            "options": [{"id": "a", "label": LONG_ZH}, {"id": "b", "label": LONG_WORD}],
        },
        "long-choice",
    )
    await tool_call(client, NOTICE, {"text": LONG_ZH + LONG_URL, "title": LONG_WORD}, "long")
    await expect(page.locator(".item.interaction")).to_have_count(2)

    # An app in front with a question beside it (the overlay), and a long name in the dock.
    instance = await client.runtime.apps.open_instance("notes", conversation_id=conversation)
    assert (await client.runtime.apps.started(instance.instance_id)).accepted
    session = await client.runtime.apps.app_session_id(instance.instance_id)
    await tool_call(
        client,
        CHOICE,
        {"prompt": LONG_ZH, "options": [{"id": "a", "label": LONG_ZH}]},
        "beside",
        app_session_context={"app_session_id": session},
    )
    await expect(page.locator("#app-overlay .item.interaction")).to_have_count(1)
    await page.locator(".dock-name").first.evaluate(
        "(name, text) => { name.textContent = text; }", LONG_ZH
    )

    for width, height in ((1280, 900), (375, 800)):
        await page.set_viewport_size({"width": width, "height": height})
        assert await page.evaluate(OVERFLOWING, WRAPPED) == [], width
        # Wrapped, not cut: the bubble is taller than one line.
        bubble = await page.locator(".item.from-user .bubble").first.bounding_box()
        assert bubble is not None and bubble["height"] > 60
        await screenshot(f"{width}px-app")
        await page.locator("#app-area-back").click()
        await expect(page.locator("#app-area")).to_be_hidden()
        assert await page.evaluate(OVERFLOWING, WRAPPED) == [], width
        await screenshot(f"{width}px-chat")
        await page.locator(".dock-front").first.click()
        await expect(page.locator("#app-area")).to_be_visible()
        await expect(page.locator("#app-overlay .item.interaction")).to_have_count(1)
        await page.locator(".dock-name").first.evaluate(
            "(name, text) => { name.textContent = text; }", LONG_ZH
        )
    page_watch.assert_clean()


async def test_a_tab_shows_itself_again_in_the_language_the_person_chose(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    await log_in(page, client)
    await expect(page.locator("html")).to_have_attribute("lang", "en")
    await expect(page.locator("#connection")).to_have_text("Connected")
    told = asyncio.Event()  # a locale frame came, for the second choice

    def frame(payload: str | bytes) -> None:
        if json.loads(payload).get("op") == "locale":
            told.set()

    page.on("websocket", lambda socket: socket.on("framereceived", frame))
    await page.evaluate("window.before = true")

    # Chosen (in another tab, or here): every tab hears it and loads itself again.
    await client.runtime.choose_locale("zh-CN")
    await expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
    await expect(page.locator("#connection")).to_have_text("已连接")
    await expect(page.locator("#send")).to_have_text("发送")
    assert await page.evaluate("window.before") is None  # a new document

    # The language it already shows: it stays as it is (no reload, no loop).
    await page.evaluate("window.before = true")
    loads: list[str] = []
    page.on("request", lambda r: loads.append(r.url) if r.is_navigation_request() else None)
    told.clear()
    await client.runtime.choose_locale("zh-CN")
    async with asyncio.timeout(10):
        await told.wait()
    # A message sent after the frame is shown after the tab has handled the frame.
    await client.pair.agent.send_text(await chat_id(client), "after the choice")
    await expect(page.locator(".item.from-agent").last).to_contain_text("after the choice")
    assert loads == []
    assert await page.evaluate("window.before") is True
    page_watch.assert_clean()
