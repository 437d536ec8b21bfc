"""The desktop window's engine (QtWebEngine) as a ``PageSource`` for the surface stage.

Playwright cannot make contexts or pages in QtWebEngine (``Target.createBrowserContext``
and ``Target.createTarget`` are "not supported"); it can attach over CDP to the pages the
Qt process makes. So a small Qt host (``python -m tests.support.qt_engine HOST:PORT``)
makes them on request, one line on its stdin each:

- ``open ID shell URL``: a window like the desktop one, showing URL: a fresh
  off-the-record profile hardened by ``lineup.desktop.window.harden`` and the production
  ``ShellPage`` (navigation locked to URL's origin, every permission denied).
- ``open ID control -``: a window on ``about:blank`` with a fresh profile and none of
  that (the positive controls: a page without protections, heard by the canary).
- ``close ID``: the window, its page and profile go.

It prints ``ready`` once its DevTools endpoint accepts connections; stdin's end quits it.
Every window's page lands in the one browser context Playwright sees, so a "context" of
the stage is that shared context: ``close`` removes its routes and closes the windows
the test opened (listeners are the caller's to remove).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

from playwright.async_api import Browser, BrowserContext, Page, async_playwright

from tests.support.appserver import free_port
from tests.support.browser import VIEWPORT
from tests.support.canary import ATTACKER_HOSTS, Canary
from tests.support.surface_stage import PageSource

__all__ = ["QtPages", "qt_engine"]

READY = "ready"
START_SECONDS = 30  # a ceiling for a loaded machine; it is ready in about a second
STOP_SECONDS = 10
PROBES = 200  # the host's DevTools probes, 50 ms apart
ROOT = Path(__file__).resolve().parents[2]


# --- the test side ---------------------------------------------------------------------------


@dataclass
class QtPages:
    """Pages in the Qt host's windows, driven over CDP."""

    process: asyncio.subprocess.Process
    browser: Browser
    context: BrowserContext
    windows: dict[Page, int] = field(default_factory=dict)
    opened: int = 0

    async def _send(self, line: str) -> None:
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(line.encode() + b"\n")
        await stdin.drain()

    async def new_context(self) -> BrowserContext:
        return self.context

    async def new_page(self, context: BrowserContext, shell: str | None) -> Page:
        assert context is self.context
        self.opened += 1
        kind = "control" if shell is None else "shell"
        async with context.expect_page() as attached:
            await self._send(f"open {self.opened} {kind} {shell or '-'}")
        page = await attached.value
        self.windows[page] = self.opened
        return page

    async def close(self, context: BrowserContext) -> None:
        await context.unroute_all(behavior="ignoreErrors")
        for page, number in list(self.windows.items()):
            del self.windows[page]
            if page.is_closed():
                continue
            async with page.expect_event("close"):
                await self._send(f"close {number}")


@asynccontextmanager
async def qt_engine(canary: Canary) -> AsyncIterator[PageSource]:
    """The Qt host with ``*.attacker.test`` resolved to ``canary``, and Playwright on it."""
    address = f"127.0.0.1:{free_port()}"
    rules = ", ".join(f"MAP {pattern} 127.0.0.1:{canary.tcp_port}" for pattern in ATTACKER_HOSTS)
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "QTWEBENGINE_CHROMIUM_FLAGS": f'--disable-gpu --host-resolver-rules="{rules}"',
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tests.support.qt_engine",
        address,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        env=env,
        cwd=ROOT,
    )
    try:
        assert process.stdout is not None
        async with asyncio.timeout(START_SECONDS):
            line = await process.stdout.readline()
        if line.decode().strip() != READY:
            raise RuntimeError(f"the Qt host did not start: {line!r}")
        async with async_playwright() as playwright:
            browser = await playwright.chromium.connect_over_cdp(
                f"http://{address}", no_defaults=True
            )
            try:
                yield QtPages(process, browser, browser.contexts[0])
            finally:
                await browser.close()  # disconnects; the host stays up
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            async with asyncio.timeout(STOP_SECONDS):
                await process.wait()
        except TimeoutError:
            process.kill()
            await process.wait()


# --- the host (its own process) --------------------------------------------------------------


def main(address: str) -> int:
    """Run the host; ``address`` (``host:port``) is where its DevTools listen."""
    from lineup.desktop.engine import prepare_environment

    prepare_environment(remote_debugging=address)

    import shiboken6
    from PySide6.QtCore import QSocketNotifier, QTimer, QUrl
    from PySide6.QtNetwork import QTcpSocket
    from PySide6.QtWebEngineCore import QWebEnginePage, QWebEngineProfile
    from PySide6.QtWebEngineWidgets import QWebEngineView
    from PySide6.QtWidgets import QApplication, QMainWindow

    from lineup.desktop.providers import Dialogs
    from lineup.desktop.window import ShellPage, harden

    class NoSystemBrowser(Dialogs):
        def open_url(self, url: str) -> bool:
            print(f"qt host: refused to open {url} in the system browser", file=sys.stderr)
            return False

    app = QApplication(sys.argv[:1])
    app.setQuitOnLastWindowClosed(False)  # stdin's end quits
    # The engine (and its DevTools server) starts with the first profile.
    QWebEngineProfile(app)
    windows: dict[str, tuple[QMainWindow, QWebEnginePage]] = {}

    def open_window(number: str, kind: str, origin: str) -> None:
        window = QMainWindow()
        profile = QWebEngineProfile(window)  # off-the-record
        view = QWebEngineView(window)
        page: QWebEnginePage
        if kind == "shell":
            harden(profile)
            page = ShellPage(profile, QUrl(origin), NoSystemBrowser(window), view)
        else:
            page = QWebEnginePage(profile, view)
        view.setPage(page)
        # A page is a DevTools target only once it loads something.
        view.load(QUrl(origin if kind == "shell" else "about:blank"))
        window.setCentralWidget(view)
        window.resize(VIEWPORT["width"], VIEWPORT["height"])
        window.show()
        windows[number] = (window, page)

    def close_window(number: str) -> None:
        window, page = windows.pop(number)
        window.close()
        shiboken6.delete(page)  # before its profile, which the window owns
        shiboken6.delete(window)

    pending = bytearray()

    def on_stdin() -> None:
        chunk = os.read(sys.stdin.fileno(), 65536)
        if not chunk:
            app.quit()
            return
        pending.extend(chunk)
        while b"\n" in pending:
            line, _, rest = bytes(pending).partition(b"\n")
            pending[:] = rest
            command, number, *args = line.decode().split()
            if command == "open":
                open_window(number, *args)
            elif command == "close":
                close_window(number)
            else:
                raise ValueError(f"unknown command {line!r}")

    notifier = QSocketNotifier(sys.stdin.fileno(), QSocketNotifier.Type.Read)
    notifier.activated.connect(on_stdin)

    host, port = address.rsplit(":", 1)
    probe = QTcpSocket(app)
    probes = [0]

    def try_devtools() -> None:
        probes[0] += 1
        if probes[0] > PROBES:
            print("no devtools", flush=True)
            app.exit(1)
            return
        probe.abort()
        probe.connectToHost(host, int(port))

    def connected() -> None:
        probe.abort()
        print(READY, flush=True)

    probe.connected.connect(connected)
    probe.errorOccurred.connect(lambda _error: QTimer.singleShot(50, try_devtools))
    try_devtools()
    return app.exec()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
