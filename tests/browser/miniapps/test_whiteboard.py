"""The Whiteboard reference MiniApp in a real Chromium: the agent SDK calls each of its
tools and the shell shows what they do (strokes on the canvas, the consent dialog of an
export, the artifact to download); the person draws with the mouse, undoes and redoes,
and sends the drawing to the agent; the board survives a reload and a Runtime restart;
closing the app while an export waits for consent cancels that call once."""

from __future__ import annotations

import asyncio
import json
import re
import struct
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import FrameLocator, Locator, Page, expect

from lineup.agent import Conversation, ToolCallError
from lineup.formats.bundle import load_bundle_dir
from lineup.miniapps import bundle_dir
from tests.browser.conftest import Screenshot
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch
from tests.support.browser_interactions import log_in
from tests.support.sdk_agent import sdk_conversation
from tests.support.webhost import Client, serving

BUNDLE = bundle_dir("whiteboard")
RED, BLUE = "#e03131", "#1971c2"
SQUARE = {"kind": "rect", "points": [[40, 40], [200, 120]], "color": RED, "width": 6}
WAVE = {
    "kind": "path",
    "points": [[260, 60], [300, 100], [340, 60], [380, 100]],
    "color": BLUE,
    "width": 4,
}
HELLO = {"kind": "text", "points": [[40, 160]], "color": "#1d2330", "width": 4, "text": "Hello"}


def app_frame(page: Page) -> FrameLocator:
    return page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")


async def open_board(page: Page, client: Client, conversation: Conversation) -> FrameLocator:
    opened = await conversation.call_tool("whiteboard.open")
    (instance_id,) = client.runtime.apps.instances().records
    assert opened == {"instance_id": instance_id, "strokes": 0}
    frame = app_frame(page)
    await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
    return frame


async def pixel(canvas: Locator, x: float, y: float) -> list[int]:
    """RGBA of the canvas at (x, y) in CSS pixels (board units at 100%)."""
    return list(
        await canvas.evaluate(
            """(c, [x, y]) => {
                 const d = window.devicePixelRatio || 1;
                 return [...c.getContext("2d")
                   .getImageData(Math.round(x * d), Math.round(y * d), 1, 1).data];
               }""",
            [x, y],
        )
    )


def rgb(hex_colour: str) -> list[int]:
    return [int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]


async def ui_events(client: Client, name: str, count: int = 1) -> list[dict[str, Any]]:
    """The data of the first ``count`` ``ui.event``s named ``name`` the agent got
    (waiting for them on the AppServer's long-poll)."""
    agent = client.pair.agent
    conversation = client.pair.conversation_id
    found: list[dict[str, Any]] = []
    since = 0
    async with asyncio.timeout(20):
        while len(found) < count:
            page = await agent.read(conversation, since, wait=5, limit=500)
            for stored in page:
                envelope = stored["envelope"]
                payload = envelope["payload"]
                if envelope["type"] == "lineup.v1.ui.event" and payload["event"] == name:
                    found.append(payload["data"])
            if page:
                since = page[-1]["seq"]
    return found[:count]


async def export_through_consent(
    page: Page, conversation: Conversation, arguments: dict[str, Any], *, allow: bool = True
) -> dict[str, Any]:
    call = asyncio.create_task(conversation.call_tool("whiteboard.export", arguments))
    dialog = page.locator("dialog#consent")
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".consent-who")).to_have_text("Asked by the app Whiteboard")
    await dialog.get_by_role("button", name="Allow" if allow else "Deny").click()
    await expect(dialog).to_be_hidden()
    return await call


async def download(page: Page, client: Client, artifact_id: str) -> bytes:
    """The artifact's bytes from the Web Host, with the page's session (the row and
    its Download link in the Whiteboard's group: tests/browser/test_artifacts.py)."""
    response = await page.request.get(f"{client.url}/artifacts/{artifact_id}")
    assert response.ok
    assert response.headers["content-disposition"].startswith("attachment")
    return await response.body()


def test_the_bundle_is_valid_and_its_surface_is_under_160_kib() -> None:
    bundle = load_bundle_dir(BUNDLE)
    assert (bundle.manifest.id, bundle.manifest.version) == ("dev.lineup.whiteboard", "1.1.0")
    assert bundle.manifest.permissions == ["artifact.save"]
    assert [t.id for t in bundle.manifest.tools] == [
        "whiteboard.open",
        "whiteboard.draw",
        "whiteboard.clear",
        "whiteboard.snapshot",
        "whiteboard.export",
    ]
    surface = sum((BUNDLE / f"index.{ext}").stat().st_size for ext in ("html", "css", "js"))
    assert surface < 160 * 1024


