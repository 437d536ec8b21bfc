"""The Task Dashboard reference MiniApp in the real shell, in Chromium: the agent SDK
calls each of its tools and gets the app's result while the board shows it; what the
person does on the board (add, edit in place, move with buttons and keys, delete, undo,
filter) is what ``list_tasks`` then sees; ``import_tasks`` shows its progress in the app
and sends ``tool.progress``; the board survives a reload, a Runtime restart and
"Continue"; closing the app while an import runs cancels the call (``app_closed``)
with exactly one result."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import FrameLocator, Locator, Page, expect

from lineup.agent import Conversation, ToolCallError
from lineup.formats.bundle import load_bundle_dir, surface_source
from lineup.miniapps import bundle_dir
from lineup.protocol.fields import MAX_BUNDLE_BYTES
from tests.browser.conftest import Screenshot
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch
from tests.support.browser_interactions import log_in
from tests.support.sdk_agent import sdk_conversation
from tests.support.webhost import Client, serving

BUNDLE = bundle_dir("task_dashboard")
SCOPE = "task-dashboard"


def board(page: Page) -> FrameLocator:
    return page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")


def column(frame: FrameLocator, name: str) -> Locator:
    return frame.locator(f'section.column[data-column="{name}"]')


def titles(frame: FrameLocator, name: str) -> Locator:
    return column(frame, name).locator(".card .card-title")


def card(frame: FrameLocator, title: str) -> Locator:
    return frame.locator(".card").filter(has=frame.locator(".card-title", has_text=title))


async def envelopes(client: Client, kind: str, call_id: str) -> list[dict[str, Any]]:
    """The payloads of the agent's stored ``kind`` envelopes for ``call_id``."""
    stored = await client.pair.agent.read_all(client.pair.conversation_id)
    return [
        s["envelope"]["payload"]
        for s in stored
        if s["envelope"]["type"] == kind and s["envelope"]["payload"].get("call_id") == call_id
    ]


def task(task_id: str, title: str, column_name: str = "todo", notes: str = "") -> dict[str, str]:
    return {"id": task_id, "title": title, "notes": notes, "column": column_name}


class Board:
    """The agent's side: ``call("add_task", title=...)`` on one instance's sub-session."""

    def __init__(self, conversation: Conversation, app_session_id: str | None) -> None:
        self.conversation = conversation
        self.app_session_id = app_session_id

    async def call(self, tool: str, call_id: str | None = None, **arguments: Any) -> Any:
        return await self.conversation.call_tool(
            f"{SCOPE}.{tool}", arguments, app_session_id=self.app_session_id, call_id=call_id
        )


async def opened(client: Client, conversation: Conversation, page: Page) -> tuple[str, Board]:
    """The agent launches the dashboard; the instance id and the agent's handle on it."""
    result = await conversation.call_tool(f"{SCOPE}.open")
    live = [r for r in client.runtime.apps.instances().live() if r.app_scope == SCOPE]
    instance_id = live[-1].instance_id
    assert result["instance_id"] == instance_id
    await expect(board(page).locator("body")).to_have_attribute("data-ready", "true")
    return instance_id, Board(conversation, await client.runtime.apps.app_session_id(instance_id))


def test_the_bundle_loads_and_its_surface_is_under_160_kib() -> None:
    loaded = load_bundle_dir(BUNDLE)
    manifest = loaded.manifest
    assert (manifest.id, manifest.version, manifest.kind) == (
        "dev.lineup.task-dashboard",
        "1.1.0",
        "bundled",
    )
    assert (manifest.name, manifest.app_scope, manifest.icon) == (
        "Task Dashboard",
        SCOPE,
        "icons/task-dashboard.svg",
    )
    assert [t.id for t in manifest.tools] == [
        f"{SCOPE}.{name}"
        for name in (
            "open",
            "add_task",
            "update_task",
            "complete_task",
            "list_tasks",
            "import_tasks",
        )
    ]
    source = surface_source(manifest, loaded.files, "main")
    assert source is not None
    size = sum(len(part.encode()) for part in (source.html, source.css, source.js))
    assert 0 < size < MAX_BUNDLE_BYTES == 160 * 1024


