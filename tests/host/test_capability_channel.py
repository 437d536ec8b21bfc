"""The host channel's capability frames over real sockets: every tab hears each call,
the person's decision reaches the gateway, the deciding tab runs what it approved,
the first claim wins, refusals carry stable codes; the picked-file upload and the
artifact download check who asks and serve nothing a browser would run."""

from __future__ import annotations

import asyncio
import json
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection

from lineup.formats.schemas import CompiledSchemas
from lineup.host.native import NativeOutcome, PickedFile
from lineup.logs import quiet_libraries
from lineup.protocol.payloads import CapabilityDescriptor
from lineup.runtime.capabilities import catalog
from lineup.runtime.capabilities.catalog import MAX_ARTIFACT_BYTES, Capability
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.capability_calls import app_call, app_result, app_results, chat_id
from tests.support.host_channel import hello, next_frame, tab
from tests.support.webhost import Client, serving

CANARY = "CANARY-7f3a91"


async def call_state(ws: ClientConnection, call_id: str, state: str) -> dict[str, Any]:
    """The view of ``call_id`` once a ``capabilities`` frame shows it in ``state``."""
    async with asyncio.timeout(15):
        while True:
            frame = await next_frame(ws, "capabilities")
            for view in frame["calls"]:
                if view["call_id"] == call_id and view["state"] == state:
                    return dict(view)


def key(conversation_id: str, call_id: str) -> dict[str, str]:
    return {"conversation_id": conversation_id, "call_id": call_id, "requester_kind": "agent"}


async def consent(ws: ClientConnection, conversation: str, call_id: str, **fields: Any) -> None:
    frame = {"op": "consent", **key(conversation, call_id), "allow": True, **fields}
    await ws.send(json.dumps(frame))


async def receipt(ws: ClientConnection, call_id: str, action: str) -> str:
    frame = await next_frame(ws, "capability_receipt", call_id=call_id, action=action)
    return str(frame["outcome"])


async def test_every_tab_sees_the_call_and_the_deciding_tab_runs_it(client: Client) -> None:
    conversation = await chat_id(client)
    async with tab(client) as one, tab(client) as two:
        snapshot = await hello(one)
        assert snapshot["capability_calls"] == []
        await hello(two)
        url = "https://example.org/a/very/long/path?with=query&and#fragment"
        await app_call(client, "app.open_url", {"url": url}, "open-1", reason="See the docs")
        seen = [await call_state(ws, "open-1", "awaiting_consent") for ws in (one, two)]
        assert seen[0] == seen[1]
        view = seen[0]
        assert view["requester"] == client.pair.agent.id
        assert (view["capability"], view["risk"], view["runs_in"]) == (
            "app.open_url",
            "user_confirmation",
            "shell",
        )
        assert (view["reason"], view["arguments"]) == ("See the docs", {"url": url})
        assert "phrase" not in view  # restricted calls only
        assert view["expires_at"].endswith("+00:00")

        # A reload shows the pending dialog again.
        assert [c["call_id"] for c in (await hello(two))["capability_calls"]] == ["open-1"]

        await consent(one, conversation, "open-1")
        assert await receipt(one, "open-1", "consent") == "accepted"
        run = await next_frame(one, "capability_run", call_id="open-1")
        assert run["state"] == "executing" and run["arguments"] == {"url": url}
        assert "upload_token" not in run  # device.pick_file only
        await call_state(two, "open-1", "executing")  # the other tab closes its dialog

        # Only the tab that claimed it may report.
        done = {"op": "capability_done", **key(conversation, "open-1"), "ok": True}
        await two.send(json.dumps({**done, "result": {"opened": True}}))
        assert await receipt(two, "open-1", "done") == "capability_call_busy"
        await one.send(json.dumps({**done, "result": {"opened": True}}))
        assert await receipt(one, "open-1", "done") == "accepted"
        ended = await call_state(two, "open-1", "completed")
        assert ended["result"] == {"opened": True}
        await one.send(json.dumps({**done, "result": {"opened": True}}))
        assert await receipt(one, "open-1", "done") == "call_already_final"
    assert await app_result(client, "open-1") == {
        "call_id": "open-1",
        "status": "completed",
        "result": {"opened": True},
    }


