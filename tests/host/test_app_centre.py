"""The App centre over the real host channel, with a real Runtime and AppServer: the
``app_centre`` frame lists built-in and delivered apps (display fields only), the
person's actions come back with a receipt (``ok`` or a stable code and words), every
tab that shows the centre is sent it again after a change, and malformed frames are
refused."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from websockets.asyncio.client import ClientConnection

from lineup.miniapps import install_bundled
from tests.support.host_channel import hello, next_frame, tab
from tests.support.releases import APP_ID, Publisher, Signed, release
from tests.support.webhost import Client

DASHBOARD = "dev.lineup.task-dashboard"

Centre = dict[str, Any]


def app_of(centre: Centre, app_id: str) -> dict[str, Any] | None:
    return next((a for a in centre["apps"] if a["app_id"] == app_id), None)


async def centre_where(ws: ClientConnection, check: Callable[[Centre], bool]) -> Centre:
    """The next ``app_centre`` frame for which ``check`` holds (earlier ones skipped)."""
    async with asyncio.timeout(15):
        while True:
            frame = await next_frame(ws, "app_centre")
            if check(frame):
                return frame


async def open_centre(ws: ClientConnection) -> Centre:
    await hello(ws)
    await ws.send(json.dumps({"op": "apps"}))
    return await next_frame(ws, "app_centre")


async def action(ws: ClientConnection, name: str, app_id: str | None = None, **more: Any) -> Any:
    frame: dict[str, Any] = {"op": "apps_action", "action": name, **more}
    if app_id is not None:
        frame["app_id"] = app_id
    await ws.send(json.dumps(frame))
    return await next_frame(ws, "apps_receipt", action=name, app_id=app_id)


@pytest.fixture
async def delivered(client: Client, tmp_path: Path) -> Signed:
    """The reference apps (built-in) and the test app 1.0.0, delivered and signed."""
    await install_bundled(client.runtime)
    publisher = Publisher.new("Acme Apps")
    await client.runtime.delivery.trust_key(publisher.public)
    signed = release(publisher, tmp_path / "bundles", "1.0.0")
    await client.runtime.delivery.install_release(signed.body, signed.artifact)
    return signed


async def test_the_frame_lists_built_in_and_delivered_apps(
    client: Client, delivered: Signed
) -> None:
    async with tab(client) as ws:
        await hello(ws)
        await ws.send(json.dumps({"op": "apps"}))
        raw = await ws.recv()
        while json.loads(raw)["op"] != "app_centre":
            raw = await ws.recv()
        centre = json.loads(raw)

        dashboard = app_of(centre, DASHBOARD)
        assert dashboard is not None
        assert dashboard["name"] == "Task Dashboard"
        assert (dashboard["kind"], dashboard["enabled"], dashboard["publisher"]) == (
            "built-in",
            True,
            None,
        )
        assert dashboard["permissions"] == []
        whiteboard = app_of(centre, "dev.lineup.whiteboard")
        assert whiteboard is not None and whiteboard["permissions"] == ["artifact.save"]
        assert (dashboard["update"], dashboard["unavailable"]) == (None, None)

        app = app_of(centre, APP_ID)
        key_id = delivered.release.key_id
        assert app == {
            "app_id": APP_ID,
            "name": "Test App",
            "kind": "installed",
            "version": "1.0.0",
            "enabled": True,
            "publisher": {
                "key_id": key_id[: len("ed25519:") + 8],
                "name": "Acme Apps",
                "trusted": True,
            },
            "permissions": ["clipboard.write"],
            "versions": ["1.0.0"],
            "update": None,
            "unavailable": None,
            "running": 0,
        }
        assert centre["offers"] == []
        assert set(centre["catalog"]) == {"production", "fetched_at"}

        # Display only: no signature, digest, artifact id, full key id or URL.
        for secret in (
            delivered.release.signature,
            delivered.release.sha256,
            delivered.release.artifact_id,
            key_id,
            "http://",
            "https://",
            "/v1/",
        ):
            assert secret not in raw

        # A fetch of the (development) catalog: its state shows.
        receipt = await action(ws, "refresh")
        assert (receipt["outcome"], receipt["message"]) == ("ok", "")
        centre = await centre_where(ws, lambda c: c["catalog"]["fetched_at"] is not None)
        assert centre["catalog"]["production"] is False


async def test_enable_disable_remove_reach_every_tab(client: Client, delivered: Signed) -> None:
    async with tab(client) as one, tab(client) as two:
        await open_centre(one)
        await open_centre(two)

        receipt = await action(one, "disable", APP_ID)
        assert receipt["outcome"] == "ok"
        for ws in (one, two):
            await centre_where(ws, lambda c: app_of(c, APP_ID)["enabled"] is False)  # type: ignore[index]
        assert not any(a.id == APP_ID for a in client.runtime.inventory.applications)

        assert (await action(two, "enable", APP_ID))["outcome"] == "ok"
        for ws in (one, two):
            await centre_where(ws, lambda c: app_of(c, APP_ID)["enabled"] is True)  # type: ignore[index]
        assert any(a.id == APP_ID for a in client.runtime.inventory.applications)

        # A built-in app can be turned off too (and on again).
        assert (await action(one, "disable", DASHBOARD))["outcome"] == "ok"
        await centre_where(two, lambda c: app_of(c, DASHBOARD)["enabled"] is False)  # type: ignore[index]
        assert (await action(one, "enable", DASHBOARD))["outcome"] == "ok"

        assert (await action(one, "remove", APP_ID))["outcome"] == "ok"
        for ws in (one, two):
            await centre_where(ws, lambda c: app_of(c, APP_ID) is None)
        assert APP_ID not in [a.app_id for a in await client.runtime.registry.apps()]
        assert DASHBOARD in [a.app_id for a in await client.runtime.registry.apps()]


async def test_each_row_says_how_many_instances_run(client: Client, delivered: Signed) -> None:
    """Turning an app off closes what runs, so the shell asks first: the frame says how
    many run, and comes again when an instance opens or ends."""
    runtime = client.runtime
    conversation = (await runtime.store.conversations())[0].id
    async with tab(client) as ws:
        assert app_of(await open_centre(ws), DASHBOARD)["running"] == 0  # type: ignore[index]
        opened = [
            await runtime.apps.open_instance("task-dashboard", conversation_id=conversation)
            for _ in range(2)
        ]
        await centre_where(ws, lambda c: app_of(c, DASHBOARD)["running"] == 2)  # type: ignore[index]
        # The Web Host takes its surfaces down and reports the stop finished.
        assert (await runtime.apps.request_close(opened[0].instance_id)).accepted
        await centre_where(ws, lambda c: app_of(c, DASHBOARD)["running"] == 1)  # type: ignore[index]


async def test_refusals_carry_stable_codes_and_words(client: Client, delivered: Signed) -> None:
    async with tab(client) as ws:
        await open_centre(ws)
        receipt = await action(ws, "remove", DASHBOARD)
        assert receipt["outcome"] == "app_not_removable"
        assert receipt["message"] == "A built-in app cannot be removed; turn it off instead."
        assert app_of(await open_centre(ws), DASHBOARD) is not None

        receipt = await action(ws, "enable", "dev.lineup.nothing-here")
        assert receipt["outcome"] == "app_not_found"

        receipt = await action(ws, "install", "dev.lineup.nothing-here", version="1.0.0")
        assert receipt["outcome"] == "not_in_catalog"
        assert receipt["message"] == "The catalog no longer offers this version."

        # The only version revoked: the app cannot run, and says why.
        await client.runtime.delivery.revoke_version(APP_ID, "1.0.0")
        centre = await centre_where(ws, lambda c: app_of(c, APP_ID)["unavailable"] is not None)  # type: ignore[index]
        app = app_of(centre, APP_ID)
        assert app is not None
        assert (app["unavailable"], app["enabled"]) == ("version_revoked", False)
        receipt = await action(ws, "enable", APP_ID)
        assert receipt["outcome"] == "app_unavailable"


@pytest.mark.parametrize(
    "frame",
    [
        {"op": "apps_action", "action": "install", "app_id": APP_ID},  # no version
        {"op": "apps_action", "action": "update", "app_id": APP_ID, "version": "1.0"},
        {"op": "apps_action", "action": "install", "app_id": "Not An Id", "version": "1.0.0"},
        {"op": "apps_action", "action": "enable", "app_id": APP_ID, "version": "1.0.0"},
        {"op": "apps_action", "action": "refresh", "app_id": APP_ID},
        {"op": "apps_action", "action": "disable"},
        {"op": "apps_action", "action": "upgrade", "app_id": APP_ID},
        {"op": "apps_action", "action": "enable", "app_id": APP_ID, "force": True},
        {"op": "apps", "app_id": APP_ID},
    ],
)
async def test_malformed_frames_are_refused(client: Client, frame: dict[str, Any]) -> None:
    async with tab(client) as ws:
        await hello(ws)
        await ws.send(json.dumps(frame))
        error = await next_frame(ws, "error")
        assert error["code"] == "invalid_request"
        # The channel still answers.
        await ws.send(json.dumps({"op": "apps"}))
        await next_frame(ws, "app_centre")
