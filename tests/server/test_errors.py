"""One JSON error shape for every failure, one test per code the AppServer emits."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import asyncpg
import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request

from lineup.protocol import MAX_ENVELOPE_BYTES, ErrorCode
from lineup.server import SQLiteStorage, auth, create_app
from lineup.server.errors import HTTP_STATUS
from lineup.server.http_api import ROUTES
from lineup.server.storage import PostgresStorage, StorageError
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess, free_port

EMITTED: dict[ErrorCode, str] = {}


def expect(response: httpx.Response, status: int, code: ErrorCode) -> None:
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"}
    assert set(body["error"]) <= {"code", "message", "path"}
    assert body["error"]["code"] == code.value
    assert isinstance(body["error"]["message"], str)
    assert body["error"]["message"]
    assert response.headers["content-type"].startswith("application/json")
    assert HTTP_STATUS[code] == status


async def test_envelope_too_large(pair: Pair) -> None:
    body = b"{" + b" " * (MAX_ENVELOPE_BYTES + 2048) + b"}"
    expect(await pair.agent.post(pair.conversation_id, body), 413, ErrorCode.ENVELOPE_TOO_LARGE)


async def test_malformed_envelope(pair: Pair) -> None:
    expect(await pair.agent.post(pair.conversation_id, b"[]"), 400, ErrorCode.MALFORMED_ENVELOPE)


async def test_unsupported_type(pair: Pair) -> None:
    body = pair.agent.envelope(pair.conversation_id, kind="lineup.v1.teleport")
    expect(await pair.agent.post(pair.conversation_id, body), 422, ErrorCode.UNSUPPORTED_TYPE)


async def test_unsupported_version(pair: Pair) -> None:
    body = dict(pair.agent.envelope(pair.conversation_id), v=3)
    expect(await pair.agent.post(pair.conversation_id, body), 422, ErrorCode.UNSUPPORTED_VERSION)


async def test_invalid_request(pair: Pair) -> None:
    response = await pair.user.http.post("/v1/conversations", content=b"{")
    expect(response, 400, ErrorCode.INVALID_REQUEST)


async def test_unauthorized(appserver: AppServerProcess) -> None:
    async with httpx.AsyncClient(base_url=appserver.url) as http:
        expect(await http.get("/v1/me"), 401, ErrorCode.UNAUTHORIZED)


async def test_rate_limited(appserver: AppServerProcess) -> None:
    appserver.add_user("guessed")
    async with httpx.AsyncClient(base_url=appserver.url) as http:
        for _ in range(10):
            wrong = await http.post("/v1/login", json={"username": "guessed", "password": "x"})
            expect(wrong, 401, ErrorCode.UNAUTHORIZED)
        # Now even the right password waits: guessing cannot tell it apart.
        right = {"username": "guessed", "password": "correct horse battery"}
        throttled = await http.post("/v1/login", json=right)
    expect(throttled, 429, ErrorCode.RATE_LIMITED)
    assert 1 <= int(throttled.headers["retry-after"]) <= 300


async def test_forbidden(pair: Pair) -> None:
    expect(await pair.agent.http.post("/v1/logout"), 403, ErrorCode.FORBIDDEN)


async def test_not_found(pair: Pair) -> None:
    expect(await pair.user.http.get("/v1/conversations/nope"), 404, ErrorCode.NOT_FOUND)
    expect(await pair.user.http.get("/v1/no/such/route"), 404, ErrorCode.NOT_FOUND)


async def test_method_not_allowed(pair: Pair) -> None:
    expect(await pair.user.http.delete("/v1/conversations"), 405, ErrorCode.METHOD_NOT_ALLOWED)


async def test_conflict(pair: Pair) -> None:
    body = pair.agent.envelope(pair.conversation_id, envelope_id="same-id", text="a")
    await pair.agent.post(pair.conversation_id, body)
    changed = dict(body, payload={"text": "b"})
    expect(await pair.agent.post(pair.conversation_id, changed), 409, ErrorCode.CONFLICT)


async def test_sender_mismatch(pair: Pair) -> None:
    body = dict(pair.agent.envelope(pair.conversation_id), sender={"kind": "agent", "id": "x"})
    expect(await pair.agent.post(pair.conversation_id, body), 403, ErrorCode.SENDER_MISMATCH)


async def test_direction_not_allowed(pair: Pair) -> None:
    body = pair.user.envelope(
        pair.conversation_id,
        kind="lineup.v1.ui.close",
        payload={"instance_id": "board.1"},
    )
    expect(await pair.user.post(pair.conversation_id, body), 403, ErrorCode.DIRECTION_NOT_ALLOWED)


@pytest.fixture
async def in_process(tmp_path: Path) -> AsyncIterator[tuple[Starlette, SQLiteStorage]]:
    """The same app, served in-process so a test can break its storage."""
    storage = SQLiteStorage(tmp_path / "db.sqlite3")
    app = create_app(storage)

    async def boom(request: Request) -> None:
        raise RuntimeError("a bug")

    app.add_route("/test/boom", boom)
    async with app.router.lifespan_context(app):
        yield app, storage


async def test_unavailable(
    in_process: tuple[Starlette, SQLiteStorage],
) -> None:
    app, storage = in_process

    # Break the real database underneath the running server.
    with sqlite3.connect(storage.path) as conn:
        conn.execute("DROP TABLE agent_keys")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        response = await http.get("/v1/me", headers={"Authorization": "Bearer lak_x"})
    expect(response, 503, ErrorCode.UNAVAILABLE)


async def test_postgres_connections_dropped_by_the_database_are_replaced(
    postgres_dsn: str,
) -> None:
    """The database drops every connection (a restart, a failover, an operator):
    a request that meets a dead connection answers 503 (retry is safe), and the pool
    replaces the connections, so the requests after it succeed."""
    storage = PostgresStorage(postgres_dsn, pool_size=2)
    app = create_app(storage)
    async with app.router.lifespan_context(app):
        await storage.create_agent("a1", "agent", auth.secret_hash("lak_k"))
        headers = {"Authorization": "Bearer lak_k"}
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
            assert (await http.get("/v1/conversations", headers=headers)).status_code == 200
            connection = await asyncpg.connect(postgres_dsn)
            try:
                dropped = await connection.fetchval(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                    " WHERE application_name = 'lineup-appserver'"
                    " AND datname = current_database()"
                )
            finally:
                await connection.close()
            assert dropped >= 1
            statuses = [
                (await http.get("/v1/conversations", headers=headers)).status_code for _ in range(4)
            ]
    # Each of the two pooled connections may be found dead by one request (503, safe to
    # retry) or replaced before it is used; after that, the pool serves again.
    assert set(statuses) <= {200, 503} and statuses.count(503) <= 2, statuses
    assert statuses[2:] == [200, 200], statuses


async def test_postgres_unreachable_at_start_is_a_storage_error() -> None:
    port = free_port()  # nothing listens there
    storage = PostgresStorage(f"postgresql://lineup@127.0.0.1:{port}/lineup")
    with pytest.raises(StorageError, match="PostgreSQL is unavailable"):
        await storage.open()


async def test_internal_error(in_process: tuple[Starlette, SQLiteStorage]) -> None:
    app, _ = in_process
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="http://t") as http:
        response = await http.get("/test/boom")
    expect(response, 500, ErrorCode.INTERNAL_ERROR)
    assert "a bug" not in response.text


def test_every_server_code_has_a_test_here() -> None:
    tested = {
        name.removeprefix("test_")
        for name in globals()
        if name.startswith("test_") and name.removeprefix("test_") in set(ErrorCode)
    }
    assert set(HTTP_STATUS) <= {ErrorCode(c) for c in tested}


async def test_openapi_documents_every_route(appserver: AppServerProcess) -> None:
    async with httpx.AsyncClient(base_url=appserver.url) as http:
        document = (await http.get("/openapi.json")).json()
    for route in ROUTES:
        operations = document["paths"][route.path]
        for method in route.methods or ():
            if method != "HEAD":
                assert method.lower() in operations, (route.path, method)
    assert "Envelope" in document["components"]["schemas"]
    assert document["openapi"].startswith("3.1")
