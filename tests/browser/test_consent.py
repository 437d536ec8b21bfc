"""Host capabilities in a real Chromium: an agent posts raw ``lineup.v1.app.call``
envelopes through the real AppServer, the person decides in the shell's consent dialog,
the shell's providers run (a window, the clipboard, the file chooser, a toast), and the
agent reads exactly one ``lineup.v1.app.result`` per call."""

from __future__ import annotations

import asyncio
import re
from datetime import timedelta
from pathlib import Path
from typing import Any

from playwright.async_api import Locator, Page, expect

from tests.browser.conftest import Screenshot
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch
from tests.support.browser_interactions import log_in
from tests.support.capability_calls import app_call, app_result, chat_id
from tests.support.webhost import Client, serving

APP_BUNDLE = Path(__file__).parents[1] / "support" / "apps" / "test-app"


def consent_dialog(page: Page) -> Locator:
    return page.locator("dialog#consent")


async def allow(dialog: Locator) -> None:
    await dialog.get_by_role("button", name="Allow").click()


async def deny(dialog: Locator) -> None:
    await dialog.get_by_role("button", name="Deny").click()


async def test_open_url_opens_the_whole_link_only_when_allowed(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    opened: list[Page] = []
    page.context.on("page", lambda new: opened.append(new))
    # A loopback link: the browser tests never reach the network.
    url = f"{client.url}/static/style.css?from=agent&long={'x' * 120}#part"
    reason = "<b>Not bold</b>: I found the stylesheet you asked about."
    await app_call(client, "app.open_url", {"url": url}, "open-1", reason=reason)
    dialog = consent_dialog(page)
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".consent-title")).to_have_text("Open a link")
    await expect(dialog.locator(".consent-who")).to_have_text(
        f"Asked by the agent {client.pair.agent.id}"
    )
    await expect(dialog.locator(".consent-reason-text")).to_have_text(reason)  # text, not HTML
    assert await dialog.locator(".consent-reason-text b").count() == 0
    await expect(dialog.locator(".consent-url")).to_have_text(url)
    await expect(dialog.locator(".consent-site")).to_have_text(client.url.split("//")[1])
    await expect(dialog.locator(".consent-countdown")).to_have_text(
        re.compile(r"Expires in 4:\d\d")
    )
    await expect(dialog.get_by_label("Remember for this session")).not_to_be_checked()
    await screenshot("open-url-dialog")
    await page.set_viewport_size({"width": 375, "height": 740})
    await screenshot("open-url-dialog-375")
    box = await dialog.bounding_box()
    assert box is not None and box["x"] >= 0 and box["x"] + box["width"] <= 375
    await page.set_viewport_size({"width": 1280, "height": 800})

    async with page.context.expect_page() as popup_info:
        await allow(dialog)
    popup = await popup_info.value
    await popup.wait_for_load_state()
    assert popup.url == url
    assert await popup.evaluate("window.opener") is None  # noopener
    await expect(dialog).to_be_hidden()
    assert await app_result(client, "open-1") == {
        "call_id": "open-1",
        "status": "completed",
        "result": {"opened": True},
    }

    await app_call(client, "app.open_url", {"url": url + "2"}, "open-2")
    await expect(dialog).to_be_visible()
    await deny(dialog)
    await expect(dialog).to_be_hidden()
    result = await app_result(client, "open-2")
    assert (result["status"], result["error"]["code"]) == ("rejected", "capability_denied")
    assert len(opened) == 1
    # The agent's requests and plain results are not timeline rows.
    await expect(page.locator(".item.unsupported")).to_have_count(0)
    page_watch.assert_clean()