@pytest.mark.headed_path
async def test_every_tool_shows_on_the_board_and_list_tasks_sees_the_person_s_edits(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)
    frame = board(page)
    async with sdk_conversation(client) as conversation:
        instance_id, agent = await opened(client, conversation, page)
        await expect(frame.locator(".empty").first).to_have_text(
            "Nothing to do yet. Add a task to get going."
        )

        # The agent adds, updates and completes; each result is the task as the board has it.
        offsite = await agent.call("add_task", title="  Plan the offsite ", notes="Two days")
        assert offsite == {"task": task("t1", "Plan the offsite", notes="Two days")}
        venue = await agent.call("add_task", title="Book the venue", column="doing")
        assert venue == {"task": task("t2", "Book the venue", "doing")}
        budget = await agent.call("add_task", title="Draft the budget")
        assert budget == {"task": task("t3", "Draft the budget")}
        await expect(titles(frame, "todo")).to_have_text(["Plan the offsite", "Draft the budget"])
        await expect(titles(frame, "doing")).to_have_text(["Book the venue"])
        await expect(card(frame, "Plan the offsite").locator(".card-notes")).to_have_text(
            "Two days"
        )
        updated = await agent.call("update_task", id="t3", title="Draft the budget (v2)")
        assert updated == {"task": task("t3", "Draft the budget (v2)")}
        moved = await agent.call(
            "update_task", id="t1", notes="Two days, by the lake", column="doing"
        )
        assert moved == {"task": task("t1", "Plan the offsite", "doing", "Two days, by the lake")}
        completed = await agent.call("complete_task", id="t2")
        assert completed == {"task": task("t2", "Book the venue", "done")}
        await expect(titles(frame, "todo")).to_have_text(["Draft the budget (v2)"])
        await expect(titles(frame, "doing")).to_have_text(["Plan the offsite"])
        await expect(titles(frame, "done")).to_have_text(["Book the venue"])
        await expect(column(frame, "done").locator(".count")).to_have_text("1")
        await expect(card(frame, "Book the venue").get_by_role("checkbox")).to_be_checked()
        await expect(frame.locator("#summary")).to_have_text("1 of 3 tasks done")

        # An unknown id is the app's own failure; bad arguments never reach the app.
        with pytest.raises(ToolCallError) as unknown:
            await agent.call("update_task", id="t99", title="Nope")
        assert (unknown.value.status, unknown.value.code) == ("failed", "task_not_found")
        with pytest.raises(ToolCallError) as missing:
            await agent.call("complete_task", id="t42")
        assert (missing.value.status, missing.value.code) == ("failed", "task_not_found")
        with pytest.raises(ToolCallError) as invalid:
            await agent.call("add_task", title="Later", column="someday")
        assert (invalid.value.status, invalid.value.code) == ("rejected", "tool_input_invalid")
        assert await agent.call("list_tasks", column="doing") == {
            "tasks": [task("t1", "Plan the offsite", "doing", "Two days, by the lake")]
        }

        # The person: a new task from the form, into Doing.
        await frame.get_by_role("button", name="New task").click()
        await frame.get_by_label("Title of the new task").fill("Send the invitations")
        await frame.get_by_label("Notes (optional)").fill("Everyone on the team list")
        await frame.get_by_label("Column").select_option("doing")
        await frame.get_by_role("button", name="Add", exact=True).click()
        await expect(titles(frame, "doing")).to_have_text(
            ["Plan the offsite", "Send the invitations"]
        )
        await expect(frame.get_by_label("Title of the new task")).to_be_focused()
        await frame.get_by_label("Title of the new task").press("Escape")
        await expect(frame.locator("#new-form")).to_be_hidden()

        # Edits in place: title and notes.
        await frame.get_by_role("button", name="Edit “Draft the budget (v2)”").click()
        editor = frame.locator(".card.editing")
        await expect(editor.get_by_label("Title")).to_be_focused()
        await editor.get_by_label("Title").fill("Agree the budget")
        await editor.get_by_label("Notes").fill("Ask finance first")
        await editor.get_by_role("button", name="Save").click()
        await expect(frame.locator(".card.editing")).to_have_count(0)
        await expect(card(frame, "Agree the budget")).to_be_focused()
        await expect(card(frame, "Agree the budget").locator(".card-notes")).to_have_text(
            "Ask finance first"
        )

        # Moves: with a button, with the keyboard, with the done box.
        await frame.get_by_role("button", name="Move “Agree the budget” to Doing").click()
        await expect(titles(frame, "doing")).to_have_text(
            ["Plan the offsite", "Send the invitations", "Agree the budget"]
        )
        invitations = card(frame, "Send the invitations")
        await invitations.focus()
        await page.keyboard.press("Shift+ArrowUp")
        await expect(titles(frame, "doing")).to_have_text(
            ["Send the invitations", "Plan the offsite", "Agree the budget"]
        )
        await page.keyboard.press("Shift+ArrowRight")
        await expect(titles(frame, "done")).to_have_text(["Book the venue", "Send the invitations"])
        await expect(card(frame, "Send the invitations")).to_be_focused()
        await card(frame, "Book the venue").get_by_role("checkbox").uncheck()
        await expect(titles(frame, "todo")).to_have_text(["Book the venue"])

        # Delete, undo, delete with the keyboard.
        await frame.get_by_role("button", name="Delete “Book the venue”").click()
        await expect(titles(frame, "todo")).to_have_count(0)
        await expect(frame.locator("#toast")).to_contain_text("Deleted “Book the venue”.")
        await frame.get_by_role("button", name="Undo").click()
        await expect(titles(frame, "todo")).to_have_text(["Book the venue"])
        await card(frame, "Book the venue").focus()
        await page.keyboard.press("Delete")
        await expect(titles(frame, "todo")).to_have_count(0)

        # The filter narrows every column and says so in the counts.
        await frame.get_by_label("Filter tasks").fill("offsite")
        await expect(frame.locator(".card")).to_have_count(1)
        await expect(column(frame, "doing").locator(".count")).to_have_text("1/2")
        await expect(column(frame, "done").locator(".empty")).to_have_text(
            "No tasks match the filter."
        )
        await frame.get_by_label("Filter tasks").press("Escape")
        await expect(frame.locator(".card")).to_have_count(3)

        # The agent sees the person's board only by asking.
        assert await agent.call("list_tasks") == {
            "tasks": [
                task("t1", "Plan the offsite", "doing", "Two days, by the lake"),
                task("t3", "Agree the budget", "doing", "Ask finance first"),
                task("t4", "Send the invitations", "done", "Everyone on the team list"),
            ]
        }
        stored = await client.pair.agent.read_all(client.pair.conversation_id)
        kinds = {s["envelope"]["type"] for s in stored}
        assert "lineup.v1.ui.event" not in kinds  # the person's edits stay in the app

        await frame.get_by_role("button", name="Dismiss").click()
        await expect(frame.locator("#toast")).to_be_hidden()
        await expect(frame.locator(".card.flash")).to_have_count(0)  # the agent's changes glow
        await screenshot("board-desktop")
        await page.set_viewport_size({"width": 375, "height": 740})
        await expect(column(frame, "doing")).to_be_visible()
        await screenshot("board-375")
        width = await page.evaluate("document.documentElement.scrollWidth")
        assert width <= 375, width
        await frame.get_by_role("button", name="Move “Plan the offsite” to Done").click()
        await expect(titles(frame, "done")).to_have_text(
            ["Send the invitations", "Plan the offsite"]
        )
        assert instance_id in client.runtime.apps.instances().records
    page_watch.assert_clean()


