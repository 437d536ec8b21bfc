"""Fixtures for the browser tests: see tests/support/browser.py for why each test gets its
own Chromium. ``page`` is a fresh 1280x800 context and page, in the language
``page_locale`` names; ``page_watch`` holds what went wrong on it; ``screenshot(name)``
saves it under test-artifacts/screenshots/. A test that fails also leaves a
``<test>--failed.png`` there."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Generator
from pathlib import Path

import pytest
from playwright.async_api import Browser, Page

from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch, launch_chromium, new_watched_page, save_screenshot
from tests.support.browser_interactions import ShiftClock
from tests.support.webhost import Client, client, client_own_server, serving

__all__ = ["client", "client_own_server"]

Screenshot = Callable[[str], Awaitable[Path]]

_call_report = pytest.StashKey[pytest.TestReport]()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        item.stash[_call_report] = report
    return report


@pytest.fixture
async def browser() -> AsyncIterator[Browser]:
    async with launch_chromium() as launched:
        yield launched


@pytest.fixture
def page_locale() -> str | None:
    """The browser's language for ``page`` (None: Playwright's default, en-US). A test
    runs in another with ``@pytest.mark.parametrize("page_locale", ["zh-CN"])``."""
    return None


@pytest.fixture
async def _watched_page(
    browser: Browser, request: pytest.FixtureRequest, page_locale: str | None
) -> AsyncIterator[tuple[Page, PageWatch]]:
    context, page, watch = await new_watched_page(browser, page_locale)
    yield page, watch
    try:
        report = request.node.stash.get(_call_report, None)
        if report is not None and report.failed:
            await save_screenshot(page, request.node.name, "failed")
    finally:
        await context.close()


@pytest.fixture
def page(_watched_page: tuple[Page, PageWatch]) -> Page:
    return _watched_page[0]


@pytest.fixture
def page_watch(_watched_page: tuple[Page, PageWatch]) -> PageWatch:
    return _watched_page[1]


@pytest.fixture
def screenshot(page: Page, request: pytest.FixtureRequest) -> Screenshot:
    async def take(name: str) -> Path:
        return await save_screenshot(page, request.node.name, name)

    return take


@pytest.fixture
def clock() -> ShiftClock:
    """The Runtime's clock for ``ui``: a test moves it (expiries, countdowns)."""
    return ShiftClock()


@pytest.fixture
async def ui(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path, clock: ShiftClock
) -> AsyncIterator[Client]:
    """A Runtime (on ``clock``) and its Web Host for ``pair``'s user."""
    async with serving(appserver, pair, tmp_path / "runtime", clock=clock) as made:
        yield made
