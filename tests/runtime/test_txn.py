"""The Runtime's unit of work (``RuntimeTxn``) on a real store: every outbox row a
transaction queues is sent once after its commit, and never when it rolls back."""

from __future__ import annotations

from pathlib import Path

import pytest

from lineup.protocol import MessageEnvelope, Sender, encode, payloads
from lineup.runtime import RuntimeStore, Session
from lineup.runtime.events import TimelineChanged
from lineup.runtime.tables import queue, show
from lineup.runtime.txn import RuntimeTxn
from tests.support.interactions import T0
from tests.support.receiving import recorder

CONVERSATION = "conv-1"


def _body(envelope_id: str) -> bytes:
    return encode(
        MessageEnvelope(
            id=envelope_id,
            conversation_id=CONVERSATION,
            sender=Sender(kind="user", id="u1"),
            created_at=T0,
            payload=payloads.Message(text="hi"),
        )
    )


def _queue_and_show(txn: RuntimeTxn, envelope_id: str, now: str, fail: bool) -> None:
    queue(txn, CONVERSATION, envelope_id, "lineup.v1.message", "user", _body(envelope_id), now)
    show(txn, CONVERSATION, envelope_id)
    if fail:
        raise RuntimeError("the decision fell through")


@pytest.fixture
async def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    made = RuntimeStore(tmp_path / "runtime.sqlite3")
    await made.open()
    await made.save_session(Session("http://appserver.invalid", "alice", "u1", "tok"))
    await made.upsert_conversation(CONVERSATION, "agent-1", "")
    yield made
    await made.close()


async def test_a_queued_row_is_sent_and_shown_once_after_the_commit(store: RuntimeStore) -> None:
    seen = recorder(store)
    await store.db.write(_queue_and_show, "msg_1", store.now(), False)
    assert [item.envelope_id for item in seen.current.outbox] == ["msg_1"]
    shown = [e.item.envelope_id for e in seen.current.events if isinstance(e, TimelineChanged)]
    assert shown == ["msg_1"]
    assert [item.envelope_id for item in await store.outbox()] == ["msg_1"]


async def test_a_rolled_back_decision_sends_and_shows_nothing(store: RuntimeStore) -> None:
    seen = recorder(store)
    with pytest.raises(RuntimeError, match="fell through"):
        await store.db.write(_queue_and_show, "msg_2", store.now(), True)
    assert seen.current.outbox == [] and seen.current.events == []
    assert await store.outbox() == []
    assert await store.item(CONVERSATION, "msg_2") is None
