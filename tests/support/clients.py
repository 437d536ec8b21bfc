"""Small raw clients for tests: the HTTP API and the stream, with no SDK in between."""

from __future__ import annotations

import uuid
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from typing import Any

import httpx
import msgspec
from websockets.asyncio.client import ClientConnection, connect

from lineup import wire

_frames = msgspec.json.Decoder(wire.ServerFrame)


def envelope(
    conversation_id: str,
    sender_kind: str,
    sender_id: str,
    *,
    text: str = "hello",
    envelope_id: str | None = None,
    kind: str = "lineup.v1.message",
    payload: dict[str, Any] | None = None,
) -> dict[str, Any]:
    return {
        "v": 1,
        "id": envelope_id or f"m-{uuid.uuid4().hex}",
        "type": kind,
        "conversation_id": conversation_id,
        "sender": {"kind": sender_kind, "id": sender_id},
        "created_at": datetime.now(UTC).isoformat(),
        "payload": payload if payload is not None else {"text": text},
    }


class Api:
    """An authenticated principal talking HTTP to the AppServer."""

    def __init__(self, base_url: str, secret: str, principal_id: str, kind: str) -> None:
        self.base_url = base_url
        self.secret = secret
        self.id = principal_id
        self.kind = kind
        self.http = httpx.AsyncClient(
            base_url=base_url, headers={"Authorization": f"Bearer {secret}"}, timeout=30
        )

    @property
    def sender_kind(self) -> str:
        return "agent" if self.kind == "agent" else "user"

    async def aclose(self) -> None:
        await self.http.aclose()

    async def open_conversation(self, other_id: str, conversation_id: str | None = None) -> str:
        field = "agent_id" if self.kind == "user" else "user_id"
        body: dict[str, Any] = {field: other_id}
        if conversation_id:
            body["id"] = conversation_id
        response = await self.http.post("/v1/conversations", json=body)
        assert response.status_code in (200, 201), response.text
        return str(response.json()["id"])

    def envelope(self, conversation_id: str, **kwargs: Any) -> dict[str, Any]:
        return envelope(conversation_id, self.sender_kind, self.id, **kwargs)

    async def post(self, conversation_id: str, body: dict[str, Any] | bytes) -> httpx.Response:
        url = f"/v1/conversations/{conversation_id}/envelopes"
        if isinstance(body, bytes):
            return await self.http.post(
                url, content=body, headers={"Content-Type": "application/json"}
            )
        return await self.http.post(url, json=body)

    async def send_text(self, conversation_id: str, text: str, **kwargs: Any) -> int:
        response = await self.post(
            conversation_id, self.envelope(conversation_id, text=text, **kwargs)
        )
        assert response.status_code == 201, response.text
        return int(response.json()["seq"])

    async def read(
        self, conversation_id: str, since: int = 0, **params: Any
    ) -> list[dict[str, Any]]:
        response = await self.http.get(
            f"/v1/conversations/{conversation_id}/envelopes", params={"since": since, **params}
        )
        assert response.status_code == 200, response.text
        return list(response.json()["envelopes"])

    async def read_all(self, conversation_id: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        since = 0
        while True:
            page = await self.read(conversation_id, since, limit=500)
            if not page:
                return items
            items.extend(page)
            since = page[-1]["seq"]

    @asynccontextmanager
    async def stream(self) -> AsyncIterator[Stream]:
        ws_url = self.base_url.replace("http://", "ws://") + "/v1/stream"
        async with connect(
            ws_url, additional_headers={"Authorization": f"Bearer {self.secret}"}
        ) as ws:
            yield Stream(ws)


class Stream:
    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self._acks: deque[wire.Ack] = deque()

    async def send_frame(self, frame: dict[str, Any]) -> None:
        await self.ws.send(msgspec.json.encode(frame).decode())

    async def subscribe(self, cursors: dict[str, int] | None = None, *, all: bool = False) -> None:
        await self.send_frame({"op": "subscribe", "cursors": cursors or {}, "all": all})

    async def send(self, envelope: dict[str, Any]) -> None:
        await self.send_frame({"op": "send", "envelope": envelope})

    async def next(self) -> wire.ServerFrame:
        return _frames.decode(await self.ws.recv())

    async def ack(self) -> wire.Ack:
        """The next acknowledgement, whether it came alone or batched."""
        while not self._acks:
            frame = await self.next()
            if isinstance(frame, wire.Acks):
                self._acks.extend(frame.acks)
        return self._acks.popleft()

    async def until(self, kind: type[Any]) -> Any:
        while True:
            frame = await self.next()
            if isinstance(frame, kind):
                return frame


async def login(base_url: str, username: str, password: str = "correct horse battery") -> Api:
    async with httpx.AsyncClient(base_url=base_url) as http:
        response = await http.post("/v1/login", json={"username": username, "password": password})
    assert response.status_code == 200, response.text
    body = response.json()
    return Api(base_url, body["token"], body["user_id"], "user")


def agent_api(base_url: str, agent_id: str, key: str) -> Api:
    return Api(base_url, key, agent_id, "agent")
