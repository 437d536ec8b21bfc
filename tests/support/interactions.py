"""Helpers for the interaction tests (tests/runtime/test_interaction*.py): an
injectable clock, the envelopes an agent sends (built and classified exactly as
``Runtime._on_frame`` does), a real on-disk ``RuntimeStore`` fed through
``apply_received``, and the agent's side against a real AppServer."""

from __future__ import annotations

import itertools
import sqlite3
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from lineup import wire
from lineup.protocol import interactions as ix
from lineup.runtime import (
    INVENTORY,
    InteractionRecord,
    Received,
    RuntimeStore,
    Session,
    TimelineChanged,
    classify,
)
from lineup.runtime.tables import result_envelope_id
from tests.support.receiving import Applied, apply_received

if TYPE_CHECKING:
    from tests.conftest import Pair
    from tests.runtime.test_runtime import EventLog

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
SCOPES = frozenset({"chat"})
USER_ID = "user-1"

CHOICE_ARGS: dict[str, Any] = {
    "prompt": "Pick one",
    "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}, {"id": "c", "label": "C"}],
}
CONFIRM_ARGS: dict[str, Any] = {"prompt": "Sure?"}
INPUT_ARGS: dict[str, Any] = {"prompt": "Name?", "max_length": 10, "pattern": "[a-z]+"}
NOTICE_ARGS: dict[str, Any] = {"text": "Heads up"}
ARGS_BY_TOOL: dict[str, dict[str, Any]] = {
    ix.CHOICE: CHOICE_ARGS,
    ix.CONFIRM: CONFIRM_ARGS,
    ix.INPUT: INPUT_ARGS,
    ix.NOTICE: NOTICE_ARGS,
}
VALID_ANSWER: dict[str, dict[str, Any]] = {
    ix.CHOICE: {"selected": ["b"]},
    ix.CONFIRM: {"confirmed": True},
    ix.INPUT: {"text": "alice"},
}
INVALID_ANSWER: dict[str, dict[str, Any]] = {
    ix.CHOICE: {"selected": ["zzz"]},
    ix.CONFIRM: {"confirmed": "yes"},
    ix.INPUT: {"text": "NOT lowercase"},
}


class FrozenClock:
    """A clock that moves only when told to."""

    def __init__(self, now: datetime = T0) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now

    def set(self, now: datetime) -> None:
        self.now = now

    def advance(self, **delta: float) -> datetime:
        self.now += timedelta(**delta)
        return self.now


def at(stored: str) -> datetime:
    """A stored timestamp (``expires_at``, ``created_at``) as a datetime."""
    return datetime.fromisoformat(stored)


def result_id(conversation_id: str, call_id: str) -> str:
    """The one envelope id every result of this call is sent under."""
    return result_envelope_id(conversation_id, call_id)


def envelope(
    conversation_id: str,
    kind: str,
    payload: dict[str, Any],
    *,
    sender_id: str,
    sender_kind: str = "agent",
    envelope_id: str | None = None,
) -> bytes:
    return msgspec.json.encode(
        {
            "v": 1,
            "id": envelope_id or f"env_{uuid.uuid4().hex}",
            "type": kind,
            "conversation_id": conversation_id,
            "sender": {"kind": sender_kind, "id": sender_id},
            "created_at": T0.isoformat(),
            "payload": payload,
        }
    )


def received(conversation_id: str, seq: int, body: bytes) -> Received:
    """What the sync loop makes of one stream frame (see ``Runtime._on_frame``)."""
    frame = wire.EnvelopeFrame(conversation_id=conversation_id, seq=seq, envelope=msgspec.Raw(body))
    return classify(frame, SCOPES, INVENTORY)


def call_payload(
    call_id: str,
    tool: str,
    arguments: dict[str, Any] | None = None,
    *,
    revision: str | None = None,
    app_session_id: str | None = None,
) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "call_id": call_id,
        "tool": tool,
        "inventory_revision": revision or INVENTORY.revision,
        "arguments": ARGS_BY_TOOL.get(tool, {}) if arguments is None else arguments,
    }
    if app_session_id is not None:
        payload["app_session_context"] = {"app_session_id": app_session_id}
    return payload


@dataclass
class Conversation:
    id: str
    agent_id: str


