"""The Runtime's local store: one SQLite file per user, one writer.

Every state change and the envelope it must send are written in one transaction
(the transactional outbox); every received envelope, its inbox rows and the new
cursor too (``receive``). Audit rows hold ids, types and codes only, never content.

Each writer job runs with a ``RuntimeTxn``; what it registers runs after its commit
through the store's sinks: outbox rows go to the senders, events to the listeners
(the kernel and the registry adopt their values first, then the Runtime tells the
hosts), new deadlines wake the timer. This module keeps the session,
conversations, timeline, outbox, inbox and audit, and imports nothing that routes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from lineup.db import SQLiteDatabase
from lineup.protocol.payloads import ClientInventory

from . import interaction_store, migrations, timeline_pages
from .events import RuntimeEvent
from .interaction_store import Outcome
from .records import (
    AuditRow,
    ConversationInfo,
    InboxItem,
    InteractionRecord,
    OutboxItem,
    Session,
    TimelineItem,
)
from .tables import audit, get_item, queue, show
from .timeline_pages import TimelinePage
from .txn import RuntimeTxn, Sql

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class Sinks:
    """Where committed units of work go, in the order listeners were added."""

    def __init__(self) -> None:
        self.senders: list[Callable[[OutboxItem], None]] = []
        self.listeners: list[Callable[[RuntimeEvent], None]] = []
        self.timers: list[Callable[[], None]] = []

    def send(self, item: OutboxItem) -> None:
        for send in self.senders:
            send(item)

    def emit(self, event: RuntimeEvent) -> None:
        for listener in self.listeners:
            listener(event)

    def deadline_added(self) -> None:
        for timer in self.timers:
            timer()


class RuntimeStore:
    def __init__(self, path: str | Path, *, clock: Clock = _utcnow) -> None:
        self.path = Path(path)
        self._clock = clock
        self._sinks = Sinks()
        self._db = SQLiteDatabase(
            self.path,
            resources.files(migrations),
            readers=2,
            name="runtime",
            txn_factory=lambda conn: RuntimeTxn(conn, self._sinks),
        )

    def listen(
        self,
        *,
        send: Callable[[OutboxItem], None] | None = None,
        emit: Callable[[RuntimeEvent], None] | None = None,
        deadline_added: Callable[[], None] | None = None,
    ) -> None:
        """Run these for every committed unit of work (see ``RuntimeTxn``)."""
        if send is not None:
            self._sinks.senders.append(send)
        if emit is not None:
            self._sinks.listeners.append(emit)
        if deadline_added is not None:
            self._sinks.timers.append(deadline_added)

    @property
    def db(self) -> SQLiteDatabase:
        """For components that own tables in this store (host sessions)."""
        return self._db

    async def open(self) -> None:
        await self._db.open()
        self.path.chmod(0o600)  # it holds the AppServer token

    async def close(self) -> None:
        await self._db.close()

    def now(self) -> str:
        """The store's clock, as the timestamps it stores."""
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    # --- session --------------------------------------------------------------------------

    async def save_session(self, session: Session) -> None:
        await self._db.write(_save_session_txn, session, self.now())

    async def load_session(self) -> Session | None:
        return await self._db.read(_load_session)

    async def clear_session(self) -> None:
        await self._db.write(_clear_session_txn, self.now())

    # --- conversations ---------------------------------------------------------------------

    async def upsert_conversation(self, conversation_id: str, agent_id: str, title: str) -> None:
        await self._db.write(upsert_conversation_txn, conversation_id, agent_id, title, self.now())

    async def conversations(self) -> list[ConversationInfo]:
        return await self._db.read(_conversations)

    # --- sending ---------------------------------------------------------------------------

    async def queue_envelope(
        self, conversation_id: str, envelope_id: str, type: str, sender_kind: str, body: bytes
    ) -> TimelineItem:
        """Show it (``sending``) and put it in the outbox, in one transaction."""
        return await self._db.write(
            _queue_txn, conversation_id, envelope_id, type, sender_kind, body, self.now()
        )

    async def outbox(self) -> list[OutboxItem]:
        return await self._db.read(_outbox)

    async def mark_sent(
        self, conversation_id: str, envelope_id: str, seq: int
    ) -> TimelineItem | None:
        return await self._db.write(_mark_sent_txn, conversation_id, envelope_id, seq, self.now())

    async def mark_failed(
        self, conversation_id: str, envelope_id: str, code: str
    ) -> TimelineItem | None:
        return await self._db.write(
            _mark_failed_txn, conversation_id, envelope_id, code, self.now()
        )

    async def retry(self, conversation_id: str, envelope_id: str) -> TimelineItem | None:
        """Put a ``failed`` envelope back in the outbox (``None`` if it is not failed)."""
        return await self._db.write(_retry_txn, conversation_id, envelope_id, self.now())

    # --- the timeline -------------------------------------------------------------------------

    async def item(self, conversation_id: str, envelope_id: str) -> TimelineItem | None:
        return await self._db.read(get_item, conversation_id, envelope_id)

    # --- interactions ------------------------------------------------------------------------

    async def answer(self, interaction_id: str, conversation_id: str, value: Any) -> Outcome:
        """The person's answer: the first valid one wins; the rest are refused."""
        return await self._db.write(
            interaction_store.answer, interaction_id, conversation_id, value, self.now()
        )

    async def expire_due(self) -> list[Outcome]:
        return await self._db.write(interaction_store.expire_due, self.now())

    async def fail_interaction(self, interaction_id: str) -> Outcome:
        return await self._db.write(interaction_store.fail, interaction_id, self.now())

    async def interaction(self, interaction_id: str) -> InteractionRecord | None:
        return await self._db.read(interaction_store.get, interaction_id)

    async def pending_interactions(self) -> list[InteractionRecord]:
        return await self._db.read(interaction_store.pending)

    async def next_expiry(self) -> datetime | None:
        value = await self._db.read(interaction_store.next_expiry)
        return None if value is None else datetime.fromisoformat(value)

    async def publish_inventory(
        self, conversation_id: str, inventory: ClientInventory
    ) -> OutboxItem | None:
        return await self._db.write(
            interaction_store.publish_inventory, conversation_id, inventory, self.now()
        )

    async def open_app_session(
        self,
        app_session_id: str,
        conversation_id: str,
        agent_id: str,
        app_scope: str,
        instance_id: str,
    ) -> None:
        await self._db.write(
            interaction_store.open_app_session,
            app_session_id,
            conversation_id,
            agent_id,
            app_scope,
            instance_id,
            self.now(),
        )

    async def close_app_session(self, app_session_id: str) -> bool:
        return await self._db.write(interaction_store.close_app_session, app_session_id, self.now())

    async def timeline(self, conversation_id: str, *, limit: int = 50) -> list[TimelineItem]:
        """The newest ``limit`` rows, in the conversation's order (unsent rows last)."""
        found = await self.page(conversation_id, limit=limit)
        assert found is not None
        return found.items

    async def page(
        self,
        conversation_id: str,
        *,
        before: int | None = None,
        after: int | None = None,
        limit: int = 50,
    ) -> TimelinePage | None:
        """``limit`` rows just before (or after) the row keyed ``before`` (``after``),
        the newest when neither is given; ``None`` for a key not in the conversation."""
        return await self._db.read(timeline_pages.page, conversation_id, before, after, limit)

    async def rejections(self) -> list[tuple[str, int, str, int]]:
        return await self._db.read(_rejections)

    # --- MiniApp inbox -------------------------------------------------------------------------

    async def inbox(self, app_scope: str, *, after_id: int = 0) -> list[InboxItem]:
        """Unacknowledged messages for ``app_scope``, oldest first."""
        return await self._db.read(_inbox, app_scope, after_id)

    async def inbox_ack(self, app_scope: str, inbox_id: int) -> bool:
        """Acknowledge one message; ``False`` when unknown, not this scope's, or acked."""
        return await self._db.write(_inbox_ack_txn, app_scope, inbox_id, self.now())

    async def inbox_ack_envelopes(
        self, app_scope: str, conversation_id: str, envelope_ids: Sequence[str]
    ) -> int:
        """Acknowledge ``app_scope``'s messages by envelope id; returns how many changed."""
        return await self._db.write(
            _inbox_ack_envelopes_txn, app_scope, conversation_id, list(envelope_ids), self.now()
        )

    # --- audit -------------------------------------------------------------------------------

    async def audit(self, limit: int = 1000) -> list[AuditRow]:
        return await self._db.read(_audit, limit)


