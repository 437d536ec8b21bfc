"""One SQLite file: a writer thread with group commit, a small pool of readers.

Every write is a named ``*_txn(txn, ...)`` function run by the single writer
thread. The writer drains whatever jobs are queued, runs each inside its own
savepoint of one transaction and commits once, so concurrent writers share one
fsync (``synchronous=FULL`` in WAL mode makes each commit durable). Reads run on
per-thread connections that never block the writer (WAL).

Each job gets a ``Txn``, its unit of work: the job runs its SQL through it and
registers on it what must happen once its changes are durable (send the outbox rows
it queued, adopt a new in-memory value, tell the hosts). The writer runs those
callbacks once, in commit order, on the event loop after the commit, and drops them
when the job's savepoint or the batch's commit is rolled back; no caller runs
after-commit work by hand.
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
from importlib.resources.abc import Traversable
from pathlib import Path
from typing import Any, TypeVar

from .migrations import migrate_sqlite

log = logging.getLogger("lineup.db")

T = TypeVar("T")

_STOP = object()


class StorageError(Exception):
    """The engine failed (disk full, database gone): our fault, not the caller's."""


class Txn:
    """One writer job's unit of work (Synapse's ``LoggingTransaction.call_after``).

    It executes the job's SQL on the writer's connection and collects the callbacks
    that must run after the commit. Subclasses add typed effects (the Runtime's
    outbox sends and host events) on top of ``call_after``."""

    __slots__ = ("_after", "_conn")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._after: list[tuple[Callable[..., object], tuple[Any, ...]]] = []

    def execute(self, sql: str, parameters: Any = ()) -> sqlite3.Cursor:
        return self._conn.execute(sql, parameters)

    def executemany(self, sql: str, parameters: Any) -> sqlite3.Cursor:
        return self._conn.executemany(sql, parameters)

    def call_after(self, fn: Callable[..., object], *args: Any) -> None:
        """Run ``fn(*args)`` on the event loop once this job's changes are committed;
        never when they are rolled back. Callbacks run in the order registered."""
        self._after.append((fn, args))

    def run_after(self) -> None:
        """The writer's part: run the callbacks once (an error is logged by type and
        does not stop the ones after it)."""
        after, self._after = self._after, []
        for fn, args in after:
            try:
                fn(*args)
            except Exception as exc:
                log.error(
                    "after-commit callback failed",
                    extra={"code": "after_commit_failed", "error": type(exc).__name__},
                )


TxnFactory = Callable[[sqlite3.Connection], Txn]


class Job:
    """One queued write: its function, arguments and, once run, its result or error
    and its unit of work (``None`` when the job failed: nothing of it follows)."""

    __slots__ = ("args", "error", "fn", "future", "result", "savepoint", "txn")

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
        self.txn: Txn | None = None


AfterCommit = Callable[[Sequence[Job]], None]
"""Called on the event loop after a batch is durable and its futures are resolved."""


