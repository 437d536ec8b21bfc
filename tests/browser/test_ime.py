# ruff: noqa: RUF001 (Chinese text: full-width punctuation is what it is written with)
"""Chinese input (an IME) in a real Chromium: while a composition is under way, Enter
picks the IME's text and must never send the message in the composer or submit an
input card; the Enter after the composition ends sends once.

The compositions are Chromium's own (CDP ``Input.imeSetComposition`` then
``Input.insertText``, as an IME drives the renderer: genuine compositionstart /
compositionupdate / compositionend events and ``isComposing`` keydowns), and synthetic
ones for what other browsers and IMEs do (a keydown with ``isComposing``, the
``keyCode`` 229 Safari gives the committing Enter, an Enter between compositionstart
and compositionend). What the shell sends is read off its WebSocket, and what reached
the agent off the AppServer."""

from __future__ import annotations

import json
from typing import Any

from playwright.async_api import CDPSession, Locator, Page, WebSocket, expect

from tests.support.browser import PageWatch
from tests.support.browser_interactions import chat_id, log_in, tool_call, tool_result
from tests.support.webhost import Client

INPUT = "interact.input"


class Sent:
    """Every frame the shell sends on its host channel."""

    def __init__(self, page: Page) -> None:
        self.frames: list[dict[str, Any]] = []
        page.on("websocket", self._socket)

    def _socket(self, socket: WebSocket) -> None:
        socket.on("framesent", self._frame)

    def _frame(self, payload: str | bytes) -> None:
        self.frames.append(json.loads(payload))

    def ops(self, op: str) -> list[dict[str, Any]]:
        return [f for f in self.frames if f.get("op") == op]


async def compose(cdp: CDPSession, text: str) -> None:
    """The IME shows ``text`` under composition (not yet committed)."""
    await cdp.send(
        "Input.imeSetComposition",
        {"text": text, "selectionStart": len(text), "selectionEnd": len(text)},
    )


