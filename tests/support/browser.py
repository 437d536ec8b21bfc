"""Debian's Chromium driven by Playwright (async API) for the browser tests.

The browser is ``/usr/bin/chromium`` from Debian (``scripts/system-deps`` installs it;
``LINEUP_CHROMIUM`` points elsewhere); ``playwright install`` is never used.

Scope: one Chromium per test. Playwright's async objects belong to the event loop that
started them, and pytest-asyncio here gives every test and every async fixture its own
function-scoped loop. A session-scoped browser would force the browser tests onto a
session loop while the shared async fixtures (``pair`` and friends in tests/conftest.py)
keep running on function loops, so their clients would be used across loops. Measured on
the 2-core CI machine, starting the Playwright driver and launching Chromium costs about
0.55 s and closing both about 0.15 s; a fresh context and page costs about 0.3 s whatever
the scope. The ~0.7 s per test buys complete isolation and no cross-loop surprises.

Headless unless ``LINEUP_HEADED=1``: scripts/test runs the tests marked ``headed_path``
(the representative paths of spec 002 §11 item 9) a second time in a headed Chromium
under Xvfb; their screenshots then go to test-artifacts/screenshots-headed/.

Every page gets a ``PageWatch`` that records console errors, uncaught page errors,
failed, blocked and HTTP-error requests and requests still in flight, so a test can end
with ``watch.assert_clean()``. Requests to anything but loopback are aborted and recorded
as blocked: tests never reach the network.
"""

from __future__ import annotations

import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from playwright.async_api import (
    Browser,
    BrowserContext,
    ConsoleMessage,
    Error,
    Page,
    Request,
    Response,
    Route,
    ViewportSize,
    async_playwright,
)

ROOT = Path(__file__).resolve().parents[2]
# The headed pass (LINEUP_HEADED=1) keeps its own screenshots beside the headless ones.
SCREENSHOTS = (
    ROOT
    / "test-artifacts"
    / ("screenshots-headed" if os.environ.get("LINEUP_HEADED") == "1" else "screenshots")
)
CHROMIUM = Path(os.environ.get("LINEUP_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = (
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
)
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
# Waits (clicks, selectors, navigation) fail after this many ms instead of Playwright's 30 s.
DEFAULT_TIMEOUT_MS = 10_000
LOCAL_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
LOCAL_SCHEMES = frozenset({"data", "blob", "about"})


HEADED_ENV = "LINEUP_HEADED"


def headed() -> bool:
    """Whether the browser tests run a headed Chromium: ``LINEUP_HEADED=1``, which
    scripts/test sets for its second pass, under Xvfb, over the tests marked
    ``headed_path`` (spec 002 §11 item 9). Anything else is the usual headless run."""
    value = os.environ.get(HEADED_ENV, "")
    if value not in ("", "0", "1"):
        raise RuntimeError(f"{HEADED_ENV}={value!r}: set it to 1 (headed) or 0 (headless)")
    return value == "1"


@asynccontextmanager
async def launch_chromium() -> AsyncIterator[Browser]:
    """A Chromium, closed (with its Playwright driver) on exit: headless, or headed on
    the X display in ``DISPLAY`` when ``LINEUP_HEADED=1``."""
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(
            f"no Chromium at {CHROMIUM}: run scripts/system-deps (scripts/test does)"
            " or set LINEUP_CHROMIUM=/path/to/chromium"
        )
    is_headed = headed()
    if is_headed and not os.environ.get("DISPLAY"):
        raise RuntimeError(
            f"{HEADED_ENV}=1 asks for a headed Chromium but DISPLAY is not set: run under"
            " a virtual display (xvfb-run -a, as scripts/test does) or unset"
            f" {HEADED_ENV}"
        )
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=list(CHROMIUM_ARGS), headless=not is_headed
        )
        try:
            yield browser
        finally:
            await browser.close()


