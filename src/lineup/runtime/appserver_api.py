"""The Runtime's calls to the AppServer's HTTP API (docs/appserver.md): log in, create
a conversation, list them. The token travels only here and on the stream."""

from __future__ import annotations

import logging

import httpx
import msgspec

from lineup import wire
from lineup.client import AuthenticationFailed, SendRejected
from lineup.protocol import ErrorResponse

from .records import Session

__all__ = ["create_conversation", "list_conversations", "login"]

log = logging.getLogger("lineup.runtime")

TIMEOUT_S = 30


async def login(server_url: str, username: str, password: str) -> Session:
    """A new session. Raises ``AuthenticationFailed`` (401) or ``SendRejected``."""
    async with httpx.AsyncClient(base_url=server_url, timeout=TIMEOUT_S) as http:
        response = await http.post("/v1/login", json={"username": username, "password": password})
    if response.status_code != 200:
        error = msgspec.json.decode(response.content, type=ErrorResponse).error
        if response.status_code == 401:
            raise AuthenticationFailed(error.message)
        raise SendRejected(error)
    body = msgspec.json.decode(response.content, type=wire.LoginResponse)
    return Session(server_url.rstrip("/"), username, body.user_id, body.token)


def _client(session: Session) -> httpx.AsyncClient:
    return httpx.AsyncClient(
        base_url=session.server_url,
        headers={"Authorization": f"Bearer {session.token}"},
        timeout=TIMEOUT_S,
    )


async def create_conversation(
    session: Session, agent_id: str, conversation_id: str | None, title: str
) -> wire.Conversation:
    """Create (or, with the same id, find) a conversation. Raises ``SendRejected``."""
    body = wire.CreateConversation(agent_id=agent_id, id=conversation_id, title=title)
    async with _client(session) as http:
        response = await http.post(
            "/v1/conversations",
            content=msgspec.json.encode(body),
            headers={"Content-Type": "application/json"},
        )
    if response.status_code >= 400:
        raise SendRejected(msgspec.json.decode(response.content, type=ErrorResponse).error)
    return msgspec.json.decode(response.content, type=wire.Conversation)


async def list_conversations(session: Session) -> list[wire.Conversation] | None:
    """The user's conversations; ``None`` when the AppServer is down or failing (logged
    by type or status). Raises ``AuthenticationFailed`` when it refuses the session."""
    try:
        async with _client(session) as http:
            response = await http.get("/v1/conversations")
    except httpx.HTTPError as exc:
        log.warning("conversation list not fetched", extra={"error": type(exc).__name__})
        return None
    if response.status_code == 401:
        raise AuthenticationFailed("the AppServer refused the stored session")
    if response.status_code != 200:
        log.warning("conversation list not fetched", extra={"status": response.status_code})
        return None
    return msgspec.json.decode(response.content, type=wire.ConversationList).conversations
