"""SQLite engine: one writer thread with group commit, a small pool of readers.

Every write is a named ``*_txn(txn, ...)`` function run by the single writer
thread. The writer drains whatever jobs are queued, runs each inside its own
savepoint of one transaction and commits once, so concurrent senders share one
fsync (``synchronous=FULL`` in WAL mode makes each commit durable). Reads run on
per-thread connections that never block the writer (WAL).
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from lineup.db import Job, SQLiteDatabase, StorageError, Txn

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

T = TypeVar("T")


def _ts(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value)


class SQLiteStorage:
    """The default AppServer storage: a single SQLite file under the data dir."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock = utcnow,
        batch_max: int = 1024,
        readers: int = 4,
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._db = SQLiteDatabase(
            self.path,
            resources.files(migrations).joinpath("sqlite"),
            batch_max=batch_max,
            readers=readers,
            on_batch_start=self._batch_started,
            after_commit=self._committed,
            name="appserver",
        )
        self._db.on_rollback(self._forget_sequences)
        self._commit_listeners: list[CommitListener] = []
        self._conversation_listeners: list[ConversationListener] = []
        self._last_seq: dict[str, int] = {}  # writer thread only
        self._batch_time = ""  # writer thread only: when the current batch began
        self.schema_version = 0

    @property
    def commits(self) -> int:
        """Transactions committed by the writer: fewer than jobs when sends share fsyncs."""
        return self._db.commits

    # --- lifecycle -------------------------------------------------------------------

    async def open(self) -> None:
        self.schema_version = await self._db.open()

    async def close(self) -> None:
        await self._db.close()

    def on_commit(self, listener: CommitListener) -> None:
        self._commit_listeners.append(listener)

    def on_conversation(self, listener: ConversationListener) -> None:
        self._conversation_listeners.append(listener)

    def on_resync(self, listener: Callable[[], None]) -> None:
        """Never called: commits are heard from this process's own writer."""

    def _batch_started(self) -> None:
        self._batch_time = _ts(self._clock())

    def _forget_sequences(self) -> None:
        self._last_seq.clear()

    def _committed(self, batch: Sequence[Job]) -> None:
        committed = [
            StoredEnvelope(job.args[0].conversation_id, job.result.seq, job.args[0].body)
            for job in batch
            if job.fn == self._append_txn
            and isinstance(job.result, AppendOutcome)
            and job.result.status is AppendStatus.STORED
        ]
        if committed:
            for listener in self._commit_listeners:
                try:
                    listener(committed)
                except Exception as exc:
                    log.error("commit listener failed", extra={"error": type(exc).__name__})

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._db.write(fn, *args)

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._db.read(fn, *args)

    # --- users, agents, credentials ----------------------------------------------------

    async def create_user(self, user_id: str, username: str, password_hash: str) -> UserRecord:
        now = self._clock()
        try:
            await self._write(_create_user_txn, user_id, username, password_hash, _ts(now))
        except sqlite3.IntegrityError:
            raise AlreadyExists(f"user {username!r} already exists") from None
        return UserRecord(user_id, username, password_hash, now)

    async def get_user_by_name(self, username: str) -> UserRecord | None:
        return await self._read(_get_user_by_name, username)

    async def create_agent(self, agent_id: str, name: str, key_hash: str) -> AgentRecord:
        now = self._clock()
        try:
            await self._write(_create_agent_txn, agent_id, name, key_hash, _ts(now))
        except sqlite3.IntegrityError:
            raise AlreadyExists(f"agent {agent_id!r} already exists") from None
        return AgentRecord(agent_id, name, now)

    async def add_agent_key(self, agent_id: str, key_hash: str) -> None:
        await self._write(_add_agent_key_txn, agent_id, key_hash, _ts(self._clock()))

    async def agent_for_key(self, key_hash: str) -> AgentRecord | None:
        return await self._read(_agent_for_key, key_hash)

    async def add_token(self, token_hash: str, user_id: str, expires_at: datetime) -> None:
        now = _ts(self._clock())
        await self._write(_add_token_txn, token_hash, user_id, _ts(expires_at), now)

    async def user_for_token(self, token_hash: str, now: datetime) -> str | None:
        return await self._read(_user_for_token, token_hash, _ts(now))

    async def revoke_token(self, token_hash: str) -> bool:
        return await self._write(_revoke_token_txn, token_hash)

    async def principal_exists(self, principal: Principal) -> bool:
        return await self._read(_principal_exists, principal.kind, principal.id)

    # --- conversations and envelopes ---------------------------------------------------

    async def create_conversation(
        self, conversation_id: str, user_id: str, agent_id: str, title: str
    ) -> ConversationRecord | None:
        now = self._clock()
        created = await self._write(
            _create_conversation_txn, conversation_id, user_id, agent_id, title, _ts(now)
        )
        if not created:
            return None
        record = ConversationRecord(conversation_id, user_id, agent_id, title, now, 0)
        for listener in self._conversation_listeners:
            listener(record)
        return record

    async def get_conversation(self, conversation_id: str) -> ConversationRecord | None:
        return await self._read(_get_conversation, conversation_id)

    async def list_conversations(self, principal: Principal) -> list[ConversationRecord]:
        return await self._read(_list_conversations, principal.kind, principal.id)

    async def append(self, request: AppendRequest) -> AppendOutcome:
        return await self.append_nowait(request)

    def append_nowait(self, request: AppendRequest) -> asyncio.Future[AppendOutcome]:
        """Queue the append now (so calls keep their order) and return its outcome."""
        # One INSERT is the append's only write: no savepoint needed.
        return self._db.submit(self._append_txn, request, savepoint=False)

    def _append_txn(self, txn: Txn, request: AppendRequest) -> AppendOutcome:
        # One clock read per commit, not per envelope: received_at is when the
        # batch that stores it began.
        received_at = self._batch_time
        conversation_id = request.conversation_id
        last = self._last_seq.get(conversation_id)
        if last is None:
            if (
                txn.execute(
                    "SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)
                ).fetchone()
                is None
            ):
                return AppendOutcome(AppendStatus.NO_CONVERSATION)
            row = txn.execute(
                "SELECT MAX(seq) FROM envelopes WHERE conversation_id = ?", (conversation_id,)
            ).fetchone()
            last = row[0] or 0
        seq = last + 1
        try:
            txn.execute(
                "INSERT INTO envelopes (conversation_id, seq, envelope_id, type, sender_kind, body,"
                " received_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    conversation_id,
                    seq,
                    request.envelope_id,
                    request.type,
                    request.sender_kind,
                    request.body,
                    received_at,
                ),
            )
        except sqlite3.IntegrityError:
            row = txn.execute(
                "SELECT seq, body FROM envelopes WHERE conversation_id = ? AND envelope_id = ?",
                (conversation_id, request.envelope_id),
            ).fetchone()
            if row is None:
                # The sequence slot was taken behind our back (another writer on the
                # same file): forget the cached value so the caller's retry reloads it.
                self._last_seq.pop(conversation_id, None)
                raise StorageError("sequence number already taken; retry") from None
            self._last_seq[conversation_id] = last
            if bytes(row[1]) == request.body:
                return AppendOutcome(AppendStatus.DUPLICATE, row[0])
            return AppendOutcome(AppendStatus.CONFLICT, row[0])
        self._last_seq[conversation_id] = seq
        return AppendOutcome(AppendStatus.STORED, seq)

    async def read_since(
        self, conversation_id: str, since: int, limit: int
    ) -> list[StoredEnvelope]:
        return await self._read(_read_since, conversation_id, since, limit)


