"""A browser tab's side of the host channel, over a real WebSocket, for host tests:
``tab`` connects with a session cookie, ``next_frame`` waits for a frame of an op
(and fields), keeping the frames of other ops it reads on the way for later."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from websockets.asyncio.client import ClientConnection, connect

from tests.support.webhost import Client

_backlog: dict[int, list[dict[str, Any]]] = {}


@asynccontextmanager
async def tab(client: Client, cookie: str | None = None) -> AsyncIterator[ClientConnection]:
    cookie = cookie or await client.session_cookie()
    url = client.url.replace("http://", "ws://") + "/host"
    headers = {"Origin": client.url, "Cookie": f"lineup_session={cookie}"}
    async with connect(url, additional_headers=headers) as ws:
        try:
            yield ws
        finally:
            _backlog.pop(id(ws), None)


async def next_frame(ws: ClientConnection, op: str, **match: Any) -> dict[str, Any]:
    """The next frame with this ``op`` (and these fields). Frames of other ops read on
    the way are kept, in order, for later calls (connection and item frames are
    skipped)."""
    kept = _backlog.setdefault(id(ws), [])
    for i, frame in enumerate(kept):
        if frame["op"] == op and all(frame.get(k) == v for k, v in match.items()):
            return kept.pop(i)
    async with asyncio.timeout(15):
        while True:
            frame = json.loads(await ws.recv())
            if frame["op"] == op and all(frame.get(k) == v for k, v in match.items()):
                return frame
            if frame["op"] not in ("connection", "item"):
                kept.append(frame)


async def hello(ws: ClientConnection) -> dict[str, Any]:
    await ws.send(json.dumps({"op": "hello"}))
    return await next_frame(ws, "snapshot")
