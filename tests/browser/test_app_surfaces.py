"""App surfaces in the real shell, in Chromium: an agent's launch tool opens the test
app, the shell mounts its surface (sandboxed, from the surface origin), the app takes
its tool calls through the MiniApp SDK and the agent gets each result once; the app's
state survives a reload; pending calls are delivered again after a reload until the
app answers them; closing the app cancels what it left running and takes the frame
down."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from playwright.async_api import FrameLocator, Page, expect

from tests.browser.conftest import Screenshot
from tests.support.browser import PageWatch
from tests.support.browser_interactions import chat_id, log_in, tool_result
from tests.support.webhost import Client

BUNDLE = Path(__file__).parents[1] / "support" / "apps" / "test-app"


async def agent_calls(client: Client, call_id: str, tool: str, arguments: dict[str, Any]) -> None:
    conversation = await chat_id(client)
    body = client.pair.agent.envelope(
        conversation,
        kind="lineup.v1.tool.call",
        payload={
            "call_id": call_id,
            "tool": tool,
            "inventory_revision": client.runtime.inventory.revision,
            "arguments": arguments,
        },
    )
    assert (await client.pair.agent.post(conversation, body)).status_code == 201


async def agent_events(client: Client, conversation_id: str, kind: str) -> list[dict[str, Any]]:
    """The payloads of ``kind`` the agent can read, once there is one."""
    async with asyncio.timeout(20):
        while True:
            stored = await client.pair.agent.read_all(conversation_id)
            found = [s["envelope"]["payload"] for s in stored if s["envelope"]["type"] == kind]
            if found:
                return found
            await client.pair.agent.read(conversation_id, stored[-1]["seq"], wait=5)


def app_frame(page: Page) -> FrameLocator:
    return page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")


async def test_an_app_surface_takes_tool_calls_keeps_state_and_closes(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)

    # The agent launches the app: the shell mounts it, the app answers the call.
    await agent_calls(client, "open-1", "test-app.open", {})
    frame = app_frame(page)
    await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
    iframe = page.locator("#app-area-frame iframe.app-frame")
    assert await iframe.get_attribute("sandbox") == "allow-scripts"
    assert (await iframe.get_attribute("src") or "").startswith("http://m-")
    result = await tool_result(client, "open-1")
    (instance_id,) = client.runtime.apps.instances().records
    assert result == {
        "call_id": "open-1",
        "status": "completed",
        "result": {"instance_id": instance_id},
    }
    await expect(frame.locator("#context")).to_have_text("test-app 1.0.0")

    # A direct call and a long one with progress, both answered once.
    await agent_calls(client, "echo-1", "test-app.echo", {"text": "hello"})
    await agent_calls(client, "slow-1", "test-app.slow", {"steps": 3})
    assert (await tool_result(client, "echo-1"))["result"] == {"text": "hello"}
    assert (await tool_result(client, "slow-1"))["result"] == {"done": True}

    # The app's declared events reach the agent as ui.event; undeclared ones do not.
    await frame.get_by_role("button", name="Undeclared event").click()
    await frame.get_by_role("button", name="Ping the agent").click()
    conversation_id = await chat_id(client)
    events = await agent_events(client, conversation_id, "lineup.v1.ui.event")
    assert events == [{"instance_id": instance_id, "event": "ping", "data": {"n": 1}}]

    # An envelope for the app's scope reaches its inbox (pushed, listed, acknowledged).
    conversation = await chat_id(client)
    note = client.pair.agent.envelope(
        conversation, kind="lineup.v1.message", payload={"text": "for the app"}
    )
    note["target"] = {"app_scope": "test-app"}
    assert (await client.pair.agent.post(conversation, note)).status_code == 201
    await expect(frame.locator("#inbox li")).to_have_text(["for the app"])

    # The app's own state lives in the Runtime: it survives a reload of the shell.
    await frame.get_by_role("button", name="Click").click()
    await frame.get_by_role("button", name="Click").click()
    await expect(frame.locator("#count")).to_have_text("2")
    await screenshot("test-app-in-front")

    # A call the app holds open is delivered again after a reload.
    await agent_calls(client, "hold-1", "test-app.echo", {"text": "hold"})
    await expect(frame.locator('[data-call-id="hold-1"]')).to_have_count(1)
    await page.reload()
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
    frame = app_frame(page)
    await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
    await expect(frame.locator("#count")).to_have_text("2")
    await expect(frame.locator('[data-call-id="hold-1"]')).to_have_count(1)
    await expect(frame.locator("#inbox li")).to_have_count(0)  # acknowledged: not again

    # Closing the app cancels the held call (app_closed) and takes the frame down.
    await page.get_by_role("button", name="Close Test App").click()
    await expect(page.locator("#app-area-frame iframe")).to_have_count(0)
    await expect(page.locator("#app-area")).to_be_hidden()
    held = await tool_result(client, "hold-1")
    assert (held["status"], held["error"]["code"]) == ("cancelled", "app_closed")
    assert client.web.surfaces.mounts() == []
    page_watch.assert_clean()


LOOP_APP = Path(__file__).parents[1] / "support" / "apps" / "loop-app"
RELOAD_LIMIT = 3  # surface_host.js: remounts allowed in 30 s


async def test_a_miniapp_that_keeps_reloading_itself_is_stopped_and_can_be_reopened(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await client.runtime.registry.install_bundle(LOOP_APP, enable=True)
    await log_in(page, client)
    history = await page.evaluate("() => history.length")
    await agent_calls(client, "open-1", "loop-app.open", {})
    area = page.locator("#app-area-frame")
    await expect(area).to_have_attribute("data-stopped", "true")
    await expect(area.locator(".app-area-placeholder")).to_contain_text("keeps reloading itself")
    await expect(area.locator("iframe")).to_have_count(0)
    (instance_id,) = client.runtime.apps.instances().records
    state = await client.runtime.app_api.call(instance_id, "state.get", {})
    assert state == {"runs": 1 + RELOAD_LIMIT}  # it ran, and was mounted afresh 3 times
    assert client.web.app_surfaces.mounts_of(instance_id) == []
    await screenshot("miniapp-keeps-reloading")

    # The instance keeps running; once its state says steady, Reopen shows it.
    await client.runtime.app_api.call(
        instance_id, "state.set", {"state": {**state, "steady": True}}
    )
    await area.get_by_role("button", name="Reopen").click()
    await expect(app_frame(page).locator("#status")).to_have_text("steady")
    state = await client.runtime.app_api.call(instance_id, "state.get", {})
    assert state["runs"] == 2 + RELOAD_LIMIT
    # Every entry the shell's history gained is one of the app's own navigations.
    assert await page.evaluate("() => history.length") == history + 1 + RELOAD_LIMIT
    assert all("'http://loop.attacker.test/'" in e for e in page_watch.console_errors)
    page_watch.console_errors.clear()
    page_watch.assert_clean()


# In the app's frame: each call's outcome, as "ok" or its Error's code.
OUTCOMES_JS = """async (calls) => {
  const run = { state: (s) => LineUpApp.state.set(s), context: () => LineUpApp.context() };
  const settled = await Promise.allSettled(calls.map(([name, arg]) => run[name](arg)));
  return settled.map((s) => s.status === "fulfilled" ? "ok" : s.reason.code);
}"""


async def test_sdk_requests_the_shell_or_runtime_refuse_reject_at_once_with_their_codes(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)
    await agent_calls(client, "open-1", "test-app.open", {})
    frame = app_frame(page)
    await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
    handle = await page.locator("#app-area-frame iframe.app-frame").element_handle()
    assert handle is not None
    content = await handle.content_frame()
    assert content is not None
    (instance_id,) = client.runtime.apps.instances().records
    before = await client.runtime.app_api.call(instance_id, "state.get", {})

    # Oversized state: too large for the shell (96 KiB of params), or for the Runtime.
    outcomes = await content.evaluate(
        OUTCOMES_JS, [["state", {"k": "x" * 100_000}], ["state", {"k": "x" * 70_000}]]
    )
    assert outcomes == ["too_large", "state_too_large"]  # answered, not "timeout"
    assert await client.runtime.app_api.call(instance_id, "state.get", {}) == before

    # A flood past the shell's rate limit (burst 200): the rest are refused at once.
    outcomes = await content.evaluate(OUTCOMES_JS, [["context", None]] * 400)
    assert set(outcomes) == {"ok", "rate_limited"}, set(outcomes)
    assert outcomes.count("ok") >= 150
    page_watch.assert_clean()
