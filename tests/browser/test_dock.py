"""The app dock in a real Chromium: instances the Runtime opens show in every tab, the
person's foreground / background / close requests go to the Runtime and every tab
follows its decision, the IM stays usable beside the app area, and it fits 375 px.
Two instances of one app are told apart by name ("Task Dashboard", "Task Dashboard 2",
with the app's icon) in the dock, the app area's title and their groups, the second
keeps its number when the first closes, and the app scope shows only in tooltips."""

from __future__ import annotations

from playwright.async_api import Locator, Page, expect

from lineup.miniapps import install_bundled
from tests.browser.conftest import Screenshot
from tests.support.browser import PageWatch
from tests.support.browser_interactions import chat_id, log_in
from tests.support.webhost import Client

NOTES, PLANNER = "notes", "planner"
DASHBOARD = "task-dashboard"
ICON_LOADED = "img => img.complete && img.naturalWidth > 0"


async def open_started(client: Client, app_scope: str) -> str:
    """The Runtime opens an instance in the chat, and the app reports it started."""
    conversation = await chat_id(client)
    record = await client.runtime.apps.open_instance(app_scope, conversation_id=conversation)
    assert (await client.runtime.apps.started(record.instance_id)).accepted
    return record.instance_id


async def expect_focus(page: Page, app_scope: str | None, names: list[str]) -> None:
    """The dock lists ``names`` in order, ``app_scope``'s entry holds focus and the app
    area shows it (or, with no focus, is hidden)."""
    items = page.locator(".dock-item")
    await expect(items.locator(".dock-name")).to_have_text(names)
    if app_scope is None:
        await expect(page.locator(".dock-item.focused")).to_have_count(0)
        await expect(page.locator("#app-area")).to_be_hidden()
        return
    focused = page.locator(".dock-item.focused")
    await expect(focused.locator(".dock-name")).to_have_text(app_scope)
    await expect(focused.locator(".dock-state")).to_have_text("In front")
    await expect(focused.locator(".dock-front")).to_have_attribute("aria-current", "true")
    await expect(page.locator("#app-area")).to_be_visible()
    await expect(page.locator("#app-area-title")).to_have_text(app_scope)
    # These test instances belong to no installed app: there is no surface to mount
    # (tests/browser/test_app_surfaces.py mounts a real one).
    await expect(page.locator(".app-area-placeholder")).to_have_text(
        "This app has nothing to show."
    )


