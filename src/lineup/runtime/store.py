"""The Runtime's local store: one SQLite file per user, one writer.

Every state change and the envelope it must send are written in one transaction
(the transactional outbox); every received envelope, its inbox rows and the new
cursor too. Audit rows hold ids, types and codes only, never content.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lineup.db import SQLiteDatabase
from lineup.protocol.errors import ErrorCode
from lineup.protocol.payloads import ClientInventory

from . import interaction_store, migrations, ui_surfaces
from .interaction_store import Outcome
from .records import (
    AuditRow,
    ConversationInfo,
    InboxItem,
    InteractionRecord,
    OutboxItem,
    Received,
    Session,
    SurfaceRecord,
    TimelineItem,
)
from .tables import TIMELINE_SELECT, audit, get_item, queue, timeline_item

if TYPE_CHECKING:
    from .apps.instance_store import LifecycleResult
    from .apps.router import LifecycleHook
    from .capabilities.gateway import Outcome as CapabilityOutcome

Clock = Callable[[], datetime]


def _utcnow() -> datetime:
    return datetime.now(UTC)


class RuntimeStore:
    def __init__(self, path: str | Path, *, clock: Clock = _utcnow) -> None:
        self.path = Path(path)
        self._clock = clock
        self._db = SQLiteDatabase(self.path, resources.files(migrations), readers=2, name="runtime")

    @property
    def db(self) -> SQLiteDatabase:
        """For components that own tables in this store (host sessions)."""
        return self._db

    async def open(self) -> None:
        await self._db.open()
        self.path.chmod(0o600)  # it holds the AppServer token

    async def close(self) -> None:
        await self._db.close()

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    # --- session --------------------------------------------------------------------------

    async def save_session(self, session: Session) -> None:
        await self._db.write(_save_session_txn, session, self._now())

    async def load_session(self) -> Session | None:
        return await self._db.read(_load_session)

    async def clear_session(self) -> None:
        await self._db.write(_clear_session_txn, self._now())

    # --- conversations ---------------------------------------------------------------------

    async def upsert_conversation(self, conversation_id: str, agent_id: str, title: str) -> None:
        await self._db.write(
            _upsert_conversation_txn, conversation_id, agent_id, title, self._now()
        )

    async def conversations(self) -> list[ConversationInfo]:
        return await self._db.read(_conversations)

    # --- sending ---------------------------------------------------------------------------

    async def queue_envelope(
        self, conversation_id: str, envelope_id: str, type: str, sender_kind: str, body: bytes
    ) -> TimelineItem:
        """Show it (``sending``) and put it in the outbox, in one transaction."""
        return await self._db.write(
            _queue_txn, conversation_id, envelope_id, type, sender_kind, body, self._now()
        )

    async def outbox(self) -> list[OutboxItem]:
        return await self._db.read(_outbox)

    async def mark_sent(
        self, conversation_id: str, envelope_id: str, seq: int
    ) -> TimelineItem | None:
        return await self._db.write(_mark_sent_txn, conversation_id, envelope_id, seq, self._now())

    async def mark_failed(
        self, conversation_id: str, envelope_id: str, code: str
    ) -> TimelineItem | None:
        return await self._db.write(
            _mark_failed_txn, conversation_id, envelope_id, code, self._now()
        )

    async def retry(self, conversation_id: str, envelope_id: str) -> TimelineItem | None:
        """Put a ``failed`` envelope back in the outbox (``None`` if it is not failed)."""
        return await self._db.write(_retry_txn, conversation_id, envelope_id, self._now())

    # --- receiving ---------------------------------------------------------------------------

    async def apply_received(
        self,
        items: Sequence[Received],
        *,
        lifecycle: LifecycleHook | None = None,
        inline_surfaces: frozenset[str] = frozenset(),
        remembered: frozenset[tuple[str, str]] = frozenset(),
    ) -> Applied:
        """Store received envelopes, their inbox rows and the new cursors atomically.

        Envelopes at or below a conversation's cursor are skipped (already applied);
        one we sent ourselves turns our ``sending`` row into ``sent``. A ``tool.call``
        starts its interaction, or is routed by the Tool Router when it names an
        ordinary tool (or is refused with one ``rejected`` result), and an
        ``interaction.dismiss`` is applied, in the same transaction. ``lifecycle``:
        how the router runs instance operations (the kernel's hook; by default
        straight on the store). An agent's ``ui.*`` is applied too
        (``ui_surfaces``; ``inline_surfaces``: the dev-mode allowlist of inline
        bundle integrities).
        """
        return await self._db.write(
            _apply_received_txn, list(items), self._now(), lifecycle, inline_surfaces, remembered
        )

    # --- surfaces an agent opened --------------------------------------------------------------

    async def ui_event(
        self, conversation_id: str, instance_id: str, name: str, data: dict[str, Any]
    ) -> ui_surfaces.UiOutcome:
        """The person's event from a surface (see ``ui_surfaces.event``)."""
        return await self._db.write(
            ui_surfaces.event, conversation_id, instance_id, name, data, self._now()
        )

    async def item(self, conversation_id: str, envelope_id: str) -> TimelineItem | None:
        return await self._db.read(get_item, conversation_id, envelope_id)

    async def app_event(
        self,
        conversation_id: str,
        instance_id: str,
        app_scope: str,
        name: str,
        data: dict[str, Any],
    ) -> ui_surfaces.UiOutcome:
        """An event from an app instance's own surface (see ``ui_surfaces.app_event``)."""
        return await self._db.write(
            ui_surfaces.app_event,
            conversation_id,
            instance_id,
            app_scope,
            name,
            data,
            self._now(),
        )

    async def ui_surface(self, conversation_id: str, instance_id: str) -> SurfaceRecord | None:
        return await self._db.read(ui_surfaces.record_of, conversation_id, instance_id)

    async def ui_inline_parts(
        self, conversation_id: str, open_envelope_id: str
    ) -> tuple[str, str, str] | None:
        return await self._db.read(ui_surfaces.inline_parts, conversation_id, open_envelope_id)

    # --- interactions ------------------------------------------------------------------------

    async def answer(self, interaction_id: str, conversation_id: str, value: Any) -> Outcome:
        """The person's answer: the first valid one wins; the rest are refused."""
        return await self._db.write(
            interaction_store.answer, interaction_id, conversation_id, value, self._now()
        )

    async def expire_due(self) -> list[Outcome]:
        return await self._db.write(interaction_store.expire_due, self._now())

    async def fail_interaction(self, interaction_id: str) -> Outcome:
        return await self._db.write(interaction_store.fail, interaction_id, self._now())

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
            interaction_store.publish_inventory, conversation_id, inventory, self._now()
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
            self._now(),
        )

    async def close_app_session(self, app_session_id: str) -> bool:
        return await self._db.write(
            interaction_store.close_app_session, app_session_id, self._now()
        )

    async def timeline(
        self, conversation_id: str, *, before_seq: int | None = None, limit: int = 50
    ) -> list[TimelineItem]:
        """The newest ``limit`` items (older than ``before_seq``), oldest first; unsent last."""
        return await self._db.read(_timeline, conversation_id, before_seq, limit)

    async def rejections(self) -> list[tuple[str, int, str, int]]:
        return await self._db.read(_rejections)

    # --- MiniApp inbox -------------------------------------------------------------------------

    async def inbox(self, app_scope: str, *, after_id: int = 0) -> list[InboxItem]:
        """Unacknowledged messages for ``app_scope``, oldest first."""
        return await self._db.read(_inbox, app_scope, after_id)

    async def inbox_ack(self, app_scope: str, inbox_id: int) -> bool:
        """Acknowledge one message; ``False`` when unknown, not this scope's, or acked."""
        return await self._db.write(_inbox_ack_txn, app_scope, inbox_id, self._now())

    async def inbox_ack_envelopes(
        self, app_scope: str, conversation_id: str, envelope_ids: Sequence[str]
    ) -> int:
        """Acknowledge ``app_scope``'s messages by envelope id; returns how many changed."""
        return await self._db.write(
            _inbox_ack_envelopes_txn, app_scope, conversation_id, list(envelope_ids), self._now()
        )

    # --- audit -------------------------------------------------------------------------------

    async def audit(self, limit: int = 1000) -> list[AuditRow]:
        return await self._db.read(_audit, limit)