async def export_png_with_consent(page: Page, frame: FrameLocator) -> None:
    """The person exports a PNG from the Whiteboard's menu and allows it in the
    consent dialog; the app says it is saved."""
    await frame.get_by_role("button", name="Export").click()
    await frame.get_by_role("menuitem", name="PNG image").click()
    dialog = page.locator("dialog#consent")
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".consent-file-name")).to_have_text("whiteboard.png")
    await dialog.get_by_role("button", name="Allow").click()
    await expect(frame.locator("#notice")).to_have_text("Saved whiteboard.png")


async def test_the_agent_draws_snapshots_exports_and_clears(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)
    async with sdk_conversation(client) as conversation:
        frame = await open_board(page, client, conversation)

        drawn = await conversation.call_tool("whiteboard.draw", {"strokes": [SQUARE, WAVE]})
        assert drawn == {"added": 2, "total": 2}
        assert await conversation.call_tool("whiteboard.draw", {"strokes": [HELLO]}) == {
            "added": 1,
            "total": 3,
        }
        await expect(frame.locator("#count")).to_have_text("3 strokes")
        canvas = frame.locator("#board")
        assert (await pixel(canvas, 40, 80))[:3] == rgb(RED)  # the rectangle's left edge
        assert (await pixel(canvas, 120, 80))[3] == 0  # its inside stays empty
        assert (await pixel(canvas, 260, 60))[:3] == rgb(BLUE)
        await screenshot("agent-drawing")
        await page.set_viewport_size({"width": 375, "height": 740})
        await expect(frame.locator("#send")).to_be_visible()
        await screenshot("agent-drawing-375")
        resized = (await ui_events(client, "resize"))[0]
        assert 300 < resized["width"] < 375 and resized["height"] > 100
        await page.set_viewport_size({"width": 1280, "height": 800})

        snapshot = await conversation.call_tool("whiteboard.snapshot")
        assert snapshot["strokes"] == [SQUARE, WAVE, HELLO]
        assert snapshot["width"] >= 380 and snapshot["height"] >= 160

        # A stroke the schema refuses never reaches the app.
        with pytest.raises(ToolCallError) as refused:
            await conversation.call_tool(
                "whiteboard.draw", {"strokes": [{**SQUARE, "kind": "blob"}]}
            )
        assert (refused.value.status, refused.value.code) == ("rejected", "tool_input_invalid")

        # Export: the person allows it in the consent dialog, and gets the file.
        svg = await export_through_consent(page, conversation, {"format": "svg", "name": "plan"})
        assert svg["name"] == "plan.svg" and svg["artifact_id"]
        body = await download(page, client, svg["artifact_id"])
        assert len(body) == svg["size"]
        root = ET.fromstring(body)  # noqa: S314 (the app's SVG, not a stranger's)
        assert root.tag == "{http://www.w3.org/2000/svg}svg"
        assert len(root.findall("{http://www.w3.org/2000/svg}path")) == 1
        assert root.find("{http://www.w3.org/2000/svg}text").text == "Hello"  # type: ignore[union-attr]

        png = await export_through_consent(page, conversation, {"format": "png"})
        assert png["name"] == "whiteboard.png"
        body = await download(page, client, png["artifact_id"])
        assert len(body) == png["size"]
        assert body[:8] == b"\x89PNG\r\n\x1a\n"
        width, height = struct.unpack(">II", body[16:24])
        assert width > 300 and height > 140

        with pytest.raises(ToolCallError) as denied:
            await export_through_consent(page, conversation, {"format": "png"}, allow=False)
        assert (denied.value.status, denied.value.code) == ("failed", "capability_denied")

        assert await conversation.call_tool("whiteboard.clear") == {"cleared": 3}
        await expect(frame.locator("#count")).to_have_text("0 strokes")
        assert (await pixel(canvas, 40, 80))[3] == 0
        assert (await conversation.call_tool("whiteboard.snapshot"))["strokes"] == []
    page_watch.assert_clean()