async def test_clipboard_write_with_the_keyboard_only(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=client.url)
    await log_in(page, client)
    await page.locator("#input").focus()
    text = "line one\nline two: <script>no</script>"
    await app_call(client, "clipboard.write", {"text": text}, "clip-1")
    dialog = consent_dialog(page)
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".consent-title")).to_have_text("Copy text to your clipboard")
    await expect(dialog.locator(".consent-preview")).to_have_text(text)
    # Focus moved into the dialog (Deny first) and stays there.
    await expect(dialog.get_by_role("button", name="Deny")).to_be_focused()
    for _ in range(6):
        await page.keyboard.press("Tab")
        assert await page.evaluate("!!document.activeElement.closest('dialog#consent')")
    await screenshot("clipboard-dialog")
    await dialog.get_by_label("Remember for this session").focus()
    await page.keyboard.press("Tab")
    await expect(dialog.get_by_role("button", name="Deny")).to_be_focused()
    await page.keyboard.press("Tab")
    await expect(dialog.get_by_role("button", name="Allow")).to_be_focused()
    await page.keyboard.press("Enter")
    await expect(dialog).to_be_hidden()
    await expect(page.locator("#input")).to_be_focused()  # focus restored
    assert (await app_result(client, "clip-1"))["result"] == {"written": True}
    assert await page.evaluate("navigator.clipboard.readText()") == text

    # Escape refuses.
    await app_call(client, "clipboard.write", {"text": "not this"}, "clip-2")
    await expect(dialog).to_be_visible()
    await page.keyboard.press("Escape")
    await expect(dialog).to_be_hidden()
    assert (await app_result(client, "clip-2"))["status"] == "rejected"
    assert await page.evaluate("navigator.clipboard.readText()") == text
    page_watch.assert_clean()


async def test_remembered_consent_skips_the_dialog_until_the_runtime_restarts(
    page: Page, appserver: AppServerProcess, pair: Pair, tmp_path: Path
) -> None:
    data_dir = tmp_path / "runtime"
    dialog = consent_dialog(page)
    async with serving(appserver, pair, data_dir) as client:
        await page.context.grant_permissions(
            ["clipboard-read", "clipboard-write"], origin=client.url
        )
        await log_in(page, client)
        await app_call(client, "clipboard.write", {"text": "first"}, "mem-1")
        await expect(dialog).to_be_visible()
        await dialog.get_by_label("Remember for this session").check()
        await allow(dialog)
        assert (await app_result(client, "mem-1"))["status"] == "completed"

        opened: list[bool] = []
        await page.expose_function("dialogOpened", lambda: opened.append(True))
        await page.evaluate(
            """() => new MutationObserver(() => {
                 if (document.querySelector('dialog#consent[open]')) window.dialogOpened();
               }).observe(document.body, {subtree: true, attributes: true,
                                           attributeFilter: ['open']})"""
        )
        await app_call(client, "clipboard.write", {"text": "second"}, "mem-2")
        assert (await app_result(client, "mem-2"))["status"] == "completed"
        assert await page.evaluate("navigator.clipboard.readText()") == "second"
        assert opened == []

        # The settings panel lists the grant; a call left waiting survives a restart.
        await page.get_by_role("button", name="Settings").click()
        panel = page.locator("dialog#settings")
        await expect(panel.locator(".settings-grants li")).to_have_count(1)
        await expect(panel.locator(".settings-grants")).to_contain_text(
            f"Agent {client.pair.agent.id}"
        )
        await panel.get_by_role("button", name="Close").click()
        await app_call(client, "artifact.save", {"name": "a.txt", "media_type": "text/plain",
                                                 "text": "kept"}, "mem-3")  # fmt: skip
        await expect(dialog).to_be_visible()
        assert opened  # the MutationObserver hears dialogs

    async with serving(appserver, pair, data_dir) as restarted:
        await page.goto(restarted.url + "/")
        await expect(dialog).to_be_visible()  # the pending call, from the snapshot
        await expect(dialog.locator(".consent-title")).to_have_text("Save a file")
        await allow(dialog)
        assert (await app_result(restarted, "mem-3"))["status"] == "completed"
        await app_call(restarted, "clipboard.write", {"text": "third"}, "mem-4")
        await expect(dialog).to_be_visible()  # remembered consent ended with the Runtime
        await deny(dialog)
        assert (await app_result(restarted, "mem-4"))["status"] == "rejected"
        await page.get_by_role("button", name="Settings").click()
        panel = page.locator("dialog#settings")
        await expect(panel.locator(".settings-empty")).to_be_visible()
        await expect(panel.get_by_role("switch")).to_have_count(5)


