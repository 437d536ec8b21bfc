"""A signed MiniApp end to end (spec 002 §11 item 10), in the real shell, in Chromium:
a publisher signs two versions and publishes them to the AppServer's catalog; the
Runtime trusts the publisher, installs 1.0.0 from the catalog and updates to 1.1.0
(downloaded, verified, cached); the agent opens the app's surface, patches it and
closes it; the catalog revokes 1.1.0 and the Runtime rolls back to 1.0.0: the open
surface ends, the revoked version cannot be opened again, 1.0.0 can.

Also the compatibility matrix's bridge row (spec 002 §9.1): a message that claims to
be the surface's but comes from another frame, or from the shell itself, is dropped.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from playwright.async_api import Locator, Page, expect

from lineup.server.catalog import Catalog
from tests.browser.conftest import Screenshot
from tests.browser.test_ui_surfaces import agent_got, agent_sends
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch
from tests.support.browser_interactions import log_in
from tests.support.releases import APP_ID, Publisher, release
from tests.support.webhost import Client


def open_payload(instance_id: str, version: str, text: str) -> dict[str, object]:
    app = {"id": APP_ID, "version": version, "surface": "card", "name": "Signed card"}
    return {"instance_id": instance_id, "app": app, "state": {"text": text}}


@pytest.mark.headed_path
async def test_sign_publish_install_open_patch_close_revoke_rollback(
    page: Page,
    page_watch: PageWatch,
    client_own_server: Client,
    own_appserver: AppServerProcess,
    tmp_path: Path,
    screenshot: Screenshot,
) -> None:
    client = client_own_server
    runtime = client.runtime
    publisher = Publisher.new("Example Publisher")
    catalog = Catalog(own_appserver.data_dir / "catalog")
    for version in ("1.0.0", "1.1.0"):
        signed = release(publisher, tmp_path / "build", version)
        catalog.publish(signed.body, signed.artifact)

    await runtime.delivery.trust_key(publisher.public)
    refreshed = await runtime.delivery.refresh_catalog()
    assert refreshed.production is False  # plain HTTP on loopback: development only
    await runtime.delivery.install(APP_ID, "1.0.0")
    updated = await runtime.delivery.update(APP_ID, "1.1.0")
    assert (updated.entry.version, updated.entry.versions) == ("1.1.0", ("1.0.0", "1.1.0"))

    await log_in(page, client)
    assert await agent_sends(client, "ui.open", open_payload("s1", "1.1.0", "hello")) == 201
    card = page.locator('.item.surface[data-instance-id="s1"]')
    frame = card.frame_locator("iframe")
    await expect(frame.locator("#build")).to_have_text("1.1.0")
    await expect(frame.locator("#text")).to_have_text("hello")
    assert await card.locator("iframe").get_attribute("sandbox") == "allow-scripts"
    assert (
        await agent_sends(client, "ui.patch", {"instance_id": "s1", "state": {"text": "patched"}})
        == 201
    )
    await expect(frame.locator("#text")).to_have_text("patched")
    await screenshot("signed-surface-1.1.0")
    assert await agent_sends(client, "ui.close", {"instance_id": "s1", "reason": "done"}) == 201
    await expect(card).to_have_attribute("data-surface-status", "closed")
    await expect(card.locator("iframe")).to_have_count(0)

    # Open again, then the catalog revokes 1.1.0: rollback to the verified 1.0.0.
    assert await agent_sends(client, "ui.open", open_payload("s2", "1.1.0", "again")) == 201
    second = page.locator('.item.surface[data-instance-id="s2"]')
    await expect(second.frame_locator("iframe").locator("#build")).to_have_text("1.1.0")
    catalog.revoke_version(APP_ID, "1.1.0")
    refreshed = await runtime.delivery.refresh_catalog()
    assert [(f.outcome, f.from_version, f.to_version) for f in refreshed.fallbacks] == [
        ("rolled_back", "1.1.0", "1.0.0")
    ]
    notice = page.locator(".toast.apps-fallback")
    await expect(notice).to_contain_text(
        "Test App went back to version 1.0.0: version 1.1.0 was revoked."
    )
    await expect(second).to_have_attribute("data-surface-status", "closed")
    await expect(second.locator(".surface-status")).to_have_text(
        "Closed: this app version was revoked"
    )
    await expect(second.locator("iframe")).to_have_count(0)
    closes = await agent_got(client, "ui.event", lambda found: len(found) >= 1)
    assert {"instance_id": "s2", "event": "close", "data": {"reason": "app_revoked"}} in closes
    (entry,) = [a for a in await runtime.registry.apps() if a.app_id == APP_ID]
    assert (entry.version, entry.enabled) == ("1.0.0", True)

    # The revoked version is not mounted again; the one in use is.
    assert await agent_sends(client, "ui.open", open_payload("s3", "1.1.0", "no")) == 201
    refused = page.locator('.item.surface[data-instance-id="s3"]')
    await expect(refused.locator(".surface-notice-text")).to_have_text(
        "This surface is not available here."
    )
    await expect(refused.locator("iframe")).to_have_count(0)
    errors = await agent_got(client, "error")
    assert [e["code"] for e in errors] == ["surface_unavailable"]
    assert await agent_sends(client, "ui.open", open_payload("s4", "1.0.0", "back")) == 201
    rolled = page.locator('.item.surface[data-instance-id="s4"]').frame_locator("iframe")
    await expect(rolled.locator("#build")).to_have_text("1.0.0")
    await expect(rolled.locator("#text")).to_have_text("back")
    await screenshot("signed-surface-rolled-back")
    page_watch.assert_clean()


async def test_bridge_drops_messages_from_other_frames(
    page: Page,
    page_watch: PageWatch,
    client_own_server: Client,
    own_appserver: AppServerProcess,
    tmp_path: Path,
) -> None:
    client = client_own_server
    publisher = Publisher.new()
    signed = release(publisher, tmp_path / "build", "1.0.0")
    Catalog(own_appserver.data_dir / "catalog").publish(signed.body, signed.artifact)
    await client.runtime.delivery.trust_key(publisher.public)
    await client.runtime.delivery.install(APP_ID, "1.0.0")
    await log_in(page, client)
    assert await agent_sends(client, "ui.open", open_payload("b1", "1.0.0", "hi")) == 201
    card = page.locator('.item.surface[data-instance-id="b1"]')
    frame = card.frame_locator("iframe")
    await expect(card.locator("iframe")).to_have_attribute("data-ready", "true")
    (mount,) = client.web.surfaces.mounts()
    forged = {
        "namespace": "lineup.surface.v1",
        "type": "event",
        "instance_id": "b1",
        "mount_id": mount.mount_id,  # everything right but the sender
        "event": "ping",
        "data": {"n": 99},
    }
    await page.evaluate("(message) => window.postMessage(message, '*')", forged)  # the shell
    await page.evaluate(
        """() => {
            const other = document.createElement("iframe");
            other.name = "forger";
            document.body.append(other);
        }"""
    )
    forger = page.frame(name="forger")
    assert forger is not None
    await forger.evaluate("(message) => parent.postMessage(message, '*')", forged)
    await frame.get_by_role("button", name="Ping").click()  # the real frame, once
    events = await agent_got(client, "ui.event", lambda found: len(found) >= 1)
    assert events == [{"instance_id": "b1", "event": "ping", "data": {"n": 1}}]
    page_watch.assert_clean()


async def open_focus_timer(page: Page, client: Client, appserver: AppServerProcess) -> Locator:
    """The demo's signed Focus Timer published to ``appserver``'s catalog, installed,
    the person logged in, and a 5-minute timer card opened by the agent: its row."""
    from lineup.demo import publish_sample_app

    published = publish_sample_app(appserver.data_dir)
    await client.runtime.delivery.trust_key(published.key)
    await client.runtime.delivery.install("dev.lineup.focus-timer", "1.1.0")
    await log_in(page, client)
    app = {"id": "dev.lineup.focus-timer", "version": "1.1.0", "surface": "card"}
    payload = {
        "instance_id": "t1",
        "app": {**app, "name": "Focus Timer"},
        "state": {"minutes": 5, "label": "Focus"},
    }
    assert await agent_sends(client, "ui.open", payload) == 201
    return page.locator('.item.surface[data-instance-id="t1"]')


async def test_the_demo_sample_app_runs_in_the_shell(
    page: Page,
    page_watch: PageWatch,
    client_own_server: Client,
    own_appserver: AppServerProcess,
    screenshot: Screenshot,
) -> None:
    """The demo's signed Focus Timer, installed from the catalog, in a real surface."""
    client = client_own_server
    card = await open_focus_timer(page, client, own_appserver)
    frame = card.frame_locator("iframe")
    await expect(frame.get_by_role("button", name="Start")).to_be_visible()
    await expect(frame.locator("body")).to_contain_text("5:00")
    await frame.get_by_role("button", name="Start").click()
    [started] = await agent_got(client, "ui.event")
    assert started == {"instance_id": "t1", "event": "started", "data": {"minutes": 5}}
    await expect(frame.get_by_role("button", name="Pause")).to_be_visible()
    await screenshot("focus-timer-running")
    await page.set_viewport_size({"width": 375, "height": 740})
    await screenshot("focus-timer-running-375")
    page_watch.assert_clean()
