"""Questions over the app in front (spec 002 §7.3, §11 item 7), in a real Chromium:
a pending question of the focused app's sub-session shows as a card in the shell's
question panel in the app area, beside the app (never over it), while its IM group
holds a stand-in; switching away folds it and the group shows the card and "waiting
for your answer"; the person can answer in the IM or back in the app, and the agent
gets exactly one result either way."""

from __future__ import annotations

import pytest
from playwright.async_api import FrameLocator, Locator, Page, expect

from lineup.miniapps import install_bundled
from tests.browser.conftest import Screenshot
from tests.browser.test_subsessions import CHOICE, NOTES, choice, open_started
from tests.support.browser import PageWatch
from tests.support.browser_interactions import chat_id, log_in, tool_call, tool_result
from tests.support.webhost import Client


@pytest.mark.headed_path
async def test_a_question_shows_over_the_app_folds_away_and_is_answered_once(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    _, sid = await open_started(client, NOTES)
    await expect(page.locator("#app-area")).to_be_visible()
    overlay = page.locator("#app-overlay")
    await expect(overlay).to_be_hidden()
    group = page.locator(f'.items > .item.app-session[data-app-session-id="{sid}"]')
    await group.locator(".group-head").click()  # expanded, to see what it holds

    # The agent asks in the app's sub-session: the card is over the app.
    context = {"app_session_context": {"app_session_id": sid}}
    await tool_call(client, CHOICE, choice("Tea with the notes?"), "o1", **context)
    card = overlay.locator(".item.interaction")
    await expect(card).to_have_count(1)
    await expect(card.locator(".card-prompt")).to_have_text("Tea with the notes?")
    await expect(page.locator("#app-overlay-title")).to_have_text("The agent asks")
    # Beside the app, not over it: the app stays usable.
    assert not await page.locator("#app-area-frame").evaluate("f => f.inert")
    frame_box = await page.locator("#app-area-frame").bounding_box()
    panel_box = await overlay.bounding_box()
    assert frame_box is not None and panel_box is not None
    assert frame_box["x"] + frame_box["width"] <= panel_box["x"]
    # The group holds a stand-in, not a second card, and says it waits.
    await expect(group.locator(".item.interaction")).to_have_count(0)
    await expect(group.locator(".item.overlaid")).to_have_count(1)
    await expect(group.locator(".group-waiting")).to_be_visible()
    await screenshot("question-over-the-app")

    # Back to chat: the overlay folds, the card is answerable in the IM group.
    await page.get_by_role("button", name="Back to chat (send notes to background)").click()
    await expect(page.locator("#app-area")).to_be_hidden()
    in_group = group.locator(".item.interaction")
    await expect(in_group).to_have_count(1)
    await expect(in_group).to_have_attribute("data-interaction-state", "pending")
    await expect(group.locator(".group-waiting")).to_have_text("waiting for your answer")
    await screenshot("folded-into-the-group")

    # Back in the app, the question is over it again; it is answered there.
    await page.get_by_role("button", name="Bring to front: notes").click()
    await expect(card).to_have_count(1)
    await expect(group.locator(".item.interaction")).to_have_count(0)
    await card.get_by_role("radio", name="Tea").check()
    await card.get_by_role("button", name="Submit").click()
    await expect(overlay).to_be_hidden()
    answered = group.locator(".item.interaction")
    await expect(answered).to_have_attribute("data-interaction-state", "answered")
    await expect(answered.locator(".chip")).to_have_text(["Tea"])
    await expect(group.locator(".group-waiting")).to_be_hidden()
    assert not await page.locator("#app-area-frame").evaluate("f => f.inert")
    result = await tool_result(client, "o1")
    assert (result["status"], result["result"]) == ("completed", {"selected": ["tea"]})

    # "Later" folds it by hand: a bar says it waits; the IM answers it; once only.
    await tool_call(client, CHOICE, choice("Coffee later?"), "o2", **context)
    second = overlay.locator(".item.interaction")
    await expect(second.locator(".card-prompt")).to_have_text("Coffee later?")
    await page.get_by_role("button", name="Later").click()
    await expect(overlay).to_be_hidden()
    bar = page.locator("#app-overlay-bar")
    await expect(bar).to_have_text("1 question is waiting · Show")
    await expect(bar).to_be_focused()
    await screenshot("folded-by-hand")
    pending = group.locator(".item.interaction").filter(
        has=page.locator(".card-prompt", has_text="Coffee later?")
    )
    await pending.get_by_role("radio", name="Coffee").check()
    await pending.get_by_role("button", name="Submit").click()
    await expect(pending).to_have_attribute("data-interaction-state", "answered")
    await expect(bar).to_be_hidden()
    await expect(overlay).to_be_hidden()
    result = await tool_result(client, "o2")
    assert (result["status"], result["result"]) == ("completed", {"selected": ["coffee"]})
    page_watch.assert_clean()


async def test_the_stand_in_leads_to_the_card_and_a_reload_keeps_the_overlay(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.set_viewport_size({"width": 375, "height": 740})
    await log_in(page, client)
    _, sid = await open_started(client, NOTES)
    context = {"app_session_context": {"app_session_id": sid}}
    await tool_call(client, CHOICE, choice("Keep this page?"), "s1", **context)
    overlay = page.locator("#app-overlay")
    await expect(overlay.locator(".item.interaction")).to_have_count(1)
    await screenshot("overlay-375")

    await page.reload()
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
    await expect(overlay.locator(".card-prompt")).to_have_text("Keep this page?")
    await page.get_by_role("button", name="Later").click()
    await page.locator("#app-overlay-bar").click()
    await expect(overlay.locator(".card")).to_be_focused()

    group = page.locator(f'.items > .item.app-session[data-app-session-id="{sid}"]')
    await group.locator(".group-head").click()
    await group.get_by_role("button", name="Go to question").click()
    await expect(overlay.locator(".card")).to_be_focused()
    width = await page.evaluate("document.documentElement.scrollWidth")
    assert width <= 375, width
    page_watch.assert_clean()


DASHBOARD = "task-dashboard"

CONTRAST = """
([element, root]) => {
  // WCAG 2 contrast of the element's text against what is behind it: the computed
  // background colours of it and its ancestors, composited over the white canvas.
  const rgba = (css) => {
    const parts = css.match(/[\\d.]+/g).map(Number);
    return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
  };
  const over = (top, under) => {
    const a = top[3] + under[3] * (1 - top[3]);
    const mix = (i) => (top[i] * top[3] + under[i] * under[3] * (1 - top[3])) / a;
    return [mix(0), mix(1), mix(2), a];
  };
  const layers = [];
  let opaque = null; // the nearest layer that hides whatever lies under it
  for (let node = element; node; node = node.parentElement) {
    const colour = rgba(getComputedStyle(node).backgroundColor);
    layers.unshift(colour);
    if (opaque === null && colour[3] === 1) opaque = node;
  }
  let behind = [255, 255, 255, 1];
  for (const layer of layers) behind = over(layer, behind);
  const text = over(rgba(getComputedStyle(element).color), behind);
  const channel = (v) => {
    const c = v / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  const luminance = (c) => 0.2126 * channel(c[0]) + 0.7152 * channel(c[1]) + 0.0722 * channel(c[2]);
  const [light, dark] = [luminance(text), luminance(behind)].sort((a, b) => b - a);
  // Whether that opaque layer is the shell's own (the element, or a box of the shell's
  // around it up to ``root``): then nothing drawn beneath, the app included, shows through.
  return {
    ratio: (light + 0.05) / (dark + 0.05),
    own: opaque !== null && element.closest(root).contains(opaque),
  };
}
"""

HIT = """
([x, y]) => {
  // What the shell page has at that point: the app's frame, or one of its own elements.
  const hit = document.elementFromPoint(x, y);
  if (!hit) return "";
  return hit.matches("iframe.app-frame") ? "app-frame" : hit.id || hit.className || hit.tagName;
}
"""


async def contrast(locator: Locator, root: str) -> float:
    """The text's contrast ratio, measured from computed colours; its backdrop must be
    opaque and the shell's own, inside ``root`` (the panel, the dock entry, the title
    bar), so nothing the app draws can show through it."""
    handle = await locator.element_handle()
    measured = await locator.page.evaluate(CONTRAST, [handle, root])
    assert measured["own"], measured
    return float(measured["ratio"])


async def hit_at_centre(page: Page, box: dict[str, float] | None) -> str:
    assert box is not None
    return str(
        await page.evaluate(HIT, [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2])
    )


async def open_dashboard(client: Client, page: Page) -> tuple[str, str]:
    conversation = await chat_id(client)
    record = await client.runtime.apps.open_instance(DASHBOARD, conversation_id=conversation)
    await expect(app_frame(page).locator("body")).to_have_attribute("data-ready", "true")
    sid = await client.runtime.apps.app_session_id(record.instance_id)
    assert sid is not None
    return record.instance_id, sid


def app_frame(page: Page) -> FrameLocator:
    return page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")


async def test_the_question_panel_reads_well_and_never_covers_the_dashboard(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await install_bundled(client.runtime)
    await log_in(page, client)
    _, sid = await open_dashboard(client, page)
    frame = app_frame(page)
    new_task = frame.locator("#new-toggle")  # "New task" (its words hide when narrow)
    search = frame.locator("#filter")
    context = {"app_session_context": {"app_session_id": sid}}
    await tool_call(client, CHOICE, choice("Tea with the tasks?"), "c1", **context)
    overlay = page.locator("#app-overlay")
    await expect(overlay.locator(".card-prompt")).to_have_text("Tea with the tasks?")
    await overlay.evaluate(
        "o => Promise.all(o.getAnimations({subtree: true}).map((a) => a.finished))"
    )

    # Readable: WCAG AA (4.5:1) for its text, on the panel's own opaque background.
    for text in ("#app-overlay-title", "#app-overlay-fold", ".card-prompt", ".option-label"):
        ratio = await contrast(overlay.locator(text).first, "#app-overlay")
        assert ratio >= 4.5, (text, ratio)
    # The app's own controls are not under the panel: the point at their centre is the
    # app's frame, and so are its filter field and "New task" button, usable.
    for control in (new_task, search):
        assert await hit_at_centre(page, await control.bounding_box()) == "app-frame"
    fold = page.locator("#app-overlay-fold")
    assert await hit_at_centre(page, await fold.bounding_box()) == "app-overlay-fold"
    await search.fill("milk")
    await expect(search).to_have_value("milk")
    await screenshot("panel-beside-the-dashboard")

    # Folded: the bar sits in the title bar, in its own space; nothing covers the app.
    await page.get_by_role("button", name="Later").click()
    bar = page.locator("#app-overlay-bar")
    await expect(bar).to_have_text("1 question is waiting · Show")
    assert await hit_at_centre(page, await new_task.bounding_box()) == "app-frame"
    assert await hit_at_centre(page, await search.bounding_box()) == "app-frame"
    assert await contrast(bar, ".app-area-head") >= 4.5
    head = await page.locator(".app-area-head").bounding_box()
    frame_box = await page.locator("#app-area-frame").bounding_box()
    bar_box = await bar.bounding_box()
    assert head is not None and frame_box is not None and bar_box is not None
    assert bar_box["y"] + bar_box["height"] <= head["y"] + head["height"] <= frame_box["y"]
    await new_task.click()
    await expect(frame.locator("#new-form")).to_be_visible()
    await screenshot("folded-into-the-title-bar")

    # The same at 375 px: the panel is under the app, not over it.
    await page.set_viewport_size({"width": 375, "height": 740})
    await bar.click()
    await expect(overlay.locator(".card-prompt")).to_be_visible()
    frame_box = await page.locator("#app-area-frame").bounding_box()
    panel = await overlay.bounding_box()
    assert frame_box is not None and panel is not None
    assert frame_box["y"] + frame_box["height"] <= panel["y"]
    assert await contrast(page.locator("#app-overlay-title"), "#app-overlay") >= 4.5
    assert await page.evaluate("document.documentElement.scrollWidth") <= 375
    await screenshot("panel-under-the-dashboard-375")
    page_watch.assert_clean()


async def test_the_dock_marks_the_instance_that_waits_and_the_tab_title_counts(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await install_bundled(client.runtime)
    await log_in(page, client)
    await expect(page).to_have_title("LineUp")
    first, first_sid = await open_dashboard(client, page)
    second, _ = await open_dashboard(client, page)  # in front
    entry = {i: page.locator(f'.dock-item[data-instance-id="{i}"]') for i in (first, second)}

    # A question in the first dashboard's sub-session, while the second is in front.
    context = {"app_session_context": {"app_session_id": first_sid}}
    await tool_call(client, CHOICE, choice("Tidy the first board?"), "w1", **context)
    mark = entry[first].locator(".dock-waiting")
    await expect(mark).to_have_text("1")
    await expect(entry[second].locator(".dock-waiting")).to_have_count(0)
    await expect(
        page.get_by_role("button", name="Bring to front: Task Dashboard, 1 question waiting")
    ).to_be_visible()
    await expect(page).to_have_title("(1) LineUp")
    assert await contrast(mark, ".dock-item") >= 4.5
    # A question of the chat itself counts in the title, on no dock entry.
    await tool_call(client, CHOICE, choice("And one for the chat?"), "w2")
    await expect(page).to_have_title("(2) LineUp")
    await expect(page.locator(".dock-waiting")).to_have_count(1)
    await screenshot("dock-marks-the-first-dashboard")

    # Answered in the first dashboard: its mark goes, and the title counts one.
    await entry[first].locator(".dock-front").click()
    card = page.locator("#app-overlay .item.interaction")
    await card.get_by_role("radio", name="Tea").check()
    await card.get_by_role("button", name="Submit").click()
    await expect(page.locator(".dock-waiting")).to_have_count(0)
    await expect(page).to_have_title("(1) LineUp")
    assert (await tool_result(client, "w1"))["status"] == "completed"
    await page.get_by_role(
        "button", name="Back to chat (send Task Dashboard to background)"
    ).click()
    loose = page.locator(".items > .item.interaction")
    await loose.get_by_role("radio", name="Coffee").check()
    await loose.get_by_role("button", name="Submit").click()
    await expect(page).to_have_title("LineUp")
    await screenshot("nothing-waits")
    page_watch.assert_clean()