async def test_import_shows_its_progress_and_closing_the_app_cancels_it_once(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)
    frame = board(page)
    async with sdk_conversation(client) as conversation:
        _, agent = await opened(client, conversation, page)
        names = [f"Imported task {n}" for n in range(1, 31)]
        importing = asyncio.create_task(agent.call("import_tasks", "import-1", titles=names))
        row = frame.locator('.import-row[data-call-id="import-1"]')
        await expect(row.locator(".import-text")).to_contain_text("Importing tasks from the agent…")
        await expect(row.locator("progress")).to_have_attribute("max", "30")
        await screenshot("import-under-way")
        assert await asyncio.wait_for(importing, 30) == {"imported": 30}
        await expect(row.locator(".import-text")).to_have_text("Imported 30 tasks")
        await expect(column(frame, "todo").locator(".count")).to_have_text("30")
        await expect(titles(frame, "todo").last).to_have_text("Imported task 30")
        progress = await envelopes(client, "lineup.v1.tool.progress", "import-1")
        assert progress, "no tool.progress for the import"
        currents = [p["current"] for p in progress]
        assert currents == sorted(currents) and all(p["total"] == 30 for p in progress)
        assert progress[0]["label"].startswith("Imported ")

        # A long import, and the person closes the app in the middle of it.
        many = [f"Bulk {n}" for n in range(1, 201)]
        held = asyncio.create_task(agent.call("import_tasks", "import-2", titles=many))
        row = frame.locator('.import-row[data-call-id="import-2"]')
        await expect(row.locator(".import-text")).to_contain_text("Importing")
        await expect(row.locator("progress")).not_to_have_attribute("value", "0")
        await page.get_by_role("button", name="Close Task Dashboard").click()
        await expect(page.locator("#app-area-frame iframe")).to_have_count(0)
        with pytest.raises(ToolCallError) as closed:
            await asyncio.wait_for(held, 30)
        assert (closed.value.status, closed.value.code) == ("cancelled", "app_closed")
    results = await envelopes(client, "lineup.v1.tool.result", "import-2")
    assert [(r["status"], r["error"]["code"]) for r in results] == [("cancelled", "app_closed")]
    assert len(await envelopes(client, "lineup.v1.tool.result", "import-1")) == 1
    page_watch.assert_clean()