@pytest.mark.headed_path
async def test_the_person_draws_undoes_and_sends_the_drawing_to_the_agent(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)
    async with sdk_conversation(client) as conversation:
        frame = await open_board(page, client, conversation)
        canvas = frame.locator("#board")
        box = await canvas.bounding_box()
        assert box is not None
        x, y = box["x"], box["y"]

        # A pen stroke, then a rectangle (R), drawn with the mouse.
        await page.mouse.move(x + 30, y + 40)
        await page.mouse.down()
        await page.mouse.move(x + 90, y + 90, steps=8)
        await page.mouse.move(x + 150, y + 40, steps=8)
        await page.mouse.up()
        await expect(frame.locator("#count")).to_have_text("1 stroke")
        await page.keyboard.press("r")
        await expect(frame.get_by_role("radio", name="Rectangle")).to_be_checked()
        await page.mouse.move(x + 200, y + 30)
        await page.mouse.down()
        await page.mouse.move(x + 300, y + 100, steps=5)
        await page.mouse.up()
        await expect(frame.locator("#count")).to_have_text("2 strokes")

        strokes = (await conversation.call_tool("whiteboard.snapshot"))["strokes"]
        assert [s["kind"] for s in strokes] == ["path", "rect"]
        path = strokes[0]["points"]
        assert path[0] == [30, 40] and path[-1] == [150, 40] and len(path) >= 3
        assert strokes[1]["points"] == [[200, 30], [300, 100]]
        assert (await pixel(canvas, 200, 60))[3] > 0

        # The agent hears about it (throttled draw events).
        drew = (await ui_events(client, "draw"))[0]
        assert drew["strokes"] >= 1 and drew["last"]["kind"] in ("path", "rect")

        # Undo (keyboard), redo (button), undo again.
        await page.keyboard.press("Control+z")
        await expect(frame.locator("#count")).to_have_text("1 stroke")
        assert (await pixel(canvas, 200, 60))[3] == 0
        await frame.get_by_role("button", name="Redo").click()
        await expect(frame.locator("#count")).to_have_text("2 strokes")
        await frame.get_by_role("button", name="Undo").click()
        await expect(frame.locator("#count")).to_have_text("1 stroke")
        snapshot = await conversation.call_tool("whiteboard.snapshot")
        assert [s["kind"] for s in snapshot["strokes"]] == ["path"]

        # Text, then the eraser takes the pen stroke away.
        await frame.get_by_role("radio", name="Text").click()
        await page.mouse.click(x + 40, y + 150)
        await frame.get_by_label("Text to place").fill("Draft")
        await page.keyboard.press("Enter")
        await expect(frame.locator("#count")).to_have_text("2 strokes")
        await page.keyboard.press("e")
        await page.mouse.move(x + 85, y + 60)
        await page.mouse.down()
        await page.mouse.move(x + 95, y + 100, steps=4)
        await page.mouse.up()
        await expect(frame.locator("#count")).to_have_text("1 stroke")
        strokes = (await conversation.call_tool("whiteboard.snapshot"))["strokes"]
        assert strokes == [
            {"kind": "text", "points": [[40, 150]], "color": "#1d2330", "width": 3, "text": "Draft"}
        ]

        # Send to agent: the vector data as a snapshot event.
        await frame.get_by_role("button", name="Send to agent").click()
        await expect(frame.locator("#notice")).to_have_text("Sent 1 stroke to the agent")
        sent = (await ui_events(client, "snapshot"))[0]
        assert sent["strokes"] == strokes and sent["total"] == 1 and not sent["truncated"]
        await screenshot("person-drawing")

        # Colour and width from the keyboard (C opens the panel).
        await canvas.focus()
        await page.keyboard.press("c")
        panel = frame.locator("#style-panel")
        await expect(panel).to_be_visible()
        await panel.get_by_role("radio", name="Green").click()
        await panel.get_by_label("Width").fill("8")
        await screenshot("style-panel")
        await page.keyboard.press("Escape")
        await expect(panel).to_be_hidden()
        await page.keyboard.press("l")
        await page.mouse.move(x + 300, y + 40)
        await page.mouse.down()
        await page.mouse.move(x + 400, y + 40, steps=3)
        await page.mouse.up()
        await expect(frame.locator("#count")).to_have_text("2 strokes")
        assert (await pixel(canvas, 350, 40))[:3] == rgb("#2f9e44")
        line = (await conversation.call_tool("whiteboard.snapshot"))["strokes"][-1]
        assert (line["kind"], line["color"], line["width"]) == ("line", "#2f9e44", 8)

        # The Export menu saves through the same consent dialog as the tool.
        await export_png_with_consent(page, frame)
        (saved,) = await client.runtime.capabilities.artifacts(client.pair.conversation_id)
        assert (saved.name, saved.media_type) == ("whiteboard.png", "image/png")

        await page.set_viewport_size({"width": 375, "height": 740})
        send = frame.get_by_role("button", name="Send to agent")
        await expect(send).to_be_in_viewport()  # kept in view at the toolbar's end
        await screenshot("person-drawing-375")
    page_watch.assert_clean()