async def test_pick_file_needs_the_second_step_and_shares_only_the_chosen_file(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    await app_call(client, "device.pick_file", {"accept": [".txt", "text/plain"]}, "pick-1")
    dialog = consent_dialog(page)
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".consent-title")).to_have_text("Choose a file to share")
    await expect(dialog.locator(".consent-details")).to_contain_text(".txt, text/plain")
    assert await dialog.get_by_label("Remember for this session").count() == 0
    allow_button = dialog.get_by_role("button", name="Allow")
    await expect(allow_button).to_be_disabled()
    await dialog.get_by_label("I will choose a file in the next window").check()
    await expect(allow_button).to_be_enabled()
    await screenshot("pick-file-dialog")
    body = "été, a picked file\n".encode()
    async with page.expect_file_chooser() as chooser_info:
        await allow_button.click()
    chooser = await chooser_info.value
    await chooser.set_files({"name": "notes été.txt", "mimeType": "text/plain", "buffer": body})
    result = await app_result(client, "pick-1")
    assert result["status"] == "completed"
    artifact = result["result"]
    assert (artifact["name"], artifact["media_type"], artifact["size"]) == (
        "notes été.txt",
        "text/plain",
        len(body),
    )
    row = page.locator(".item.artifact")
    await expect(row).to_have_count(1)
    await expect(row.locator(".artifact-name")).to_have_text("notes été.txt")
    async with page.expect_download() as download_info:
        await row.get_by_role("link", name="Download notes été.txt").click()
    download = await download_info.value
    assert await asyncio.to_thread(Path(await download.path()).read_bytes) == body

    await app_call(client, "device.pick_file", {}, "pick-2")
    await expect(dialog).to_be_visible()
    await deny(dialog)
    assert (await app_result(client, "pick-2"))["status"] == "rejected"
    assert page_watch.console_errors == [] and page_watch.page_errors == []


async def test_artifact_save_runs_in_the_runtime_and_downloads_the_same_bytes(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    text = "name,score\nada,3\n"
    arguments = {"name": "scores.csv", "media_type": "text/csv", "text": text}
    await app_call(client, "artifact.save", arguments, "save-1")
    await app_call(client, "artifact.save", {**arguments, "name": "other.csv"}, "save-2")
    dialog = consent_dialog(page)
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".consent-queue")).to_have_text("Request 1 of 2")
    await expect(dialog.locator(".consent-file-name")).to_have_text("scores.csv")
    await expect(dialog.locator(".consent-details")).to_contain_text(f"{len(text)} bytes")
    await screenshot("save-dialog")
    await allow(dialog)
    await expect(dialog.locator(".consent-file-name")).to_have_text("other.csv")  # next in line
    await expect(dialog.locator(".consent-queue")).to_be_hidden()
    await deny(dialog)
    await expect(dialog).to_be_hidden()
    saved = await app_result(client, "save-1")
    assert saved["result"]["size"] == len(text)
    assert (await app_result(client, "save-2"))["status"] == "rejected"
    row = page.locator(".item.artifact")
    await expect(row).to_have_count(1)
    await expect(row.locator(".artifact-meta")).to_have_text(f"text/csv · {len(text)} bytes")
    async with page.expect_download() as download_info:
        await row.get_by_role("link", name="Download scores.csv").click()
    download = await download_info.value
    assert download.suggested_filename == "scores.csv"
    assert await asyncio.to_thread(Path(await download.path()).read_bytes) == text.encode()
    await screenshot("saved-file-row")
    # A reload lists it again (from the snapshot).
    await page.reload()
    await expect(page.locator(".item.artifact .artifact-name")).to_have_text("scores.csv")
    assert page_watch.console_errors == [] and page_watch.page_errors == []


