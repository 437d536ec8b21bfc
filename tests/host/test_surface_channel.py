"""Surfaces on the host channel, over real sockets: mounting gives a single-use URL on
the surface origin (its own site per mount), SDK requests count only through a mount
of this Web Host, and every refusal has a stable code."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

import httpx
from websockets.asyncio.client import ClientConnection

from tests.formats.test_bundle import BUNDLE
from tests.support.browser_interactions import chat_id
from tests.support.host_channel import hello, next_frame, tab
from tests.support.webhost import Client


async def ask(ws: ClientConnection, frame: dict[str, Any], op: str) -> dict[str, Any]:
    await ws.send(json.dumps(frame))
    return await next_frame(ws, op)


async def fetch(url: str) -> int:
    """GET the mount's URL the way the browser does: to loopback, Host = its site."""
    parts = urlsplit(url)
    async with httpx.AsyncClient() as http:
        response = await http.get(f"http://127.0.0.1:{parts.port}/", headers={"host": parts.netloc})
    return response.status_code


async def test_mounts_calls_and_refusals(client: Client) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    conversation = await chat_id(client)
    app = await client.runtime.apps.open_instance("test-app", conversation_id=conversation)
    bare = await client.runtime.apps.open_instance("notes", conversation_id=conversation)
    async with tab(client) as ws:
        await hello(ws)
        missing = await ask(ws, {"op": "mount", "instance_id": "test-app.none"}, "mounted")
        assert missing["outcome"] == "app_instance_not_found"
        nothing = await ask(ws, {"op": "mount", "instance_id": bare.instance_id}, "mounted")
        assert (nothing["outcome"], nothing["url"]) == ("surface_unavailable", "")

        first = await ask(ws, {"op": "mount", "instance_id": app.instance_id}, "mounted")
        second = await ask(ws, {"op": "mount", "instance_id": app.instance_id}, "mounted")
        assert first["outcome"] == second["outcome"] == "accepted"
        hosts = {urlsplit(m["url"]).hostname for m in (first, second)}
        assert len(hosts) == 2 and all(h and h.endswith(".localhost") for h in hosts)
        assert await fetch(first["url"]) == 200
        assert await fetch(first["url"]) == 410  # served once

        call = {"op": "app_call", "mount_id": first["mount_id"], "id": "r1"}
        reply = await ask(ws, {**call, "method": "context.get", "params": {}}, "app_reply")
        assert reply["ok"] and reply["result"]["instance_id"] == app.instance_id
        bad = await ask(ws, {**call, "method": "tools.nope", "params": {}}, "app_reply")
        assert (bad["ok"], bad["error"]["code"]) == (False, "method_unknown")
        forged = {**call, "mount_id": "0" * 24, "method": "context.get", "params": {}}
        reply = await ask(ws, forged, "app_reply")
        assert reply["error"]["code"] == "mount_not_found"
        malformed = await ask(ws, {**call, "mount_id": "not-a-mount", "method": "x"}, "error")
        assert malformed["code"] == "invalid_request"

        await ws.send(json.dumps({"op": "unmount", "mount_id": first["mount_id"]}))
        gone = await ask(ws, {**call, "method": "context.get", "params": {}}, "app_reply")
        assert gone["error"]["code"] == "mount_not_found"
        assert await fetch(first["url"]) == 404

        event = {"op": "ui_event", "mount_id": second["mount_id"], "event": "ping", "data": {}}
        receipt = await ask(ws, event, "ui_event_receipt")
        assert receipt["outcome"] == "mount_not_found"  # an app mount is not a ui surface
        unknown = await ask(
            ws,
            {"op": "mount_ui", "conversation_id": conversation, "instance_id": "x"},
            "ui_mounted",
        )
        assert unknown["outcome"] == "app_instance_not_found"

        # Closing the instance takes its mounts down before the stop is reported.
        assert (await client.runtime.apps.request_close(app.instance_id)).accepted
        while client.web.app_surfaces.mounts_of(app.instance_id):
            await next_frame(ws, "apps")
        assert await fetch(second["url"]) == 404
