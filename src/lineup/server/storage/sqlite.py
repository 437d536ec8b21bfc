"""SQLite engine: one writer thread with group commit, a small pool of readers.

Every write is a named ``*_txn(conn, ...)`` function run by the single writer
thread. The writer drains whatever jobs are queued, runs each inside its own
savepoint of one transaction and commits once, so concurrent senders share one
fsync (``synchronous=FULL`` in WAL mode makes each commit durable). Reads run on
per-thread connections that never block the writer (WAL).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import queue
import sqlite3
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypeVar

from .base import (
    AgentRecord,
    AlreadyExists,
    AppendOutcome,
    AppendRequest,
    AppendStatus,
    CommitListener,
    ConversationListener,
    ConversationRecord,
    Principal,
    StorageError,
    StoredEnvelope,
    UserRecord,
)
from .migrations.runner import migrate_sqlite

log = logging.getLogger("lineup.server.storage")

T = TypeVar("T")
Clock = Callable[[], datetime]

_STOP = object()


def _utcnow() -> datetime:
    return datetime.now(UTC)


def _ts(value: datetime) -> str:
    return value.astimezone(UTC).isoformat(timespec="microseconds")


def _dt(value: str) -> datetime:
    return datetime.fromisoformat(value)


class _Job:
    __slots__ = ("args", "error", "fn", "future", "result", "savepoint")

    def __init__(
        self,
        fn: Callable[..., Any],
        args: tuple[Any, ...],
        future: asyncio.Future[Any],
        savepoint: bool,
    ):
        self.fn = fn
        self.args = args
        self.future = future
        self.savepoint = savepoint
        self.result: Any = None
        self.error: BaseException | None = None


class SQLiteStorage:
    """The default AppServer storage: a single SQLite file under the data dir."""

    def __init__(
        self,
        path: str | Path,
        *,
        clock: Clock = _utcnow,
        batch_max: int = 1024,
        readers: int = 4,
    ) -> None:
        self.path = Path(path)
        self._clock = clock
        self._batch_max = batch_max
        self._readers = readers
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._read_pool: ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._read_conns: list[sqlite3.Connection] = []
        self._read_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._commit_listeners: list[CommitListener] = []
        self._conversation_listeners: list[ConversationListener] = []
        self._last_seq: dict[str, int] = {}  # writer thread only
        self._batch_time = ""  # writer thread only: when the current batch began
        self.schema_version = 0
        self.commits = 0
        """Transactions committed by the writer: fewer than jobs when sends share fsyncs."""

    # --- lifecycle -------------------------------------------------------------------

    async def open(self) -> None:
        self._loop = asyncio.get_running_loop()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ready: asyncio.Future[int] = self._loop.create_future()
        self._writer = threading.Thread(
            target=self._writer_main, args=(ready,), name="lineup-sqlite-writer", daemon=True
        )
        self._writer.start()
        self.schema_version = await ready
        self._read_pool = ThreadPoolExecutor(self._readers, thread_name_prefix="lineup-sqlite-read")

    async def close(self) -> None:
        if self._writer is not None:
            self._queue.put(_STOP)
            await asyncio.to_thread(self._writer.join)
            self._writer = None
        if self._read_pool is not None:
            self._read_pool.shutdown(wait=True)
            self._read_pool = None
        with self._read_lock:
            for conn in self._read_conns:
                conn.close()
            self._read_conns.clear()

    def on_commit(self, listener: CommitListener) -> None:
        self._commit_listeners.append(listener)

    def on_conversation(self, listener: ConversationListener) -> None:
        self._conversation_listeners.append(listener)

    # --- writer ----------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA busy_timeout=5000")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    def _writer_main(self, ready: asyncio.Future[int]) -> None:
        loop = self._loop
        assert loop is not None
        try:
            conn = self._connect()
            version = migrate_sqlite(conn)
        except BaseException as exc:  # report to open(), then stop
            loop.call_soon_threadsafe(_set_exception, ready, StorageError(str(exc)))
            return
        loop.call_soon_threadsafe(_set_result, ready, version)
        try:
            while True:
                first = self._queue.get()
                if first is _STOP:
                    return
                batch: list[_Job] = [first]
                stop = False
                while len(batch) < self._batch_max:
                    try:
                        nxt = self._queue.get_nowait()
                    except queue.Empty:
                        break
                    if nxt is _STOP:
                        stop = True
                        break
                    batch.append(nxt)
                committed = self._run_batch(conn, batch)
                self.commits += 1
                loop.call_soon_threadsafe(self._finish, batch, committed)
                if stop:
                    return
        finally:
            conn.close()

    def _run_batch(self, conn: sqlite3.Connection, batch: list[_Job]) -> list[StoredEnvelope]:
        committed: list[StoredEnvelope] = []
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            for job in batch:
                job.error = StorageError(f"cannot begin a transaction: {exc}")
            return committed
        self._batch_time = _ts(self._clock())
        for job in batch:
            if job.savepoint:
                conn.execute("SAVEPOINT job")
                try:
                    job.result = job.fn(conn, *job.args)
                except BaseException as exc:
                    conn.execute("ROLLBACK TO job")
                    job.error = exc
                conn.execute("RELEASE job")
            else:
                try:
                    job.result = job.fn(conn, *job.args)
                except BaseException as exc:
                    job.error = exc
            result = job.result
            if isinstance(result, AppendOutcome) and result.status is AppendStatus.STORED:
                request: AppendRequest = job.args[0]
                committed.append(StoredEnvelope(request.conversation_id, result.seq, request.body))
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            log.error("sqlite commit failed", extra={"code": "commit_failed", "jobs": len(batch)})
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            self._last_seq.clear()
            for job in batch:
                job.result = None
                job.error = StorageError(f"commit failed: {exc}")
            return []
        return committed

    def _finish(self, batch: list[_Job], committed: list[StoredEnvelope]) -> None:
        for job in batch:
            if job.future.done():
                continue
            if job.error is not None:
                job.future.set_exception(job.error)
            else:
                job.future.set_result(job.result)
        if committed:
            for listener in self._commit_listeners:
                try:
                    listener(committed)
                except Exception:
                    log.exception("commit listener failed")

    def _submit(
        self, fn: Callable[..., T], *args: Any, savepoint: bool = True
    ) -> asyncio.Future[T]:
        """Queue a transaction function for the writer.

        Each job runs in a savepoint, so a failing job undoes only itself. A job
        whose only write is one statement (atomic on its own) may skip it.
        """
        if self._loop is None or self._writer is None:
            raise StorageError("storage is not open")
        future: asyncio.Future[T] = self._loop.create_future()
        self._queue.put(_Job(fn, args, future, savepoint))
        return future

    async def _write(self, fn: Callable[..., T], *args: Any) -> T:
        return await self._submit(fn, *args)

    # --- readers ---------------------------------------------------------------------

    def _reader(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA query_only=ON")
            conn.execute("PRAGMA busy_timeout=5000")
            self._local.conn = conn
            with self._read_lock:
                self._read_conns.append(conn)
        return conn

    async def _read(self, fn: Callable[..., T], *args: Any) -> T:
        if self._loop is None or self._read_pool is None:
            raise StorageError("storage is not open")

        def run() -> T:
            try:
                return fn(self._reader(), *args)
            except sqlite3.Error as exc:
                raise StorageError(str(exc)) from exc

        return await self._loop.run_in_executor(self._read_pool, run)

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
        return self._submit(self._append_txn, request, savepoint=False)

    def _append_txn(self, conn: sqlite3.Connection, request: AppendRequest) -> AppendOutcome:
        # One clock read per commit, not per envelope: received_at is when the
        # batch that stores it began.
        received_at = self._batch_time
        conversation_id = request.conversation_id
        last = self._last_seq.get(conversation_id)
        if last is None:
            if (
                conn.execute(
                    "SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)
                ).fetchone()
                is None
            ):
                return AppendOutcome(AppendStatus.NO_CONVERSATION)
            row = conn.execute(
                "SELECT MAX(seq) FROM envelopes WHERE conversation_id = ?", (conversation_id,)
            ).fetchone()
            last = row[0] or 0
        seq = last + 1
        try:
            conn.execute(
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
            row = conn.execute(
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


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


# --- transaction and query functions (run on the writer or a reader thread) -------------


def _create_user_txn(
    conn: sqlite3.Connection, user_id: str, username: str, password_hash: str, now: str
) -> None:
    conn.execute(
        "INSERT INTO users (id, username, password_hash, created_at) VALUES (?, ?, ?, ?)",
        (user_id, username, password_hash, now),
    )


def _get_user_by_name(conn: sqlite3.Connection, username: str) -> UserRecord | None:
    row = conn.execute(
        "SELECT id, username, password_hash, created_at FROM users WHERE username = ?", (username,)
    ).fetchone()
    return UserRecord(row[0], row[1], row[2], _dt(row[3])) if row else None


def _create_agent_txn(
    conn: sqlite3.Connection, agent_id: str, name: str, key_hash: str, now: str
) -> None:
    conn.execute(
        "INSERT INTO agents (id, name, created_at) VALUES (?, ?, ?)", (agent_id, name, now)
    )
    _add_agent_key_txn(conn, agent_id, key_hash, now)


def _add_agent_key_txn(conn: sqlite3.Connection, agent_id: str, key_hash: str, now: str) -> None:
    conn.execute(
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


def _add_token_txn(
    conn: sqlite3.Connection, token_hash: str, user_id: str, expires_at: str, now: str
) -> None:
    conn.execute(
        "INSERT INTO user_tokens (token_hash, user_id, expires_at, created_at) VALUES (?, ?, ?, ?)",
        (token_hash, user_id, expires_at, now),
    )


def _user_for_token(conn: sqlite3.Connection, token_hash: str, now: str) -> str | None:
    row = conn.execute(
        "SELECT user_id FROM user_tokens WHERE token_hash = ? AND revoked = 0 AND expires_at > ?",
        (token_hash, now),
    ).fetchone()
    return row[0] if row else None


def _revoke_token_txn(conn: sqlite3.Connection, token_hash: str) -> bool:
    cur = conn.execute(
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
    conn: sqlite3.Connection,
    conversation_id: str,
    user_id: str,
    agent_id: str,
    title: str,
    now: str,
) -> bool:
    cur = conn.execute(
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