# --- transaction and query functions ------------------------------------------------------


def _save_session_txn(conn: sqlite3.Connection, session: Session, now: str) -> None:
    conn.executemany(
        "INSERT OR REPLACE INTO session (key, value) VALUES (?, ?)",
        [
            ("server_url", session.server_url),
            ("username", session.username),
            ("user_id", session.user_id),
            ("token", session.token),
        ],
    )
    audit(conn, now, f"user:{session.user_id}", "login", session.server_url, "ok")


def _load_session(conn: sqlite3.Connection) -> Session | None:
    values = dict(conn.execute("SELECT key, value FROM session").fetchall())
    if {"server_url", "username", "user_id", "token"} - values.keys():
        return None
    return Session(values["server_url"], values["username"], values["user_id"], values["token"])


def _clear_session_txn(conn: sqlite3.Connection, now: str) -> None:
    user = conn.execute("SELECT value FROM session WHERE key = 'user_id'").fetchone()
    conn.execute("DELETE FROM session")
    audit(conn, now, f"user:{user[0] if user else '?'}", "logout", "session", "ok")


def _upsert_conversation_txn(
    conn: sqlite3.Connection, conversation_id: str, agent_id: str, title: str, now: str
) -> None:
    conn.execute(
        "INSERT INTO conversations (id, agent_id, title, created_at) VALUES (?, ?, ?, ?)"
        " ON CONFLICT (id) DO UPDATE SET title = excluded.title",
        (conversation_id, agent_id, title, now),
    )


