"""A page whose browser asks for one language (the context's ``locale``, which sets
``navigator.languages`` and the ``Accept-Language`` header), watched like the
``page`` fixture's (tests/support/browser.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from playwright.async_api import Browser, Page

from tests.support.browser import DEFAULT_TIMEOUT_MS, VIEWPORT, PageWatch, is_local

LOCALES = ("en", "zh-CN")


@asynccontextmanager
async def localized_page(browser: Browser, locale: str) -> AsyncIterator[tuple[Page, PageWatch]]:
    """A fresh 1280x800 context and page for ``locale``, closed on exit."""
    context = await browser.new_context(viewport=VIEWPORT, locale=locale)
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    watch = PageWatch()
    await context.route(lambda url: not is_local(url), watch.block_non_local)
    page = await context.new_page()
    watch.attach(page)
    try:
        yield page, watch
    finally:
        await context.close()