async def test_refusals_come_back_with_stable_codes(client: Client) -> None:
    conversation = await chat_id(client)
    async with tab(client) as ws:
        await hello(ws)
        await consent(ws, conversation, "no-such-call")
        assert await receipt(ws, "no-such-call", "consent") == "capability_call_not_found"
        await ws.send(json.dumps({"op": "claim", **key(conversation, "no-such-call")}))
        assert await receipt(ws, "no-such-call", "claim") == "capability_call_not_found"

        await app_call(client, "device.pick_file", {"accept": [".txt"]}, "pick-1")
        await call_state(ws, "pick-1", "awaiting_consent")
        # system_permission: the dialog's second step is required.
        await consent(ws, conversation, "pick-1")
        assert await receipt(ws, "pick-1", "consent") == "confirmation_required"
        # Nobody claims a call that waits for consent.
        await ws.send(json.dumps({"op": "claim", **key(conversation, "pick-1")}))
        assert await receipt(ws, "pick-1", "claim") == "capability_call_busy"
        await consent(ws, conversation, "pick-1", allow=False)
        assert await receipt(ws, "pick-1", "consent") == "accepted"
        ended = await call_state(ws, "pick-1", "rejected")
        assert ended["code"] == "capability_denied"
        await consent(ws, conversation, "pick-1", acknowledged=True)
        assert await receipt(ws, "pick-1", "consent") == "call_already_final"
        done = {"op": "capability_done", **key(conversation, "pick-1"), "ok": False}
        await ws.send(json.dumps({**done, "code": "cancelled_by_user"}))
        assert await receipt(ws, "pick-1", "done") == "call_already_final"

        bad_frames = [
            {"op": "consent", **key(conversation, "pick-1")},  # no allow
            {"op": "consent", **key(conversation, "pick-1"), "allow": True, "extra": 1},
            {"op": "consent", **key(conversation, "pick-1"), "allow": "yes"},
            {"op": "claim", **key(conversation, "pick-1"), "requester_kind": "user"},
            {"op": "claim", **key(conversation, "has spaces")},
            {"op": "capability_done", **key(conversation, "pick-1"), "ok": False, "code": "X!"},
            {"op": "forget", "requester": "agent:x", "capability": "Not A Name"},
            {"op": "capability_policy", "capability": "app.open_url"},
        ]
        for bad in bad_frames:
            await ws.send(json.dumps(bad))
            assert (await next_frame(ws, "error"))["code"] == "invalid_request", bad
    assert (await app_result(client, "pick-1"))["status"] == "rejected"


async def test_the_first_claim_wins_across_two_tabs(client: Client) -> None:
    conversation = await chat_id(client)
    async with tab(client) as one, tab(client) as two:
        await hello(one)
        await hello(two)
        await app_call(client, "notification.show", {"title": "Done", "body": "b"}, "note-1")
        for ws in (one, two):
            approved = await call_state(ws, "note-1", "approved")
            assert approved["decision"] == "automatic"
        claim = json.dumps({"op": "claim", **key(conversation, "note-1")})
        await asyncio.gather(one.send(claim), two.send(claim))

        async def outcome(ws: ClientConnection) -> str:
            while True:
                frame = json.loads(await ws.recv())
                if frame["op"] == "capability_run":
                    return "run"
                if frame["op"] == "capability_receipt":
                    return str(frame["outcome"])

        async with asyncio.timeout(15):
            outcomes = sorted(await asyncio.gather(outcome(one), outcome(two)))
        assert outcomes == ["capability_call_busy", "run"]
    assert await app_results(client, "note-1") == []  # still executing: no result yet


