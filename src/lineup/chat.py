"""``lineup chat``: a plain terminal client for a person (login, history, live)."""

from __future__ import annotations

import asyncio
import sys
import uuid
from datetime import UTC, datetime
from urllib.parse import urlsplit, urlunsplit

import click
import httpx
import msgspec
from websockets.asyncio.client import connect

from . import wire
from .protocol import MessageEnvelope, Sender, decode, encode, payloads


async def run_chat(server_url: str, username: str, password: str, agent_id: str) -> None:
    async with httpx.AsyncClient(base_url=server_url) as http:
        response = await http.post("/v1/login", json={"username": username, "password": password})
        if response.status_code != 200:
            raise click.ClickException(response.json()["error"]["message"])
        login = msgspec.convert(response.json(), wire.LoginResponse)
        http.headers["Authorization"] = f"Bearer {login.token}"
        conversation_id = f"chat.{login.user_id}.{agent_id}"[:128]
        response = await http.post(
            "/v1/conversations", json={"agent_id": agent_id, "id": conversation_id, "title": "Chat"}
        )
        if response.status_code >= 400:
            raise click.ClickException(response.json()["error"]["message"])
        click.echo(f"Connected as {username}. Type a message and press Enter; Ctrl-D to quit.")
        parts = urlsplit(server_url)
        ws_url = urlunsplit(
            ({"https": "wss"}.get(parts.scheme, "ws"), parts.netloc, "/v1/stream", "", "")
        )
        async with connect(
            ws_url, additional_headers={"Authorization": f"Bearer {login.token}"}
        ) as ws:
            subscribe = wire.Subscribe(cursors={conversation_id: 0})
            await ws.send(msgspec.json.encode(subscribe).decode())
            async with asyncio.TaskGroup() as tg:
                reader = tg.create_task(_print_stream(ws))
                await _read_input(ws, conversation_id, login.user_id)
                reader.cancel()


async def _print_stream(ws: object) -> None:
    decoder = msgspec.json.Decoder(wire.ServerFrame)
    async for raw in ws:  # type: ignore[attr-defined]
        frame = decoder.decode(raw)
        if isinstance(frame, wire.EnvelopeFrame):
            envelope = decode(bytes(frame.envelope))
            if isinstance(envelope, MessageEnvelope):
                who = "you" if envelope.sender.kind == "user" else envelope.sender.id
                click.echo(f"[{who}] {envelope.payload.text}")
        elif isinstance(frame, wire.Nack):
            click.echo(f"! not sent: {frame.error.code}: {frame.error.message}", err=True)


async def _read_input(ws: object, conversation_id: str, user_id: str) -> None:
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        if not line:
            return
        text = line.rstrip("\n")
        if not text.strip():
            continue
        envelope = MessageEnvelope(
            id=f"msg_{uuid.uuid4().hex}",
            conversation_id=conversation_id,
            sender=Sender(kind="user", id=user_id),
            created_at=datetime.now(UTC),
            payload=payloads.Message(text=text),
        )
        frame = wire.Send(envelope=msgspec.Raw(encode(envelope)))
        await ws.send(msgspec.json.encode(frame).decode())  # type: ignore[attr-defined]
