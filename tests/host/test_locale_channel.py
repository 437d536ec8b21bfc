"""The language setting over the host channel, on real sockets: a tab's ``locale``
frame stores the person's choice in the Runtime, every tab hears it, and the Web Host's
pages follow it whatever the browser's ``Accept-Language``; ``null`` goes back to the
browser's. A frame naming anything else is refused with a code and changes nothing."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection

from tests.support.host_channel import hello, next_frame, tab
from tests.support.webhost import Client

CHINESE_BROWSER = {"Accept-Language": "zh-CN,zh;q=0.9,en;q=0.5"}
ENGLISH_BROWSER = {"Accept-Language": "en-US,en;q=0.9"}


async def page_lang(client: Client, cookie: str | None, headers: dict[str, str]) -> str:
    """The language of the shell's page (the login page without a ``cookie``)."""
    cookies = {"lineup_session": cookie} if cookie else {}
    async with httpx.AsyncClient(base_url=client.url, cookies=cookies) as http:
        response = await http.get("/" if cookie else "/login", headers=headers)
    assert response.status_code == 200
    found = re.search(r'<html lang="([^"]+)"', response.text)
    assert found is not None
    assert response.headers["content-language"] == found[1]
    return found[1]


async def frames_until(ws: ClientConnection, op: str) -> list[dict[str, Any]]:
    """Every frame up to and including the first of ``op``."""
    seen: list[dict[str, Any]] = []
    while not seen or seen[-1]["op"] != op:
        seen.append(json.loads(await ws.recv()))
    return seen


async def test_the_choice_is_stored_heard_by_every_tab_and_followed_by_the_pages(
    client: Client,
) -> None:
    cookie = await client.session_cookie()
    assert await client.runtime.locale_choice() is None
    assert await page_lang(client, cookie, ENGLISH_BROWSER) == "en"
    assert await page_lang(client, cookie, CHINESE_BROWSER) == "zh-CN"
    async with tab(client, cookie) as one, tab(client, cookie) as two:
        await hello(one)
        await hello(two)
        await one.send(json.dumps({"op": "locale", "locale": "zh-CN"}))
        for ws in (one, two):
            assert (await next_frame(ws, "locale")) == {"op": "locale", "choice": "zh-CN"}
        assert await client.runtime.locale_choice() == "zh-CN"
        # The person's choice wins over the browser's languages, on both pages.
        assert await page_lang(client, cookie, ENGLISH_BROWSER) == "zh-CN"
        assert await page_lang(client, None, ENGLISH_BROWSER) == "zh-CN"

        await two.send(json.dumps({"op": "locale", "locale": "en"}))
        for ws in (one, two):
            assert (await next_frame(ws, "locale"))["choice"] == "en"
        assert await page_lang(client, cookie, CHINESE_BROWSER) == "en"

        # As the browser says: nothing stored, each browser gets its own language.
        await one.send(json.dumps({"op": "locale", "locale": None}))
        for ws in (one, two):
            assert (await next_frame(ws, "locale"))["choice"] == "auto"
        assert await client.runtime.locale_choice() is None
        assert await page_lang(client, cookie, CHINESE_BROWSER) == "zh-CN"
        assert await page_lang(client, cookie, ENGLISH_BROWSER) == "en"


async def test_a_bad_locale_frame_is_refused_with_a_code_and_changes_nothing(
    client: Client,
) -> None:
    cookie = await client.session_cookie()
    async with tab(client, cookie) as one, tab(client, cookie) as other:
        await hello(one)
        await hello(other)
        await one.send(json.dumps({"op": "locale", "locale": "zh-CN"}))
        for ws in (one, other):
            await next_frame(ws, "locale")
        bad_frames: list[dict[str, Any]] = [
            {"op": "locale", "locale": "fr"},
            {"op": "locale", "locale": "zh"},  # a tag the shell never sends: not guessed
            {"op": "locale", "locale": "ZH-cn"},
            {"op": "locale", "locale": "auto"},  # "as the browser says" is null
            {"op": "locale", "locale": ""},
            {"op": "locale", "locale": 5},
            {"op": "locale", "locale": ["en"]},
            {"op": "locale", "locale": "<script>"},
            {"op": "locale"},
            {"op": "locale", "locale": "en", "extra": 1},
        ]
        for bad in bad_frames:
            await one.send(json.dumps(bad))
            error = await next_frame(one, "error")
            assert error["code"] == "invalid_request", bad
        # Nothing changed: still Chinese, and no tab was told anything new.
        await one.send(json.dumps({"op": "grants"}))
        await other.send(json.dumps({"op": "grants"}))
        for ws in (one, other):
            assert [f for f in await frames_until(ws, "grants") if f["op"] == "locale"] == []
        assert await client.runtime.locale_choice() == "zh-CN"
        assert await page_lang(client, cookie, ENGLISH_BROWSER) == "zh-CN"


async def test_the_login_page_speaks_the_browser_s_language_and_keeps_it_after_a_refusal(
    client: Client,
) -> None:
    form = {"username": client.pair.user_name, "password": "wrong-9b2d"}
    async with httpx.AsyncClient(base_url=client.url) as http:
        for headers, lang, words in [
            (CHINESE_BROWSER, "zh-CN", ["登录", "用户名", "密码"]),
            (ENGLISH_BROWSER, "en", ["Log in", "Username", "Password"]),
        ]:
            page = await http.get("/login", headers=headers)
            assert f'<html lang="{lang}">' in page.text
            assert all(word in page.text for word in words)
            assert page.headers["vary"] == "Accept-Language"
            refused = await http.post(
                "/login", data=form, headers={**headers, "Origin": client.url}
            )
            assert refused.status_code == 200
            assert f'<html lang="{lang}">' in refused.text
            error = "用户名或密码错误。" if lang == "zh-CN" else "Wrong username or password."
            assert f'role="alert">{error}</p>' in refused.text
            assert "wrong-9b2d" not in refused.text