async def test_dock_follows_the_runtime_in_every_tab(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    other = await page.context.new_page()
    other_watch = PageWatch()
    other_watch.attach(other)
    await other.goto(client.url + "/")
    await expect(other.locator("#connection")).to_have_attribute("data-state", "connected")
    await expect(page.locator("#dock")).to_be_hidden()

    notes = await open_started(client, NOTES)
    planner = await open_started(client, PLANNER)
    for tab in (page, other):
        await expect_focus(tab, PLANNER, [NOTES, PLANNER])
    await expect(page.get_by_role("button", name="Bring to front: notes")).to_be_visible()
    await expect(page.locator(f'.dock-item[data-instance-id="{notes}"] .dock-state')).to_have_text(
        "In background"
    )
    await screenshot("two-instances")

    # Bring notes to the front in one tab: the Runtime decides, both tabs follow.
    await page.get_by_role("button", name="Bring to front: notes").click()
    for tab in (page, other):
        await expect_focus(tab, NOTES, [NOTES, PLANNER])
    assert client.runtime.apps.instances().focus == notes

    # The IM stays usable while an app is in front.
    await page.fill("#input", "hello beside the app")
    await page.keyboard.press("Enter")
    await expect(page.locator(".item.from-user").last).to_have_attribute("data-state", "sent")
    await screenshot("notes-in-front")

    # Close the focused instance in the other tab: focus returns to planner everywhere.
    await other.get_by_role("button", name="Close notes").click()
    for tab in (page, other):
        await expect_focus(tab, PLANNER, [PLANNER])
    record = client.runtime.apps.record(notes)
    assert record is not None and record.state == "stopped"
    assert client.runtime.apps.instances().focus == planner

    # Back to chat: the app goes to the background; nothing else is there to take focus.
    await page.get_by_role("button", name="Back to chat (send planner to background)").click()
    for tab in (page, other):
        await expect_focus(tab, None, [PLANNER])
        await expect(tab.locator(".dock-item .dock-state")).to_have_text("In background")
    assert client.runtime.apps.instances().focus is None
    await screenshot("back-to-chat")
    page_watch.assert_clean()
    other_watch.assert_clean()


async def test_dock_works_from_the_keyboard(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    await log_in(page, client)
    notes = await open_started(client, NOTES)
    await open_started(client, PLANNER)
    await expect_focus(page, PLANNER, [NOTES, PLANNER])

    front = page.get_by_role("button", name="Bring to front: notes")
    await front.focus()
    await page.keyboard.press("Enter")
    await expect_focus(page, NOTES, [NOTES, PLANNER])
    await expect(front).to_be_focused()  # the redraw keeps keyboard focus in place

    # Tab moves to "send to background", then to "close"; Enter closes notes.
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Send to background: notes")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(page.get_by_role("button", name="Close notes")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect_focus(page, PLANNER, [PLANNER])
    # Its entry is gone: keyboard focus lands on the entry now in front.
    await expect(page.get_by_role("button", name="Bring to front: planner")).to_be_focused()
    assert client.runtime.apps.record(notes) is not None
    page_watch.assert_clean()


async def test_dock_and_app_area_fit_a_375px_screen(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.set_viewport_size({"width": 375, "height": 667})
    await log_in(page, client)
    for scope in ("notes", "planner", "travel.booking", "expenses"):
        await open_started(client, scope)
    await expect_focus(page, "expenses", ["notes", "planner", "travel.booking", "expenses"])
    await client.pair.agent.send_text(await chat_id(client), "Your apps are open.")
    await expect(page.locator(".item.from-agent")).to_have_count(1)

    # Nothing overflows sideways; the dock scrolls within itself.
    assert await page.evaluate("document.documentElement.scrollWidth") <= 375
    for selector in (
        "#dock",
        "#app-area",
        "#timeline",
        "#composer",
        "#app-area-back",
        ".dock-item.focused",  # the dock scrolls the entry in front into view
    ):
        box = await page.locator(selector).bounding_box()
        assert box is not None, selector
        assert box["x"] >= 0 and box["x"] + box["width"] <= 375, selector
    composer = await page.locator("#composer").bounding_box()
    assert composer is not None and composer["y"] + composer["height"] <= 667
    timeline = await page.locator("#timeline").bounding_box()
    assert timeline is not None and timeline["height"] >= 120  # the IM is still there
    await screenshot("375px-app-in-front")
    page_watch.assert_clean()


async def visible_text_lacks(page: Page, text: str) -> None:
    """``text`` is nowhere in what the shell page shows (tooltips aside)."""
    shown = await page.evaluate("document.body.innerText")
    assert text not in shown, shown


async def icon_shows(icon: Locator) -> None:
    await expect(icon).to_have_attribute("src", f"/app-icons/{DASHBOARD}")
    assert await icon.evaluate(ICON_LOADED)


async def test_two_instances_of_one_app_are_told_apart_by_name(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await install_bundled(client.runtime)
    await log_in(page, client)
    conversation = await chat_id(client)
    first = await client.runtime.apps.open_instance(DASHBOARD, conversation_id=conversation)
    second = await client.runtime.apps.open_instance(DASHBOARD, conversation_id=conversation)

    # The dock and the app area call them by the app's name; the second has its number.
    await expect(page.locator(".dock-item .dock-name")).to_have_text(
        ["Task Dashboard", "Task Dashboard 2"]
    )
    title = page.locator("#app-area-title")
    await expect(title).to_have_text("Task Dashboard 2")
    await expect(
        page.get_by_role("button", name="Bring to front: Task Dashboard 2")
    ).to_have_attribute("aria-current", "true")
    # The scope is in the tooltips only.
    entry = page.locator(f'.dock-item[data-instance-id="{second.instance_id}"] .dock-front')
    await expect(entry).to_have_attribute("title", "Task Dashboard 2 (task-dashboard)")
    await expect(title).to_have_attribute("title", "Task Dashboard 2 (task-dashboard)")
    await icon_shows(page.locator("#app-area-icon"))
    for icon in await page.locator(".dock-item .dock-icon").all():
        await icon_shows(icon)
    shown = page.locator(".app-area-frame iframe.app-frame:not([hidden])")
    await expect(shown).to_have_attribute("title", "App: Task Dashboard 2")  # read aloud
    await screenshot("two-dashboards")

    # Their groups in the IM, by the same names.
    await page.get_by_role(
        "button", name="Back to chat (send Task Dashboard 2 to background)"
    ).click()
    groups = page.locator(".items > .item.app-session")
    await expect(groups.locator(".group-name")).to_have_text(["Task Dashboard", "Task Dashboard 2"])
    await expect(groups.locator(".group-name").first).to_have_attribute("title", DASHBOARD)
    for icon in await groups.locator(".group-icon").all():
        await icon_shows(icon)
    await visible_text_lacks(page, DASHBOARD)
    await screenshot("two-dashboard-groups")

    # The first closes: the second is still "Task Dashboard 2" everywhere.
    await page.get_by_role("button", name="Close Task Dashboard", exact=True).click()
    await expect(page.locator(".dock-item .dock-name")).to_have_text(["Task Dashboard 2"])
    await expect(groups.locator(".group-name")).to_have_text(["Task Dashboard", "Task Dashboard 2"])
    closed = page.locator(
        f'.item.app-session[data-app-session-id="{await session_of(client, first.instance_id)}"]'
    )
    await expect(closed).to_have_attribute("data-session-state", "closed")
    await page.get_by_role("button", name="Bring to front: Task Dashboard 2").click()
    await expect(title).to_have_text("Task Dashboard 2")
    await visible_text_lacks(page, DASHBOARD)
    await screenshot("second-keeps-its-number")
    page_watch.assert_clean()


async def session_of(client: Client, instance_id: str) -> str:
    found = await client.runtime.apps.app_session_id(instance_id)
    assert found is not None
    return found
