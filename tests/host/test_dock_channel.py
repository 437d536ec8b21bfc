"""The host channel's MiniApp shell frames over real sockets: the snapshot carries the
instances and focus, every change reaches every tab as an ``apps`` frame, and the
shell's ``app`` requests are validated and decided by the Runtime's kernel."""

from __future__ import annotations

import json
from typing import Any

import httpx
from websockets.asyncio.client import ClientConnection

from lineup.miniapps import bundle_dir, install_bundled
from tests.support.host_channel import hello, next_frame, tab
from tests.support.webhost import Client

APP = "testapp"


async def open_two(client: Client) -> tuple[str, str]:
    """Two started instances, opened by the Runtime; the second holds focus."""
    conversation = (await client.runtime.store.conversations())[0].id
    ids = []
    for _ in range(2):
        record = await client.runtime.apps.open_instance(APP, conversation_id=conversation)
        assert (await client.runtime.apps.started(record.instance_id)).accepted
        ids.append(record.instance_id)
    return ids[0], ids[1]


async def request(ws: ClientConnection, action: str, instance_id: str) -> dict[str, Any]:
    await ws.send(json.dumps({"op": "app", "action": action, "instance_id": instance_id}))
    return await next_frame(ws, "app_receipt")


async def test_snapshot_carries_instances_stack_and_focus(client: Client) -> None:
    async with tab(client) as ws:
        empty = await hello(ws)
        assert empty["apps"] == {"records": [], "stack": [], "focus": None}
        first, second = await open_two(client)
        snapshot = await hello(ws)
    apps = snapshot["apps"]
    assert [r["instance_id"] for r in apps["records"]] == [first, second]
    assert {r["app_scope"] for r in apps["records"]} == {APP}
    assert [r["state"] for r in apps["records"]] == ["background", "foreground"]
    assert all(r["started_at"].endswith("+00:00") for r in apps["records"])
    assert apps["stack"] == [first, second]
    assert apps["focus"] == second


async def test_requests_are_decided_by_the_runtime_and_reach_every_tab(client: Client) -> None:
    first, second = await open_two(client)
    async with tab(client) as one, tab(client) as two:
        await hello(one)
        await hello(two)
        receipt = await request(one, "foreground", first)
        assert receipt == {
            "op": "app_receipt",
            "instance_id": first,
            "action": "foreground",
            "outcome": "accepted",
        }
        for ws in (one, two):
            frame = await next_frame(ws, "apps")
            assert frame["focus"] == first
            states = {r["instance_id"]: r["state"] for r in frame["records"]}
            assert states == {first: "foreground", second: "background"}
        assert client.runtime.apps.instances().focus == first

        # Backgrounding the holder: back to the chat, nobody else comes forward.
        assert (await request(two, "background", first))["outcome"] == "accepted"
        frame = await next_frame(one, "apps")
        assert frame["focus"] is None
        states = {r["instance_id"]: r["state"] for r in frame["records"]}
        assert states == {first: "background", second: "background"}
        assert client.runtime.apps.instances().focus is None


async def test_closing_the_focused_instance_restores_focus_to_the_previous_one(
    client: Client,
) -> None:
    first, second = await open_two(client)
    async with tab(client) as ws:
        await hello(ws)
        assert (await request(ws, "close", second))["outcome"] == "accepted"
        # request_close (stopping) and then closed (stopped, focus restored).
        stopping = await next_frame(ws, "apps")
        assert {r["instance_id"]: r["state"] for r in stopping["records"]}[second] == "stopping"
        done = await next_frame(ws, "apps")
        assert [r["instance_id"] for r in done["records"]] == [first]
        assert done["stack"] == [first]
        assert done["focus"] == first
    record = client.runtime.apps.record(second)
    assert record is not None and record.state == "stopped"


async def test_refusals_come_back_in_the_receipt(client: Client) -> None:
    first, second = await open_two(client)
    async with tab(client) as ws:
        await hello(ws)
        missing = await request(ws, "foreground", "testapp.nosuchinstance")
        assert missing["outcome"] == "app_instance_not_found"
        assert (await request(ws, "close", first))["outcome"] == "accepted"
        for action in ("foreground", "background", "close"):
            refused = await request(ws, action, first)  # it is stopped now
            assert (refused["action"], refused["outcome"]) == (action, "lifecycle_denied")
    assert client.runtime.apps.instances().focus == second


async def test_app_requests_are_validated_like_every_frame(client: Client) -> None:
    first, second = await open_two(client)
    bad_frames = [
        {"op": "app", "action": "open", "instance_id": first},
        {"op": "app", "action": "foreground"},
        {"op": "app", "instance_id": first},
        {"op": "app", "action": "foreground", "instance_id": "has spaces"},
        {"op": "app", "action": "foreground", "instance_id": "x" * 129},
        {"op": "app", "action": "foreground", "instance_id": first, "app_scope": APP},
        {"op": "app", "action": "foreground", "instance_id": 7},
    ]
    async with tab(client) as ws:
        await hello(ws)
        for bad in bad_frames:
            await ws.send(json.dumps(bad))
            error = await next_frame(ws, "error")
            assert error["code"] == "invalid_request", bad
    assert client.runtime.apps.instances().focus == second  # nothing was done


async def test_instances_and_groups_carry_names_numbers_and_icons(client: Client) -> None:
    """The shell is told what to call each instance; it never makes a name up."""
    await install_bundled(client.runtime)
    conversation = (await client.runtime.store.conversations())[0].id
    opened = [
        await client.runtime.apps.open_instance(scope, conversation_id=conversation)
        for scope in ("task-dashboard", "task-dashboard", "notes")
    ]
    async with tab(client) as ws:
        snapshot = await hello(ws)
    named = [(r["name"], r["ordinal"], r["label"], r["icon"]) for r in snapshot["apps"]["records"]]
    assert named == [
        ("Task Dashboard", 1, "Task Dashboard", "/app-icons/task-dashboard"),
        ("Task Dashboard", 2, "Task Dashboard 2", "/app-icons/task-dashboard"),
        ("notes", 1, "notes", "/app-icons/notes"),  # no app has the scope: shown as is
    ]
    groups = {g["instance_id"]: g for g in snapshot["app_sessions"]}
    assert [groups[r.instance_id]["label"] for r in opened] == [
        "Task Dashboard",
        "Task Dashboard 2",
        "notes",
    ]
    assert groups[opened[1].instance_id]["app_scope"] == "task-dashboard"


async def test_the_icon_route_serves_an_app_s_icon_as_a_sandboxed_image(client: Client) -> None:
    await install_bundled(client.runtime)
    cookie = await client.session_cookie()
    async with httpx.AsyncClient(base_url=client.url) as http:
        refused = await http.get("/app-icons/task-dashboard")
        assert refused.status_code == 403
        http.cookies.set("lineup_session", cookie)
        own = await http.get("/app-icons/task-dashboard")
        generic = await http.get("/app-icons/notes")
        odd = await http.get("/app-icons/Not%20a%20scope")
    icon = bundle_dir("task_dashboard") / "icons" / "task-dashboard.svg"
    assert (own.status_code, own.content) == (200, icon.read_bytes())
    for response in (own, generic, odd):
        assert response.headers["content-type"] == "image/svg+xml"
        policies = response.headers.get_list("content-security-policy")
        assert "sandbox; default-src 'none'" in policies  # beside the shell's own
        assert response.headers["x-content-type-options"] == "nosniff"
    assert generic.content == odd.content != own.content
    assert generic.content.startswith(b"<svg")