def _conversations(conn: sqlite3.Connection) -> list[ConversationInfo]:
    rows = conn.execute(
        "SELECT id, agent_id, title, cursor FROM conversations ORDER BY created_at, id"
    ).fetchall()
    return [ConversationInfo(*row) for row in rows]


def _queue_txn(
    conn: sqlite3.Connection,
    conversation_id: str,
    envelope_id: str,
    type: str,
    sender_kind: str,
    body: bytes,
    now: str,
) -> TimelineItem:
    queue(conn, conversation_id, envelope_id, type, sender_kind, body, now)
    item = get_item(conn, conversation_id, envelope_id)
    assert item is not None
    return item


def _outbox(conn: sqlite3.Connection) -> list[OutboxItem]:
    rows = conn.execute(
        "SELECT id, conversation_id, envelope_id, body FROM outbox ORDER BY id"
    ).fetchall()
    return [OutboxItem(row[0], row[1], row[2], bytes(row[3])) for row in rows]


def _mark_sent_txn(
    conn: sqlite3.Connection, conversation_id: str, envelope_id: str, seq: int, now: str
) -> TimelineItem | None:
    removed = conn.execute(
        "DELETE FROM outbox WHERE conversation_id = ? AND envelope_id = ?",
        (conversation_id, envelope_id),
    ).rowcount
    updated = conn.execute(
        "UPDATE timeline SET state = 'sent', seq = ?, error_code = NULL"
        " WHERE conversation_id = ? AND envelope_id = ? AND (state = 'sending'"
        " OR (state = 'sent' AND seq IS NOT ?))",
        (seq, conversation_id, envelope_id, seq),
    ).rowcount
    if removed:
        audit(conn, now, "runtime", "send", f"{conversation_id}/{envelope_id}", "acknowledged")
    if not updated:
        return None  # the echo came first and already marked it sent: nothing to show
    return get_item(conn, conversation_id, envelope_id)


def _mark_failed_txn(
    conn: sqlite3.Connection, conversation_id: str, envelope_id: str, code: str, now: str
) -> TimelineItem | None:
    conn.execute(
        "DELETE FROM outbox WHERE conversation_id = ? AND envelope_id = ?",
        (conversation_id, envelope_id),
    )
    conn.execute(
        "UPDATE timeline SET state = 'failed', error_code = ?"
        " WHERE conversation_id = ? AND envelope_id = ? AND state = 'sending'",
        (code, conversation_id, envelope_id),
    )
    audit(conn, now, "runtime", "send", f"{conversation_id}/{envelope_id}", "refused", code)
    return get_item(conn, conversation_id, envelope_id)


def _retry_txn(
    conn: sqlite3.Connection, conversation_id: str, envelope_id: str, now: str
) -> TimelineItem | None:
    item = get_item(conn, conversation_id, envelope_id)
    if item is None or item.state != "failed":
        return None
    conn.execute(
        "UPDATE timeline SET state = 'sending', error_code = NULL WHERE id = ?", (item.id,)
    )
    conn.execute(
        "INSERT INTO outbox (conversation_id, envelope_id, body, created_at) VALUES (?, ?, ?, ?)",
        (conversation_id, envelope_id, item.body, now),
    )
    audit(conn, now, item.sender_kind, "send", f"{conversation_id}/{envelope_id}", "retried")
    return get_item(conn, conversation_id, envelope_id)


