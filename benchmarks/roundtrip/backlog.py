"""A long conversation for ``roundtrip_browser.py --lengths``: the demo agent's messages,
sent straight into ``lineup demo``'s conversation through the AppServer with the demo
agent's key, while the page is open, so the page receives every one live, as a tab left
open all day would.

The conversation is found over HTTP (``GET /v1/conversations``); the messages go over
the agent's WebSocket (``/v1/stream``), many in flight at once, which the AppServer
stores in batches (one request per envelope over HTTP would make the driver, not
LineUp, the bottleneck). Nothing here imports LineUp: the wire shapes are written out,
as ``ws_loader.py`` does for the ingest benchmark.
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx
from websockets.asyncio.client import ClientConnection, connect

CREDENTIALS_FILE = "demo-credentials.json"
"""Written by ``lineup demo`` into its data dir: the demo user's password, the agent's key."""
TIMEOUT_S = 60.0


@dataclass(frozen=True)
class AgentAccess:
    """Enough to post as the demo agent into the demo conversation."""

    base_url: str
    agent_id: str
    api_key: str
    conversation_id: str


async def demo_agent_access(data_dir: Path, api_port: int) -> AgentAccess:
    """The demo agent's credentials and its one conversation (the one the page shows)."""
    saved = json.loads((data_dir / CREDENTIALS_FILE).read_text(encoding="utf-8"))
    base_url = f"http://127.0.0.1:{api_port}"
    headers = {"Authorization": f"Bearer {saved['agent_key']}"}
    async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=TIMEOUT_S) as http:
        response = await http.get("/v1/conversations")
        response.raise_for_status()
        conversations = response.json()["conversations"]
    if len(conversations) != 1:
        raise RuntimeError(f"the demo agent has {len(conversations)} conversations, expected 1")
    return AgentAccess(base_url, saved["agent_id"], saved["agent_key"], conversations[0]["id"])


def agent_message(access: AgentAccess, envelope_id: str, text: str) -> bytes:
    """A ``lineup.v1.message`` envelope from the agent, as the AppServer stores it."""
    envelope = {
        "conversation_id": access.conversation_id,
        "created_at": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
        "id": envelope_id,
        "payload": {"text": text},
        "sender": {"id": access.agent_id, "kind": "agent"},
        "type": "lineup.v1.message",
        "v": 1,
    }
    return json.dumps(envelope, sort_keys=True, separators=(",", ":")).encode()


class Poster:
    """The demo agent's own WebSocket to the AppServer (``/v1/stream``, the agent SDK's
    path for sends), with up to ``window`` sends in flight: the AppServer stores what
    arrives together in one commit and acknowledges it in one ``acks`` frame. It does
    not subscribe, so nothing but acknowledgements comes back."""

    def __init__(self, access: AgentAccess, window: int) -> None:
        self.access = access
        self.window = window
        self.posted = 0
        self._socket: ClientConnection | None = None

    async def open(self) -> None:
        url = self.access.base_url.replace("http://", "ws://", 1) + "/v1/stream"
        self._socket = await connect(
            url,
            additional_headers={"Authorization": f"Bearer {self.access.api_key}"},
            max_size=None,
            open_timeout=TIMEOUT_S,
        )

    async def close(self) -> None:
        if self._socket is not None:
            await self._socket.close()
            self._socket = None

    async def post(self, messages: Sequence[tuple[str, str]]) -> None:
        """Send ``(envelope id, text)`` pairs; return when every one is acknowledged
        (durably stored, or a duplicate of a stored one)."""
        if self._socket is None:
            await self.open()
        assert self._socket is not None
        todo = deque(messages)
        in_flight = 0
        while todo or in_flight:
            while todo and in_flight < self.window:
                envelope_id, text = todo.popleft()
                body = agent_message(self.access, envelope_id, text).decode()
                await self._socket.send(f'{{"op":"send","envelope":{body}}}')
                in_flight += 1
            frame = json.loads(await asyncio.wait_for(self._socket.recv(), TIMEOUT_S))
            if frame.get("op") == "acks":
                landed = len(frame["acks"])
            elif frame.get("op") == "ack":
                landed = 1
            elif frame.get("op") == "nack":
                raise RuntimeError(f"the AppServer refused a message: {frame}")
            else:
                continue
            in_flight -= landed
            self.posted += landed
