"""Every file saved through a capability is reachable, in a real Chromium: the
Whiteboard's export (the person's Export menu, and the agent's ``whiteboard.export``
tool) after the consent dialog, and a file the agent saves itself. Each shows as one
row, the app's inside the Whiteboard's sub-session group, the agent's loose in the
chat, with its name, type and size, and a download that gives exactly the bytes the
Runtime stored for the app; the same single rows after a reload, in a second tab and
after a Runtime restart. The download answers only this browser's session."""

from __future__ import annotations

import asyncio
import hashlib
import re
from pathlib import Path

import httpx
from playwright.async_api import Locator, Page, expect

from tests.browser.conftest import Screenshot
from tests.browser.miniapps.test_whiteboard import (
    BUNDLE,
    SQUARE,
    WAVE,
    export_png_with_consent,
    open_board,
)
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch
from tests.support.browser_interactions import chat_id, log_in
from tests.support.capability_calls import app_call, app_result
from tests.support.sdk_agent import running_agent
from tests.support.webhost import Client, serving

NOTES = "first line\nsecond line, été\n"


def group_of_board(page: Page) -> Locator:
    """The Whiteboard's sub-session group in the timeline."""
    return page.locator("#items > li.app-session").filter(
        has=page.locator(".group-name", has_text="Whiteboard")
    )


async def file_rows(page: Page) -> list[tuple[str, str | None]]:
    """Every artifact row the page shows: (name, the group it is in, or None)."""
    return [
        (name, group)
        for name, group in await page.locator("#items .item.artifact").evaluate_all(
            """(rows) => rows.map((row) => [
                 row.querySelector(".artifact-name").textContent,
                 row.closest("li.app-session")?.dataset.appSessionId ?? null,
               ])"""
        )
    ]


async def downloaded(page: Page, row: Locator, name: str) -> bytes:
    """Click the row's Download link; the bytes the browser saved."""
    async with page.expect_download() as info:
        await row.get_by_role("link", name=f"Download {name}").click()
    download = await info.value
    assert download.suggested_filename == name
    return await asyncio.to_thread(Path(await download.path()).read_bytes)


async def stored(client: Client, artifact_id: str) -> bytes:
    """The bytes the Runtime kept for the artifact (what the app sent it)."""
    found = await client.runtime.capabilities.artifact(artifact_id)
    assert found is not None
    artifact, body = found
    assert artifact.sha256 == hashlib.sha256(body).hexdigest()
    return body


async def open_group(group: Locator) -> None:
    if not await group.locator("details.group").evaluate("(d) => d.open"):
        await group.locator("summary.group-head").click()


