"""MCP servers' forms on the Runtime's real store (a SQLite file): the form lands in
the conversation of the call its server runs, the first answer wins, the expiry and
the call's end answer ``cancel``, a restart ends what was pending, and refusals change
nothing. The ``Elicitor`` is the one the Runtime holds; the calls are real rows of
``mcp_calls`` moved by ``call_store``."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup.protocol import ErrorCode
from lineup.runtime import RuntimeStore
from lineup.runtime.events import TimelineChanged
from lineup.runtime.mcp import call_store, elicitation_store
from lineup.runtime.mcp.calls import Event as CallEvent
from lineup.runtime.mcp.elicitation_store import ELICITATION_ROW, row_id
from lineup.runtime.mcp.elicitations import State
from lineup.runtime.mcp.elicitor import ElicitationRefused, Elicitor
from lineup.runtime.txn import RuntimeTxn

WAIT = 10.0
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "title": "Name", "minLength": 1},
        "ok": {"type": "boolean"},
    },
    "required": ["name"],
}


class Clock:
    def __init__(self) -> None:
        self.now = datetime(2026, 12, 2, 12, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now


def _stamp(at: datetime) -> str:
    return at.isoformat(timespec="milliseconds")


def _call_txn(txn: RuntimeTxn, call_id: str, state: str, created: str, expires: str) -> None:
    txn.execute(
        "INSERT OR IGNORE INTO conversations (id, agent_id, title, created_at)"
        " VALUES ('c1', 'agent', '', ?)",
        (created,),
    )
    txn.execute("INSERT OR IGNORE INTO session (key, value) VALUES ('user_id', 'person')")
    txn.execute(
        "INSERT INTO mcp_calls (conversation_id, call_id, envelope_id, agent_id, server_key,"
        " tool, read_only, arguments, state, created_at, expires_at, updated_at)"
        " VALUES ('c1', ?, ?, 'agent', 'srv', 'ask', 0, X'7B7D', ?, ?, ?, ?)",
        (call_id, f"env-{call_id}", state, created, expires, created),
    )


class World:
    def __init__(self, store: RuntimeStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.elicitor = Elicitor(store, clock=clock)
        self.cards: list[bytes] = []
        self.changed = asyncio.Event()
        store.listen(emit=self._emit)

    def _emit(self, event: object) -> None:
        self.elicitor.on_event(event)
        if isinstance(event, TimelineChanged) and event.item.type == ELICITATION_ROW:
            self.cards.append(event.item.body)
            self.changed.set()

    async def call(self, call_id: str, *, state: str = "executing", minutes: int = 60) -> None:
        now = self.clock()
        await self.store.db.write(
            _call_txn, call_id, state, _stamp(now), _stamp(now + timedelta(minutes=minutes))
        )

    async def shown(self) -> elicitation_store.ElicitationRecord:
        """Until a form's card is shown; the form it shows."""
        async with asyncio.timeout(WAIT):
            while not self.cards:
                self.changed.clear()
                await self.changed.wait()
        body = msgspec.json.decode(self.cards[-1])
        record = await self.elicitor.get(body["elicitation_id"])
        assert record is not None
        return record

    async def audit(self) -> list[tuple[str, str, str | None]]:
        def rows(conn: Any) -> list[tuple[str, str, str | None]]:
            return [
                tuple(r)
                for r in conn.execute(
                    "SELECT action, outcome, code FROM audit WHERE action LIKE 'mcp.elicit%'"
                    " ORDER BY id"
                )
            ]

        return await self.store.db.read(rows)


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[World]:
    clock = Clock()
    store = RuntimeStore(tmp_path / "runtime.sqlite3", clock=clock)
    await store.open()
    try:
        yield World(store, clock)
    finally:
        await store.close()


async def test_a_form_goes_to_the_running_call_and_the_first_answer_wins(world: World) -> None:
    await world.call("older")
    world.clock.now += timedelta(seconds=1)
    await world.call("newer")
    await world.call("waiting", state="awaiting_consent")
    asking = asyncio.create_task(world.elicitor.elicit("srv", "Who are you?", SCHEMA))
    record = await world.shown()
    assert (record.conversation_id, record.call_id, record.state) == ("c1", "newer", "pending")
    assert record.expires_at == _stamp(world.clock.now + timedelta(minutes=10))
    # Refusals change nothing: an invalid answer, an unknown form, another conversation.
    for content in ({}, {"name": ""}, {"name": "Ada", "extra": 1}):
        with pytest.raises(ElicitationRefused) as refused:
            await world.elicitor.answer(record.id, "c1", "accept", content)
        assert refused.value.code == ErrorCode.ELICITATION_ANSWER_INVALID
    with pytest.raises(ElicitationRefused) as refused:
        await world.elicitor.answer(record.id, "other", "accept", {"name": "Ada"})
    assert refused.value.code == ErrorCode.ELICITATION_NOT_FOUND
    assert not asking.done()
    assert (await world.elicitor.get(record.id)).state is State.PENDING  # type: ignore[union-attr]
    accepted = await world.elicitor.answer(record.id, "c1", "accept", {"name": "Ada", "ok": True})
    assert accepted.state is State.ACCEPTED
    answer = await asyncio.wait_for(asking, WAIT)
    assert (answer.action, answer.content) == ("accept", {"name": "Ada", "ok": True})
    # A second tab's answer: refused, the first one stands.
    with pytest.raises(ElicitationRefused) as refused:
        await world.elicitor.answer(record.id, "c1", "decline")
    assert refused.value.code == ErrorCode.CALL_ALREADY_FINAL
    card = msgspec.json.decode(world.cards[-1])
    assert (card["state"], card["answer"]) == ("accepted", {"name": "Ada", "ok": True})
    # The audit carries ids, the server, states and codes: never the message or answer.
    rows = await world.audit()
    assert ("mcp.elicit.accept", "srv:accepted", None) in rows
    assert ("mcp.elicit.decline", "srv:accepted", ErrorCode.CALL_ALREADY_FINAL) in rows
    text = repr(rows)
    assert "Ada" not in text and "Who are you" not in text


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_decline_and_cancel_answer_the_server_without_content(
    world: World, action: str
) -> None:
    await world.call("c")
    asking = asyncio.create_task(world.elicitor.elicit("srv", "m", SCHEMA))
    record = await world.shown()
    await world.elicitor.answer(record.id, "c1", action, {"name": "ignored"})
    answer = await asyncio.wait_for(asking, WAIT)
    assert (answer.action, answer.content) == (action, None)
    stored = await world.elicitor.get(record.id)
    assert stored is not None and stored.answer is None