# --- transaction and query functions ------------------------------------------------------


def _save_session_txn(txn: Sql, session: Session, now: str) -> None:
    txn.executemany(
        "INSERT OR REPLACE INTO session (key, value) VALUES (?, ?)",
        [
            ("server_url", session.server_url),
            ("username", session.username),
            ("user_id", session.user_id),
            ("token", session.token),
        ],
    )
    audit(txn, now, f"user:{session.user_id}", "login", session.server_url, "ok")


def _load_session(conn: Sql) -> Session | None:
    values = dict(conn.execute("SELECT key, value FROM session").fetchall())
    if {"server_url", "username", "user_id", "token"} - values.keys():
        return None
    return Session(values["server_url"], values["username"], values["user_id"], values["token"])


def _clear_session_txn(txn: Sql, now: str) -> None:
    user = txn.execute("SELECT value FROM session WHERE key = 'user_id'").fetchone()
    txn.execute("DELETE FROM session")
    audit(txn, now, f"user:{user[0] if user else '?'}", "logout", "session", "ok")


def upsert_conversation_txn(
    txn: Sql, conversation_id: str, agent_id: str, title: str, now: str
) -> None:
    txn.execute(
        "INSERT INTO conversations (id, agent_id, title, created_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET title = excluded.title",
        (conversation_id, agent_id, title, now),
    )


def _conversations(conn: Sql) -> list[ConversationInfo]:
    rows = conn.execute(
        "SELECT id, agent_id, title, cursor FROM conversations ORDER BY created_at, id"
    ).fetchall()
    return [ConversationInfo(*row) for row in rows]


