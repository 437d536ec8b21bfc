"""PostgreSQL engine (asyncpg): several AppServer processes on one database.

Same interface and semantics as ``SQLiteStorage`` (see ``base``): idempotent appends
per ``(conversation_id, envelope_id)``, gap-free sequence numbers per conversation,
the same outcomes and errors. What differs is how other processes learn of commits:

* **Appends** call ``lineup_append`` (migration 0001): one round trip that locks the
  conversation row and, for each queued envelope in order, checks its id, inserts it
  at the next number and sends a ``NOTIFY`` that PostgreSQL delivers at commit. Each
  conversation has one writer task per process that stores everything queued for it
  in one call (group commit per conversation); conversations run in parallel.
* **Delivery, in this process and across processes,** uses ``LISTEN``: one dedicated
  connection per process hears every commit (conversation, number and, for bodies up
  to 5,000 bytes, the body) and hands it to the commit listeners (the hub). A process
  hears its own commits the same way, so every process hears every envelope once, in
  commit order, which per conversation is sequence order (the row lock). Larger
  bodies are read back in one query per batch, without reordering.
* **A missed notification costs a query, never an envelope.** Streams deliver from
  the hub only the exact next number and read gaps from the database. When the
  listening connection drops, it reconnects and tells ``on_resync`` listeners, which
  make every stream re-read from its cursor.

Migrations are numbered in step with SQLite's and applied under an advisory lock, so
processes starting together migrate once.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
from collections.abc import Callable, Coroutine, Sequence
from datetime import datetime
from importlib import resources
from typing import Any

from lineup.db import StorageError
from lineup.extras import MissingExtra

try:
    import asyncpg
except ImportError:  # lineup[postgres] not installed: one clear line, not a traceback
    raise MissingExtra("asyncpg", "postgres", "a PostgreSQL database") from None

from . import migrations
from .base import (
    AgentRecord,
    AlreadyExists,
    AppendOutcome,
    AppendRequest,
    AppendStatus,
    Clock,
    CommitListener,
    ConversationListener,
    ConversationRecord,
    Principal,
    StoredEnvelope,
    UserRecord,
    utcnow,
)

log = logging.getLogger("lineup.server.storage")


ENVELOPES_CHANNEL = "lineup_envelopes"
CONVERSATIONS_CHANNEL = "lineup_conversations"
LISTENER_NAME = "lineup-listen"
"""The ``application_name`` of each process's LISTEN connection (for operators)."""
_MIGRATION_LOCK = 0x6C696E65  # "line": one advisory lock id for schema migrations
_RECONNECT_DELAYS = (0.1, 0.25, 0.5, 1.0, 2.0)
MAX_BATCH = 256
MAX_BATCH_BYTES = 4 * 1024 * 1024
"""One ``lineup_append`` call stores at most this many envelopes / bytes."""
_STATUS = {
    "stored": AppendStatus.STORED,
    "duplicate": AppendStatus.DUPLICATE,
    "conflict": AppendStatus.CONFLICT,
    "no_conversation": AppendStatus.NO_CONVERSATION,
}
_UNAVAILABLE = (
    asyncpg.PostgresConnectionError,
    asyncpg.InterfaceError,
    asyncpg.exceptions.InsufficientResourcesError,  # too many connections, disk full
    asyncpg.exceptions.OperatorInterventionError,  # shutting down, restarting
    asyncpg.exceptions.QueryCanceledError,  # statement timeout
    TimeoutError,
    OSError,
    # A connection the database dropped while the pool held it can surface as an
    # internal protocol-state error on its next use; the pool then replaces it.
    asyncpg.exceptions.InternalClientError,
)
"""Errors that mean "the database cannot serve now": 503, and retrying is safe."""

ResyncListener = Callable[[], None]