async def test_the_board_survives_a_reload_a_runtime_restart_and_continue(
    page: Page, appserver: AppServerProcess, pair: Pair, tmp_path: Path, screenshot: Screenshot
) -> None:
    data_dir = tmp_path / "runtime"
    frame = board(page)
    async with serving(appserver, pair, data_dir) as client:
        await client.runtime.registry.install_bundle(BUNDLE, enable=True)
        await log_in(page, client)
        async with sdk_conversation(client) as conversation:
            instance_id, agent = await opened(client, conversation, page)
            await agent.call("add_task", title="Water the plants", column="doing")
            await agent.call("add_task", title="Call the plumber", notes="Kitchen sink")
        await frame.get_by_role("button", name="Move “Call the plumber” to Doing").click()
        await expect(titles(frame, "doing")).to_have_text(["Water the plants", "Call the plumber"])

        await page.reload()
        await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
        await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
        await expect(titles(frame, "doing")).to_have_text(["Water the plants", "Call the plumber"])
        await frame.get_by_role("button", name="Move “Water the plants” to Done").click()
        await expect(titles(frame, "done")).to_have_text(["Water the plants"])

    async with serving(appserver, pair, data_dir) as restarted:
        await page.goto(restarted.url + "/")
        await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
        await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
        await expect(titles(frame, "doing")).to_have_text(["Call the plumber"])
        await expect(titles(frame, "done")).to_have_text(["Water the plants"])
        async with sdk_conversation(restarted) as conversation:
            sid = await restarted.runtime.apps.app_session_id(instance_id)
            agent = Board(conversation, sid)
            assert await agent.call("list_tasks") == {
                "tasks": [
                    task("t2", "Call the plumber", "doing", "Kitchen sink"),
                    task("t1", "Water the plants", "done"),
                ]
            }

            # Closed and continued: the new instance starts from the old board.
            await page.get_by_role("button", name="Close Task Dashboard").click()
            await expect(page.locator("#app-area-frame iframe")).to_have_count(0)
            # The shell's "Continue" button sits in the sub-session's group of the chat it
            # shows, which is not the agent SDK's conversation here: ask the kernel the same.
            continued = await restarted.runtime.apps.continue_work(instance_id, actor="user")
            assert continued.accepted
            await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
            await expect(frame.locator("#toast")).to_contain_text("Continued your earlier board")
            await expect(titles(frame, "doing")).to_have_text(["Call the plumber"])
            await expect(titles(frame, "done")).to_have_text(["Water the plants"])
            (live,) = [r for r in restarted.runtime.apps.instances().live() if r.app_scope == SCOPE]
            assert live.instance_id != instance_id
            assert live.parent_instance_id == instance_id
            agent = Board(
                conversation, await restarted.runtime.apps.app_session_id(live.instance_id)
            )
            added = await agent.call("add_task", title="Buy a new hose")
            assert added == {"task": task("t3", "Buy a new hose")}
            await expect(titles(frame, "todo")).to_have_text(["Buy a new hose"])
            await screenshot("continued-board")