def _queue_txn(
    txn: RuntimeTxn,
    conversation_id: str,
    envelope_id: str,
    type: str,
    sender_kind: str,
    body: bytes,
    now: str,
) -> TimelineItem:
    queue(txn, conversation_id, envelope_id, type, sender_kind, body, now)
    item = show(txn, conversation_id, envelope_id)
    assert item is not None
    return item


def _outbox(conn: Sql) -> list[OutboxItem]:
    rows = conn.execute(
        "SELECT id, conversation_id, envelope_id, body FROM outbox ORDER BY id"
    ).fetchall()
    return [OutboxItem(row[0], row[1], row[2], bytes(row[3])) for row in rows]


def _mark_sent_txn(
    txn: RuntimeTxn, conversation_id: str, envelope_id: str, seq: int, now: str
) -> TimelineItem | None:
    removed = txn.execute(
        "DELETE FROM outbox WHERE conversation_id = ? AND envelope_id = ?",
        (conversation_id, envelope_id),
    ).rowcount
    updated = txn.execute(
        "UPDATE timeline SET state = 'sent', seq = ?, error_code = NULL"
        " WHERE conversation_id = ? AND envelope_id = ? AND (state = 'sending'"
        " OR (state = 'sent' AND seq IS NOT ?))",
        (seq, conversation_id, envelope_id, seq),
    ).rowcount
    if removed:
        audit(txn, now, "runtime", "send", f"{conversation_id}/{envelope_id}", "acknowledged")
    if not updated:
        return None  # the echo came first and already marked it sent: nothing to show
    return show(txn, conversation_id, envelope_id)


def _mark_failed_txn(
    txn: RuntimeTxn, conversation_id: str, envelope_id: str, code: str, now: str
) -> TimelineItem | None:
    txn.execute(
        "DELETE FROM outbox WHERE conversation_id = ? AND envelope_id = ?",
        (conversation_id, envelope_id),
    )
    txn.execute(
        "UPDATE timeline SET state = 'failed', error_code = ?"
        " WHERE conversation_id = ? AND envelope_id = ? AND state = 'sending'",
        (code, conversation_id, envelope_id),
    )
    audit(txn, now, "runtime", "send", f"{conversation_id}/{envelope_id}", "refused", code)
    return show(txn, conversation_id, envelope_id)


def _retry_txn(
    txn: RuntimeTxn, conversation_id: str, envelope_id: str, now: str
) -> TimelineItem | None:
    item = get_item(txn, conversation_id, envelope_id)
    if item is None or item.state != "failed":
        return None
    txn.execute("UPDATE timeline SET state = 'sending', error_code = NULL WHERE id = ?", (item.id,))
    cursor = txn.execute(
        "INSERT INTO outbox (conversation_id, envelope_id, body, created_at) VALUES (?, ?, ?, ?)",
        (conversation_id, envelope_id, item.body, now),
    )
    audit(txn, now, item.sender_kind, "send", f"{conversation_id}/{envelope_id}", "retried")
    assert cursor.lastrowid is not None
    txn.send(OutboxItem(cursor.lastrowid, conversation_id, envelope_id, item.body))
    return show(txn, conversation_id, envelope_id)


def _rejections(conn: Sql) -> list[tuple[str, int, str, int]]:
    rows = conn.execute("SELECT conversation_id, seq, code, size FROM rejections ORDER BY id")
    return [(r[0], r[1], r[2], r[3]) for r in rows.fetchall()]


def _inbox(conn: Sql, app_scope: str, after_id: int) -> list[InboxItem]:
    rows = conn.execute(
        "SELECT i.id, i.app_scope, i.conversation_id, i.envelope_id, t.body FROM inbox i"
        " JOIN timeline t"
        " ON t.conversation_id = i.conversation_id AND t.envelope_id = i.envelope_id"
        " WHERE i.app_scope = ? AND i.acked_at IS NULL AND i.id > ? ORDER BY i.id",
        (app_scope, after_id),
    ).fetchall()
    return [InboxItem(r[0], r[1], r[2], r[3], bytes(r[4])) for r in rows]


def _inbox_ack_txn(txn: Sql, app_scope: str, inbox_id: int, now: str) -> bool:
    cur = txn.execute(
        "UPDATE inbox SET acked_at = ? WHERE id = ? AND app_scope = ? AND acked_at IS NULL",
        (now, inbox_id, app_scope),
    )
    return cur.rowcount > 0


def _inbox_ack_envelopes_txn(
    txn: Sql, app_scope: str, conversation_id: str, ids: list[str], now: str
) -> int:
    changed = 0
    for envelope_id in ids:
        changed += txn.execute(
            "UPDATE inbox SET acked_at = ? WHERE app_scope = ? AND conversation_id = ?"
            " AND envelope_id = ? AND acked_at IS NULL",
            (now, app_scope, conversation_id, envelope_id),
        ).rowcount
    return changed


def _audit(conn: Sql, limit: int) -> list[AuditRow]:
    rows = conn.execute(
        "SELECT id, at, actor, action, subject, outcome, code FROM audit ORDER BY id LIMIT ?",
        (limit,),
    ).fetchall()
    return [AuditRow(*row) for row in rows]
