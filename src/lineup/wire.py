"""The AppServer's HTTP bodies and WebSocket frames, shared by server and clients.

Envelopes travel inside frames as raw JSON (``msgspec.Raw``) so that neither side
parses them twice; ``lineup.protocol.decode`` validates them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

import msgspec

from lineup.protocol import ErrorBody
from lineup.protocol.fields import ID_PATTERN

Id = Annotated[str, msgspec.Meta(pattern=ID_PATTERN)]
USERNAME_PATTERN = r"^[A-Za-z0-9._-]{1,64}\Z"
Username = Annotated[str, msgspec.Meta(pattern=USERNAME_PATTERN)]
Password = Annotated[str, msgspec.Meta(min_length=1, max_length=1024)]
Title = Annotated[str, msgspec.Meta(max_length=200)]
Seq = Annotated[int, msgspec.Meta(ge=0)]


class _Body(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """Base of every body and frame: immutable, strict about unknown fields."""


# --- HTTP --------------------------------------------------------------------------------


class LoginRequest(_Body, frozen=True):
    username: Username
    password: Password


class LoginResponse(_Body, frozen=True):
    token: str
    user_id: str
    expires_at: datetime


class Me(_Body, frozen=True):
    kind: Literal["user", "agent"]
    id: str


class CreateConversation(_Body, frozen=True):
    """A user names the agent, an agent names the user. ``id`` makes retries safe."""

    agent_id: Id | None = None
    user_id: Id | None = None
    id: Id | None = None
    title: Title = ""


class Conversation(_Body, frozen=True):
    id: str
    user_id: str
    agent_id: str
    title: str
    created_at: datetime
    last_seq: int


class ConversationList(_Body, frozen=True):
    conversations: list[Conversation]


class SendResult(_Body, frozen=True):
    conversation_id: str
    id: str
    seq: int
    duplicate: bool = False


class StoredItem(_Body, frozen=True):
    seq: int
    envelope: msgspec.Raw


class EnvelopePage(_Body, frozen=True):
    conversation_id: str
    envelopes: list[StoredItem]
    next_since: int


class Health(_Body, frozen=True):
    status: Literal["ok", "starting", "stopping", "degraded"]
    """``degraded``: serving, but the database's notification feed is being
    re-established (a load balancer should prefer other processes meanwhile)."""
    schema_version: int = 0


# --- WebSocket frames: client → server -------------------------------------------------------


class Subscribe(_Body, frozen=True, tag_field="op", tag="subscribe"):
    """Stream these conversations from their cursors; ``all`` adds every other
    conversation of the caller (from 0) and any created later."""

    cursors: dict[Id, Seq] = msgspec.field(default_factory=dict)
    all: bool = False


class Send(_Body, frozen=True, tag_field="op", tag="send"):
    envelope: msgspec.Raw


class Ping(_Body, frozen=True, tag_field="op", tag="ping"):
    pass


ClientFrame = Subscribe | Send | Ping


# --- WebSocket frames: server → client -------------------------------------------------------


class EnvelopeFrame(_Body, frozen=True, tag_field="op", tag="envelope"):
    conversation_id: str
    seq: int
    envelope: msgspec.Raw


class Ack(_Body, frozen=True):
    """One durable send: its envelope id, conversation and sequence number."""

    id: str
    conversation_id: str
    seq: int
    duplicate: bool = False


class Acks(_Body, frozen=True, tag_field="op", tag="acks"):
    """Acknowledgements, in the order the sends arrived; one frame carries every
    send whose commit has landed, so a busy connection pays one frame per commit,
    not one per envelope."""

    acks: list[Ack]


class Nack(_Body, frozen=True, tag_field="op", tag="nack"):
    error: ErrorBody
    id: str | None = None


class Synced(_Body, frozen=True, tag_field="op", tag="synced"):
    """Sent once after a subscribe, when every backlog has been delivered."""

    cursors: dict[str, int]


class ConversationFrame(_Body, frozen=True, tag_field="op", tag="conversation"):
    conversation: Conversation


class Pong(_Body, frozen=True, tag_field="op", tag="pong"):
    pass


class ErrorFrame(_Body, frozen=True, tag_field="op", tag="error"):
    error: ErrorBody


ServerFrame = EnvelopeFrame | Acks | Nack | Synced | ConversationFrame | Pong | ErrorFrame


def envelope_frame_bytes(conversation_id: str, seq: int, body: bytes) -> bytes:
    """Encode an ``envelope`` frame around already-canonical envelope bytes."""
    return msgspec.json.encode(
        EnvelopeFrame(conversation_id=conversation_id, seq=seq, envelope=msgspec.Raw(body))
    )
