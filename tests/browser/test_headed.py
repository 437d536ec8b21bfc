"""The browser is headed exactly when ``LINEUP_HEADED=1`` asks for it.

scripts/test runs the whole suite headless, then the tests marked ``headed_path`` again
with ``LINEUP_HEADED=1`` in a headed Chromium under Xvfb (spec 002 §11 item 9). The
first test here is one of them, so each pass checks the browser it got: the headless
pass that it is Chromium's headless mode, the headed pass that it is a real window on
an X display. Without it a headed pass that silently ran headless would still be green.
"""

from __future__ import annotations

import pytest
from playwright.async_api import Page

from tests.support.browser import headed, launch_chromium

WHAT_THE_PAGE_SEES = """() => ({
  userAgent: navigator.userAgent,
  outerWidth: window.outerWidth,
  outerHeight: window.outerHeight,
  innerHeight: window.innerHeight,
})"""


@pytest.mark.headed_path
async def test_the_browser_is_headed_exactly_when_asked(page: Page) -> None:
    await page.goto("about:blank")
    seen = await page.evaluate(WHAT_THE_PAGE_SEES)
    if headed():
        assert "HeadlessChrome" not in seen["userAgent"], seen
        # A real window: it has a size on the display, and its frame (tab strip,
        # toolbar) takes height above the page.
        assert seen["outerWidth"] > 0 and seen["outerHeight"] > 0, seen
        assert seen["outerHeight"] > seen["innerHeight"], seen
    else:
        assert "HeadlessChrome" in seen["userAgent"], seen


async def test_headed_without_a_display_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LINEUP_HEADED", "1")
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(RuntimeError, match="DISPLAY is not set"):
        async with launch_chromium():
            pass


async def test_a_headed_value_other_than_0_or_1_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LINEUP_HEADED", "yes")
    with pytest.raises(RuntimeError, match="set it to 1"):
        async with launch_chromium():
            pass