async def ime_enter(cdp: CDPSession, **modifiers: int) -> None:
    """Enter pressed while the IME composes: the IME takes it (to pick its text), so
    the page gets the keydown (keyCode 229, as IMEs give it) and no text from it."""
    for kind in ("rawKeyDown", "keyUp"):
        await cdp.send(
            "Input.dispatchKeyEvent",
            {"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 229}
            | modifiers,
        )


async def watch_keys(page: Page) -> None:
    """Record, in the page, each Enter keydown's isComposing and the composition events."""
    await page.evaluate(
        """() => {
          window.seen = [];
          for (const kind of ["compositionstart", "compositionend"]) {
            document.addEventListener(kind, () => window.seen.push(kind), true);
          }
          document.addEventListener("keydown", (event) => {
            if (event.key === "Enter") window.seen.push(`Enter:${event.isComposing}`);
          }, true);
        }"""
    )


async def seen(page: Page) -> list[str]:
    return list(await page.evaluate("window.seen.splice(0)"))


async def commit(cdp: CDPSession, text: str) -> None:
    """The IME commits ``text``: the composition ends."""
    await cdp.send("Input.insertText", {"text": text})


async def synthetic_enter(field: Locator, **init: Any) -> bool:
    """A keydown Enter built in the page (``keyCode`` too, which the constructor
    cannot set); whether the page let it through (not prevented)."""
    return bool(
        await field.evaluate(
            """(element, init) => {
              const { keyCode, ...rest } = init;
              const event = new KeyboardEvent("keydown", {
                key: "Enter", code: "Enter", bubbles: true, cancelable: true, ...rest });
              if (keyCode !== undefined) {
                Object.defineProperty(event, "keyCode", { value: keyCode });
              }
              return element.dispatchEvent(event);
            }""",
            init,
        )
    )


async def composition(field: Locator, kind: str, data: str = "") -> None:
    await field.evaluate(
        "(element, [kind, data]) => element.dispatchEvent("
        "new CompositionEvent(kind, { data, bubbles: true }))",
        [kind, data],
    )


async def agent_texts(client: Client) -> list[str]:
    stored = await client.pair.agent.read_all(await chat_id(client))
    return [
        s["envelope"]["payload"]["text"]
        for s in stored
        if s["envelope"]["type"] == "lineup.v1.message"
    ]


async def test_enter_in_a_composition_never_sends_from_the_composer(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    sent = Sent(page)
    await log_in(page, client)
    composer = page.locator("#input")
    await composer.focus()
    cdp = await page.context.new_cdp_session(page)

    # Chromium's own composition: Enter while it is under way belongs to the IME.
    await watch_keys(page)
    await compose(cdp, "ni")
    await compose(cdp, "nih")
    await ime_enter(cdp)
    await commit(cdp, "你好")
    await expect(composer).to_have_value("你好")
    assert await seen(page) == ["compositionstart", "Enter:true", "compositionend"]
    assert sent.ops("send") == []
    await page.keyboard.press("Enter")  # after compositionend: sends, once
    assert await seen(page) == ["Enter:false"]
    mine = page.locator(".item.from-user")
    await expect(mine).to_have_count(1)
    await expect(mine.locator(".body")).to_have_text("你好")
    await expect(mine).to_have_attribute("data-state", "sent")
    await expect(composer).to_have_value("")

    # What other browsers and IMEs send: none of these is a send.
    await composer.fill("世界")
    assert await synthetic_enter(composer, isComposing=True)  # left to the IME
    assert await synthetic_enter(composer, keyCode=229)
    await composition(composer, "compositionstart")
    assert await synthetic_enter(composer)  # between start and end
    await composition(composer, "compositionend", "世界")
    await expect(composer).to_have_value("世界")
    assert len(sent.ops("send")) == 1
    assert not await synthetic_enter(composer)  # a plain Enter: sent (and no new line)
    await expect(mine).to_have_count(2)
    await expect(mine.last.locator(".body")).to_have_text("世界")
    await expect(mine.last).to_have_attribute("data-state", "sent")

    assert [f["text"] for f in sent.ops("send")] == ["你好", "世界"]
    assert await agent_texts(client) == ["你好", "世界"]
    page_watch.assert_clean()


async def test_enter_in_a_composition_never_submits_an_input_card(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    sent = Sent(page)
    await log_in(page, client)
    await tool_call(client, INPUT, {"prompt": "团队名称？"}, "team")
    card = page.locator(".item.interaction").filter(has_text="团队名称")
    field = card.get_by_role("textbox")
    await field.focus()
    cdp = await page.context.new_cdp_session(page)

    # Chromium's composition in the card's one-line field: Enter picks, not submits.
    await watch_keys(page)
    await compose(cdp, "pingtai")
    await ime_enter(cdp)
    await commit(cdp, "平台")
    assert await seen(page) == ["compositionstart", "Enter:true", "compositionend"]
    await expect(field).to_have_value("平台")
    # A real Enter between a compositionstart and its compositionend (an IME whose
    # keydown does not say it composes) does not submit the form either.
    await composition(field, "compositionstart")
    await page.keyboard.press("Enter")
    await composition(field, "compositionend", "平台")
    assert await synthetic_enter(field, isComposing=True)
    assert await synthetic_enter(field, keyCode=229)
    await expect(card).to_have_attribute("data-interaction-state", "pending")
    assert sent.ops("answer") == []

    await page.keyboard.press("Enter")  # after compositionend: submits, once
    await expect(card).to_have_attribute("data-interaction-state", "answered")
    await expect(card.locator(".answer-text")).to_have_text("平台")
    assert len(sent.ops("answer")) == 1
    assert await tool_result(client, "team") == {
        "call_id": "team",
        "status": "completed",
        "result": {"text": "平台"},
    }
    page_watch.assert_clean()


async def test_ctrl_enter_in_a_composition_never_submits_a_multiline_card(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    sent = Sent(page)
    await log_in(page, client)
    await tool_call(client, INPUT, {"prompt": "有什么忌口？", "multiline": True}, "diet")
    card = page.locator(".item.interaction").filter(has_text="有什么忌口")
    field = card.get_by_role("textbox")
    await field.focus()
    cdp = await page.context.new_cdp_session(page)
    await watch_keys(page)
    await compose(cdp, "sushi")
    await ime_enter(cdp, modifiers=2)  # Ctrl
    await commit(cdp, "素食")
    assert await seen(page) == ["compositionstart", "Enter:true", "compositionend"]
    assert await synthetic_enter(field, ctrlKey=True, isComposing=True)
    await composition(field, "compositionstart")
    assert await synthetic_enter(field, ctrlKey=True)
    await composition(field, "compositionend", "素食")
    await expect(field).to_have_value("素食")
    await expect(card).to_have_attribute("data-interaction-state", "pending")
    assert sent.ops("answer") == []

    assert not await synthetic_enter(field, ctrlKey=True)  # Ctrl+Enter: submitted
    await expect(card).to_have_attribute("data-interaction-state", "answered")
    assert len(sent.ops("answer")) == 1
    assert (await tool_result(client, "diet"))["result"] == {"text": "素食"}
    page_watch.assert_clean()
