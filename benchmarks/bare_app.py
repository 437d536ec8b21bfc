"""Reference app for ``appserver_ingest.py``: the least an HTTP ingest endpoint can do.

One uvicorn process with the AppServer's settings (uvloop, httptools, one worker)
running a bare Starlette app with one route, ``POST /v1/conversations/{id}/envelopes``.
It reads the body, takes the envelope header with one ``msgspec`` decode (no
validation, no authentication), and inserts the same row the AppServer stores
(same table, same body bytes, next ``seq`` of the conversation) with one commit per
request, in WAL mode with ``synchronous=FULL``. The insert runs on one dedicated
thread with one connection, so the event loop keeps parsing requests while a
commit waits for its fsync.

Run by the benchmark: ``python benchmarks/bare_app.py --db FILE --port PORT``; the
database must already have the AppServer's schema and the conversations.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sqlite3
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import msgspec
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route


class _Sender(msgspec.Struct):
    kind: str


class _Header(msgspec.Struct):
    id: str
    type: str
    conversation_id: str
    sender: _Sender


_decode_header = msgspec.json.Decoder(_Header).decode

_INSERT = (
    "INSERT INTO envelopes (conversation_id, seq, envelope_id, type, sender_kind, body,"
    " received_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


class Store:
    """One connection on one thread; every insert is its own transaction."""

    def __init__(self, path: str) -> None:
        self.executor = ThreadPoolExecutor(1, thread_name_prefix="bare-sqlite")
        self.path = path
        self.conn: sqlite3.Connection | None = None
        self.last_seq: dict[str, int] = {}

    def open(self) -> None:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        self.conn = conn

    def insert(self, header: _Header, body: bytes) -> int:
        conn = self.conn
        assert conn is not None
        cid = header.conversation_id
        last = self.last_seq.get(cid)
        if last is None:
            row = conn.execute(
                "SELECT MAX(seq) FROM envelopes WHERE conversation_id = ?", (cid,)
            ).fetchone()
            last = row[0] or 0
        seq = last + 1
        received_at = datetime.now(UTC).isoformat(timespec="microseconds")
        conn.execute(
            _INSERT, (cid, seq, header.id, header.type, header.sender.kind, body, received_at)
        )
        self.last_seq[cid] = seq
        return seq


def create_app(db_path: str) -> Starlette:
    store = Store(db_path)

    async def post_envelope(request: Request) -> Response:
        body = await request.body()
        try:
            header = _decode_header(body)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return Response(b'{"error":"bad envelope"}', 400, media_type="application/json")
        if header.conversation_id != request.path_params["conversation_id"]:
            return Response(
                b'{"error":"conversation mismatch"}', 400, media_type="application/json"
            )
        loop = asyncio.get_running_loop()
        try:
            seq = await loop.run_in_executor(store.executor, store.insert, header, body)
        except sqlite3.Error:
            return Response(b'{"error":"storage"}', 409, media_type="application/json")
        result = msgspec.json.encode(
            {"conversation_id": header.conversation_id, "id": header.id, "seq": seq}
        )
        return Response(result, 201, media_type="application/json")

    async def healthz(request: Request) -> Response:
        return Response(b'{"status":"ok"}', media_type="application/json")

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await asyncio.get_running_loop().run_in_executor(store.executor, store.open)
        yield
        store.executor.shutdown(wait=True)

    return Starlette(
        routes=[
            Route("/v1/conversations/{conversation_id}/envelopes", post_envelope, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ],
        lifespan=lifespan,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    config = uvicorn.Config(
        create_app(args.db),
        host=args.host,
        port=args.port,
        loop="uvloop",
        http="httptools",
        ws="websockets-sansio",
        lifespan="on",
        access_log=False,
        log_config=None,
    )
    uvicorn.Server(config).run()


if __name__ == "__main__":
    main()