@dataclass(frozen=True, slots=True)
class Applied:
    """What one batch of received envelopes changed."""

    items: list[TimelineItem]
    """Timeline rows to show again (new, changed, or whose interaction changed)."""
    cursors: dict[str, int]
    """Conversations whose cursor moved, and where to."""
    outbox: list[OutboxItem]
    """Envelopes the batch queued (tool results) to send now."""
    expiry_changed: bool = False
    lifecycle: list[tuple[int, LifecycleResult]] = field(default_factory=list)
    """Instance operations the Tool Router ran (for the kernel to adopt)."""
    bound: list[str] = field(default_factory=list)
    """Instances that the Tool Router gave new calls (their apps are told)."""
    capability_calls: list[CapabilityOutcome] = field(default_factory=list)
    """Agents' ``app.call``s taken in (for the gateway to tell hosts)."""


def _apply_received_txn(
    conn: sqlite3.Connection,
    items: list[Received],
    now: str,
    lifecycle: LifecycleHook | None = None,
    inline_surfaces: frozenset[str] = frozenset(),
    remembered: frozenset[tuple[str, str]] = frozenset(),
) -> Applied:
    from .apps import router  # the router imports the kernel, which imports this module
    from .capabilities import gateway as capability_gateway  # (it imports this module)
    from .capabilities.calls import OPEN as capability_open

    applied: list[TimelineItem] = []
    cursors: dict[str, int] = {}
    outbox: list[OutboxItem] = []
    lifecycles: list[tuple[int, LifecycleResult]] = []
    bound: list[str] = []
    capability_calls: list[CapabilityOutcome] = []
    expiry_changed = False
    for item in items:
        cursor = cursors.get(item.conversation_id)
        if cursor is None:
            row = conn.execute(
                "SELECT cursor FROM conversations WHERE id = ?", (item.conversation_id,)
            ).fetchone()
            if row is None:
                continue  # not a conversation we know; the sync loop adds them first
            cursor = row[0]
        if item.seq <= cursor:
            continue
        cursors[item.conversation_id] = item.seq
        if item.envelope_id is None:
            conn.execute(
                "INSERT INTO rejections (conversation_id, seq, code, size, at)"
                " VALUES (?, ?, ?, ?, ?)",
                (
                    item.conversation_id,
                    item.seq,
                    item.code or ErrorCode.MALFORMED_ENVELOPE.value,
                    len(item.body),
                    now,
                ),
            )
            audit(
                conn,
                now,
                "appserver",
                "receive",
                f"{item.conversation_id}#{item.seq}",
                "rejected",
                item.code,
            )
            continue
        existing = get_item(conn, item.conversation_id, item.envelope_id)
        if existing is not None and existing.state == "sent" and existing.seq == item.seq:
            continue  # our own envelope's echo, after its ack: nothing changes
        if existing is not None:
            # Our own envelope coming back: it is stored, whatever the ack said.
            conn.execute(
                "UPDATE timeline SET seq = ?, state = 'sent', error_code = NULL WHERE id = ?",
                (item.seq, existing.id),
            )
            conn.execute(
                "DELETE FROM outbox WHERE conversation_id = ? AND envelope_id = ?",
                (item.conversation_id, item.envelope_id),
            )
            if item.envelope_id.startswith("res_"):  # a tool result is stored: delivered
                router.delivered(conn, item.conversation_id, item.envelope_id, now)
        else:
            conn.execute(
                "INSERT INTO timeline (conversation_id, envelope_id, seq, type, sender_kind, body,"
                " state, created_at) VALUES (?, ?, ?, ?, ?, ?, 'received', ?)",
                (
                    item.conversation_id,
                    item.envelope_id,
                    item.seq,
                    item.type,
                    item.sender_kind,
                    item.body,
                    now,
                ),
            )
            if item.app_scope is not None:
                conn.execute(
                    "INSERT OR IGNORE INTO inbox (app_scope, conversation_id, envelope_id)"
                    " VALUES (?, ?, ?)",
                    (item.app_scope, item.conversation_id, item.envelope_id),
                )
            outcome = None
            if item.call is not None and router.is_ordinary(item.call):
                routed = router.route(
                    conn, item, item.call, now, lifecycle or router.direct_lifecycle
                )
                if routed is not None:
                    outbox.extend(routed.outbox)
                    lifecycles.extend(routed.lifecycle)
                    expiry_changed = expiry_changed or routed.call is not None
                    if routed.call is not None and routed.call.instance_id is not None:
                        bound.append(routed.call.instance_id)
            elif item.call is not None:
                outcome = interaction_store.create(conn, item, item.call, now)
                expiry_changed = expiry_changed or outcome is not None
            elif item.dismiss is not None:
                outcome = interaction_store.dismiss(conn, item.conversation_id, item.dismiss, now)
                if outcome.card is not None:
                    applied.append(outcome.card)
            elif item.type == "lineup.v1.app.call" and item.sender_kind == "agent":
                arrived = capability_gateway.receive(conn, item, now, remembered)
                if arrived is not None:
                    capability_calls.append(arrived)
                    if arrived.outbox is not None:
                        outbox.append(arrived.outbox)
                    if arrived.call is not None and arrived.call.state in capability_open:
                        expiry_changed = True  # its expires_at is a new deadline
            elif item.type in ui_surfaces.UI_TYPES and item.sender_kind == "agent":
                ui = ui_surfaces.apply(conn, item, now, inline_allowlist=inline_surfaces)
                outbox.extend(ui.outbox)
                for envelope_id in ui.changed:
                    if envelope_id != item.envelope_id:
                        shown = get_item(conn, item.conversation_id, envelope_id)
                        if shown is not None:
                            applied.append(shown)
            if outcome is not None and outcome.outbox is not None:
                outbox.append(outcome.outbox)
        stored = get_item(conn, item.conversation_id, item.envelope_id)
        assert stored is not None
        applied.append(stored)
    for conversation_id, cursor in cursors.items():
        conn.execute("UPDATE conversations SET cursor = ? WHERE id = ?", (cursor, conversation_id))
    return Applied(applied, cursors, outbox, expiry_changed, lifecycles, bound, capability_calls)