class PostgresStorage:
    """AppServer storage on PostgreSQL at ``dsn``; ``pool_size`` connections per
    process at most (plus one for ``LISTEN``)."""

    def __init__(
        self,
        dsn: str,
        *,
        clock: Clock = utcnow,
        pool_size: int = 10,
        command_timeout: float = 30.0,
    ) -> None:
        self.dsn = dsn
        self._clock = clock
        self._pool_size = pool_size
        self._command_timeout = command_timeout
        self._pool: asyncpg.Pool | None = None
        self._listener: asyncpg.Connection | None = None
        self._listen_task: asyncio.Task[None] | None = None
        self._closing = False
        self._commit_listeners: list[CommitListener] = []
        self._conversation_listeners: list[ConversationListener] = []
        self._resync_listeners: list[ResyncListener] = []
        self._queued: dict[str, list[tuple[AppendRequest, asyncio.Future[AppendOutcome]]]] = {}
        self._writers: dict[str, asyncio.Task[None]] = {}
        self._own_conversations: set[str] = set()
        self._pending: list[tuple[str, int, bytes | None]] = []
        self._waiting: set[str] = set()  # conversations with a body being read back
        self._fetching: asyncio.Task[None] | None = None
        self._background: set[asyncio.Task[None]] = set()
        """Follow-ups of notifications (read-backs, announcements): owned here until
        they end, cancelled by ``close``, a failure logged by its type."""
        self.schema_version = 0
        self.listening = asyncio.Event()

    # --- lifecycle ---------------------------------------------------------------------

    async def open(self) -> None:
        try:
            self._pool = await asyncpg.create_pool(
                self.dsn,
                server_settings={"application_name": "lineup-appserver"},
                min_size=1,
                max_size=self._pool_size,
                command_timeout=self._command_timeout,
            )
            async with self._pool.acquire() as conn:
                self.schema_version = await _migrate(conn)
            await self._listen()
        except _UNAVAILABLE as exc:
            await self.close()
            raise StorageError(f"PostgreSQL is unavailable ({type(exc).__name__})") from exc
        except BaseException:
            await self.close()
            raise
        self._closing = False
        self._listen_task = asyncio.create_task(self._watch_listener())

    async def close(self) -> None:
        self._closing = True
        for task in list(self._background):
            task.cancel()
        if self._background:
            await asyncio.gather(*self._background, return_exceptions=True)
        if self._listen_task is not None:
            self._listen_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._listen_task
        writers = list(self._writers.values())
        if writers:  # in-flight sends finish before the pool closes
            await asyncio.gather(*writers, return_exceptions=True)
        if self._listener is not None:
            with contextlib.suppress(*_UNAVAILABLE):
                await self._listener.close(timeout=5)
            self._listener = None
        if self._pool is not None:
            with contextlib.suppress(*_UNAVAILABLE):
                await asyncio.wait_for(self._pool.close(), timeout=10)
            self._pool = None
        self.listening.clear()

    def on_commit(self, listener: CommitListener) -> None:
        self._commit_listeners.append(listener)

    def on_conversation(self, listener: ConversationListener) -> None:
        self._conversation_listeners.append(listener)

    def on_resync(self, listener: ResyncListener) -> None:
        """Called when notifications may have been missed (the listening connection
        was lost and is back): streams should re-read from their cursors."""
        self._resync_listeners.append(listener)

    @property
    def ready(self) -> bool:
        return self._pool is not None and self.listening.is_set()

    # --- LISTEN ----------------------------------------------------------------------------

    async def _listen(self) -> None:
        connection = await asyncpg.connect(
            self.dsn, server_settings={"application_name": LISTENER_NAME}
        )
        await connection.add_listener(ENVELOPES_CHANNEL, self._on_envelope)
        await connection.add_listener(CONVERSATIONS_CHANNEL, self._on_conversation)
        self._listener = connection
        self.listening.set()

    async def _watch_listener(self) -> None:
        """Keep one LISTEN connection; after a loss, reconnect and resync."""
        while not self._closing:
            connection = self._listener
            if connection is not None and not connection.is_closed():
                lost = asyncio.Event()
                connection.add_termination_listener(_setter(lost))
                if connection.is_closed():
                    lost.set()
                await lost.wait()
            self.listening.clear()
            if self._closing:
                return
            log.warning("postgres listener lost; reconnecting")
            for delay in (*_RECONNECT_DELAYS, *([_RECONNECT_DELAYS[-1]] * 1_000_000)):
                try:
                    await self._listen()
                    break
                except _UNAVAILABLE:
                    await asyncio.sleep(delay)
            log.info("postgres listener back; streams re-read from their cursors")
            for listener in self._resync_listeners:
                listener()

    def _on_envelope(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        payload = str(payload)
        parts = payload.split(" ", 2)
        try:
            conversation_id, seq = parts[0], int(parts[1])
        except (IndexError, ValueError):
            log.warning("malformed notification ignored")
            return
        body = None
        if len(parts) == 3:
            with contextlib.suppress(binascii.Error):
                body = base64.b64decode(parts[2], validate=True)
        if body is not None and conversation_id not in self._waiting:
            self._deliver([StoredEnvelope(conversation_id, seq, body)])
            return
        # Behind a body being read back: keep the conversation's order.
        self._pending.append((conversation_id, seq, body))
        self._waiting.add(conversation_id)
        if self._fetching is None or self._fetching.done():
            self._fetching = self._spawn(self._fetch_pending())

    async def _fetch_pending(self) -> None:
        """Read back the bodies too large for their notification (one query per
        batch) and hand everything on in notification order. A failure leaves the
        streams to find the gap at the next envelope or the next resync."""
        while self._pending:
            batch, self._pending = self._pending, []
            missing = [(c, s) for c, s, body in batch if body is None]
            bodies: dict[tuple[str, int], bytes] = {}
            if missing:
                try:
                    rows = await self._fetch(
                        "SELECT conversation_id, seq, body FROM envelopes"
                        " WHERE (conversation_id, seq) IN"
                        " (SELECT * FROM unnest($1::text[], $2::bigint[]))",
                        [c for c, _ in missing],
                        [s for _, s in missing],
                    )
                except StorageError:
                    log.warning("notified envelopes not read back", extra={"count": len(missing)})
                    rows = []
                bodies = {(r[0], r[1]): bytes(r[2]) for r in rows}
            items = []
            for conversation_id, seq, body in batch:
                found = body if body is not None else bodies.get((conversation_id, seq))
                if found is None:
                    break  # not readable now: the streams fill the gap from storage
                items.append(StoredEnvelope(conversation_id, seq, found))
            self._deliver(items)
            self._waiting = {c for c, _, _ in self._pending}

    def _on_conversation(self, _conn: object, _pid: int, _channel: str, payload: object) -> None:
        payload = str(payload)
        if payload in self._own_conversations:
            self._own_conversations.discard(payload)
            return
        self._spawn(self._announce(payload))

    def _spawn(self, job: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(job)
        self._background.add(task)
        task.add_done_callback(self._ended)
        return task

    def _ended(self, task: asyncio.Task[None]) -> None:
        self._background.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:
            log.error("storage job failed", extra={"error": type(exc).__name__})

    async def _announce(self, conversation_id: str) -> None:
        record = await self.get_conversation(conversation_id)
        if record is not None:
            for listener in self._conversation_listeners:
                listener(record)

    def _deliver(self, items: Sequence[StoredEnvelope]) -> None:
        if not items:
            return
        for listener in self._commit_listeners:
            try:
                listener(items)
            except Exception as exc:
                log.error("commit listener failed", extra={"error": type(exc).__name__})

    # --- helpers -----------------------------------------------------------------------------

    def _require_pool(self) -> asyncpg.Pool:
        if self._pool is None:
            raise StorageError("storage is not open")
        return self._pool

    async def _fetch(self, query: str, *args: Any) -> list[asyncpg.Record]:
        try:
            return list(await self._require_pool().fetch(query, *args))
        except _UNAVAILABLE as exc:
            raise StorageError(f"PostgreSQL is unavailable ({type(exc).__name__})") from exc

    async def _fetchrow(self, query: str, *args: Any) -> asyncpg.Record | None:
        try:
            return await self._require_pool().fetchrow(query, *args)
        except _UNAVAILABLE as exc:
            raise StorageError(f"PostgreSQL is unavailable ({type(exc).__name__})") from exc

    async def _execute(self, query: str, *args: Any) -> str:
        try:
            return str(await self._require_pool().execute(query, *args))
        except _UNAVAILABLE as exc:
            raise StorageError(f"PostgreSQL is unavailable ({type(exc).__name__})") from exc

    # --- users, agents, credentials ------------------------------------------------------

    async def create_user(self, user_id: str, username: str, password_hash: str) -> UserRecord:
        now = self._clock()
        try:
            await self._execute(
                "INSERT INTO users (id, username, password_hash, created_at)"
                " VALUES ($1, $2, $3, $4)",
                user_id,
                username,
                password_hash,
                now,
            )
        except asyncpg.UniqueViolationError:
            raise AlreadyExists(f"user {username!r} already exists") from None
        return UserRecord(user_id, username, password_hash, now)

    async def get_user_by_name(self, username: str) -> UserRecord | None:
        row = await self._fetchrow(
            "SELECT id, username, password_hash, created_at FROM users WHERE username = $1",
            username,
        )
        return UserRecord(row[0], row[1], row[2], row[3]) if row else None

    async def create_agent(self, agent_id: str, name: str, key_hash: str) -> AgentRecord:
        now = self._clock()
        try:
            async with self._require_pool().acquire() as conn, conn.transaction():
                await conn.execute(
                    "INSERT INTO agents (id, name, created_at) VALUES ($1, $2, $3)",
                    agent_id,
                    name,
                    now,
                )
                await conn.execute(
                    "INSERT INTO agent_keys (key_hash, agent_id, created_at) VALUES ($1, $2, $3)",
                    key_hash,
                    agent_id,
                    now,
                )
        except asyncpg.UniqueViolationError:
            raise AlreadyExists(f"agent {agent_id!r} already exists") from None
        except _UNAVAILABLE as exc:
            raise StorageError(f"PostgreSQL is unavailable ({type(exc).__name__})") from exc
        return AgentRecord(agent_id, name, now)

    async def add_agent_key(self, agent_id: str, key_hash: str) -> None:
        await self._execute(
            "INSERT INTO agent_keys (key_hash, agent_id, created_at) VALUES ($1, $2, $3)",
            key_hash,
            agent_id,
            self._clock(),
        )

    async def agent_for_key(self, key_hash: str) -> AgentRecord | None:
        row = await self._fetchrow(
            "SELECT a.id, a.name, a.created_at FROM agent_keys k"
            " JOIN agents a ON a.id = k.agent_id WHERE k.key_hash = $1 AND NOT k.revoked",
            key_hash,
        )
        return AgentRecord(row[0], row[1], row[2]) if row else None

    async def add_token(self, token_hash: str, user_id: str, expires_at: datetime) -> None:
        await self._execute(
            "INSERT INTO user_tokens (token_hash, user_id, expires_at, created_at)"
            " VALUES ($1, $2, $3, $4)",
            token_hash,
            user_id,
            expires_at,
            self._clock(),
        )

    async def user_for_token(self, token_hash: str, now: datetime) -> str | None:
        row = await self._fetchrow(
            "SELECT user_id FROM user_tokens"
            " WHERE token_hash = $1 AND NOT revoked AND expires_at > $2",
            token_hash,
            now,
        )
        return str(row[0]) if row else None

    async def revoke_token(self, token_hash: str) -> bool:
        status = await self._execute(
            "UPDATE user_tokens SET revoked = TRUE WHERE token_hash = $1 AND NOT revoked",
            token_hash,
        )
        return status != "UPDATE 0"

    async def principal_exists(self, principal: Principal) -> bool:
        table = "users" if principal.kind == "user" else "agents"
        row = await self._fetchrow(f"SELECT 1 FROM {table} WHERE id = $1", principal.id)  # noqa: S608
        return row is not None

    # --- conversations and envelopes -------------------------------------------------------

    async def create_conversation(
        self, conversation_id: str, user_id: str, agent_id: str, title: str
    ) -> ConversationRecord | None:
        now = self._clock()
        self._own_conversations.add(conversation_id)
        try:
            async with self._require_pool().acquire() as conn, conn.transaction():
                status = await conn.execute(
                    "INSERT INTO conversations (id, user_id, agent_id, title, created_at)"
                    " VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO NOTHING",
                    conversation_id,
                    user_id,
                    agent_id,
                    title,
                    now,
                )
                if status == "INSERT 0 1":
                    await conn.execute(
                        "SELECT pg_notify($1, $2)", CONVERSATIONS_CHANNEL, conversation_id
                    )
        except _UNAVAILABLE as exc:
            self._own_conversations.discard(conversation_id)
            raise StorageError(f"PostgreSQL is unavailable ({type(exc).__name__})") from exc
        if status != "INSERT 0 1":
            self._own_conversations.discard(conversation_id)
            return None
        record = ConversationRecord(conversation_id, user_id, agent_id, title, now, 0)
        for listener in self._conversation_listeners:
            listener(record)
        return record

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        row = await self._fetchrow(
            "SELECT id, user_id, agent_id, title, created_at, last_seq FROM conversations"
            " WHERE id = $1",
            conversation_id,
        )
        return _conversation(row) if row else None

    async def list_conversations(self, principal: Principal) -> list[ConversationRecord]:
        rows = await self._fetch(_LIST_CONVERSATIONS[principal.kind], principal.id)
        return [_conversation(row) for row in rows]

    async def append(self, request: AppendRequest) -> AppendOutcome:
        return await self.append_nowait(request)

    def append_nowait(self, request: AppendRequest) -> asyncio.Future[AppendOutcome]:
        """Queue the append now. Each conversation has one writer task here: it
        stores whatever is queued for its conversation in one call (one transaction,
        one commit), in call order, then the next run; conversations run in
        parallel on the pool. This is SQLite's group commit, per conversation."""
        conversation_id = request.conversation_id
        outcome: asyncio.Future[AppendOutcome] = asyncio.get_running_loop().create_future()
        self._queued.setdefault(conversation_id, []).append((request, outcome))
        if conversation_id not in self._writers:
            self._writers[conversation_id] = asyncio.create_task(self._write(conversation_id))
        return outcome

    async def _write(self, conversation_id: str) -> None:
        try:
            while queue := self._queued.get(conversation_id):
                size, count = 0, 0
                for request, _ in queue:
                    if count and (count >= MAX_BATCH or size + len(request.body) > MAX_BATCH_BYTES):
                        break
                    size += len(request.body)
                    count += 1
                batch, queue[:count] = queue[:count], []
                try:
                    rows = await self._fetch(
                        "SELECT status, seq FROM lineup_append($1, $2, $3, $4, $5)",
                        conversation_id,
                        [r.envelope_id for r, _ in batch],
                        [r.type for r, _ in batch],
                        [r.sender_kind for r, _ in batch],
                        [r.body for r, _ in batch],
                    )
                except Exception as exc:  # each caller gets it (StorageError: 503)
                    for _, outcome in batch:
                        if not outcome.done():
                            outcome.set_exception(exc)
                    continue
                # Commit listeners hear these from their notifications, like every
                # other process: notifications come in commit order, which for one
                # conversation is sequence order (the row lock), so every process
                # hears each envelope once, in order.
                for (_, outcome), row in zip(batch, rows, strict=True):
                    if not outcome.done():
                        outcome.set_result(AppendOutcome(_STATUS[row[0]], int(row[1])))
        finally:
            del self._writers[conversation_id]
            if not self._queued.get(conversation_id):
                self._queued.pop(conversation_id, None)

    async def read_since(
        self, conversation_id: str, since: int, limit: int
    ) -> list[StoredEnvelope]:
        rows = await self._fetch(
            "SELECT seq, body FROM envelopes WHERE conversation_id = $1 AND seq > $2"
            " ORDER BY seq LIMIT $3",
            conversation_id,
            since,
            limit,
        )
        return [StoredEnvelope(conversation_id, row[0], bytes(row[1])) for row in rows]


def _setter(event: asyncio.Event) -> Callable[[object], None]:
    return lambda _connection: event.set()


_CONVERSATION_SELECT = (
    "SELECT id, user_id, agent_id, title, created_at, last_seq FROM conversations WHERE "
)
_LIST_CONVERSATIONS = {
    "user": _CONVERSATION_SELECT + "user_id = $1 ORDER BY created_at, id",
    "agent": _CONVERSATION_SELECT + "agent_id = $1 ORDER BY created_at, id",
}


def _conversation(row: asyncpg.Record) -> ConversationRecord:
    return ConversationRecord(row[0], row[1], row[2], row[3], row[4], int(row[5]))


async def _migrate(conn: Any) -> int:
    """Apply the numbered migrations not applied yet, under an advisory lock (one
    process migrates; the others wait and find nothing left). Returns the version."""
    files = sorted(
        (entry.name, entry.read_text(encoding="utf-8"))
        for entry in resources.files(migrations).joinpath("postgres").iterdir()
        if entry.name.endswith(".sql")
    )
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock($1)", _MIGRATION_LOCK)
        await conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations"
            " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TIMESTAMPTZ NOT NULL)"
        )
        applied = {r[0] for r in await conn.fetch("SELECT version FROM schema_migrations")}
        known = {int(name.split("_", 1)[0]) for name, _ in files}
        if applied and max(applied) > max(known):
            raise StorageError(
                f"database schema {max(applied)} is newer than this LineUp ({max(known)})"
            )
        for name, sql in files:
            version = int(name.split("_", 1)[0])
            if version in applied:
                continue
            await conn.execute(sql)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, now())",
                version,
                name,
            )
            log.info("schema migrated", extra={"version": version})
        row = await conn.fetchrow("SELECT COALESCE(MAX(version), 0) FROM schema_migrations")
    return int(row[0]) if row else 0
