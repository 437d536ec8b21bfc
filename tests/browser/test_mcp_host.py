"""MCP servers in the shell, in a real Chromium (issue 24, parts 1 and 2): the person's
Runtime runs the real ``server-everything`` from npm; an agent (the real SDK, through
the real AppServer) calls its tools; the person decides in the consent dialog and sets
the server's policy, turns it off and on in the App centre; the agent gets exactly the
one result the person's decision gives."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from playwright.async_api import Page, expect

from lineup.agent import Conversation, ToolCallError
from lineup.protocol import ErrorCode
from lineup.runtime.mcp import ServerConfig
from tests.browser.conftest import Screenshot
from tests.conftest import Pair
from tests.runtime.mcp.conftest import FAULT_SERVER, stdio_config
from tests.runtime.mcp.test_gateway import ECHO, Inventories, agent_for, text_of
from tests.support.appserver import AppServerProcess
from tests.support.axe import describe, serious_violations
from tests.support.browser import PageWatch
from tests.support.browser_interactions import log_in
from tests.support.npm import EVERYTHING, npm_package
from tests.support.webhost import Client, serving

WAIT = 30_000


@pytest.fixture
def everything() -> ServerConfig:
    root = npm_package(*EVERYTHING, marker="dist/index.js")
    return stdio_config("everything", "node", str(root / "dist" / "index.js"), "stdio")


@pytest.fixture
async def person(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path, everything: ServerConfig
) -> AsyncIterator[Client]:
    async with serving(appserver, pair, tmp_path / "runtime", mcp_servers=(everything,)) as made:
        yield made


@pytest.fixture
async def agent(appserver: AppServerProcess, pair: Pair) -> AsyncIterator[Conversation]:
    seen = Inventories()
    async with agent_for(appserver, pair, seen.build) as conversation:
        await seen.advertised(conversation, ECHO)
        yield conversation


async def test_the_person_allows_or_denies_a_tool_call_in_the_dialog(
    page: Page, page_watch: PageWatch, person: Client, agent: Conversation, screenshot: Screenshot
) -> None:
    await log_in(page, person)
    call = asyncio.create_task(agent.call_tool(ECHO, {"message": "hello <b>there</b>"}))
    dialog = page.locator("dialog#consent")
    await expect(dialog).to_be_visible(timeout=WAIT)
    await expect(dialog.locator(".consent-title")).to_have_text("Run the tool Echo Tool?")
    await expect(dialog.locator(".consent-who")).to_contain_text("the tool server")
    await expect(dialog.locator(".consent-mcp-note")).to_be_visible()
    details = await dialog.locator(".consent-preview").text_content()
    assert json.loads(details or "") == {"message": "hello <b>there</b>"}  # text, not HTML
    assert await dialog.get_by_label("Remember for this session").count() == 0
    await screenshot("mcp-consent")
    found = await serious_violations(page)
    assert not found, describe(found)
    await dialog.get_by_role("button", name="Allow").click()
    await expect(dialog).to_be_hidden()
    result = await asyncio.wait_for(call, WAIT / 1000)
    assert text_of(result) == "Echo: hello <b>there</b>"

    call = asyncio.create_task(agent.call_tool(ECHO, {"message": "no"}))
    await expect(dialog).to_be_visible(timeout=WAIT)
    await page.keyboard.press("Escape")  # Escape is a refusal, as for every consent
    await expect(dialog).to_be_hidden()
    with pytest.raises(ToolCallError) as refused:
        await asyncio.wait_for(call, WAIT / 1000)
    assert refused.value.code == ErrorCode.CAPABILITY_DENIED


async def test_the_app_centre_shows_the_server_and_its_policy_and_switch_decide(
    page: Page, page_watch: PageWatch, person: Client, agent: Conversation, screenshot: Screenshot
) -> None:
    await log_in(page, person)
    await page.get_by_role("button", name="Apps").click()
    row = page.locator("dialog#apps li[data-mcp-key=everything]")
    await expect(row).to_be_visible()
    await expect(row.locator(".apps-badge")).to_have_text("Running", timeout=WAIT)
    await expect(row.locator(".apps-meta")).to_contain_text("tools")
    await expect(row.locator(".apps-chip").first).to_be_visible()
    await screenshot("mcp-app-centre")
    found = await serious_violations(page)
    assert not found, describe(found)

    # "Run every tool without asking": the call runs, no dialog.
    await row.get_by_label("When an agent calls a tool").select_option("allow")
    # The Runtime's receipt is announced once it decided (and stored) the policy.
    await expect(page.locator("#announcer")).to_contain_text("Policy changed", timeout=WAIT)
    entry = person.runtime.mcp.entry("everything")
    assert entry is not None and entry.policy == "allow"
    result = await agent.call_tool(ECHO, {"message": "quiet"})
    assert text_of(result) == "Echo: quiet"
    await expect(page.locator("dialog#consent")).to_have_count(0)

    # Off: it stops, and its tools leave the agent's inventory.
    await row.get_by_role("switch").click()
    await expect(row.locator(".apps-badge")).to_have_text("Off", timeout=WAIT)
    with pytest.raises(ToolCallError) as gone:
        await agent.call_tool(ECHO, {"message": "gone"})
    assert gone.value.code in (
        ErrorCode.INVENTORY_REVISION_MISMATCH,
        ErrorCode.APP_DISABLED,
        ErrorCode.TOOL_NOT_ADVERTISED,
    )
    await row.get_by_role("switch").click()
    await expect(row.locator(".apps-badge")).to_have_text("Running", timeout=WAIT)


async def test_a_server_that_will_not_start_is_told_to_the_person(
    page: Page,
    page_watch: PageWatch,
    appserver: AppServerProcess,
    pair: Pair,
    tmp_path: Path,
    screenshot: Screenshot,
) -> None:
    """A server that exits at once is restarted with backoff, then left failed: every tab
    hears it (a toast naming the server and why), and the App centre says why too."""
    broken = stdio_config("broken", sys.executable, str(FAULT_SERVER), env={"FAULT_MODE": "exit"})
    async with serving(appserver, pair, tmp_path / "runtime", mcp_servers=(broken,)) as person:
        await log_in(page, person)
        toast = page.locator("#toasts .apps-mcp-notice").filter(has_text="Turn it off and on")
        await expect(toast).to_be_visible(timeout=60_000)
        await expect(toast).to_contain_text("broken")
        await expect(toast).to_contain_text("3")  # its exit status, from the connection layer
        await page.get_by_role("button", name="Apps").click()
        row = page.locator("dialog#apps li[data-mcp-key=broken]")
        await expect(row.locator(".apps-badge")).to_have_text("Failed to start")
        await expect(row.locator(".apps-mcp-reason")).to_be_visible()
        await screenshot("mcp-failed")
