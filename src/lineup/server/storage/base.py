"""The AppServer's storage interface and its records.

Handlers speak only to ``Storage``; SQLite is the default engine and another
engine (PostgreSQL) implements the same methods with the same semantics:

* ``append`` is idempotent per ``(conversation_id, envelope_id)``: the same bytes
  again return the original sequence number; different bytes are a conflict.
* sequence numbers are per conversation, start at 1 and have no gaps.
* ``on_commit`` listeners hear about every appended envelope after it is durable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Literal, Protocol

PrincipalKind = Literal["user", "agent"]

Clock = Callable[[], datetime]
"""Where an engine reads the time (injected in tests)."""


def utcnow() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: a logged-in user or an agent holding an API key."""

    kind: PrincipalKind
    id: str


@dataclass(frozen=True, slots=True)
class UserRecord:
    id: str
    username: str
    password_hash: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class AgentRecord:
    id: str
    name: str
    created_at: datetime


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    id: str
    user_id: str
    agent_id: str
    title: str
    created_at: datetime
    last_seq: int

    def has_member(self, principal: Principal) -> bool:
        member = self.user_id if principal.kind == "user" else self.agent_id
        return member == principal.id


@dataclass(frozen=True, slots=True)
class AppendRequest:
    """One validated envelope to store. ``body`` is its canonical encoding."""

    conversation_id: str
    envelope_id: str
    type: str
    sender_kind: str
    body: bytes


class AppendStatus(Enum):
    STORED = "stored"
    DUPLICATE = "duplicate"
    CONFLICT = "conflict"
    NO_CONVERSATION = "no_conversation"


@dataclass(frozen=True, slots=True)
class AppendOutcome:
    status: AppendStatus
    seq: int = 0


@dataclass(frozen=True, slots=True)
class StoredEnvelope:
    conversation_id: str
    seq: int
    body: bytes


CommitListener = Callable[[Sequence[StoredEnvelope]], None]
"""Called on the event loop with the envelopes of one durable commit, in order."""

ConversationListener = Callable[[ConversationRecord], None]


class AlreadyExists(Exception):
    """A user, agent or key with this identity already exists."""


class Storage(Protocol):
    async def open(self) -> None: ...

    async def close(self) -> None: ...

    def on_commit(self, listener: CommitListener) -> None: ...

    def on_conversation(self, listener: ConversationListener) -> None: ...

    def on_resync(self, listener: Callable[[], None]) -> None:
        """Called when commit notifications may have been missed (an engine whose
        notifications travel over a connection that can drop); streams then re-read
        from their cursors. SQLite's come from its own writer and are never missed."""
        ...

    # users, agents, credentials
    async def create_user(self, user_id: str, username: str, password_hash: str) -> UserRecord: ...

    async def get_user_by_name(self, username: str) -> UserRecord | None: ...

    async def create_agent(self, agent_id: str, name: str, key_hash: str) -> AgentRecord: ...

    async def add_agent_key(self, agent_id: str, key_hash: str) -> None: ...

    async def agent_for_key(self, key_hash: str) -> AgentRecord | None: ...

    async def add_token(self, token_hash: str, user_id: str, expires_at: datetime) -> None: ...

    async def user_for_token(self, token_hash: str, now: datetime) -> str | None: ...

    async def revoke_token(self, token_hash: str) -> bool: ...

    async def principal_exists(self, principal: Principal) -> bool: ...

    # conversations and envelopes
    async def create_conversation(
        self, conversation_id: str, user_id: str, agent_id: str, title: str
    ) -> ConversationRecord | None:
        """Create it, or return ``None`` when the id is taken."""
        ...

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None: ...

    async def list_conversations(self, principal: Principal) -> list[ConversationRecord]: ...

    async def append(self, request: AppendRequest) -> AppendOutcome: ...

    def append_nowait(self, request: AppendRequest) -> asyncio.Future[AppendOutcome]:
        """Take the request in call order before returning; await the outcome later.

        Lets one connection pipeline many sends while keeping their order.
        """
        ...

    async def read_since(
        self, conversation_id: str, since: int, limit: int
    ) -> list[StoredEnvelope]: ...