@dataclass
class StoreHarness:
    """A real ``RuntimeStore`` file with a frozen clock, a session and conversations,
    fed the way the sync loop feeds it."""

    path: Path
    clock: FrozenClock = field(default_factory=FrozenClock)
    store: RuntimeStore | None = None
    seqs: dict[str, itertools.count[int]] = field(default_factory=dict)

    @property
    def db(self) -> RuntimeStore:
        assert self.store is not None, "the store is closed"
        return self.store

    async def open(self) -> RuntimeStore:
        self.store = RuntimeStore(self.path, clock=self.clock)
        await self.store.open()
        return self.store

    async def close(self) -> None:
        if self.store is not None:
            await self.store.close()
            self.store = None

    async def restart(self) -> RuntimeStore:
        await self.close()
        return await self.open()

    async def setup(self, *conversations: Conversation) -> None:
        await self.db.save_session(Session("http://appserver.invalid", "alice", USER_ID, "tok"))
        for conversation in conversations:
            await self.db.upsert_conversation(conversation.id, conversation.agent_id, "")

    def next_seq(self, conversation_id: str) -> int:
        counter = self.seqs.setdefault(conversation_id, itertools.count(1))
        return next(counter)

    def frame(
        self, conversation: Conversation, kind: str, payload: dict[str, Any], **kwargs: Any
    ) -> Received:
        kwargs.setdefault("sender_id", conversation.agent_id)
        body = envelope(conversation.id, kind, payload, **kwargs)
        return received(conversation.id, self.next_seq(conversation.id), body)

    def call_frame(
        self, conversation: Conversation, call_id: str, tool: str, **kwargs: Any
    ) -> Received:
        sender = {k: kwargs.pop(k) for k in ("sender_id", "envelope_id") if k in kwargs}
        return self.frame(
            conversation, "lineup.v1.tool.call", call_payload(call_id, tool, **kwargs), **sender
        )

    def dismiss_frame(
        self, conversation: Conversation, call_id: str, control_id: str, **kwargs: Any
    ) -> Received:
        return self.frame(
            conversation,
            "lineup.v1.interaction.dismiss",
            {"control_id": control_id, "call_id": call_id},
            **kwargs,
        )

    async def call(
        self, conversation: Conversation, call_id: str, tool: str, **kwargs: Any
    ) -> Applied:
        return await apply_received(
            self.db, [self.call_frame(conversation, call_id, tool, **kwargs)]
        )

    async def dismiss(
        self, conversation: Conversation, call_id: str, control_id: str, **kwargs: Any
    ) -> Applied:
        return await apply_received(
            self.db, [self.dismiss_frame(conversation, call_id, control_id, **kwargs)]
        )

    def dump(self, *tables: str) -> dict[str, list[tuple[Any, ...]]]:
        """Every row of ``tables`` (committed state, read on a connection of our own)."""
        return dump(self.path, *tables)


STATE_TABLES = (
    "interactions",
    "outbox",
    "timeline",
    "refused_calls",
    "interaction_controls",
    "tool_calls",
)


def dump(path: Path, *tables: str) -> dict[str, list[tuple[Any, ...]]]:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return {
            table: conn.execute(f"SELECT * FROM {table} ORDER BY rowid").fetchall()  # noqa: S608
            for table in tables or STATE_TABLES
        }
    finally:
        conn.close()


@dataclass(frozen=True)
class ResultRow:
    table: str
    envelope_id: str
    call_id: str
    payload: dict[str, Any]


def result_rows(path: Path, conversation_id: str | None = None) -> list[ResultRow]:
    """Every ``tool.result`` the store holds, in the timeline and in the outbox."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows: list[ResultRow] = []
        for table in ("timeline", "outbox"):
            for envelope_id, body in conn.execute(
                f"SELECT envelope_id, body FROM {table} ORDER BY id"  # noqa: S608
            ).fetchall():
                decoded = msgspec.json.decode(bytes(body))
                if decoded["type"] != "lineup.v1.tool.result":
                    continue
                if conversation_id is not None and decoded["conversation_id"] != conversation_id:
                    continue
                payload = decoded["payload"]
                rows.append(ResultRow(table, envelope_id, payload["call_id"], payload))
        return rows
    finally:
        conn.close()


# --- against a real AppServer: the agent's side --------------------------------------------


async def call(
    pair: Pair,
    tool: str,
    arguments: dict[str, Any],
    call_id: str,
    *,
    revision: str | None = None,
    **payload: Any,
) -> None:
    """The agent posts a ``tool.call`` to the AppServer."""
    body = pair.agent.envelope(
        pair.conversation_id,
        kind="lineup.v1.tool.call",
        payload={
            "call_id": call_id,
            "tool": tool,
            "inventory_revision": revision or INVENTORY.revision,
            "arguments": arguments,
            **payload,
        },
    )
    response = await pair.agent.post(pair.conversation_id, body)
    assert response.status_code == 201, response.text


async def results(pair: Pair) -> list[dict[str, Any]]:
    """Every ``tool.result`` payload the AppServer stored for the conversation."""
    stored = await pair.agent.read_all(pair.conversation_id)
    return [
        s["envelope"]["payload"] for s in stored if s["envelope"]["type"] == "lineup.v1.tool.result"
    ]


def record_of(log: EventLog, call_id: str) -> InteractionRecord | None:
    """The newest record the Runtime showed for ``call_id``."""
    found = None
    for event in log.events:
        if not isinstance(event, TimelineChanged) or event.item.interaction is None:
            continue
        if event.item.interaction.call_id == call_id:
            found = event.item.interaction
    return found