class SQLiteDatabase:
    def __init__(
        self,
        path: str | Path,
        migrations: Traversable,
        *,
        batch_max: int = 1024,
        readers: int = 4,
        on_batch_start: Callable[[], None] | None = None,
        after_commit: AfterCommit | None = None,
        txn_factory: TxnFactory = Txn,
        name: str = "sqlite",
    ) -> None:
        self.path = Path(path)
        self._migrations = migrations
        self._batch_max = batch_max
        self._readers = readers
        self._on_batch_start = on_batch_start
        self._after_commit = after_commit
        self._txn_factory = txn_factory
        self._name = name
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._writer: threading.Thread | None = None
        self._read_pool: ThreadPoolExecutor | None = None
        self._local = threading.local()
        self._read_conns: list[sqlite3.Connection] = []
        self._read_lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._on_rollback: list[Callable[[], None]] = []
        self.schema_version = 0
        self.commits = 0
        """Transactions committed by the writer: fewer than jobs when writes share fsyncs."""

    def on_rollback(self, callback: Callable[[], None]) -> None:
        """Run on the writer thread when a batch fails to commit (drop writer caches)."""
        self._on_rollback.append(callback)

    # --- lifecycle -------------------------------------------------------------------

    async def open(self) -> int:
        self._loop = asyncio.get_running_loop()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        ready: asyncio.Future[int] = self._loop.create_future()
        self._writer = threading.Thread(
            target=self._writer_main, args=(ready,), name=f"lineup-{self._name}-writer", daemon=True
        )
        self._writer.start()
        self.schema_version = await ready
        self._read_pool = ThreadPoolExecutor(
            self._readers, thread_name_prefix=f"lineup-{self._name}-read"
        )
        return self.schema_version

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

    @property
    def is_open(self) -> bool:
        return self._writer is not None

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
            version = migrate_sqlite(conn, self._migrations)
        except BaseException as exc:  # report to open(), then stop
            loop.call_soon_threadsafe(_set_exception, ready, StorageError(str(exc)))
            return
        loop.call_soon_threadsafe(_set_result, ready, version)
        try:
            while True:
                first = self._queue.get()
                if first is _STOP:
                    return
                batch: list[Job] = [first]
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
                self._run_batch(conn, batch)
                self.commits += 1
                loop.call_soon_threadsafe(self._finish, batch)
                if stop:
                    return
        finally:
            conn.close()

    def _run_batch(self, conn: sqlite3.Connection, batch: list[Job]) -> None:
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as exc:
            for job in batch:
                job.error = StorageError(f"cannot begin a transaction: {exc}")
            return
        if self._on_batch_start is not None:
            self._on_batch_start()
        for job in batch:
            txn = self._txn_factory(conn)
            if job.savepoint:
                conn.execute("SAVEPOINT job")
                try:
                    job.result = job.fn(txn, *job.args)
                    job.txn = txn
                except BaseException as exc:
                    conn.execute("ROLLBACK TO job")
                    job.error = exc
                conn.execute("RELEASE job")
            else:
                try:
                    job.result = job.fn(txn, *job.args)
                    job.txn = txn
                except BaseException as exc:
                    job.error = exc
        try:
            conn.execute("COMMIT")
        except sqlite3.Error as exc:
            log.error("sqlite commit failed", extra={"code": "commit_failed", "jobs": len(batch)})
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
            for callback in self._on_rollback:
                callback()
            for job in batch:
                job.result = None
                job.txn = None  # nothing of a rolled-back job follows
                job.error = StorageError(f"commit failed: {exc}")

    def _finish(self, batch: list[Job]) -> None:
        for job in batch:  # in commit order, before any caller resumes
            if job.txn is not None:
                job.txn.run_after()
                job.txn = None
        for job in batch:
            if job.future.done():
                continue
            if job.error is not None:
                job.future.set_exception(job.error)
            else:
                job.future.set_result(job.result)
        if self._after_commit is not None:
            try:
                self._after_commit(batch)
            except Exception as exc:
                log.error("after-commit listener failed", extra={"error": type(exc).__name__})

    def submit(self, fn: Callable[..., T], *args: Any, savepoint: bool = True) -> asyncio.Future[T]:
        """Queue a transaction function ``fn(txn, *args)`` for the writer; calls keep
        their order.

        Each job runs in a savepoint, so a failing job undoes only itself. A job
        whose only write is one statement (atomic on its own) may skip it.
        """
        if self._loop is None or self._writer is None:
            raise StorageError("storage is not open")
        future: asyncio.Future[T] = self._loop.create_future()
        self._queue.put(Job(fn, args, future, savepoint))
        return future

    async def write(self, fn: Callable[..., T], *args: Any) -> T:
        return await self.submit(fn, *args)

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

    async def read(self, fn: Callable[..., T], *args: Any) -> T:
        """Run ``fn(conn, *args)`` on a reader connection in the reader pool."""
        if self._loop is None or self._read_pool is None:
            raise StorageError("storage is not open")

        def run() -> T:
            try:
                return fn(self._reader(), *args)
            except sqlite3.Error as exc:
                raise StorageError(str(exc)) from exc

        return await self._loop.run_in_executor(self._read_pool, run)


def _set_result(future: asyncio.Future[Any], value: Any) -> None:
    if not future.done():
        future.set_result(value)


def _set_exception(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)
