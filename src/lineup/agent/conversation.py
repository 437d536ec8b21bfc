"""A conversation as the agent sees it: who it is with, and ways to speak in it."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal, TypeVar

from lineup.protocol import (
    Envelope,
    ErrorEnvelope,
    MessageEnvelope,
    ProgressEnvelope,
    Sender,
    StatusEnvelope,
    decode,
    encode,
    payloads,
)
from lineup.protocol.errors import ErrorBody, Rejection

from .errors import SendRejected

if TYPE_CHECKING:
    from lineup.client import Connection

Clock = Callable[[], datetime]
E = TypeVar("E", bound=Envelope)


def new_envelope_id(prefix: str = "env") -> str:
    """Client-made, globally unique: a resend after a timeout is deduplicated."""
    return f"{prefix}_{uuid.uuid4().hex}"


class Conversation:
    def __init__(
        self,
        conversation_id: str,
        *,
        user_id: str,
        agent_id: str,
        title: str,
        connection: Connection,
        clock: Clock,
    ) -> None:
        self.id = conversation_id
        self.user_id = user_id
        self.agent_id = agent_id
        self.title = title
        self._connection = connection
        self._clock = clock

    def __repr__(self) -> str:
        return f"Conversation(id={self.id!r}, user_id={self.user_id!r})"

    async def send(self, envelope: Envelope) -> int:
        """Validate and send one envelope; return its sequence number once durable.

        The envelope is checked with the same decoder the AppServer uses, so a bad
        one fails here with the same code instead of on the server. Cancelling the
        wait (``asyncio.timeout``) does not unsend: the envelope stays queued and is
        still delivered, once; sending the same envelope again waits for that.
        """
        body = encode(envelope)
        checked = decode(body)
        if isinstance(checked, Rejection):
            raise SendRejected(
                ErrorBody(code=checked.code, message=checked.message, path=checked.path)
            )
        ack = await self._connection.send_envelope(envelope.id, body)
        return ack.seq

    def message(
        self, text: str, *, reply_to: str | None = None, envelope_id: str | None = None
    ) -> MessageEnvelope:
        """Build (without sending) a markdown message from this agent."""
        payload = payloads.Message(text=text, reply_to=reply_to)
        return self._make(MessageEnvelope, "msg", payload, envelope_id)

    def _make(
        self,
        kind: Callable[..., E],
        prefix: str,
        payload: payloads.Payload,
        envelope_id: str | None,
    ) -> E:
        return kind(
            id=envelope_id or new_envelope_id(prefix),
            conversation_id=self.id,
            sender=Sender(kind="agent", id=self.agent_id),
            created_at=self._clock(),
            payload=payload,
        )

    async def send_markdown(
        self, text: str, *, reply_to: str | None = None, envelope_id: str | None = None
    ) -> int:
        return await self.send(self.message(text, reply_to=reply_to, envelope_id=envelope_id))

    async def send_status(
        self,
        state: Literal["idle", "thinking", "working", "waiting", "done"],
        text: str | None = None,
    ) -> int:
        payload = payloads.Status(state=state, text=text)
        return await self.send(self._make(StatusEnvelope, "st", payload, None))

    async def send_progress(
        self,
        progress_id: str,
        current: float,
        *,
        total: float | None = None,
        label: str | None = None,
        state: Literal["running", "completed", "failed", "cancelled"] = "running",
    ) -> int:
        payload = payloads.Progress(
            progress_id=progress_id, current=current, total=total, label=label, state=state
        )
        return await self.send(self._make(ProgressEnvelope, "pg", payload, None))

    async def send_error(self, code: str, message: str, *, ref_id: str | None = None) -> int:
        payload = payloads.Error(code=code, message=message, ref_id=ref_id)
        return await self.send(self._make(ErrorEnvelope, "err", payload, None))


def utcnow() -> datetime:
    return datetime.now(UTC)
