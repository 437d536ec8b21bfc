"""A tool call never moves to another instance, in the real shell with two Task
Dashboards: the person closes one while its question waits and answers it in the
closed group; the agent's follow-up, bound to the closed board, is refused
(``app_instance_not_found``, "the instance is closed") while the other board stays
open, with its tasks untouched. A call naming no board, with two open, is refused
``app_instance_ambiguous``; with one open it goes there (docs/miniapps.md, "How a tool
call finds its instance")."""

from __future__ import annotations

import asyncio

import pytest
from playwright.async_api import FrameLocator, Page, expect

from lineup.agent import AppInstance, Conversation, ToolCallError
from lineup.miniapps import bundle_dir
from tests.browser.conftest import Screenshot
from tests.support.browser import PageWatch
from tests.support.browser_interactions import chat_id, log_in
from tests.support.sdk_agent import running_agent
from tests.support.webhost import Client

SCOPE = "task-dashboard"


def front_board(page: Page) -> FrameLocator:
    return page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")


async def open_board(page: Page, conversation: Conversation, title: str) -> AppInstance:
    """The agent opens a dashboard (it comes to the front) and adds one task to it."""
    board = await conversation.open_app(f"{SCOPE}.open")
    frame = front_board(page)
    await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
    await board.call(f"{SCOPE}.add_task", {"title": title})
    await expect(frame.locator(".card .card-title")).to_have_text([title])
    return board


async def test_a_call_bound_to_a_closed_board_is_refused_while_its_sibling_is_open(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await client.runtime.registry.install_bundle(bundle_dir("task_dashboard"), enable=True)
    await log_in(page, client)
    async with running_agent(client) as agent:
        conversation = agent.conversations[await chat_id(client)]  # the chat the shell shows
        await conversation.send_markdown("Two boards: one for Alpha, one for Beta.")
        await expect(page.locator(".item.from-agent")).to_have_count(1)
        first = await open_board(page, conversation, "Alpha: write the report")
        second = await open_board(page, conversation, "Beta: book the room")
        assert first.instance_id != second.instance_id
        dock = page.locator("#dock .dock-item")
        await expect(dock).to_have_count(2)

        # Two are open: a call that names neither is refused, not sent to the one in front.
        with pytest.raises(ToolCallError) as ambiguous:
            await conversation.call_tool(f"{SCOPE}.list_tasks")
        assert ambiguous.value.code == "app_instance_ambiguous"

        # The agent asks in the first board's sub-session; the person brings that board
        # forward (the question shows over it), then closes it without answering.
        sid = first.app_session_id
        assert sid is not None
        asking = asyncio.create_task(
            conversation.ask_confirm(
                "Clear the Alpha board?",
                confirm_label="Clear them",
                cancel_label="Keep them",
                app_session_id=sid,
            )
        )
        entry = page.locator(f'#dock .dock-item[data-instance-id="{first.instance_id}"]')
        await entry.locator(".dock-front").click()
        await expect(page.locator("#app-overlay .card-prompt")).to_have_text(
            "Clear the Alpha board?"
        )
        await entry.locator(".dock-close").click()
        await expect(dock).to_have_count(1)
        closed = client.runtime.apps.record(first.instance_id)
        assert closed is not None and closed.state == "stopped"

        # The other board came to the front; back in the chat, the question waits in
        # the closed group, and the person answers it there: "clear them".
        await page.locator("#app-area-back").click()
        await expect(page.locator("#app-area")).to_be_hidden()
        group = page.locator(f'.items > .item.app-session[data-app-session-id="{sid}"]')
        await expect(group.locator(".group-state")).to_have_text("closed · read-only")
        await group.locator(".group-head").click()
        await group.get_by_role("button", name="Clear them").click()
        assert await asyncio.wait_for(asking, 20) is True

        # The agent's follow-up names the closed board: refused, and says why.
        with pytest.raises(ToolCallError) as refused:
            await first.call(f"{SCOPE}.complete_task", {"id": "t1"})
        assert (refused.value.status, refused.value.code, refused.value.message) == (
            "rejected",
            "app_instance_not_found",
            "the instance is closed",
        )

        # The other board is open and unchanged: its task is still to do, on screen too.
        live = [r.instance_id for r in client.runtime.apps.instances().live()]
        assert live == [second.instance_id]
        beta = [{"id": "t1", "title": "Beta: book the room", "notes": "", "column": "todo"}]
        assert await second.call(f"{SCOPE}.list_tasks") == {"tasks": beta}
        # With one board open, a call naming none goes to it.
        assert await conversation.call_tool(f"{SCOPE}.list_tasks") == {"tasks": beta}
        await page.locator(
            f'#dock .dock-item[data-instance-id="{second.instance_id}"] .dock-front'
        ).click()
        frame = front_board(page)
        await expect(frame.locator('section.column[data-column="todo"] .card-title')).to_have_text(
            ["Beta: book the room"]
        )
        await expect(frame.locator('section.column[data-column="done"] .card')).to_have_count(0)
        await screenshot("routing-sibling-untouched-after-refused-call")
        await page.locator("#app-area-back").click()
        await group.scroll_into_view_if_needed()
        await screenshot("routing-closed-group-answered")
    page_watch.assert_clean()
