"""The shell's panels in both languages, and the language setting, in a real Chromium
on the real stack (AppServer, Runtime, Web Host).

The browser's language is the context's ``locale`` (Playwright sends it as
``Accept-Language`` and as ``navigator.languages``). The login page (and a refused
password), the consent dialog, the settings panel and the App centre are read in
English and in Chinese, with screenshots of each. Then the setting: in an English
browser the person chooses 简体中文 in Settings; the page shows Chinese, and keeps it
after a reload, in a new tab and after the Runtime and Web Host restart; "As the
browser says" brings the browser's English back."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest
from playwright.async_api import Browser, BrowserContext, Page, expect

from lineup.miniapps import install_bundled
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.browser import (
    DEFAULT_TIMEOUT_MS,
    VIEWPORT,
    PageWatch,
    is_local,
    save_screenshot,
)
from tests.support.browser_interactions import PASSWORD, log_in
from tests.support.capability_calls import app_call, app_result
from tests.support.webhost import Client, serving

LOCALES = ["en", "zh-CN"]

# What each language says, by what it labels (from lineup/locales).
WORDS = {
    "en": {
        "login": "Log in",
        "username": "Username",
        "password": "Password",
        "wrong": "Wrong username or password.",
        "settings": "Settings",
        "apps": "Apps",
        "close": "Close",
        "language": "Language",
        "permissions": "Permissions",
        "allow": "Allow",
        "deny": "Deny",
        "copy": "Copy text to your clipboard",
        "asked_by": "Asked by the agent {agent}",
        "reason": "Their reason",
        "remember": "Remember for this session",
        "expires": r"Expires in 4:\d\d",
        "text_to_copy": "Text to copy (12 characters)",
        "none_remembered": "Nothing is remembered.",
        "built_in": "Built-in",
        "save_files": "Save files",
        "check": "Check for updates",
        "checked": "Catalog checked ",
        "installed": "Installed",
        "on": "On",
        "apply": "Use this language",
        "turn_off_ask": "Turn off Task Dashboard? 2 running instances will close.",
        "keep_on": "Cancel: keep Task Dashboard on",
        "catalog_unavailable": "The catalog cannot be reached. Try again in a moment.",
        "not_checked": "Catalog not checked",
    },
    "zh-CN": {
        "login": "登录",
        "username": "用户名",
        "password": "密码",
        "wrong": "用户名或密码错误。",
        "settings": "设置",
        "apps": "应用",
        "close": "关闭",
        "language": "语言",
        "permissions": "权限",
        "allow": "允许",
        "deny": "拒绝",
        "copy": "将文本复制到剪贴板",
        "asked_by": "请求方：智能体 {agent}",  # noqa: RUF001
        "reason": "请求理由",
        "remember": "本次会话内记住此选择",
        "expires": r"还剩 4:\d\d",
        "text_to_copy": "要复制的文本（12 个字符）",  # noqa: RUF001
        "none_remembered": "没有记住的授权。",
        "built_in": "内置",
        "save_files": "保存文件",
        "check": "检查更新",
        "checked": "上次检查目录：",  # noqa: RUF001
        "installed": "已安装",
        "on": "已开启",
        "apply": "使用此语言",
        "turn_off_ask": "要关闭“Task Dashboard”吗？2 个正在运行的实例将会关闭。",  # noqa: RUF001
        "keep_on": "取消：保持“Task Dashboard”开启",  # noqa: RUF001
        "catalog_unavailable": "无法连接应用目录，请稍后再试。",  # noqa: RUF001
        "not_checked": "未能检查目录",
    },
}

NewPage = Callable[[str], Awaitable[tuple[Page, PageWatch]]]
Shot = Callable[[Page, str], Awaitable[Path]]


@pytest.fixture
async def in_language(browser: Browser) -> AsyncIterator[NewPage]:
    """A fresh 1280x800 page whose browser speaks ``locale``, watched like ``page``."""
    contexts: list[BrowserContext] = []

    async def make(locale: str) -> tuple[Page, PageWatch]:
        context = await browser.new_context(viewport=VIEWPORT, locale=locale)
        contexts.append(context)
        context.set_default_timeout(DEFAULT_TIMEOUT_MS)
        watch = PageWatch()
        await context.route(lambda url: not is_local(url), watch.block_non_local)
        page = await context.new_page()
        watch.attach(page)
        return page, watch

    yield make
    for context in contexts:
        await context.close()


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Shot:
    async def take(page: Page, name: str) -> Path:
        return await save_screenshot(page, request.node.name, name)

    return take


async def page_lang(page: Page) -> str:
    return str(await page.evaluate("document.documentElement.lang"))


@pytest.mark.parametrize("locale", LOCALES)
async def test_the_login_page_and_a_wrong_password(
    in_language: NewPage, client: Client, shot: Shot, locale: str
) -> None:
    page, watch = await in_language(locale)
    words = WORDS[locale]
    await page.goto(client.url + "/")
    await expect(page).to_have_url(client.url + "/login")
    assert await page_lang(page) == locale
    await expect(page.get_by_role("button", name=words["login"])).to_be_visible()
    await expect(page).to_have_title(re.compile(words["login"]))
    await shot(page, "login")
    await page.get_by_label(words["username"]).fill(client.pair.user_name)
    await page.get_by_label(words["password"]).fill("not the password")
    await page.get_by_role("button", name=words["login"]).click()
    alert = page.get_by_role("alert")
    await expect(alert).to_have_text(words["wrong"])
    await expect(page.get_by_label(words["password"])).to_be_focused()
    await expect(page.get_by_label(words["username"])).to_have_value(client.pair.user_name)
    await shot(page, "wrong-password")
    await page.get_by_label(words["password"]).fill(PASSWORD)
    await page.get_by_role("button", name=words["login"]).click()
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
    assert await page_lang(page) == locale
    await expect(page.locator("#settings-open")).to_have_text(words["settings"])
    await expect(page.get_by_role("button", name=words["apps"], exact=True)).to_be_visible()
    watch.assert_clean()


@pytest.mark.parametrize("locale", LOCALES)
async def test_the_consent_dialog(
    in_language: NewPage, client: Client, shot: Shot, locale: str
) -> None:
    page, watch = await in_language(locale)
    words = WORDS[locale]
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=client.url)
    await log_in(page, client)
    await app_call(client, "clipboard.write", {"text": "hello 你好, ok"}, "clip-lang")
    dialog = page.get_by_role("dialog", name=words["copy"])
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".consent-who")).to_have_text(
        words["asked_by"].format(agent=client.pair.agent.id)
    )
    await expect(dialog.locator(".consent-reason h3")).to_have_text(words["reason"])
    await expect(dialog.locator(".consent-details h3")).to_have_text(words["text_to_copy"])
    await expect(dialog.locator(".consent-countdown")).to_have_text(re.compile(words["expires"]))
    await expect(dialog.get_by_label(words["remember"])).not_to_be_checked()
    await expect(dialog.get_by_role("button", name=words["deny"])).to_be_focused()
    await shot(page, "consent")
    await page.set_viewport_size({"width": 375, "height": 740})
    await shot(page, "consent-375")
    await page.set_viewport_size(VIEWPORT)
    await dialog.get_by_role("button", name=words["allow"]).click()
    await expect(dialog).to_be_hidden()
    assert (await app_result(client, "clip-lang"))["status"] == "completed"
    assert await page.evaluate("navigator.clipboard.readText()") == "hello 你好, ok"
    watch.assert_clean()


@pytest.mark.parametrize("locale", LOCALES)
async def test_the_settings_panel(
    in_language: NewPage, client: Client, shot: Shot, locale: str
) -> None:
    page, watch = await in_language(locale)
    words = WORDS[locale]
    await log_in(page, client)
    await page.get_by_role("button", name=words["settings"]).click()
    panel = page.get_by_role("dialog", name=words["settings"])
    await expect(panel).to_be_visible()
    await expect(panel.get_by_role("button", name=words["close"])).to_be_focused()
    language = panel.get_by_role("combobox", name=words["language"])
    await expect(language).to_have_value("auto")
    options = await language.locator("option").all_inner_texts()
    assert options == [
        "As the browser says" if locale == "en" else "跟随浏览器",
        "English",
        "简体中文",
    ]
    heading = panel.get_by_role("heading", name=words["permissions"], exact=True)
    await expect(heading).to_be_visible()
    await expect(panel.locator(".settings-empty")).to_have_text(words["none_remembered"])
    await expect(panel.get_by_role("switch")).to_have_count(5)
    await expect(panel.get_by_role("switch", name=words["copy"])).to_be_checked()
    # The language comes first, by the keyboard too; browsing the choices with the
    # arrow keys changes nothing until the button says so.
    await page.keyboard.press("Tab")
    await expect(language).to_be_focused()
    apply = panel.get_by_role("button", name=words["apply"])
    await expect(apply).to_be_disabled()
    await page.keyboard.press("ArrowDown")
    await expect(language).to_have_value("en")
    await expect(apply).to_be_enabled()
    await page.keyboard.press("ArrowUp")
    await expect(language).to_have_value("auto")
    await expect(apply).to_be_disabled()
    assert await client.runtime.locale_choice() is None
    await shot(page, "settings")
    await page.set_viewport_size({"width": 375, "height": 740})
    box = await panel.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375
    await shot(page, "settings-375")
    await page.set_viewport_size(VIEWPORT)
    await page.keyboard.press("Escape")
    await expect(panel).to_be_hidden()
    watch.assert_clean()


@pytest.mark.parametrize("locale", LOCALES)
async def test_the_app_centre(
    in_language: NewPage,
    own_appserver: AppServerProcess,
    client_own_server: Client,
    shot: Shot,
    locale: str,
) -> None:
    client = client_own_server
    page, watch = await in_language(locale)
    words = WORDS[locale]
    runtime = client.runtime
    await install_bundled(runtime)
    await log_in(page, client)
    conversation = (await runtime.store.conversations())[0].id
    for _ in range(2):
        await runtime.apps.open_instance("task-dashboard", conversation_id=conversation)
    await expect(page.locator(".dock-item")).to_have_count(2)
    opener = page.get_by_role("button", name=words["apps"], exact=True)
    await opener.click()
    dialog = page.get_by_role("dialog", name=words["apps"])
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".apps-catalog-state")).to_contain_text(words["checked"])
    await expect(dialog.get_by_role("heading", name=words["installed"], exact=True)).to_be_visible()
    board = dialog.locator(".apps-installed .apps-row[data-app-id='dev.lineup.whiteboard']")
    await expect(board.locator(".apps-badge")).to_have_text(words["built_in"])
    await expect(board.locator(".apps-chip")).to_have_text([words["save_files"]])
    await expect(board.locator(".apps-switch-text")).to_have_text(words["on"])
    await expect(dialog.get_by_role("button", name=words["check"])).to_be_visible()
    await shot(page, "app-centre")
    await page.set_viewport_size({"width": 375, "height": 740})
    await shot(page, "app-centre-375")
    await page.set_viewport_size(VIEWPORT)

    # Turning off an app that runs asks first, saying how many instances close.
    tasks = dialog.locator(".apps-installed .apps-row[data-app-id='dev.lineup.task-dashboard']")
    await tasks.get_by_role("switch").click()
    await expect(tasks.locator(".apps-confirm-text")).to_have_text(words["turn_off_ask"])
    await expect(tasks.get_by_role("button", name=words["keep_on"])).to_be_focused()
    await shot(page, "turn-off-asks")
    await tasks.get_by_role("button", name=words["keep_on"]).click()
    await expect(tasks.get_by_role("switch")).to_be_checked()

    # A refusal's receipt, in words: the catalog cannot be reached.
    own_appserver.stop()
    await dialog.get_by_role("button", name=words["check"]).click()
    toast = page.locator(".toast.apps-toast")
    await expect(toast).to_contain_text(words["catalog_unavailable"])
    await expect(toast.locator(".toast-title")).to_have_text(words["not_checked"])
    await toast.evaluate("t => Promise.all(t.getAnimations().map((a) => a.finished))")
    await shot(page, "catalog-unreachable")
    watch.assert_clean()


async def choose(page: Page, label: str, option: str, apply: str) -> None:
    """Open Settings and choose ``option`` as the language with the keyboard."""
    await page.locator("#settings-open").click()
    language = page.get_by_role("combobox", name=label)
    await language.focus()
    await language.select_option(label=option)
    async with page.expect_navigation():
        await page.get_by_role("button", name=apply).press("Enter")
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")


async def test_the_language_setting_is_kept_across_reloads_tabs_and_restarts(
    in_language: NewPage,
    appserver: AppServerProcess,
    pair: Pair,
    tmp_path: Path,
    shot: Shot,
) -> None:
    page, watch = await in_language("en-US")
    data_dir = tmp_path / "runtime"
    async with serving(appserver, pair, data_dir) as client:
        await log_in(page, client)
        assert await page_lang(page) == "en"
        await page.locator("#settings-open").click()
        apply = page.get_by_role("button", name="Use this language")
        await expect(apply).to_be_disabled()  # the choice as it is: nothing to do
        await page.get_by_role("button", name="Close").click()
        await choose(page, "Language", "简体中文", "Use this language")
        assert await page_lang(page) == "zh-CN"
        assert await client.runtime.locale_choice() == "zh-CN"
        await expect(page.locator("#settings-open")).to_have_text("设置")
        await expect(page.locator("#settings-open")).to_be_focused()  # back where it was
        await expect(page.locator("#input")).to_have_attribute("placeholder", "给你的智能体发消息…")
        await shot(page, "chosen-chinese")

        await page.reload()
        await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
        assert await page_lang(page) == "zh-CN"
        await page.locator("#settings-open").click()
        await expect(page.get_by_role("combobox", name="语言")).to_have_value("zh-CN")
        await shot(page, "settings-after-reload")
        await page.keyboard.press("Escape")

        second = await page.context.new_page()
        watch.attach(second)
        await second.goto(client.url + "/")
        await expect(second.locator("#connection")).to_have_attribute("data-state", "connected")
        assert await page_lang(second) == "zh-CN"
        await expect(second.locator("#settings-open")).to_have_text("设置")
        await second.close()

    async with serving(appserver, pair, data_dir) as restarted:
        await page.goto(restarted.url + "/")
        await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
        assert await page_lang(page) == "zh-CN"
        await expect(page.locator("#settings-open")).to_have_text("设置")
        # As the browser says: the browser's English again, and nothing stored.
        await choose(page, "语言", "跟随浏览器", "使用此语言")
        assert await page_lang(page) == "en"
        await expect(page.locator("#settings-open")).to_have_text("Settings")
        assert await restarted.runtime.locale_choice() is None
        await page.locator("#settings-open").click()
        await expect(page.get_by_role("combobox", name="Language")).to_have_value("auto")
        await shot(page, "back-to-the-browser-s")
    # The Runtime's stop while the tab was open is the only trouble the page saw.
    assert watch.page_errors == []
    assert not [e for e in watch.console_errors if "i18n" in e]
