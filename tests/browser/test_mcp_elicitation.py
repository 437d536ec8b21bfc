"""An MCP server's form, answered in a real Chromium (issue 24): the agent (the agent SDK,
through the real AppServer) calls ``server-everything``'s ``trigger-elicitation-request``
through the person's Runtime, which runs the server from npm as its child; the server
asks for a form; the person fills in the trusted card in the Interact timeline and the
tool's result, which echoes what was accepted, reaches the agent. Decline and cancel
answer the server without content, and a second tab's late answer is refused."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, WebSocketRoute, expect

from lineup.agent import Agent, Conversation, MemoryCursorStore
from lineup.client import Backoff
from lineup.runtime.mcp import ServerConfig
from tests.browser.conftest import Screenshot
from tests.browser.test_ime import Sent, commit, compose, composition, ime_enter, synthetic_enter
from tests.conftest import Pair
from tests.runtime.mcp.conftest import stdio_config
from tests.runtime.mcp.test_gateway import Inventories, text_of
from tests.support.appserver import AppServerProcess
from tests.support.axe import describe, serious_violations
from tests.support.browser import PageWatch, new_watched_page
from tests.support.browser_interactions import chat_id, log_in
from tests.support.npm import EVERYTHING, NpmUnavailable, npm_package
from tests.support.webhost import Client, serving

TOOL = "mcp-everything.trigger-elicitation-request"
MESSAGE = "Please provide inputs for the following fields:"
WAIT = 30.0


@pytest.fixture(scope="module")
def everything() -> ServerConfig:
    try:
        where = npm_package(*EVERYTHING, marker="dist/index.js")
    except NpmUnavailable as exc:
        pytest.fail(str(exc))
    return stdio_config("everything", "node", str(where / "dist" / "index.js"), "stdio")


@asynccontextmanager
async def lineup(
    appserver: AppServerProcess, pair: Pair, data_dir: Path, everything: ServerConfig
) -> AsyncIterator[tuple[Client, Conversation]]:
    """The person's Runtime and Web Host running server-everything (its tools run
    without the consent dialog: the form is what is tested), and the agent."""
    seen = Inventories()
    async with serving(appserver, pair, data_dir, mcp_servers=(everything,)) as client:
        agent = seen.build(
            Agent(
                appserver.url,
                pair.agent_key,
                cursor_store=MemoryCursorStore(),
                backoff=Backoff(base=0.05, cap=0.3),
            )
        )
        running = asyncio.create_task(agent.run())
        try:
            await asyncio.wait_for(agent.ready.wait(), WAIT)
            # The conversation the shell shows: the client's own chat with the agent.
            conversation = agent.conversations[await chat_id(client)]
            await seen.advertised(conversation, TOOL)
            await client.runtime.mcp.set_policy("everything", "allow")
            yield client, conversation
        finally:
            await agent.stop()
            await asyncio.wait_for(running, WAIT)


def form_card(page: Page) -> Any:
    return page.locator(".item.elicitation")


def field(card: Any, name: str) -> Any:
    return card.locator(f'[data-field="{name}"]')


@pytest.mark.parametrize("page_locale", [None, "zh-CN"])
async def test_the_form_card_shows_the_servers_fields_and_cancel_answers_cancel(
    appserver: AppServerProcess,
    pair: Pair,
    tmp_path: Path,
    everything: ServerConfig,
    page: Page,
    page_watch: PageWatch,
    screenshot: Screenshot,
    page_locale: str | None,
) -> None:
    zh = page_locale == "zh-CN"
    async with lineup(appserver, pair, tmp_path / "rt", everything) as (client, conversation):
        await log_in(page, client)
        call = asyncio.create_task(conversation.call_tool(TOOL, {}, call_id="shown"))
        card = form_card(page)
        await expect(card).to_have_attribute(
            "data-elicitation-state", "pending", timeout=WAIT * 1000
        )
        section = card.locator(".card")
        await expect(section).to_be_focused()  # a new question takes the idle focus
        await expect(card.locator(".card-kind")).to_have_text(
            "来自 everything 的表单" if zh else "Form from everything"
        )
        await expect(card.locator(".card-prompt")).to_have_text(MESSAGE)
        # One field per property, labelled, described, defaults filled in.
        name = card.get_by_role("textbox", name="String", exact=True)
        await expect(name).to_have_attribute("aria-required", "true")
        described = (await name.get_attribute("aria-describedby") or "").split()
        texts = [await page.locator(f"#{i}").text_content() for i in described]
        assert "Your full, legal name" in texts
        await expect(card.get_by_label("String with default")).to_have_value(
            "It was a dark and stormy night."
        )
        await expect(card.get_by_label("Integer", exact=True)).to_have_value("42")
        await expect(card.get_by_label("Integer", exact=True)).to_have_attribute("max", "100")
        await expect(card.get_by_label("String with email format")).to_have_attribute(
            "type", "email"
        )
        await expect(field(card, "check").locator("input[type=checkbox]")).not_to_be_checked()
        friends = field(card, "untitledSingleSelectEnum").locator("select")  # six: a select
        await expect(friends).to_have_value("Monica")
        heroes = field(card, "titledSingleSelectEnum").get_by_role("radio")
        await expect(heroes).to_have_count(3)
        await expect(field(card, "titledSingleSelectEnum").get_by_label("Superman")).to_be_checked()
        pets = field(card, "legacyTitledEnum").get_by_role("radio")
        await expect(pets.first).to_have_accessible_name("Cats")
        fish = field(card, "titledMultipleSelectEnum").get_by_role("checkbox")
        await expect(fish).to_have_count(3)
        await expect(field(card, "titledMultipleSelectEnum").get_by_label("Tuna")).to_be_checked()
        await expect(card.locator(".countdown")).to_have_text(
            re.compile("(10|9) ?分钟后过期" if zh else r"Expires in (10|9) minutes")
        )
        await screenshot("pending")
        for scheme in ("light", "dark"):  # axe-core: no serious or critical violation
            await page.emulate_media(color_scheme=scheme)
            assert describe(await serious_violations(page)) == "", scheme
        await page.emulate_media(color_scheme="light")
        await card.get_by_role("button", name="取消" if zh else "Cancel").click()
        result = await asyncio.wait_for(call, WAIT)
        assert "User cancelled the elicitation dialog" in text_of(result)
        await expect(card).to_have_attribute("data-elicitation-state", "cancelled")
        await expect(card.locator(".final")).to_have_text("已取消" if zh else "Cancelled")
        assert await card.locator("input, button, select").count() == 0
    assert page_watch.problems() == []


async def test_the_person_fills_in_the_form_and_the_agent_gets_what_was_accepted(
    appserver: AppServerProcess,
    pair: Pair,
    tmp_path: Path,
    everything: ServerConfig,
    page: Page,
    page_watch: PageWatch,
    browser: Browser,
    screenshot: Screenshot,
) -> None:
    async with lineup(appserver, pair, tmp_path / "rt", everything) as (client, conversation):
        sent = Sent(page)
        await log_in(page, client)
        # A second tab whose updates are held back: it still shows the form pending
        # when the first tab's answer has already counted.
        context, late, _ = await new_watched_page(browser, None)
        held: list[str] = []

        async def hold(ws: WebSocketRoute) -> None:
            server = ws.connect_to_server()

            def down(message: str | bytes) -> None:
                text = message if isinstance(message, str) else message.decode()
                if '"kind":"elicitation"' in text and '"state":"pending"' not in text:
                    held.append(text)  # the form's end: this tab does not hear it
                else:
                    ws.send(text)

            server.on_message(down)
            ws.on_message(lambda message: server.send(message))

        await late.route_web_socket(re.compile(r"/host$"), hold)
        await log_in(late, client)

        call = asyncio.create_task(conversation.call_tool(TOOL, {}, call_id="filled"))
        card = form_card(page)
        await expect(card).to_have_attribute(
            "data-elicitation-state", "pending", timeout=WAIT * 1000
        )
        await expect(form_card(late)).to_have_attribute("data-elicitation-state", "pending")

        # The shell checks as the Runtime will: nothing is sent while a field is wrong.
        send = card.get_by_role("button", name="Send")
        await send.click()
        name = card.get_by_role("textbox", name="String", exact=True)
        await expect(name).to_be_focused()
        await expect(name).to_have_attribute("aria-invalid", "true")
        await expect(field(card, "name").locator(".field-error")).to_have_text("Required.")
        # Chinese input: the IME's Enter picks its text and never sends the form.
        await name.focus()
        cdp = await page.context.new_cdp_session(page)
        await compose(cdp, "ada")
        await ime_enter(cdp)
        await commit(cdp, "阿达")
        await composition(name, "compositionstart")
        await page.keyboard.press("Enter")
        await composition(name, "compositionend", "阿达")
        assert not await synthetic_enter(name, keyCode=229)  # its default is prevented
        await expect(name).to_have_value("阿达")
        await expect(card).to_have_attribute("data-elicitation-state", "pending")
        assert sent.ops("elicit") == []
        await name.fill("Ada Lovelace")
        email = card.get_by_label("String with email format")
        await email.fill("not an email")
        await send.click()
        await expect(email).to_be_focused()
        await expect(field(card, "email").locator(".field-error")).to_contain_text("email")
        await expect(card).to_have_attribute("data-elicitation-state", "pending")
        await email.fill("ada@example.com")
        await card.get_by_label("Integer", exact=True).fill("7")
        await field(card, "check").locator("input").check()
        await field(card, "titledMultipleSelectEnum").get_by_label("Salmon").check()
        await field(card, "untitledSingleSelectEnum").locator("select").select_option("Joey")
        await screenshot("filled")
        await name.press("Enter")  # Enter in a field sends the form

        result = await asyncio.wait_for(call, WAIT)
        assert [f["action"] for f in sent.ops("elicit")] == ["accept"]  # sent once
        text = text_of(result)
        assert "User provided the requested information" in text
        assert "- Name: Ada Lovelace" in text and "- Email: ada@example.com" in text
        assert "- Favorite Integer: 7" in text and "- Agreed to terms: true" in text
        raw = json.loads(text.split("Raw result: ", 1)[1])
        assert raw["action"] == "accept"
        assert raw["content"]["titledMultipleSelectEnum"] == ["fish-1", "fish-2"]
        assert raw["content"]["untitledSingleSelectEnum"] == "Joey"
        await expect(card).to_have_attribute("data-elicitation-state", "accepted")
        answer = card.locator(".elicit-answer")
        await expect(answer).to_contain_text("Ada Lovelace")
        await expect(answer).to_contain_text("Salmon")
        await screenshot("accepted")
        assert describe(await serious_violations(page)) == ""

        # The second tab, which never heard, answers too: refused, the first answer stands.
        stale = form_card(late)
        await expect(stale).to_have_attribute("data-elicitation-state", "pending")
        await stale.get_by_role("button", name="Decline").click()
        await expect(stale.locator(".card-alert")).to_have_text(
            "This form was already answered (perhaps in another tab)."
        )
        await expect(stale).to_have_attribute("data-elicitation-state", "closed")
        assert held  # it was told, and did not hear
        elicitation_id = await card.get_attribute("data-elicitation-id")
        stored = await client.runtime.elicitor.get(elicitation_id or "")
        assert stored is not None and stored.state == "accepted"
        await context.close()
    assert page_watch.problems() == []


async def test_decline_answers_decline_and_nothing_is_sent_back(
    appserver: AppServerProcess,
    pair: Pair,
    tmp_path: Path,
    everything: ServerConfig,
    page: Page,
    page_watch: PageWatch,
) -> None:
    async with lineup(appserver, pair, tmp_path / "rt", everything) as (client, conversation):
        await log_in(page, client)
        call = asyncio.create_task(conversation.call_tool(TOOL, {}, call_id="declined"))
        card = form_card(page)
        await expect(card).to_have_attribute(
            "data-elicitation-state", "pending", timeout=WAIT * 1000
        )
        await card.get_by_role("textbox", name="String", exact=True).fill("typed, then declined")
        await card.get_by_role("button", name="Decline").click()
        result = await asyncio.wait_for(call, WAIT)
        text = text_of(result)
        assert "User declined to provide the requested information" in text
        assert "typed, then declined" not in text
        await expect(card).to_have_attribute("data-elicitation-state", "declined")
        await expect(card.locator(".final")).to_have_text("Declined")
    assert page_watch.problems() == []
