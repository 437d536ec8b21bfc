"""The Runtime's stored records, as immutable values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

DeliveryState = Literal["received", "sending", "sent", "failed"]
"""``received``: from the AppServer. ``sending``: ours, in the outbox. ``sent``: ours,
acknowledged (it has a ``seq``). ``failed``: ours, refused by the AppServer."""


@dataclass(frozen=True, slots=True)
class Session:
    server_url: str
    username: str
    user_id: str
    token: str


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    id: str
    agent_id: str
    title: str
    cursor: int


@dataclass(frozen=True, slots=True)
class TimelineItem:
    id: int
    conversation_id: str
    envelope_id: str
    seq: int | None
    type: str
    sender_kind: str
    body: bytes
    state: DeliveryState
    error_code: str | None
    created_at: str


@dataclass(frozen=True, slots=True)
class OutboxItem:
    id: int
    conversation_id: str
    envelope_id: str
    body: bytes


@dataclass(frozen=True, slots=True)
class Received:
    """One envelope frame from the stream, already classified by the sync loop."""

    conversation_id: str
    seq: int
    body: bytes
    envelope_id: str | None = None
    """``None`` when the envelope was rejected; then ``code`` says why."""
    type: str = ""
    sender_kind: str = ""
    app_scope: str | None = None
    code: str | None = None


@dataclass(frozen=True, slots=True)
class InboxItem:
    id: int
    app_scope: str
    conversation_id: str
    envelope_id: str
    body: bytes


@dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    at: str
    actor: str
    action: str
    subject: str
    outcome: str
    code: str | None