async def test_remembered_consent_is_listed_and_can_be_revoked(client: Client) -> None:
    conversation = await chat_id(client)
    agent = f"agent:{client.pair.agent.id}"
    async with tab(client) as ws:
        await hello(ws)
        await ws.send(json.dumps({"op": "grants"}))
        grants = await next_frame(ws, "grants")
        assert grants["grants"] == []
        assert {c["name"]: c["revoked"] for c in grants["capabilities"]} == dict.fromkeys(
            catalog.CATALOG, False
        )

        await app_call(client, "clipboard.write", {"text": "one"}, "clip-1")
        await call_state(ws, "clip-1", "awaiting_consent")
        await consent(ws, conversation, "clip-1", remember=True)
        assert await receipt(ws, "clip-1", "consent") == "accepted"
        await next_frame(ws, "capability_run", call_id="clip-1")
        await ws.send(json.dumps({"op": "grants"}))
        listed = (await next_frame(ws, "grants"))["grants"]
        assert listed == [
            {"requester": agent, "label": agent.split(":")[1], "capability": "clipboard.write"}
        ]

        await app_call(client, "clipboard.write", {"text": "two"}, "clip-2")
        assert (await call_state(ws, "clip-2", "approved"))["decision"] == "remembered"

        await ws.send(
            json.dumps({"op": "forget", "requester": agent, "capability": "clipboard.write"})
        )
        assert (await next_frame(ws, "grants"))["grants"] == []
        await app_call(client, "clipboard.write", {"text": "three"}, "clip-3")
        await call_state(ws, "clip-3", "awaiting_consent")

        # Turning a capability off: new calls are unsupported(revoked) until it is on.
        policy = {"op": "capability_policy", "capability": "clipboard.write", "revoked": True}
        await ws.send(json.dumps(policy))
        off = await next_frame(ws, "grants")
        assert {c["name"]: c["revoked"] for c in off["capabilities"]}["clipboard.write"]
        assert "clipboard.write" not in {c.name for c in client.runtime.inventory.capabilities}
        await app_call(client, "clipboard.write", {"text": "four"}, "clip-4")
        assert (await call_state(ws, "clip-4", "unsupported"))["code"] == "revoked"
        await ws.send(json.dumps({**policy, "revoked": False}))
        on = await next_frame(ws, "grants")
        assert not {c["name"]: c["revoked"] for c in on["capabilities"]}["clipboard.write"]
        await ws.send(json.dumps({**policy, "capability": "device.camera"}))
        assert (await next_frame(ws, "error"))["code"] == "not_found"
    assert (await app_result(client, "clip-4"))["error"]["code"] == "revoked"