async def test_a_notification_shows_a_toast_without_a_dialog(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await log_in(page, client)
    await app_call(
        client, "notification.show", {"title": "Build done", "body": "<i>3</i> ok"}, "n-1"
    )
    toast = page.locator("#toasts .capability-toast")
    await expect(toast).to_have_count(1)
    await expect(toast.locator(".toast-title")).to_have_text("Build done")
    await expect(toast.locator(".toast-text")).to_have_text("<i>3</i> ok")
    await expect(consent_dialog(page)).to_have_count(0)  # never built: no dialog
    assert await app_result(client, "n-1") == {
        "call_id": "n-1",
        "status": "completed",
        "result": {"shown": True},
    }
    await screenshot("notification-toast")
    page_watch.assert_clean()


async def test_an_expiring_call_closes_its_dialog(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    await log_in(page, client)
    await app_call(
        client, "clipboard.write", {"text": "late"}, "late-1", expires_in=timedelta(seconds=4)
    )
    dialog = consent_dialog(page)
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".consent-countdown")).to_have_text(
        re.compile(r"Expires in 0:0[1-4]")
    )
    await expect(dialog).to_be_hidden(timeout=10_000)
    result = await app_result(client, "late-1")
    assert (result["status"], result["error"]["code"]) == ("expired", "expired")
    page_watch.assert_clean()


async def test_an_app_asks_through_the_sdk_and_gets_its_result(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=client.url)
    await client.runtime.registry.install_bundle(APP_BUNDLE, enable=True)
    await log_in(page, client)
    conversation = await chat_id(client)
    record = await client.runtime.apps.open_instance("test-app", conversation_id=conversation)
    frame = page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")
    await expect(frame.locator("body")).to_have_attribute("data-ready", "true")

    await frame.get_by_role("button", name="Copy a greeting").click()
    dialog = consent_dialog(page)
    await expect(dialog).to_be_visible()
    await expect(dialog.locator(".consent-who")).to_have_text("Asked by the app Test App")
    await expect(dialog.locator(".consent-preview")).to_have_text("Hello from the test app")
    await screenshot("app-asks-for-the-clipboard")
    await allow(dialog)
    await expect(frame.locator("#copied")).to_have_text("copied")
    assert await page.evaluate("navigator.clipboard.readText()") == "Hello from the test app"

    await frame.get_by_role("button", name="Copy a greeting").click()
    await expect(dialog).to_be_visible()
    await deny(dialog)
    await expect(frame.locator("#copied")).to_have_text("refused: capability_denied")
    # The app's calls are the app's: the agent gets no app.result for them.
    stored = await client.pair.agent.read_all(conversation)
    assert not [s for s in stored if s["envelope"]["type"] == "lineup.v1.app.result"]
    assert set(await app_calls_of(client)) == {record.instance_id}
    page_watch.assert_clean()


async def app_calls_of(client: Client) -> list[str]:
    """The instances that made capability calls (read straight from the store)."""

    def read(conn: Any) -> list[str]:
        rows = conn.execute(
            "SELECT requester_id FROM capability_calls WHERE requester_kind = 'app'"
        ).fetchall()
        return [str(r[0]) for r in rows]

    return list(await client.runtime.store.db.read(read))


async def test_the_dialog_names_the_app_instance_that_asks(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    """Two instances of one app: the dialog says which one asks, by the name the dock
    shows ("Test App 2"); the app's scope is only its tooltip."""
    await client.runtime.registry.install_bundle(APP_BUNDLE, enable=True)
    await log_in(page, client)
    conversation = await chat_id(client)
    await client.runtime.apps.open_instance("test-app", conversation_id=conversation)
    second = await client.runtime.apps.open_instance("test-app", conversation_id=conversation)
    await expect(page.locator("#app-area-title")).to_have_text("Test App 2")
    frame = page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")
    await expect(frame.locator("body")).to_have_attribute("data-ready", "true")

    await frame.get_by_role("button", name="Copy a greeting").click()
    dialog = consent_dialog(page)
    await expect(dialog).to_be_visible()
    who = dialog.locator(".consent-who")
    await expect(who).to_have_text("Asked by the app Test App 2")
    await expect(who.locator("strong")).to_have_attribute("title", "test-app")
    await screenshot("asked-by-test-app-2")
    await deny(dialog)
    await expect(frame.locator("#copied")).to_have_text("refused: capability_denied")
    assert set(await app_calls_of(client)) == {second.instance_id}
    page_watch.assert_clean()
