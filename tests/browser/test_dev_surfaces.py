"""Dev surfaces in the real shell, in Chromium (``Runtime(dev_surfaces=DIR)``, what
``lineup client --dev-surfaces DIR`` and ``lineup demo --dev-surfaces DIR`` run): an
agent opens a bundle of DIR with the SDK's ``open_surface`` and the person sees it,
marked dev mode; the author edits a file; the agent's next ``open_surface`` shows
the new text, and so do the card's "Reload" and a reload of the page, with no
restart. A bundle broken mid-edit shows a notice, and the next Reload after the fix
shows the surface again."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from playwright.async_api import Page, expect

from lineup.agent import Agent
from lineup.protocol import UiEventEnvelope
from tests.browser.conftest import Screenshot
from tests.conftest import Pair
from tests.runtime.test_dev_surfaces import HELLO
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch
from tests.support.browser_interactions import chat_id, log_in
from tests.support.sdk_agent import running_agent
from tests.support.webhost import serving

MANIFEST = HELLO  # the same bundle as the Runtime's dev-surface tests
JS = """\
LineUpSurface.onState((state) => {
  document.getElementById("who").textContent = String(state.who ?? "");
});
document.getElementById("hi").addEventListener("click", () => {
  LineUpSurface.event("clicked", { at: "card" });
});
LineUpSurface.resize(document.documentElement.scrollHeight);
"""


def page_of(text: str) -> str:
    return f'<p id="text">{text}</p><p id="who"></p><button id="hi" type="button">Hi</button>\n'


async def test_an_edited_dev_surface_shows_at_the_next_open_and_reload(
    page: Page,
    page_watch: PageWatch,
    appserver: AppServerProcess,
    pair: Pair,
    tmp_path: Path,
    screenshot: Screenshot,
) -> None:
    bundle = tmp_path / "surfaces" / "hello"
    bundle.mkdir(parents=True)
    (bundle / "manifest.json").write_text(json.dumps(MANIFEST), "utf-8")
    (bundle / "index.html").write_text(page_of("Text A"), "utf-8")
    (bundle / "index.js").write_text(JS, "utf-8")
    events: asyncio.Queue[UiEventEnvelope] = asyncio.Queue()

    def build(agent: Agent) -> Agent:
        @agent.on_event("lineup.v1.ui.event")
        async def clicked(conversation: object, envelope: object) -> None:
            assert isinstance(envelope, UiEventEnvelope)
            events.put_nowait(envelope)

        return agent

    async with serving(
        appserver, pair, tmp_path / "runtime", dev_surfaces=tmp_path / "surfaces"
    ) as client:
        await log_in(page, client)
        chat = await chat_id(client)
        async with running_agent(client, build) as agent:
            conversation = agent.conversations[chat]

            async def open_it() -> None:
                await conversation.open_surface(
                    "com.example.hello",
                    "0.1.0",
                    instance_id="hello",
                    surface="card",
                    state={"who": "agent"},
                )

            # Opened by the agent: the person sees text A, in a card marked dev mode
            # and titled by the manifest's name; its declared event reaches the agent.
            await open_it()
            cards = page.locator('.item.surface[data-instance-id="hello"]')
            card = cards.last
            await expect(card.frame_locator("iframe").locator("#text")).to_have_text("Text A")
            await expect(card.frame_locator("iframe").locator("#who")).to_have_text("agent")
            await expect(card.locator(".surface-dev")).to_be_visible()
            await expect(card.locator(".surface-name")).to_have_text("Hello")
            await card.frame_locator("iframe").get_by_role("button", name="Hi").click()
            event = await asyncio.wait_for(events.get(), 20)
            assert (event.payload.instance_id, event.payload.event) == ("hello", "clicked")
            await screenshot("dev-surface-a")

            # Edited to B, opened again: the new card shows B, the old one was replaced.
            (bundle / "index.html").write_text(page_of("Text B"), "utf-8")
            await open_it()
            await expect(cards).to_have_count(2)
            await expect(cards.first).to_have_attribute("data-surface-status", "replaced")
            card = cards.last
            await expect(card.frame_locator("iframe").locator("#text")).to_have_text("Text B")

            # Edited to C: the card's Reload shows C without the agent, state kept.
            (bundle / "index.html").write_text(page_of("Text C"), "utf-8")
            await card.get_by_role("button", name="Reload Hello").click()
            await expect(card.frame_locator("iframe").locator("#text")).to_have_text("Text C")
            await expect(card.frame_locator("iframe").locator("#who")).to_have_text("agent")

            # Broken mid-edit: Reload says it is not available, and nothing else stops.
            (bundle / "manifest.json").write_text("{", "utf-8")
            await card.get_by_role("button", name="Reload Hello").click()
            await expect(card.locator(".surface-notice-text")).to_have_text(
                "This surface is not available here."
            )
            await expect(card.locator("iframe")).to_have_count(0)

            # Fixed, and edited to D: a reload of the page shows D.
            (bundle / "manifest.json").write_text(json.dumps(MANIFEST), "utf-8")
            (bundle / "index.html").write_text(page_of("Text D"), "utf-8")
            await page.reload()
            card = page.locator('.item.surface[data-instance-id="hello"]').last
            await expect(card.frame_locator("iframe").locator("#text")).to_have_text("Text D")
            await expect(card.locator(".surface-dev")).to_be_visible()
            await screenshot("dev-surface-d")
    page_watch.assert_clean()