async def test_a_restricted_call_needs_the_phrase_typed_back(
    client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No capability in the catalog is restricted yet: add one for this test.
    schema = {"type": "object", "additionalProperties": False, "properties": {}}
    out = {"type": "object", "properties": {"done": {"type": "boolean"}}}
    descriptor = CapabilityDescriptor(
        name="test.restricted", version="1.0", risk="restricted", input_schema=schema,
        output_schema=out,
    )  # fmt: skip
    restricted = Capability(descriptor, CompiledSchemas(schema, out), "shell")
    monkeypatch.setitem(catalog.CATALOG, "test.restricted", restricted)
    await client.runtime.capabilities.provide(["test.restricted"])
    conversation = await chat_id(client)
    async with tab(client) as ws:
        await hello(ws)
        await app_call(client, "test.restricted", {}, "danger-1")
        view = await call_state(ws, "danger-1", "awaiting_consent")
        phrase = view["phrase"]
        assert phrase and phrase not in view["reason"]
        for typed in (None, "", "wrong-123", phrase.upper()):
            await consent(ws, conversation, "danger-1", confirmation=typed)
            assert await receipt(ws, "danger-1", "consent") == "confirmation_required"
        await consent(ws, conversation, "danger-1", confirmation=f" {phrase} ")
        assert await receipt(ws, "danger-1", "consent") == "accepted"
        run = await next_frame(ws, "capability_run", call_id="danger-1")
        assert run["phrase"] == phrase
        done = {"op": "capability_done", **key(conversation, "danger-1"), "ok": True}
        await ws.send(json.dumps({**done, "result": {"done": True}}))
        assert await receipt(ws, "danger-1", "done") == "accepted"
    assert (await app_result(client, "danger-1"))["status"] == "completed"


async def test_an_expiring_call_ends_on_time_and_every_tab_hears_it(client: Client) -> None:
    async with tab(client) as ws:
        await hello(ws)
        await app_call(
            client, "clipboard.write", {"text": "late"}, "late-1", expires_in=timedelta(seconds=1.5)
        )
        await call_state(ws, "late-1", "awaiting_consent")
        assert (await call_state(ws, "late-1", "expired"))["code"] == "expired"
    assert (await app_result(client, "late-1"))["status"] == "expired"


async def _picked(ws: ClientConnection, client: Client, call_id: str) -> dict[str, Any]:
    """A ``device.pick_file`` call, allowed in ``ws``: its ``capability_run``."""
    conversation = await chat_id(client)
    await app_call(client, "device.pick_file", {}, call_id)
    await call_state(ws, call_id, "awaiting_consent")
    await consent(ws, conversation, call_id, acknowledged=True)
    assert await receipt(ws, call_id, "consent") == "accepted"
    return await next_frame(ws, "capability_run", call_id=call_id)


async def test_the_upload_takes_the_picked_file_only_from_the_claiming_tab(
    client: Client,
) -> None:
    conversation = await chat_id(client)
    cookie = await client.session_cookie()
    good = {"Origin": client.url, "Cookie": f"lineup_session={cookie}"}
    async with tab(client, cookie) as ws, httpx.AsyncClient(base_url=client.url) as http:
        await hello(ws)

        def where(call_id: str) -> str:
            return f"/capabilities/upload?conversation_id={conversation}&call_id={call_id}"

        # Not claimed (waiting for consent): nothing to upload to.
        await app_call(client, "device.pick_file", {}, "pick-wait")
        await call_state(ws, "pick-wait", "awaiting_consent")
        waiting = await http.post(where("pick-wait"), content=b"x", headers=good)
        assert (waiting.status_code, waiting.json()) == (409, {"code": "capability_call_busy"})
        missing = await http.post(where("pick-none"), content=b"x", headers=good)
        assert missing.status_code == 404

        run = await _picked(ws, client, "pick-ok")
        token = run["upload_token"]
        assert token
        headers = {
            **good,
            "X-Upload-Token": token,
            "X-File-Name": "..%2Fnotes%20%C3%A9t%C3%A9.txt",
            "Content-Type": "text/plain",
        }
        refusals = [
            ({**headers, "Cookie": ""}, 403),
            ({**headers, "Cookie": "lineup_session=forged"}, 403),
            ({**headers, "Origin": "http://evil.example"}, 403),
            ({k: v for k, v in headers.items() if k != "Origin"}, 403),
            ({**headers, "Host": "rebound.example:80"}, 421),
            ({**headers, "X-Upload-Token": "guessed"}, 403),
        ]
        for bad, status in refusals:
            response = await http.post(where("pick-ok"), content=b"hello", headers=bad)
            assert response.status_code == status, bad
        body = "été notes\n".encode()
        stored = await http.post(where("pick-ok"), content=body, headers=headers)
        assert stored.status_code == 200, stored.text
        done = await call_state(ws, "pick-ok", "completed")
        artifact = done["result"]
        assert (artifact["name"], artifact["media_type"], artifact["size"]) == (
            "notes été.txt",
            "text/plain",
            len(body),
        )
        again = await http.post(where("pick-ok"), content=body, headers=headers)
        assert (again.status_code, again.json()) == (409, {"code": "call_already_final"})

        # Too large: refused before it is stored, and the call fails.
        big = await _picked(ws, client, "pick-big")
        too_big = await http.post(
            where("pick-big"),
            content=b"\0" * (MAX_ARTIFACT_BYTES + 1),
            headers={**good, "X-Upload-Token": big["upload_token"], "X-File-Name": "big.bin"},
        )
        assert (too_big.status_code, too_big.json()) == (413, {"code": "artifact_too_large"})
        assert (await call_state(ws, "pick-big", "failed"))["code"] == "artifact_too_large"
    assert (await app_result(client, "pick-ok"))["result"] == artifact
    assert (await app_result(client, "pick-big"))["error"]["code"] == "artifact_too_large"
    assert await client.runtime.capabilities.artifacts(conversation) != []


async def test_the_download_is_an_attachment_never_a_page(client: Client) -> None:
    conversation = await chat_id(client)
    cookie = await client.session_cookie()
    async with tab(client, cookie) as ws, httpx.AsyncClient(base_url=client.url) as http:
        snapshot = await hello(ws)
        assert [i for i in snapshot["items"] if i["kind"] == "artifact"] == []
        saved = {}
        for call_id, name, media_type in [
            ("save-html", 'page"; x=.html', "text/html"),
            ("save-text", "notes.txt", "text/plain"),
        ]:
            text = f"<script>alert('{call_id}')</script>"
            arguments = {"name": name, "media_type": media_type, "text": text}
            await app_call(client, "artifact.save", arguments, call_id)
            view = await call_state(ws, call_id, "awaiting_consent")
            assert view["runs_in"] == "runtime"
            await consent(ws, conversation, call_id)
            assert await receipt(ws, call_id, "consent") == "accepted"
            saved[call_id] = (await call_state(ws, call_id, "completed"))["result"]
        html_id = saved["save-html"]["artifact_id"]

        # Each saved file is one row of the timeline (the agent's app.result rows are
        # not shown), with what the row shows and where to download it.
        items = (await hello(ws))["items"]
        listed = [i["data"] for i in items if i["kind"] == "artifact"]
        assert [a["artifact_id"] for a in listed] == [html_id, saved["save-text"]["artifact_id"]]
        assert listed[0] == {
            "artifact_id": html_id,
            "name": 'page"; x=.html',
            "media_type": "text/html",
            "size": len("<script>alert('save-html')</script>"),
            "url": f"/artifacts/{html_id}",
        }
        assert not any(i["data"].get("type") == "lineup.v1.app.result" for i in items)

        assert (await http.get(f"/artifacts/{html_id}")).status_code == 403
        with_cookie = {"Cookie": f"lineup_session={cookie}"}
        rebound = await http.get(
            f"/artifacts/{html_id}", headers={**with_cookie, "Host": "rebound.example"}
        )
        assert rebound.status_code == 421
        assert (await http.get("/artifacts/art_nothing", headers=with_cookie)).status_code == 404

        page = await http.get(f"/artifacts/{html_id}", headers=with_cookie)
        assert page.status_code == 200
        assert page.content == b"<script>alert('save-html')</script>"
        assert page.headers["content-type"] == "application/octet-stream"
        disposition = page.headers["content-disposition"]
        assert disposition.startswith('attachment; filename="page__ x_.html";')
        assert "filename*=UTF-8''page%22%3B%20x%3D.html" in disposition
        assert page.headers["x-content-type-options"] == "nosniff"
        policies = page.headers.get_list("content-security-policy")
        assert any(p.startswith("sandbox") for p in policies)

        text = await http.get(
            f"/artifacts/{saved['save-text']['artifact_id']}", headers=with_cookie
        )
        assert text.headers["content-type"] == "text/plain; charset=utf-8"


async def test_reasons_and_arguments_never_reach_the_audit_or_the_logs(
    client: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    quiet_libraries()
    conversation = await chat_id(client)
    cookie = await client.session_cookie()
    async with tab(client, cookie) as ws, httpx.AsyncClient(base_url=client.url) as http:
        await hello(ws)
        calls = [
            ("c-url", "app.open_url", {"url": f"https://example.org/{CANARY}"}),
            ("c-clip", "clipboard.write", {"text": CANARY}),
            ("c-save", "artifact.save", {"name": f"{CANARY}.txt", "media_type": "text/plain",
                                         "text": CANARY}),
            ("c-note", "notification.show", {"title": CANARY, "body": CANARY}),
            ("c-bad", "clipboard.write", {"text": CANARY, "extra": CANARY}),
        ]  # fmt: skip
        for call_id, capability, arguments in calls:
            await app_call(client, capability, arguments, call_id, reason=f"reason {CANARY}")
        await call_state(ws, "c-url", "awaiting_consent")
        await consent(ws, conversation, "c-url", confirmation=CANARY)
        run = await next_frame(ws, "capability_run", call_id="c-url")
        assert CANARY in run["arguments"]["url"]
        done = {"op": "capability_done", **key(conversation, "c-url"), "ok": True}
        await ws.send(json.dumps({**done, "result": {"opened": True, "note": CANARY}}))
        assert await receipt(ws, "c-url", "done") == "accepted"  # failed: output invalid
        await call_state(ws, "c-clip", "awaiting_consent")
        await consent(ws, conversation, "c-clip", allow=False)
        await consent(ws, conversation, "c-save")
        await call_state(ws, "c-save", "completed")
        picked = await _picked(ws, client, "c-pick")
        upload = await http.post(
            f"/capabilities/upload?conversation_id={conversation}&call_id=c-pick",
            content=CANARY.encode(),
            headers={
                "Origin": client.url,
                "Cookie": f"lineup_session={cookie}",
                "X-Upload-Token": picked["upload_token"],
                "X-File-Name": f"{CANARY}.txt",
            },
        )
        assert upload.status_code == 200
        await call_state(ws, "c-pick", "completed")
    for call_id in ("c-url", "c-clip", "c-save", "c-bad", "c-pick"):
        await app_result(client, call_id)
    audit = await client.runtime.store.audit()
    assert any(a.action.startswith("capability.") for a in audit)
    for row in audit:
        assert CANARY not in repr(row)
    assert caplog.records
    for entry in caplog.records:
        assert CANARY not in entry.getMessage(), entry.name
        assert CANARY not in repr(entry.__dict__), entry.name


class OsProviders:
    """A desktop's native providers at the edge of the world: what the OS would do,
    scripted, and what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.attached = False

    def attach(self, runtime: object) -> None:
        self.attached = True

    def handles(self, capability: str) -> bool:
        return capability in ("clipboard.write", "device.pick_file", "notification.show")

    async def run(self, capability: str, arguments: dict[str, Any]) -> NativeOutcome | None:
        self.asked.append((capability, arguments))
        if capability == "clipboard.write":
            raise OSError(f"the clipboard refused {CANARY}")  # a provider's own failure
        if capability == "notification.show":
            return None  # no tray: the tab shows it
        return NativeOutcome(file=PickedFile(f"{CANARY}.txt", "text/plain", b"picked"))


async def test_a_desktop_runs_claimed_calls_natively_with_the_stored_arguments(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    native = OsProviders()
    async with serving(appserver, pair, tmp_path / "runtime", native=native) as client:
        assert native.attached
        conversation = await chat_id(client)
        async with tab(client) as one:
            await hello(one)
            # A picked file: consent in the tab, the native dialog picks, no run frame.
            await app_call(client, "device.pick_file", {"accept": [".txt"]}, "pick-1")
            await call_state(one, "pick-1", "awaiting_consent")
            await consent(one, conversation, "pick-1", acknowledged=True)
            assert await receipt(one, "pick-1", "consent") == "accepted"
            result = await app_result(client, "pick-1")
            assert result["status"] == "completed"
            assert (result["result"]["name"], result["result"]["size"]) == (f"{CANARY}.txt", 6)
            # A provider that fails ends the call provider_failed, and logs no message.
            await app_call(client, "clipboard.write", {"text": CANARY}, "copy-1")
            await call_state(one, "copy-1", "awaiting_consent")
            await consent(one, conversation, "copy-1")
            failed = await app_result(client, "copy-1")
            assert (failed["status"], failed["error"]["code"]) == ("failed", "provider_failed")
            # A provider that declines hands the call to the tab that claimed it.
            await app_call(client, "notification.show", {"title": "Hi"}, "note-1")
            view = await call_state(one, "note-1", "approved")
            await one.send(json.dumps({"op": "claim", **key(conversation, "note-1")}))
            run = await next_frame(one, "capability_run", call_id="note-1")
            assert run["arguments"] == view["arguments"] == {"title": "Hi"}
            frame = {"op": "capability_done", **key(conversation, "note-1"), "ok": True}
            await one.send(json.dumps({**frame, "result": {"shown": True}}))
            assert (await app_result(client, "note-1"))["status"] == "completed"
    assert native.asked == [
        ("device.pick_file", {"accept": [".txt"]}),
        ("clipboard.write", {"text": CANARY}),
        ("notification.show", {"title": "Hi"}),
    ]
    assert CANARY not in caplog.text