async def test_the_whiteboard_s_exports_and_the_agent_s_file_are_one_downloadable_row_each(
    page: Page,
    page_watch: PageWatch,
    appserver: AppServerProcess,
    pair: Pair,
    tmp_path: Path,
    screenshot: Screenshot,
) -> None:
    data_dir = tmp_path / "runtime"
    async with serving(appserver, pair, data_dir) as client:
        await client.runtime.registry.install_bundle(BUNDLE, enable=True)
        await log_in(page, client)
        chat = await chat_id(client)  # the conversation the shell shows
        async with running_agent(client) as agent:
            conversation = agent.conversations[chat]
            frame = await open_board(page, client, conversation)
            await conversation.call_tool("whiteboard.draw", {"strokes": [SQUARE, WAVE]})
            await expect(frame.locator("#count")).to_have_text("2 strokes")
            (session,) = [s.id for s in await client.runtime.app_session_groups(chat)]

            # The person exports a PNG from the app's menu and allows it.
            await export_png_with_consent(page, frame)
            dialog = page.locator("dialog#consent")

            # One row, in the Whiteboard's group, with its name, type and size.
            group = group_of_board(page)
            await expect(group.locator(".group-count")).to_have_text("1 file")
            await open_group(group)
            png_row = group.locator(".item.artifact")
            await expect(png_row).to_have_count(1)
            assert await file_rows(page) == [("whiteboard.png", session)]
            png_id = await png_row.get_attribute("data-artifact-id")
            assert png_id is not None
            png = await stored(client, png_id)
            assert png[:8] == b"\x89PNG\r\n\x1a\n"
            # The size as Intl writes it in the page's language ("12.3 kB").
            meta = png_row.locator(".artifact-meta")
            await expect(meta).to_have_text(re.compile(r"^image/png · \d+(\.\d)? kB$"))
            shown = float((await meta.inner_text()).split(" · ")[1].split()[0])
            assert abs(shown - len(png) / 1000) <= 0.05
            await png_row.scroll_into_view_if_needed()
            await screenshot("png-row-in-the-whiteboard-group")

            # The browser's download is exactly what the app produced.
            assert await downloaded(page, png_row, "whiteboard.png") == png

            # The agent asks the app for an SVG (the tour's path): the same one path.
            export = asyncio.create_task(
                conversation.call_tool("whiteboard.export", {"format": "svg", "name": "plan"})
            )
            await expect(dialog).to_be_visible()
            await expect(dialog.locator(".consent-file-name")).to_have_text("plan.svg")
            await dialog.get_by_role("button", name="Allow").click()
            svg_result = await export
            svg_row = group.locator(
                f'.item.artifact[data-artifact-id="{svg_result["artifact_id"]}"]'
            )
            await expect(svg_row).to_have_count(1)
            svg = await stored(client, svg_result["artifact_id"])
            assert svg.startswith(b"<svg") and len(svg) == svg_result["size"]
            await expect(svg_row.locator(".artifact-meta")).to_have_text(
                re.compile(r"^image/svg\+xml · \d+(\.\d)? (bytes|kB)$")
            )
            assert await downloaded(page, svg_row, "plan.svg") == svg
            await expect(group.locator(".group-count")).to_have_text("2 files")

        # The agent's own file: one loose row, downloadable too.
        arguments = {"name": "notes.txt", "media_type": "text/plain", "text": NOTES}
        await app_call(client, "artifact.save", arguments, "save-notes")
        await expect(dialog).to_be_visible()
        await dialog.get_by_role("button", name="Allow").click()
        assert (await app_result(client, "save-notes"))["status"] == "completed"
        loose = page.locator("#items > li.item.artifact")
        await expect(loose).to_have_count(1)
        await expect(loose.locator(".artifact-meta")).to_have_text(
            f"text/plain · {len(NOTES.encode())} bytes"
        )
        assert await downloaded(page, loose, "notes.txt") == NOTES.encode()
        rows = [("whiteboard.png", session), ("plan.svg", session), ("notes.txt", None)]
        assert await file_rows(page) == rows
        await page.locator("#app-area-back").click()
        await screenshot("files-in-the-chat")

        # The download: an attachment with a safe name, only with this browser's session.
        response = await page.request.get(f"{client.url}/artifacts/{png_id}")
        assert response.headers["content-type"] == "image/png"
        assert response.headers["content-disposition"] == (
            "attachment; filename=\"whiteboard.png\"; filename*=UTF-8''whiteboard.png"
        )
        svg_served = await page.request.get(f"{client.url}/artifacts/{svg_result['artifact_id']}")
        assert svg_served.headers["content-type"] == "application/octet-stream"  # never a page
        async with httpx.AsyncClient(base_url=client.url) as http:
            assert (await http.get(f"/artifacts/{png_id}")).status_code == 403

        # A reload and a second tab show the same single rows.
        await page.reload()
        await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
        await expect(page.locator("#items .item.artifact")).to_have_count(3)
        assert await file_rows(page) == rows
        second = await page.context.new_page()
        await second.goto(client.url + "/")
        await expect(second.locator("#items .item.artifact")).to_have_count(3)
        assert await file_rows(second) == rows
        await second.close()
        await page.goto("about:blank")  # no tab left to reconnect while the Runtime is down

    # After a Runtime restart, too; and the download still works.
    async with serving(appserver, pair, data_dir) as restarted:
        await page.goto(restarted.url + "/")
        await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
        await expect(page.locator("#items .item.artifact")).to_have_count(3)
        assert await file_rows(page) == rows
        group = group_of_board(page)
        await open_group(group)
        row = group.locator(".item.artifact").first
        assert await downloaded(page, row, "whiteboard.png") == png
        await screenshot("after-a-restart")
    page_watch.assert_clean()