# --- transaction and query functions (run on the writer or a reader thread) -------------


def _create_user_txn(txn: Txn, user_id: str, username: str, password_hash: str, now: str) -> None:
    txn.execute(
        "INSERT INTO users (id, username, password_hash, created_at) VALUES (?, ?, ?, ?)",
        (user_id, username, password_hash, now),
    )


def _get_user_by_name(conn: sqlite3.Connection, username: str) -> UserRecord | None:
    row = conn.execute(
        "SELECT id, username, password_hash, created_at FROM users WHERE username = ?", (username,)
    ).fetchone()
    return UserRecord(row[0], row[1], row[2], _dt(row[3])) if row else None


def _create_agent_txn(txn: Txn, agent_id: str, name: str, key_hash: str, now: str) -> None:
    txn.execute("INSERT INTO agents (id, name, created_at) VALUES (?, ?, ?)", (agent_id, name, now))
    _add_agent_key_txn(txn, agent_id, key_hash, now)


def _add_agent_key_txn(txn: Txn, agent_id: str, key_hash: str, now: str) -> None:
    txn.execute(
        "INSERT INTO agent_keys (key_hash, agent_id, created_at) VALUES (?, ?, ?)",
        (key_hash, agent_id, now),
    )


def _agent_for_key(conn: sqlite3.Connection, key_hash: str) -> AgentRecord | None:
    row = conn.execute(
        "SELECT a.id, a.name, a.created_at FROM agent_keys k JOIN agents a ON a.id = k.agent_id"
        " WHERE k.key_hash = ? AND k.revoked = 0",
        (key_hash,),
    ).fetchone()
    return AgentRecord(row[0], row[1], _dt(row[2])) if row else None


