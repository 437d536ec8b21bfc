"""The demo agent with the reference MiniApps, in the real shell: the person types
`/dashboard` and `/whiteboard` in the chat, the demo agent drives the apps through
their tools, the apps answer from their frames, and the agent replies in the chat."""

from __future__ import annotations

from playwright.async_api import Page, expect

from lineup.agent.demo import build_demo_agent
from lineup.miniapps import install_bundled
from tests.browser.conftest import Screenshot
from tests.support.browser import PageWatch
from tests.support.browser_interactions import log_in
from tests.support.sdk_agent import running_agent
from tests.support.webhost import Client


async def test_the_demo_agent_opens_and_drives_the_reference_apps(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    installed = await install_bundled(client.runtime)
    assert installed == [
        "dev.lineup.task-dashboard",
        "dev.lineup.whiteboard",
        "dev.lineup.draw-guess",
    ]
    assert await install_bundled(client.runtime) == installed  # the same bytes: a no-op
    async with running_agent(client, build_demo_agent):
        await log_in(page, client)
        agent_rows = page.locator(".item.from-agent")

        await page.fill("#input", "/dashboard")
        await page.keyboard.press("Enter")
        await expect(agent_rows.filter(has_text="Task Dashboard")).to_have_count(1, timeout=30_000)
        await expect(agent_rows.filter(has_text="now holds 3")).to_have_count(1)
        board = page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")
        await expect(board.get_by_text("Book the meeting room")).to_be_visible()
        await screenshot("demo-dashboard")

        await page.fill("#input", "/whiteboard")
        await page.keyboard.press("Enter")
        await expect(agent_rows.filter(has_text="on the Whiteboard")).to_have_count(
            1, timeout=30_000
        )
        await screenshot("demo-whiteboard")
        names = await page.locator(".dock-item .dock-name").all_text_contents()
        assert sorted(names) == ["Task Dashboard", "Whiteboard"]
    page_watch.assert_clean()


async def test_the_guided_tour(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await install_bundled(client.runtime)
    async with running_agent(client, build_demo_agent):
        await log_in(page, client)
        await page.fill("#input", "/tour")
        await page.keyboard.press("Enter")

        # A question over the dashboard, answered in the overlay.
        overlay = page.locator("#app-overlay")
        await expect(overlay.locator(".card-prompt")).to_contain_text(
            "Keep these tasks?", timeout=30_000
        )
        await screenshot("tour-question-over-the-dashboard")
        await overlay.get_by_role("button", name="Keep them").click()

        # The whiteboard's export asks the person first.
        dialog = page.locator("dialog#consent")
        await expect(dialog).to_be_visible(timeout=30_000)
        await dialog.get_by_role("button", name="Allow").click()
        agent_rows = page.locator(".item.from-agent")
        await expect(agent_rows.filter(has_text="Saved")).to_have_count(1, timeout=30_000)

        # One round of the game: the agent draws a sun, the person guesses.
        frame = page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")
        guess = frame.get_by_role("textbox", name="Your guess")
        await expect(guess).to_be_visible(timeout=30_000)
        await guess.fill("sun")
        await guess.press("Enter")
        await expect(agent_rows.filter(has_text="That was the tour")).to_have_count(
            1, timeout=30_000
        )
        await expect(agent_rows.filter(has_text="You got it")).to_have_count(1)
        await screenshot("tour-done")
    page_watch.assert_clean()


async def test_the_demo_agent_answers_the_whiteboard_s_send_while_a_question_waits(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await install_bundled(client.runtime)
    async with running_agent(client, build_demo_agent):
        await log_in(page, client)
        agent_rows = page.locator(".item.from-agent")
        await page.fill("#input", "/whiteboard")
        await page.keyboard.press("Enter")
        await expect(agent_rows.filter(has_text="on the Whiteboard")).to_have_count(
            1, timeout=30_000
        )
        # A question waits in the chat (its handler waits for the answer)...
        await page.get_by_role("button", name="Back to chat", exact=False).click()
        await page.fill("#input", "/confirm")
        await page.keyboard.press("Enter")
        question = page.locator(".item.interaction").filter(has_text="Delete the scratch notes")
        await expect(question).to_have_attribute("data-interaction-state", "pending")
        # ...and the person sends the drawing from the Whiteboard: the agent answers.
        await page.locator(".dock-item .dock-front").first.click()
        frame = page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")
        await frame.get_by_role("button", name="Send to agent").click()
        await expect(
            agent_rows.filter(has_text="I got 2 strokes from the Whiteboard")
        ).to_have_count(1, timeout=30_000)
        await expect(question).to_have_attribute("data-interaction-state", "pending")
        await screenshot("demo-whiteboard-send-answered")
    page_watch.assert_clean()
