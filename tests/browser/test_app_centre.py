"""The App centre in a real Chromium, on a full stack (AppServer with its catalog,
Runtime, Web Host): a publisher's signed releases reach the person, who installs,
updates, turns off and on, and removes an app; a revocation in the catalog rolls the
app back to the version before, and with no verified version left the row says why the
app cannot run; a refusal shows as a toast in words. Turning off an app whose
instances run asks first, saying how many will close; Cancel keeps them running.

"Install" installs the version the catalog row offers: the newest installable one.
So the test publishes 1.0.0 alone first, installs it, then publishes 1.1.0 and checks
the catalog again to be offered "Update to 1.1.0" (nothing moves forward by itself)."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Locator, Page, expect

from lineup.miniapps import install_bundled
from lineup.server.catalog import catalog_for
from tests.browser.conftest import Screenshot
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch
from tests.support.browser_interactions import log_in
from tests.support.releases import APP_ID, Publisher, release
from tests.support.webhost import Client


def installed_row(dialog: Locator, app_id: str) -> Locator:
    return dialog.locator(f".apps-installed .apps-row[data-app-id='{app_id}']")


def offered_row(dialog: Locator, app_id: str) -> Locator:
    return dialog.locator(f".apps-offered .apps-row[data-app-id='{app_id}']")


async def fits(page: Page, locator: Locator, width: int) -> None:
    box = await locator.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= width
    overflow = await page.evaluate("document.documentElement.scrollWidth")
    assert overflow <= width


async def test_install_update_toggle_roll_back_and_remove(
    page: Page,
    page_watch: PageWatch,
    own_appserver: AppServerProcess,
    client_own_server: Client,
    screenshot: Screenshot,
    tmp_path: Path,
) -> None:
    client = client_own_server
    runtime = client.runtime
    await install_bundled(runtime)
    publisher = Publisher.new("Acme Apps")
    await runtime.delivery.trust_key(publisher.public)
    catalog = catalog_for(own_appserver.data_dir)
    first = release(publisher, tmp_path, "1.0.0")
    catalog.publish(first.body, first.artifact)

    await log_in(page, client)
    opener = page.get_by_role("button", name="Apps", exact=True)
    await page.set_viewport_size({"width": 375, "height": 740})
    await expect(opener).to_be_visible()
    await fits(page, page.locator(".topbar"), 375)
    await screenshot("topbar-375")
    await page.set_viewport_size({"width": 1280, "height": 800})
    await opener.click()
    dialog = page.get_by_role("dialog", name="Apps")
    await expect(dialog).to_be_visible()
    await expect(dialog.get_by_role("button", name="Close")).to_be_focused()
    await expect(installed_row(dialog, "dev.lineup.whiteboard")).to_contain_text("Built-in")
    await expect(installed_row(dialog, "dev.lineup.whiteboard").locator(".apps-chip")).to_have_text(
        ["Save files"]
    )

    # The catalog as fetched now: a development one, offering 1.0.0.
    await dialog.get_by_role("button", name="Check for updates").click()
    offer = offered_row(dialog, APP_ID)
    await expect(offer).to_contain_text("1.0.0")
    # Called by the name its publisher signed in the release; the id is a detail.
    await expect(offer.locator(".apps-name")).to_have_text("Test App")
    await expect(offer.locator(".apps-meta")).to_contain_text(APP_ID)
    await expect(offer.locator(".apps-badge")).to_have_text("Acme Apps")
    await expect(offer.locator(".apps-chip")).to_have_text(["Copy to clipboard"])
    await expect(dialog.locator(".apps-dev")).to_have_text(
        "Development catalog (plain HTTP on this machine)"
    )
    await expect(dialog.locator(".apps-catalog-state")).to_contain_text("Catalog checked")
    await screenshot("offered")

    await offer.get_by_role("button", name="Install Test App 1.0.0").click()
    row = installed_row(dialog, APP_ID)
    await expect(row.locator(".apps-version")).to_have_text("1.0.0")
    await expect(row.locator(".apps-name")).to_have_text("Test App")
    await expect(row.get_by_role("switch")).to_be_checked()
    await expect(offer).to_have_count(0)
    await expect(dialog.locator(".apps-offered-empty")).to_be_visible()
    # Focus followed the app from its offer to its row.
    await expect(row.get_by_role("switch")).to_be_focused()
    entry = next(a for a in await runtime.registry.apps() if a.app_id == APP_ID)
    assert (entry.version, entry.enabled) == ("1.0.0", True)

    # 1.1.0 is published: offered as an update once the catalog is checked, not installed.
    second = release(publisher, tmp_path, "1.1.0")
    catalog.publish(second.body, second.artifact)
    await dialog.get_by_role("button", name="Check for updates").click()
    update = row.get_by_role("button", name="Update Test App to 1.1.0")
    await expect(update).to_have_text("Update to 1.1.0")
    await expect(row.locator(".apps-version")).to_have_text("1.0.0")
    await screenshot("update-offered")
    await page.set_viewport_size({"width": 375, "height": 740})
    await expect(update).to_be_visible()
    await fits(page, dialog, 375)
    await fits(page, page.locator(".topbar"), 375)
    await screenshot("update-offered-375")
    await page.set_viewport_size({"width": 1280, "height": 800})

    await update.click()
    await expect(row.locator(".apps-version")).to_have_text("1.1.0")
    await expect(row.locator(".apps-update")).to_have_count(0)
    await expect(row.locator(".apps-meta")).to_contain_text("stored: 1.0.0, 1.1.0")

    # Off and on again: the Runtime stops advertising it while off.
    switch = row.get_by_role("switch")
    await switch.click()
    await expect(switch).not_to_be_checked()
    await expect(row.locator(".apps-switch-text")).to_have_text("Off")
    # Shown at once; the Runtime's answer (the fresh frame) ends the wait.
    await expect(switch).not_to_have_attribute("aria-disabled", "true")
    assert not any(a.id == APP_ID for a in runtime.inventory.applications)
    await switch.click()
    await expect(switch).to_be_checked()
    await expect(row.locator(".apps-switch-text")).to_have_text("On")
    await expect(switch).not_to_have_attribute("aria-disabled", "true")
    assert any(a.id == APP_ID for a in runtime.inventory.applications)

    # The publisher revokes 1.1.0: the app rolls back to 1.0.0, still on.
    catalog.revoke_version(APP_ID, "1.1.0")
    refresh = await runtime.delivery.refresh_catalog()
    assert [(f.outcome, f.to_version) for f in refresh.fallbacks] == [("rolled_back", "1.0.0")]
    await expect(row.locator(".apps-version")).to_have_text("1.0.0")
    await expect(row.get_by_role("switch")).to_be_checked()
    await expect(row.locator(".apps-update")).to_have_count(0)
    await screenshot("rolled-back")

    # 1.0.0 revoked too (here, by the person's Runtime): nothing verified is left to run.
    await runtime.delivery.revoke_version(APP_ID, "1.0.0")
    await expect(row.locator(".apps-unavailable")).to_have_text(
        "Revoked by the publisher \u2014 no earlier verified version"
    )
    await expect(row.get_by_role("switch")).not_to_be_checked()
    await expect(row.get_by_role("switch")).to_be_disabled()
    await screenshot("unavailable")

    # Remove, with a confirm step; "Keep" leaves it.
    await row.get_by_role("button", name="Remove Test App").click()
    await expect(row.get_by_role("button", name="Keep")).to_be_focused()
    await row.get_by_role("button", name="Keep").click()
    await expect(row.get_by_role("button", name="Remove Test App")).to_be_focused()
    await row.get_by_role("button", name="Remove Test App").click()
    await screenshot("remove-confirm")
    await row.get_by_role("button", name="Yes, remove Test App").click()
    await expect(row).to_have_count(0)
    await expect(offered_row(dialog, APP_ID)).to_have_count(0)  # every version revoked
    assert APP_ID not in [a.app_id for a in await runtime.registry.apps()]
    # Built-in apps have no "Remove".
    await expect(
        installed_row(dialog, "dev.lineup.whiteboard").locator(".apps-remove")
    ).to_have_count(0)

    # Escape closes and gives focus back to the top bar.
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    await expect(opener).to_be_focused()

    # The catalog cannot be reached: the refusal shows in words, over the dialog.
    own_appserver.stop()
    await opener.click()
    await expect(dialog).to_be_visible()
    await dialog.get_by_role("button", name="Check for updates").click()
    toast = page.locator(".toast.apps-toast")
    await expect(toast).to_contain_text("The catalog cannot be reached. Try again in a moment.")
    await expect(toast).to_contain_text("Catalog not checked")
    await toast.evaluate("t => Promise.all(t.getAnimations().map((a) => a.finished))")
    # Inside the modal dialog (the top layer), not dimmed behind it.
    assert await toast.evaluate("t => !!t.closest('dialog#apps')")
    await expect(dialog.get_by_role("button", name="Check for updates")).not_to_have_attribute(
        "aria-disabled", "true"
    )
    await screenshot("catalog-unreachable")
    await toast.get_by_role("button", name="Dismiss notification").click()
    await expect(toast).to_have_count(0)
    page_watch.assert_clean()


async def test_turning_off_an_app_that_runs_asks_first(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    runtime = client.runtime
    await install_bundled(runtime)
    await log_in(page, client)
    conversation = (await runtime.store.conversations())[0].id
    for _ in range(2):
        await runtime.apps.open_instance("task-dashboard", conversation_id=conversation)
    await expect(page.locator(".dock-item")).to_have_count(2)
    await page.get_by_role("button", name="Apps", exact=True).click()
    dialog = page.get_by_role("dialog", name="Apps")
    row = installed_row(dialog, "dev.lineup.task-dashboard")
    switch = row.get_by_role("switch")

    # Off would close both: the centre asks, saying how many; Cancel keeps them.
    await switch.click()
    question = row.get_by_role("group", name="Turn off Task Dashboard?")
    await expect(question).to_have_text(
        "Turn off Task Dashboard? 2 running instances will close.CancelTurn off"
    )
    await expect(switch).to_be_checked()
    cancel = row.get_by_role("button", name="Cancel: keep Task Dashboard on")
    await expect(cancel).to_be_focused()
    await screenshot("turn-off-asks")
    await cancel.click()
    await expect(question).to_have_count(0)
    await expect(switch).to_be_checked()
    await expect(switch).to_be_focused()
    assert len([r for r in runtime.apps.instances().live() if r.app_scope == "task-dashboard"]) == 2
    assert next(a for a in await runtime.registry.apps() if a.app_scope == "task-dashboard").enabled

    # Asked again and confirmed: off, and both instances close.
    await switch.click()
    await row.get_by_role("button", name="Yes, turn off Task Dashboard").click()
    await expect(switch).not_to_be_checked()
    await expect(row.locator(".apps-switch-text")).to_have_text("Off")
    await page.keyboard.press("Escape")
    await expect(page.locator("#dock")).to_be_hidden()
    assert not [r for r in runtime.apps.instances().live() if r.app_scope == "task-dashboard"]
    assert not next(
        a for a in await runtime.registry.apps() if a.app_scope == "task-dashboard"
    ).enabled

    # Nothing runs now: turning it on and off again asks nothing.
    await page.get_by_role("button", name="Apps", exact=True).click()
    await switch.click()
    await expect(switch).to_be_checked()
    await switch.click()
    await expect(switch).not_to_be_checked()
    await expect(row.locator(".apps-confirm")).to_have_count(0)
    await screenshot("turned-off")
    page_watch.assert_clean()