def _timeline(
    conn: sqlite3.Connection, conversation_id: str, before_seq: int | None, limit: int
) -> list[TimelineItem]:
    if before_seq is None:
        pending = conn.execute(
            f"{TIMELINE_SELECT} WHERE t.conversation_id = ? AND t.seq IS NULL ORDER BY t.id",
            (conversation_id,),
        ).fetchall()
        bound = 2**62
    else:
        pending = []
        bound = before_seq
    synced = conn.execute(
        f"{TIMELINE_SELECT} WHERE t.conversation_id = ? AND t.seq IS NOT NULL AND t.seq < ?"
        " ORDER BY t.seq DESC LIMIT ?",
        (conversation_id, bound, limit),
    ).fetchall()
    return [timeline_item(row) for row in [*reversed(synced), *pending]]


def _rejections(conn: sqlite3.Connection) -> list[tuple[str, int, str, int]]:
    rows = conn.execute("SELECT conversation_id, seq, code, size FROM rejections ORDER BY id")
    return [(r[0], r[1], r[2], r[3]) for r in rows.fetchall()]


def _inbox(conn: sqlite3.Connection, app_scope: str, after_id: int) -> list[InboxItem]:
    rows = conn.execute(
        "SELECT i.id, i.app_scope, i.conversation_id, i.envelope_id, t.body FROM inbox i"
        " JOIN timeline t"
        " ON t.conversation_id = i.conversation_id AND t.envelope_id = i.envelope_id"
        " WHERE i.app_scope = ? AND i.acked_at IS NULL AND i.id > ? ORDER BY i.id",
        (app_scope, after_id),
    ).fetchall()
    return [InboxItem(r[0], r[1], r[2], r[3], bytes(r[4])) for r in rows]


def _inbox_ack_txn(conn: sqlite3.Connection, app_scope: str, inbox_id: int, now: str) -> bool:
    cur = conn.execute(
        "UPDATE inbox SET acked_at = ? WHERE id = ? AND app_scope = ? AND acked_at IS NULL",
        (now, inbox_id, app_scope),
    )
    return cur.rowcount > 0


def _inbox_ack_envelopes_txn(
    conn: sqlite3.Connection, app_scope: str, conversation_id: str, ids: list[str], now: str
) -> int:
    changed = 0
    for envelope_id in ids:
        changed += conn.execute(
            "UPDATE inbox SET acked_at = ? WHERE app_scope = ? AND conversation_id = ?"
            " AND envelope_id = ? AND acked_at IS NULL",
            (now, app_scope, conversation_id, envelope_id),
        ).rowcount
    return changed


def _audit(conn: sqlite3.Connection, limit: int) -> list[AuditRow]:
    rows = conn.execute(
        "SELECT id, at, actor, action, subject, outcome, code FROM audit ORDER BY id LIMIT ?",
        (limit,),
    ).fetchall()
    return [AuditRow(*row) for row in rows]
