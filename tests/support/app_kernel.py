"""Helpers for the MiniApp kernel tests (tests/runtime/apps/test_kernel_*.py): a real
on-disk ``RuntimeStore`` with a frozen clock and an ``AppKernel`` whose events and
sends are recorded; tool calls driven to any state through ``tool_call_store``; and
readers for what the store queued, in the order it queued it."""

from __future__ import annotations

import functools
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from lineup.runtime import OutboxItem, RuntimeStore
from lineup.runtime.apps import instance_store, tool_call_store
from lineup.runtime.apps.focus import Instances
from lineup.runtime.apps.kernel import AppKernel
from lineup.runtime.apps.lifecycle import LIVE, State
from lineup.runtime.apps.tool_call_store import CallOutcome, StoredToolCall
from lineup.runtime.apps.tool_calls import Event
from lineup.runtime.events import AppsChanged
from tests.support.interactions import Conversation, StoreHarness

TOOL = "test.do"
APP = "test-app"

PATH_TO: dict[str, tuple[Event, ...]] = {
    "received": (),
    "routing": (Event.ROUTE,),
    "waiting_for_app": (Event.ROUTE, Event.AWAIT_APP),
    "running": (Event.ROUTE, Event.DELIVER),
    "submitted": (Event.ROUTE, Event.DELIVER, Event.COMPLETE),
    "failed_by_app": (Event.ROUTE, Event.DELIVER, Event.FAIL),
    "cancelled_by_app": (Event.ROUTE, Event.DELIVER, Event.APP_CANCEL),
}
"""The events that take a new call to each state (app requests from its instance)."""


@dataclass
class KernelHarness(StoreHarness):
    """``StoreHarness`` with an ``AppKernel`` on the same store, recovered on open."""

    kernel: AppKernel | None = None
    events: list[AppsChanged] = field(default_factory=list)
    sent: list[OutboxItem] = field(default_factory=list)

    async def open(self) -> RuntimeStore:
        store = await super().open()
        self.kernel = AppKernel(store, clock=self.clock)
        store.listen(send=self.sent.append, emit=self._heard)
        await self.kernel.recover()
        return store

    def _heard(self, event: object) -> None:
        """What hosts would hear of instances: changes with effects."""
        if isinstance(event, AppsChanged) and event.effects:
            self.events.append(event)

    @property
    def k(self) -> AppKernel:
        assert self.kernel is not None, "the store is closed"
        return self.kernel

    def now(self) -> str:
        return self.db.now()

    async def stored(self) -> Instances:
        """The value as committed, read back from the file."""
        return await self.db.db.read(instance_store.load)

    async def insert_call(
        self,
        conversation: Conversation,
        call_id: str,
        *,
        instance_id: str | None,
        timeout_ms: int | None = None,
    ) -> StoredToolCall:
        insert = functools.partial(
            tool_call_store.insert, timeout_ms=timeout_ms, instance_id=instance_id
        )
        inserted = await self.db.db.write(
            insert, conversation.id, call_id, f"env-{call_id}", TOOL, self.now()
        )
        assert inserted.call is not None and not inserted.duplicate
        return inserted.call

    async def act(
        self, conversation: Conversation, call_id: str, event: Event, **kwargs: Any
    ) -> CallOutcome:
        return await self.db.db.write(
            functools.partial(tool_call_store.act, **kwargs),
            conversation.id,
            call_id,
            event,
            self.now(),
        )

    async def call_in(
        self,
        conversation: Conversation,
        call_id: str,
        state: str,
        *,
        instance_id: str,
        timeout_ms: int | None = None,
    ) -> StoredToolCall:
        """A new call bound to ``instance_id``, driven to ``state`` (a key of PATH_TO)."""
        call = await self.insert_call(
            conversation, call_id, instance_id=instance_id, timeout_ms=timeout_ms
        )
        for event in PATH_TO[state]:
            kwargs: dict[str, Any] = {}
            if event in (Event.COMPLETE, Event.FAIL, Event.APP_CANCEL):
                kwargs["app_instance_id"] = instance_id
            if event is Event.COMPLETE:
                kwargs["result"] = {"done": call_id}
            if event is Event.FAIL:
                kwargs["code"] = "disk_full"
            outcome = await self.act(conversation, call_id, event, **kwargs)
            assert outcome.decision.accepted, outcome
            assert outcome.call is not None
            call = outcome.call
        return call


@dataclass(frozen=True)
class Queued:
    """One envelope the Runtime queued (a ``runtime`` row of the timeline)."""

    envelope_id: str
    type: str
    payload: dict[str, Any]
    target: dict[str, Any] | None = None

    @property
    def short(self) -> str:
        """``tool.result:<call>:<status>:<code>``, ``app_session.opened``, ..."""
        kind = self.type.removeprefix("lineup.v1.")
        if kind == "tool.result":
            error = self.payload.get("error") or {}
            return f"{kind}:{self.payload['call_id']}:{self.payload['status']}:{error.get('code')}"
        return kind


def queued(path: Path, *, table: str = "timeline", since: int = 0) -> list[Queued]:
    """What the Runtime queued, oldest first (``table``: ``timeline`` keeps every row
    ever queued, ``outbox`` those not yet acknowledged), from row id ``since`` on."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        # Queued rows only: not the Runtime's own (artifact, rejected) rows it never sends.
        where = "sender_kind = 'runtime' AND state != 'received' AND" if table == "timeline" else ""
        rows = conn.execute(
            f"SELECT envelope_id, body FROM {table} WHERE {where} id > ? ORDER BY id",  # noqa: S608
            (since,),
        ).fetchall()
    finally:
        conn.close()
    found = []
    for envelope_id, body in rows:
        decoded = msgspec.json.decode(bytes(body))
        if decoded["type"] == "lineup.v1.client.inventory":
            continue
        found.append(
            Queued(envelope_id, decoded["type"], decoded["payload"], decoded.get("target"))
        )
    return found


def last_row(path: Path, table: str = "timeline") -> int:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = conn.execute(f"SELECT MAX(id) FROM {table}").fetchone()  # noqa: S608
        return int(row[0] or 0)
    finally:
        conn.close()


def sessions(path: Path) -> list[tuple[Any, ...]]:
    """``app_sessions`` rows: (id, conversation_id, agent_id, app_scope, instance_id,
    state)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        return conn.execute(
            "SELECT id, conversation_id, agent_id, app_scope, instance_id, state"
            " FROM app_sessions ORDER BY rowid"
        ).fetchall()
    finally:
        conn.close()


def check_focus(value: Instances) -> None:
    """The invariants of a stored value: the stack holds exactly the live instances,
    nobody is caught starting or stopping after a recovery, focus is the top of the
    stack and the only foreground instance."""
    live = {r.instance_id for r in value.records.values() if r.state in LIVE}
    assert set(value.stack) == live and len(value.stack) == len(live)
    in_front = [r.instance_id for r in value.records.values() if r.state is State.FOREGROUND]
    assert len(in_front) <= 1
    if value.focus is not None:
        assert value.stack[-1] == value.focus
        assert value.records[value.focus].state in (
            State.FOREGROUND,
            State.STARTING,
            State.STOPPING,
        )
    assert in_front == ([value.focus] if value.focus in in_front else [])


def check_recovered(value: Instances) -> None:
    check_focus(value)
    assert not [r for r in value.records.values() if r.state in (State.STARTING, State.STOPPING)]
