"""The throwaway PostgreSQL cluster that the AppServer's PostgreSQL tests run against."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import asyncpg
import pytest

from tests.support.postgres import PostgresCluster, find_pg_bin

# The postgres_cluster / postgres_dsn fixtures come from tests/conftest.py.


async def _user_tables(dsn: str) -> list[str]:
    conn = await asyncpg.connect(dsn)
    try:
        rows = await conn.fetch(
            "SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname NOT IN ('pg_catalog', 'information_schema')"
            " AND n.nspname NOT LIKE 'pg_toast%'"
        )
        return [row[0] for row in rows]
    finally:
        await conn.close()


async def test_fresh_databases_are_distinct_and_empty(postgres_cluster: PostgresCluster) -> None:
    first = postgres_cluster.create_database()
    second = postgres_cluster.create_database()
    assert first != second
    names = {first.rsplit("/", 1)[1], second.rsplit("/", 1)[1]}
    assert names <= set(postgres_cluster.databases())
    assert await _user_tables(first) == []
    assert await _user_tables(second) == []

    conn = await asyncpg.connect(first)
    try:
        await conn.execute("CREATE TABLE t (x int)")
        assert await conn.fetchval("SELECT current_database()") == first.rsplit("/", 1)[1]
        assert await conn.fetchval("SHOW server_encoding") == "UTF8"
    finally:
        await conn.close()
    assert await _user_tables(first) == ["t"]
    assert await _user_tables(second) == []

    postgres_cluster.drop_database(first, wait=True)
    postgres_cluster.drop_database(second, wait=True)
    assert not names & set(postgres_cluster.databases())


async def test_postgres_dsn_fixture_connects(postgres_dsn: str) -> None:
    conn = await asyncpg.connect(postgres_dsn)
    try:
        await conn.execute("CREATE TABLE log (seq bigserial PRIMARY KEY, body text NOT NULL)")
        await conn.executemany("INSERT INTO log (body) VALUES ($1)", [("a",), ("b",)])
        assert await conn.fetchval("SELECT count(*) FROM log") == 2
        # synchronous_commit stays on: the suite tests durability semantics against it.
        assert await conn.fetchval("SHOW synchronous_commit") == "on"
    finally:
        await conn.close()


def _listening(port: int) -> set[str]:
    """Local addresses with a TCP socket listening on `port` (from /proc/net)."""
    found: set[str] = set()
    for table, size in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 16)):
        path = Path(table)
        if not path.exists():
            continue
        for line in path.read_text().splitlines()[1:]:
            fields = line.split()
            address, port_hex = fields[1].split(":")
            if fields[3] != "0A" or int(port_hex, 16) != port:  # 0A: LISTEN
                continue
            raw = bytes.fromhex(address)
            # /proc prints each 32-bit word in host (little-endian) order.
            raw = b"".join(raw[i : i + 4][::-1] for i in range(0, size, 4))
            family = socket.AF_INET if size == 4 else socket.AF_INET6
            found.add(socket.inet_ntop(family, raw))
    return found


async def test_private_cluster_listens_only_on_loopback(
    postgres_cluster: PostgresCluster,
) -> None:
    if postgres_cluster.external:
        pytest.skip(
            "LINEUP_TEST_POSTGRES points the suite at an existing server: no private"
            " cluster was started, so there is no listener of ours to check"
        )
    assert postgres_cluster.port is not None
    if sys.platform == "linux":
        assert _listening(postgres_cluster.port) == {"127.0.0.1"}
    conn = await asyncpg.connect(postgres_cluster.dsn("postgres"))
    try:
        assert await conn.fetchval("SHOW listen_addresses") == "127.0.0.1"
        assert await conn.fetchval("SELECT current_user") == "lineup"
        assert await conn.fetchval("SELECT rolsuper FROM pg_roles WHERE rolname = 'lineup'")
    finally:
        await conn.close()
    try:
        sock = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    except OSError:  # no IPv6 here: nothing to listen on either
        return
    with sock:
        sock.settimeout(2)
        assert sock.connect_ex(("::1", postgres_cluster.port)) != 0


def test_find_pg_bin_honours_override(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("LINEUP_PG_BIN", str(tmp_path))
    with pytest.raises(RuntimeError, match="LINEUP_PG_BIN"):
        find_pg_bin()