def _add_token_txn(txn: Txn, token_hash: str, user_id: str, expires_at: str, now: str) -> None:
    txn.execute(
        "INSERT INTO user_tokens (token_hash, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
        (token_hash, user_id, expires_at, now),
    )


def _user_for_token(conn: sqlite3.Connection, token_hash: str, now: str) -> str | None:
    row = conn.execute(
        "SELECT user_id FROM user_tokens WHERE token_hash = ? AND revoked = 0 AND expires_at > ?",
        (token_hash, now),
    ).fetchone()
    return row[0] if row else None


def _revoke_token_txn(txn: Txn, token_hash: str) -> bool:
    cur = txn.execute(
        "UPDATE user_tokens SET revoked = 1 WHERE token_hash = ? AND revoked = 0", (token_hash,)
    )
    return cur.rowcount > 0


def _principal_exists(conn: sqlite3.Connection, kind: str, principal_id: str) -> bool:
    query = (
        "SELECT 1 FROM users WHERE id = ?"
        if kind == "user"
        else "SELECT 1 FROM agents WHERE id = ?"
    )
    return conn.execute(query, (principal_id,)).fetchone() is not None


def _create_conversation_txn(
    txn: Txn,
    conversation_id: str,
    user_id: str,
    agent_id: str,
    title: str,
    now: str,
) -> bool:
    cur = txn.execute(
        "INSERT OR IGNORE INTO conversations (id, user_id, agent_id, title, created_at)"
        " VALUES (?, ?, ?, ?, ?)",
        (conversation_id, user_id, agent_id, title, now),
    )
    return cur.rowcount > 0


_CONVERSATION_COLUMNS = (
    "c.id, c.user_id, c.agent_id, c.title, c.created_at,"
    " COALESCE((SELECT MAX(seq) FROM envelopes e WHERE e.conversation_id = c.id), 0)"
)


def _conversation(row: Sequence[Any]) -> ConversationRecord:
    return ConversationRecord(row[0], row[1], row[2], row[3], _dt(row[4]), row[5])


def _get_conversation(conn: sqlite3.Connection, conversation_id: str) -> ConversationRecord | None:
    row = conn.execute(
        f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.id = ?",  # noqa: S608
        (conversation_id,),
    ).fetchone()
    return _conversation(row) if row else None


def _list_conversations(
    conn: sqlite3.Connection, kind: str, principal_id: str
) -> list[ConversationRecord]:
    column = "user_id" if kind == "user" else "agent_id"
    rows = conn.execute(
        f"SELECT {_CONVERSATION_COLUMNS} FROM conversations c WHERE c.{column} = ?"  # noqa: S608
        " ORDER BY c.created_at, c.id",
        (principal_id,),
    ).fetchall()
    return [_conversation(row) for row in rows]


def _read_since(
    conn: sqlite3.Connection, conversation_id: str, since: int, limit: int
) -> list[StoredEnvelope]:
    rows = conn.execute(
        "SELECT seq, body FROM envelopes WHERE conversation_id = ? AND seq > ?"
        " ORDER BY seq LIMIT ?",
        (conversation_id, since, limit),
    ).fetchall()
    return [StoredEnvelope(conversation_id, row[0], bytes(row[1])) for row in rows]
