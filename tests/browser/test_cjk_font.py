"""Chinese renders as glyphs, not boxes: the login page in zh-CN, and every character of
the zh-CN catalogues, in the fonts the page uses.

scripts/system-deps installs a CJK font (fonts-wqy-microhei); without one Chromium
draws each Chinese character as the same "tofu" box (or nothing), so screenshots of
the Chinese shell are unreadable. A character is drawn on a canvas in the font its
element computes to, and its pixels are compared with those of a code point no font
has (U+10FFFD, private use): a character the fonts lack draws exactly that.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from playwright.async_api import Browser, expect

from tests.support.browser import (
    DEFAULT_TIMEOUT_MS,
    VIEWPORT,
    PageWatch,
    is_local,
    save_screenshot,
)
from tests.support.webhost import Client

SRC = Path(__file__).resolve().parents[2] / "src"
MISSING = "\U0010fffd"

# For each character: whether it draws something other than what a code point no font
# has draws. The canvas is wide enough for a CJK glyph at the page's sizes.
UNDRAWABLE = """([chars, font, missing]) => {
  const canvas = document.createElement("canvas");
  canvas.width = 96;
  canvas.height = 96;
  const context = canvas.getContext("2d", { willReadFrequently: true });
  const draw = (text) => {
    context.clearRect(0, 0, canvas.width, canvas.height);
    context.font = font;
    context.textBaseline = "top";
    context.fillStyle = "#000";
    context.fillText(text, 8, 8);
    const alpha = context.getImageData(0, 0, canvas.width, canvas.height).data
      .filter((_, index) => index % 4 === 3);
    return alpha.join(",");
  };
  const tofu = draw(missing);
  return chars.filter((char) => draw(char) === tofu);
}"""

PAGE_TEXT = """() => [...document.querySelectorAll("p, label, button")].map((element) => ({
  text: element.innerText,
  font: getComputedStyle(element).font,
}))"""


def catalogue_characters() -> str:
    """Every non-ASCII, non-space character of the zh-CN catalogues (the shell's and any
    MiniApp's under src/)."""
    chars: set[str] = set()
    for path in sorted(SRC.rglob("zh-CN.json")):
        for value in json.loads(path.read_text(encoding="utf-8")).values():
            chars.update(char for char in value if ord(char) > 0x7F and not char.isspace())
    return "".join(sorted(chars))


@pytest.mark.headed_path
async def test_chinese_renders_as_glyphs_not_boxes(browser: Browser, client: Client) -> None:
    context = await browser.new_context(viewport=VIEWPORT, locale="zh-CN")
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    watch = PageWatch()
    await context.route(lambda url: not is_local(url), watch.block_non_local)
    page = await context.new_page()
    watch.attach(page)
    try:
        await page.goto(client.url + "/")
        await expect(page).to_have_url(client.url + "/login")
        await expect(page.locator("html")).to_have_attribute("lang", "zh-CN")
        await expect(page.get_by_role("button", name="登录")).to_be_visible()
        await save_screenshot(page, "test_chinese_renders_as_glyphs_not_boxes", "login-zh-CN")

        # The login page's own text, each element in its own font.
        shown = await page.evaluate(PAGE_TEXT)
        assert any("登录" in element["text"] for element in shown), shown
        for element in shown:
            chars = sorted({char for char in element["text"] if ord(char) > 0x7F})
            boxes = await page.evaluate(UNDRAWABLE, [chars, element["font"], MISSING])
            assert not boxes, f"no glyph in {element['font']!r} for {''.join(boxes)!r}"

        # Every character the zh-CN catalogues hold, in the page's body font.
        chars = catalogue_characters()
        assert "登" in chars and "\uff0c" in chars, "the zh-CN catalogue was not found"
        font = await page.evaluate("() => getComputedStyle(document.body).font")
        boxes = await page.evaluate(UNDRAWABLE, [list(chars), font, MISSING])
        assert not boxes, (
            f"{len(boxes)} of {len(chars)} catalogue characters draw as boxes in {font!r}:"
            f" {''.join(boxes)!r}; is a CJK font installed (fc-list :lang=zh-cn)?"
            " scripts/system-deps installs fonts-wqy-microhei"
        )
        watch.assert_clean()
    finally:
        await context.close()