def is_local(url: str) -> bool:
    """Loopback only: the shell, and the surface origin's per-mount
    ``m-<random>.localhost`` sites (Chromium resolves ``*.localhost`` to loopback)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return parts.scheme in LOCAL_SCHEMES or host in LOCAL_HOSTS or host.endswith(".localhost")


@dataclass
class PageWatch:
    """What went wrong on one page, gathered from Playwright's events."""

    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)
    blocked_requests: list[str] = field(default_factory=list)
    error_responses: list[str] = field(default_factory=list)
    _in_flight: dict[Request, str] = field(default_factory=dict)

    def attach(self, page: Page) -> None:
        page.on("console", self._on_console)
        page.on("pageerror", self._on_page_error)
        page.on("request", self._on_request)
        page.on("requestfinished", self._on_request_finished)
        page.on("requestfailed", self._on_request_failed)
        page.on("response", self._on_response)

    @property
    def in_flight(self) -> list[str]:
        """Requests the page started that have neither finished nor failed."""
        return sorted(self._in_flight.values())

    def problems(self) -> list[str]:
        return [
            *(f"console error: {text}" for text in self.console_errors),
            *(f"page error: {text}" for text in self.page_errors),
            *(f"request failed: {text}" for text in self.failed_requests),
            *(f"request blocked (not loopback): {url}" for url in self.blocked_requests),
            *(f"HTTP error: {text}" for text in self.error_responses),
            *(f"request still in flight: {text}" for text in self.in_flight),
        ]

    def assert_clean(self) -> None:
        """No console or page errors, no failed requests and no request left in flight."""
        problems = self.problems()
        assert not problems, "the page had problems:\n  " + "\n  ".join(problems)

    async def block_non_local(self, route: Route) -> None:
        self.blocked_requests.append(route.request.url)
        await route.abort("blockedbyclient")

    def _on_console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            where = message.location
            self.console_errors.append(
                f"{message.text} ({where.get('url', '?')}:{where.get('lineNumber', '?')})"
            )

    def _on_page_error(self, error: Error) -> None:
        self.page_errors.append(error.stack or error.message)

    def _on_request(self, request: Request) -> None:
        self._in_flight[request] = f"{request.method} {request.url}"

    def _on_request_finished(self, request: Request) -> None:
        self._in_flight.pop(request, None)

    def _on_request_failed(self, request: Request) -> None:
        self._in_flight.pop(request, None)
        if request.url not in self.blocked_requests:
            self.failed_requests.append(f"{request.method} {request.url}: {request.failure}")

    def _on_response(self, response: Response) -> None:
        if response.status >= 400:
            request = response.request
            self.error_responses.append(f"{request.method} {request.url} -> {response.status}")


async def new_watched_page(
    browser: Browser, locale: str | None = None
) -> tuple[BrowserContext, Page, PageWatch]:
    """A fresh context and page (1280x800) with a ``PageWatch`` attached before any load;
    ``locale`` sets the browser's language (navigator.language, Accept-Language)."""
    context = await browser.new_context(viewport=VIEWPORT, locale=locale)
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    watch = PageWatch()
    await context.route(lambda url: not is_local(url), watch.block_non_local)
    page = await context.new_page()
    watch.attach(page)
    return context, page, watch


def screenshot_path(test_name: str, name: str) -> Path:
    """``test-artifacts/screenshots/<test>--<name>.png``, made safe as a file name."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", f"{test_name}--{name}").strip("_")
    return SCREENSHOTS / f"{safe}.png"


async def save_screenshot(page: Page, test_name: str, name: str) -> Path:
    path = screenshot_path(test_name, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=path, full_page=True)
    return path


# A new ResizeObserver reports its first observation in the next rendering update,
# after the observers the page made earlier (the shell's own), and before that frame
# is painted. Unlike requestAnimationFrame it is not faked by ``page.clock``.
_RENDERED = """() => new Promise((resolve) => {
  const probe = new ResizeObserver(() => { probe.disconnect(); resolve(); });
  probe.observe(document.documentElement);
})"""


async def rendered(page: Page) -> None:
    """Until the page has run its next rendering update (layout, its ResizeObservers),
    so what is read next is what that frame paints, also with a paused ``page.clock``."""
    await page.evaluate(_RENDERED)