async def test_without_a_running_call_or_with_a_schema_mcp_refuses_it_is_declined(
    world: World,
) -> None:
    answer = await world.elicitor.elicit("srv", "m", SCHEMA)
    assert answer.action == "decline"
    await world.call("c", state="awaiting_consent")
    assert (await world.elicitor.elicit("srv", "m", SCHEMA)).action == "decline"
    await world.call("d")
    nested = {"type": "object", "properties": {"a": {"type": "object"}}}
    assert (await world.elicitor.elicit("srv", "m", nested)).action == "decline"
    assert (await world.elicitor.elicit("other", "m", SCHEMA)).action == "decline"
    assert world.cards == []  # nothing was shown


async def test_the_expiry_answers_cancel_and_never_outlives_the_call(world: World) -> None:
    await world.call("c", minutes=2)  # the call's deadline is sooner than ten minutes
    asking = asyncio.create_task(world.elicitor.elicit("srv", "m", SCHEMA))
    record = await world.shown()
    assert record.expires_at == _stamp(world.clock.now + timedelta(minutes=2))
    world.clock.now += timedelta(minutes=2)
    # An answer at the deadline finds the form expired (the timer had not fired yet).
    with pytest.raises(ElicitationRefused) as refused:
        await world.elicitor.answer(record.id, "c1", "accept", {"name": "late"})
    assert refused.value.code == ErrorCode.INTERACTION_EXPIRED
    answer = await asyncio.wait_for(asking, WAIT)
    assert answer.action == "cancel"
    assert (await world.elicitor.get(record.id)).state is State.EXPIRED  # type: ignore[union-attr]


async def test_the_calls_end_cancels_its_open_form(world: World) -> None:
    await world.call("c")
    await world.call("other")
    asking = asyncio.create_task(world.elicitor.elicit("srv", "m", SCHEMA))
    record = await world.shown()
    now = _stamp(world.clock.now)
    dismiss = functools.partial(call_store.act, actor="agent")
    await world.store.db.write(dismiss, "c1", record.call_id, CallEvent.DISMISS, now)
    answer = await asyncio.wait_for(asking, WAIT)
    assert answer.action == "cancel"
    stored = await world.elicitor.get(record.id)
    assert stored is not None and stored.state is State.CANCELLED
    assert msgspec.json.decode(world.cards[-1])["state"] == "cancelled"


async def test_a_withdrawn_request_cancels_its_form(world: World) -> None:
    await world.call("c")
    asking = asyncio.create_task(world.elicitor.elicit("srv", "m", SCHEMA))
    record = await world.shown()
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    stored = await world.elicitor.get(record.id)
    assert stored is not None and stored.state is State.CANCELLED


async def test_a_restart_ends_pending_forms_cancelled(tmp_path: Path) -> None:
    clock = Clock()
    path = tmp_path / "runtime.sqlite3"
    store = RuntimeStore(path, clock=clock)
    await store.open()
    world = World(store, clock)
    await world.call("c")
    asking = asyncio.create_task(world.elicitor.elicit("srv", "m", SCHEMA))
    record = await world.shown()
    asking.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asking
    await store.db.write(_reopen_as_pending, record.id)
    await store.close()
    again = RuntimeStore(path, clock=clock)
    await again.open()
    try:
        elicitor = Elicitor(again, clock=clock)
        await elicitor.recover()
        stored = await elicitor.get(record.id)
        assert stored is not None and stored.state is State.CANCELLED
        body = await again.db.read(_card_body, record.id)
        assert msgspec.json.decode(body)["state"] == "cancelled"
        with pytest.raises(ElicitationRefused) as refused:
            await elicitor.answer(record.id, "c1", "accept", {"name": "Ada"})
        assert refused.value.code == ErrorCode.CALL_ALREADY_FINAL
    finally:
        await again.close()


def _reopen_as_pending(txn: RuntimeTxn, elicitation_id: str) -> None:
    """What a killed process leaves: the form still pending (its waiter never ended it)."""
    txn.execute(
        "UPDATE mcp_elicitations SET state = 'pending', final_at = NULL WHERE id = ?",
        (elicitation_id,),
    )


def _card_body(conn: Any, elicitation_id: str) -> bytes:
    row = conn.execute(
        "SELECT body FROM timeline WHERE envelope_id = ?", (row_id(elicitation_id),)
    ).fetchone()
    return bytes(row[0])
