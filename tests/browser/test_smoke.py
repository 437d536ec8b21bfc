"""Chromium, Playwright and the fixtures work: a click changes a page, text renders, and
the page watch notices console errors, failed requests and blocked requests."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from playwright.async_api import Page, expect

from tests.browser.conftest import Screenshot
from tests.support.browser import PageWatch, screenshot_path

HEAD = '<meta charset="utf-8"><link rel="icon" href="data:,">'
PAGES = {
    "/": f"""<!doctype html>
<html lang="en"><head>{HEAD}<title>LineUp smoke</title>
<style>body {{ font: 20px sans-serif; margin: 40px; }} button {{ font: inherit; }}</style>
</head><body>
<h1>LineUp browser smoke test</h1>
<button type="button" id="press">Press me</button>
<p id="status">Not pressed yet</p>
<script>
document.getElementById("press").addEventListener("click", () => {{
    document.getElementById("status").textContent = "Pressed: thank you, Zoë!";
}});
</script>
</body></html>""",
    "/broken": f"""<!doctype html>
<html lang="en"><head>{HEAD}<title>Broken</title></head><body>
<img src="/missing.png" alt="">
<img src="http://example.invalid/tracker.png" alt="">
<script>console.error("boom from the page");</script>
</body></html>""",
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = PAGES.get(self.path)
        status = HTTPStatus.OK if body is not None else HTTPStatus.NOT_FOUND
        data = (body or "not found").encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join()
    server.server_close()


async def test_click_changes_the_text(
    site: str, page: Page, page_watch: PageWatch, screenshot: Screenshot
) -> None:
    await page.goto(site + "/")
    status = page.locator("#status")
    await expect(status).to_have_text("Not pressed yet")

    await page.get_by_role("button", name="Press me").click()

    await expect(status).to_have_text("Pressed: thank you, Zoë!")
    path = await screenshot("pressed")
    assert path == screenshot_path("test_click_changes_the_text", "pressed")
    assert path.read_bytes().startswith(b"\x89PNG")
    page_watch.assert_clean()


async def test_watch_reports_what_went_wrong(site: str, page: Page, page_watch: PageWatch) -> None:
    async with (
        page.expect_console_message(lambda message: "boom" in message.text),
        page.expect_response(lambda response: response.url.endswith("/missing.png")),
        page.expect_event("requestfailed", lambda request: "example.invalid" in request.url),
    ):
        await page.goto(site + "/broken")

    assert page_watch.blocked_requests == ["http://example.invalid/tracker.png"]
    assert page_watch.error_responses == [f"GET {site}/missing.png -> 404"]
    assert any("boom from the page" in text for text in page_watch.console_errors)
    with pytest.raises(AssertionError, match="boom from the page"):
        page_watch.assert_clean()
