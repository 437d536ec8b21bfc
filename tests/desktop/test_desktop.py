"""The desktop host end to end, on Linux with Qt's offscreen platform: ``lineup
desktop``'s own code (``desktop_client``) against a running ``lineup demo``, with only
the OS's dialogs stubbed (``tests/support/desktop_child.py``). Playwright drives the
window's real page over the DevTools protocol, which the test child opens on a
loopback port (the command itself never does).

One walk through what a person does: the window shows the shell, they log in, chat
with the demo agent, answer its question, share a file through the native file
dialog (after consenting in the shell; the Runtime's decision path is the real one),
download it again through the native save dialog, export the Whiteboard to a PNG and
download that (from the Whiteboard's group) the same way, and has text copied, a link
opened and a notification shown, each by the desktop's provider. A second launch brings the
first window forward and exits; SIGTERM closes the window cleanly and the window's
geometry is kept.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from playwright.async_api import Page, async_playwright, expect

from tests.support.appserver import free_port
from tests.support.browser import save_screenshot
from tests.support.demo_process import running_demo

try:
    import PySide6.QtWebEngineWidgets  # noqa: F401
except ImportError as missing:  # pragma: no cover - the test command installs it
    pytest.skip(
        f"the desktop extra (PySide6 with QtWebEngine) is not installed: {missing}",
        allow_module_level=True,
    )

ROOT = Path(__file__).resolve().parents[2]
WAIT = 60.0  # a ceiling for loaded machines, not a timing assertion
ENV = {
    **os.environ,
    "QT_QPA_PLATFORM": "offscreen",  # no display server needed
    "QTWEBENGINE_CHROMIUM_FLAGS": "--disable-gpu",
}


class DesktopProcess:
    """The desktop child; its log lines are collected as they come."""

    def __init__(self, args: list[str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.desktop_child", *args],
            cwd=ROOT,
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            with self._changed:
                self.lines.append(line)
                self._changed.notify_all()
        with self._changed:
            self.lines.append("")  # the end
            self._changed.notify_all()

    def _wait_for(self, text: str) -> str:
        with self._changed:
            found = self._changed.wait_for(
                lambda: any(text in line for line in self.lines) or "" in self.lines, WAIT
            )
            hit = next((line for line in self.lines if text in line), None)
        assert found and hit is not None, f"{text!r} never logged:\n{''.join(self.lines)}"
        return hit

    async def logged(self, text: str) -> str:
        return await asyncio.to_thread(self._wait_for, text)

    def _wait_for_count(self, text: str, count: int) -> list[str]:
        def hits() -> list[str]:
            return [line for line in self.lines if text in line]

        with self._changed:
            self._changed.wait_for(lambda: len(hits()) >= count or "" in self.lines, WAIT)
            found = hits()
        assert len(found) >= count, f"{text!r} not logged {count}x:\n{''.join(self.lines)}"
        return found

    async def logged_again(self, text: str, count: int) -> str:
        """The ``count``-th line that holds ``text`` (waiting for it)."""
        return (await asyncio.to_thread(self._wait_for_count, text, count))[count - 1]

    async def exit_code(self) -> int:
        code = await asyncio.to_thread(self.process.wait, WAIT)
        await asyncio.to_thread(self._reader.join, WAIT)
        return code


@asynccontextmanager
async def desktop(*args: str) -> AsyncIterator[DesktopProcess]:
    child = DesktopProcess(list(args))
    try:
        yield child
    finally:
        if child.process.poll() is None:
            child.process.kill()
        await child.exit_code()
        if child.process.stdout is not None:
            child.process.stdout.close()


FETCHED = """async (link) => {
  const response = await fetch(link.href, { credentials: "same-origin" });
  return [...new Uint8Array(await response.arrayBuffer())];
}"""
"""The bytes the Web Host serves at a download link, fetched by the page itself."""


async def agent_says(page: Page, text: str) -> None:
    await expect(page.locator(".item.from-agent").filter(has_text=text)).to_have_count(1)


async def send(page: Page, text: str) -> None:
    await page.fill("#input", text)
    await page.keyboard.press("Enter")


async def test_the_desktop_window_runs_the_shell_with_native_providers(tmp_path: Path) -> None:
    port, web_port, surface_port, debug = (free_port() for _ in range(4))
    data_dir = tmp_path / "client"
    picked = tmp_path / "picked.txt"
    picked.write_bytes("a file from the desktop, été\n".encode())
    dialogs = tmp_path / "dialogs.jsonl"
    with running_demo(tmp_path / "demo", port, web_port, surface_port) as banner:
        found = re.search(r"LINEUP_PASSWORD=(\S+)", banner)
        assert found, banner
        server = f"http://127.0.0.1:{port}"
        args = [server, str(data_dir), str(debug), str(picked), str(dialogs)]
        async with desktop(*args) as window, async_playwright() as playwright:
            await window.logged("desktop window loaded ok=True")
            browser = await playwright.chromium.connect_over_cdp(
                f"http://127.0.0.1:{debug}", no_defaults=True
            )
            page = browser.contexts[0].pages[0]
            page.set_default_timeout(WAIT * 1000)
            errors: list[str] = []
            page.on("pageerror", lambda error: errors.append(str(error)))

            # The shell, from the Web Host, in the window: log in as the person.
            await expect(page).to_have_url(re.compile(r"/login$"))
            await page.fill("input[name=username]", "demo")
            await page.fill("input[name=password]", found.group(1))
            await page.click("button[type=submit]")
            await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")

            # Chat, and a question answered in the window.
            await send(page, "hello from the desktop")
            await agent_says(page, "You said: hello from the desktop")
            await send(page, "/choose")
            question = page.locator(".item.interaction").filter(
                has=page.locator(".card-prompt", has_text="Which colour")
            )
            await window.logged("waiting for the person count=1")  # the title and badge
            await question.get_by_role("radio", name="Green").check()
            await question.get_by_role("button", name="Submit").click()
            await agent_says(page, "You chose Green.")

            # A native provider: the agent asks for a file, the person consents in the
            # shell, the desktop's file dialog (stubbed) picks it, the Runtime stores it.
            await send(page, "/file")
            consent = page.locator("dialog#consent")
            await consent.get_by_label("I will choose a file in the next window").check()
            await consent.get_by_role("button", name="Allow").click()
            size = picked.stat().st_size
            await agent_says(page, f"Thanks: I got picked.txt, {size} bytes.")
            row = page.locator(".item.artifact")
            await expect(row.locator(".artifact-name")).to_have_text("picked.txt")
            shot = await save_screenshot(page, "test_desktop_window", "chat-and-file")
            assert shot.stat().st_size > 0

            # Downloading it asks where to save in the native dialog, and saves its bytes.
            await row.get_by_role("link", name="Download picked.txt").click()
            saved = tmp_path / "saved-picked.txt"
            finished = await window.logged("download finished")
            assert "state=DownloadCompleted" in finished, finished
            assert saved.read_bytes() == picked.read_bytes()

            # An app's file goes the same way: the Whiteboard's PNG, after consent, is a
            # row of its group; its download asks the native dialog and saves the bytes
            # the Web Host serves for it.
            await send(page, "/whiteboard")
            await agent_says(page, "I drew 2 shapes on the Whiteboard.")
            board = page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")
            await expect(board.locator("#count")).to_have_text("2 strokes")
            await board.get_by_role("button", name="Export").click()
            await board.get_by_role("menuitem", name="PNG image").click()
            await expect(consent.locator(".consent-file-name")).to_have_text("whiteboard.png")
            await consent.get_by_role("button", name="Allow").click()
            await expect(board.locator("#notice")).to_have_text("Saved whiteboard.png")
            group = page.locator("#items > li.app-session").filter(has_text="whiteboard")
            await group.locator("summary.group-head").click()
            png = group.locator(".item.artifact")
            await expect(png.locator(".artifact-name")).to_have_text("whiteboard.png")
            served = await png.locator("a.artifact-download").evaluate(FETCHED)
            await png.get_by_role("link", name="Download whiteboard.png").click()
            saved_png = tmp_path / "saved-whiteboard.png"
            finished = await window.logged_again("download finished", 2)
            assert "state=DownloadCompleted" in finished, finished
            assert saved_png.read_bytes() == bytes(served)
            assert saved_png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
            await save_screenshot(page, "test_desktop_window", "whiteboard-file")
            await page.get_by_role("button", name="Close whiteboard").click()

            # The clipboard and the system browser, each after the person's consent; a
            # notification with no tray to show it falls back to the shell's own notice.
            await send(page, "/copy copied on the desktop")
            await consent.get_by_role("button", name="Allow").click()
            await agent_says(page, "It is on your clipboard.")
            await send(page, "/link https://example.com/from-the-desktop")
            await consent.get_by_role("button", name="Allow").click()
            await agent_says(page, "I opened the link for you.")
            await send(page, "/notify Desktop says hello")
            await expect(page.locator(".capability-toast")).to_contain_text("Desktop says hello")
            await page.wait_for_function(  # its fade-in done, for the screenshot
                "() => document.querySelector('.capability-toast')"
                ".getAnimations().every((a) => a.playState === 'finished')"
            )
            await save_screenshot(page, "test_desktop_window", "notice-without-a-tray")
            await agent_says(page, "I showed you a notification.")
            asked = [json.loads(line) for line in dialogs.read_text().splitlines()]
            assert asked == [
                {"dialog": "pick_file", "accept": []},
                {"dialog": "save_file", "name": "picked.txt", "path": str(saved)},
                {"dialog": "save_file", "name": "whiteboard.png", "path": str(saved_png)},
                {"service": "clipboard", "text": "copied on the desktop"},
                {"service": "open_url", "url": "https://example.com/from-the-desktop"},
                {"service": "notify", "title": "Desktop says hello"},
            ]

            # What a page writes to its console stays out of the desktop's output.
            await page.evaluate("console.error('console canary 5d1e')")

            # A second launch on the same data dir brings this window forward and exits.
            async with desktop(*args) as second:
                assert await second.exit_code() == 0
                await second.logged("LineUp is already open")
            await window.logged("another launch asked for the window")
            assert errors == []
            await browser.close()  # the connection, not the window

            window.process.send_signal(signal.SIGTERM)
            assert await window.exit_code() == 0
            assert not any("console canary 5d1e" in line for line in window.lines)
    assert (data_dir / "desktop-window.json").exists()
    assert not (data_dir / "desktop.sock").exists()
