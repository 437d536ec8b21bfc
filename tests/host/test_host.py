"""The Web Host over real sockets: pages, headers, login, and the host channel's checks."""

from __future__ import annotations

import asyncio
import json

import httpx
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from tests.support.webhost import Client


async def test_pages_need_a_session_and_carry_a_strict_csp(client: Client) -> None:
    async with httpx.AsyncClient(base_url=client.url) as http:
        index = await http.get("/")
        assert (index.status_code, index.headers["location"]) == (303, "/login")
        login = await http.get("/login")
    assert login.status_code == 200
    policy = login.headers["content-security-policy"]
    for directive in (
        "default-src 'none'",
        "script-src 'self'",
        "connect-src 'self'",
        "frame-ancestors 'none'",
        "require-trusted-types-for 'script'",
    ):
        assert directive in policy
    assert "unsafe-inline" not in policy
    assert login.headers["x-content-type-options"] == "nosniff"


async def test_login_form_sets_an_httponly_strict_cookie_and_never_the_token(
    client: Client,
) -> None:
    async with httpx.AsyncClient(base_url=client.url) as http:
        form = {"username": client.pair.user_name, "password": "correct horse battery"}
        refused = await http.post("/login", data=form)  # no Origin: a cross-site form
        assert refused.status_code == 403
        response = await http.post("/login", data=form, headers={"Origin": client.url})
        assert (response.status_code, response.headers["location"]) == (303, "/")
        cookie = response.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie
        page = await http.get("/")
        assert page.status_code == 200
        assert client.runtime.session is not None
        assert client.runtime.session.token not in page.text + cookie
        wrong = await http.post(
            "/login", data={**form, "password": "wrong-7c1e"}, headers={"Origin": client.url}
        )
        # The form again, with the username kept (never the password) and no cookie.
        assert wrong.status_code == 200 and "set-cookie" not in wrong.headers
        assert "Wrong username or password." in wrong.text
        assert f'value="{client.pair.user_name}"' in wrong.text
        assert "wrong-7c1e" not in wrong.text


async def test_forged_host_header_is_refused(client: Client) -> None:
    async with httpx.AsyncClient(base_url=client.url) as http:
        response = await http.get("/login", headers={"Host": "attacker.example:80"})
    assert response.status_code == 421


async def handshake(client: Client, headers: dict[str, str]) -> int:
    """The HTTP status of a host-channel handshake (101 when accepted)."""
    url = client.url.replace("http://", "ws://") + "/host"
    try:
        async with connect(url, additional_headers=headers) as ws:
            await ws.send(json.dumps({"op": "hello"}))
            await asyncio.wait_for(ws.recv(), 10)
            return 101
    except InvalidStatus as exc:
        return exc.response.status_code


async def test_host_channel_accepts_only_same_origin_same_host_with_a_session(
    client: Client,
) -> None:
    cookie = f"lineup_session={await client.session_cookie()}"
    good = {"Origin": client.url, "Cookie": cookie}
    assert await handshake(client, good) == 101
    for name, headers in {
        "foreign origin": {**good, "Origin": "http://attacker.example"},
        "null origin": {**good, "Origin": "null"},
        "no origin": {"Cookie": cookie},
        "no session": {"Origin": client.url},
        "forged session": {"Origin": client.url, "Cookie": "lineup_session=forged"},
    }.items():
        assert await handshake(client, headers) == 403, name


async def test_host_channel_refuses_a_dns_rebinding_host(client: Client) -> None:
    """A rebinding page sends its own Host name; refuse it even with a good Origin,
    so the Host check stands on its own."""
    cookie = f"lineup_session={await client.session_cookie()}"
    port = client.url.rsplit(":", 1)[1]
    reader, writer = await asyncio.open_connection("127.0.0.1", int(port))
    writer.write(
        (
            "GET /host HTTP/1.1\r\n"
            f"Host: rebind.attacker.example:{port}\r\n"
            "Upgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
            f"Origin: {client.url}\r\nCookie: {cookie}\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    status_line = await asyncio.wait_for(reader.readline(), 10)
    writer.close()
    await writer.wait_closed()
    assert status_line.split()[1] == b"403"


async def test_host_channel_snapshot_send_and_bad_frames(client: Client) -> None:
    cookie = await client.session_cookie()
    url = client.url.replace("http://", "ws://") + "/host"
    headers = {"Origin": client.url, "Cookie": f"lineup_session={cookie}"}
    async with connect(url, additional_headers=headers) as ws:
        await ws.send(json.dumps({"op": "hello"}))
        snapshot = json.loads(await ws.recv())
        assert snapshot["op"] == "snapshot"
        assert snapshot["connection"] == "connected"
        conversation = snapshot["conversations"][0]["id"]
        assert conversation in snapshot["complete"]  # a short history: nothing older
        for bad in ("not json", json.dumps({"op": "hack"}), json.dumps({"op": "send"})):
            await ws.send(bad)
            assert json.loads(await ws.recv())["op"] == "error"
        await ws.send(json.dumps({"op": "send", "conversation_id": "other", "text": "x"}))
        assert json.loads(await ws.recv())["code"] == "not_found"
        await ws.send(
            json.dumps({"op": "send", "conversation_id": conversation, "text": "hi *you*"})
        )
        states = []
        while "sent" not in states:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 15))
            if frame["op"] == "item" and frame["item"]["sender"] == "user":
                states.append(frame["item"]["state"])
                assert frame["item"]["html"] == "<p>hi <em>you</em></p>\n"
        assert states[0] == "sending"
        await client.pair.agent.send_text(conversation, "a reply")
        while True:
            frame = json.loads(await asyncio.wait_for(ws.recv(), 15))
            if frame["op"] == "item" and frame["item"]["sender"] == "agent":
                assert frame["item"]["unread"] is True
                break
        assert len(await client.runtime.store.inbox("chat")) == 1
        seen = {
            "op": "seen",
            "conversation_id": conversation,
            "envelope_ids": [frame["item"]["envelope_id"]],
        }
        await ws.send(json.dumps(seen))
        await ws.send(json.dumps({"op": "hello"}))  # answered after `seen` is applied
        snapshot = json.loads(await asyncio.wait_for(ws.recv(), 15))
        assert snapshot["op"] == "snapshot"
        assert not any(item.get("unread") for item in snapshot["items"])
        assert await client.runtime.store.inbox("chat") == []
    texts = [
        s["envelope"]["payload"]["text"]
        for s in await client.pair.agent.read_all(conversation)
        if s["envelope"]["type"] == "lineup.v1.message"
    ]
    assert texts == ["hi *you*", "a reply"]