async def test_the_snapshot_event_stays_under_16_kib_for_a_big_board(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)
    async with sdk_conversation(client) as conversation:
        frame = await open_board(page, client, conversation)
        zigzag = [[i * 2, 100 + (i % 7) * 9] for i in range(400)]
        strokes = [{**WAVE, "points": zigzag} for _ in range(8)]
        drawn = await conversation.call_tool("whiteboard.draw", {"strokes": strokes})
        assert drawn == {"added": 8, "total": 8}
        # The board has a size limit of its own (the state crosses a 64 KiB limit).
        with pytest.raises(ToolCallError) as full:
            await conversation.call_tool("whiteboard.draw", {"strokes": strokes * 4})
        assert (full.value.status, full.value.code) == ("failed", "board_full")
        await frame.get_by_role("button", name="Send to agent").click()
        sent = (await ui_events(client, "snapshot"))[0]
        assert len(json.dumps(sent, separators=(",", ":")).encode()) < 16 * 1024
        assert sent["total"] == 8 and (sent["simplified"] or sent["truncated"])
    page_watch.assert_clean()


async def test_the_board_survives_a_reload_and_a_runtime_restart(
    page: Page, appserver: AppServerProcess, pair: Pair, tmp_path: Path
) -> None:
    data_dir = tmp_path / "runtime"
    async with serving(appserver, pair, data_dir) as client:
        await client.runtime.registry.install_bundle(BUNDLE, enable=True)
        await log_in(page, client)
        async with sdk_conversation(client) as conversation:
            frame = await open_board(page, client, conversation)
            await conversation.call_tool("whiteboard.draw", {"strokes": [SQUARE, WAVE]})
            await frame.get_by_role("button", name="Zoom in").click()
            await expect(frame.get_by_role("button", name="Reset zoom")).to_have_text("125%")
            await expect(frame.locator("body")).to_have_attribute("data-saved", "true")
            await page.reload()
            frame = app_frame(page)
            await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
            await expect(frame.locator("#count")).to_have_text("2 strokes")
            await expect(frame.get_by_role("button", name="Reset zoom")).to_have_text("125%")
            snapshot = await conversation.call_tool("whiteboard.snapshot")
            assert snapshot["strokes"] == [SQUARE, WAVE]

    async with serving(appserver, pair, data_dir) as restarted:
        await page.goto(restarted.url + "/")
        await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
        await page.get_by_role("button", name=re.compile("Bring to front: Whiteboard")).click()
        frame = app_frame(page)
        await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
        await expect(frame.locator("#count")).to_have_text("2 strokes")
        async with sdk_conversation(restarted) as conversation:
            snapshot = await conversation.call_tool("whiteboard.snapshot")
            assert snapshot["strokes"] == [SQUARE, WAVE]
            assert await conversation.call_tool("whiteboard.draw", {"strokes": [HELLO]}) == {
                "added": 1,
                "total": 3,
            }


async def test_closing_the_app_while_an_export_waits_for_consent_cancels_it_once(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)
    async with sdk_conversation(client) as conversation:
        await open_board(page, client, conversation)
        (instance_id,) = client.runtime.apps.instances().records
        await conversation.call_tool("whiteboard.draw", {"strokes": [SQUARE]})
        export = asyncio.create_task(conversation.call_tool("whiteboard.export", {"format": "svg"}))
        dialog = page.locator("dialog#consent")
        await expect(dialog).to_be_visible()
        # The modal dialog keeps the dock out of reach, so the close goes to the kernel
        # the way the dock's Close button sends it (the Web Host then ends the stop).
        assert (await client.runtime.apps.request_close(instance_id, actor="user")).accepted
        with pytest.raises(ToolCallError) as closed:
            await export
        assert (closed.value.status, closed.value.code) == ("cancelled", "app_closed")
        await expect(page.locator("#app-area-frame iframe")).to_have_count(0)
        stored = await client.pair.agent.read_all(client.pair.conversation_id)
        results = [
            s["envelope"]["payload"]
            for s in stored
            if s["envelope"]["type"] == "lineup.v1.tool.result"
            and s["envelope"]["payload"]["call_id"] == closed.value.call_id
        ]
        assert [(r["status"], r["error"]["code"]) for r in results] == [("cancelled", "app_closed")]
        # The app's capability call ends with it: no dialog outlives the app.
        await expect(dialog).to_be_hidden()
        assert await client.runtime.capabilities.artifacts(client.pair.conversation_id) == []
    page_watch.assert_clean()
