"""``RuntimeTxn``: the unit of work of one decision in the Runtime's store.

Every write of the Runtime is one writer job, and every job gets one of these. The
transaction functions run their SQL through it and say on it what must follow once
their changes are durable: the outbox rows they queued are sent (``tables.queue``
registers each one itself), hosts hear events, the expiry timer wakes up. The writer
runs all of it once, in commit order, after the commit, and drops it on rollback, so
no caller sends, adopts or notifies by hand.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, Protocol

from lineup.db import Txn

from .records import OutboxItem

if TYPE_CHECKING:
    from .events import RuntimeEvent

__all__ = ["Effects", "RuntimeTxn", "Sql"]


class Sql(Protocol):
    """What a query helper needs: a reader's connection or a writer's ``RuntimeTxn``."""

    def execute(self, sql: str, parameters: Any = ..., /) -> sqlite3.Cursor: ...

    def executemany(self, sql: str, parameters: Any, /) -> sqlite3.Cursor: ...


class Effects(Protocol):
    """Where a committed unit of work goes (``RuntimeStore``'s sinks, which hand it on to
    the listeners: the kernel, the registry, the Runtime, a test's recorder)."""

    def send(self, item: OutboxItem) -> None:
        """An outbox row is durable: send it now if connected (it waits otherwise)."""

    def emit(self, event: RuntimeEvent) -> None:
        """Tell whoever listens (the kernel adopts ``AppsChanged``; hosts hear it)."""

    def deadline_added(self) -> None:
        """A new expiry or timeout was stored: the timer re-reads the next one."""


class RuntimeTxn(Txn):
    __slots__ = ("_effects",)

    def __init__(self, conn: sqlite3.Connection, effects: Effects) -> None:
        super().__init__(conn)
        self._effects = effects

    def send(self, item: OutboxItem) -> None:
        self.call_after(self._effects.send, item)

    def emit(self, event: RuntimeEvent) -> None:
        self.call_after(self._effects.emit, event)

    def deadline_added(self) -> None:
        self.call_after(self._effects.deadline_added)
