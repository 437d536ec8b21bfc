"""Browser sessions of the Web Host, kept in the Runtime's store (``host_sessions``).

The AppServer token never reaches the browser. A browser holds only a random
session cookie (HttpOnly, SameSite=Strict); a one-time login link holds a random
single-use secret that becomes such a cookie. Only SHA-256 hashes are stored.

The Web Host owns the cookie; the Runtime owns the table, so a host never holds the
store or its connection: it asks ``Runtime.host_sessions`` (docs/decisions.md, "The
Runtime's face").
"""

from __future__ import annotations

import hashlib
import secrets
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import Literal

from .store import RuntimeStore

__all__ = ["LINK_TTL", "SESSION_TTL", "HostSessions", "Kind"]

SESSION_TTL = timedelta(days=7)
LINK_TTL = timedelta(minutes=15)

Kind = Literal["session", "link"]


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


class HostSessions:
    """Create, check, redeem and end the Web Host's secrets. No state of its own:
    everything is in the store, so any number of these over one store agree."""

    def __init__(self, store: RuntimeStore) -> None:
        self._store = store

    async def create(self, kind: Kind = "session") -> str:
        """A new secret: a browser session, or a one-time login link."""
        secret = secrets.token_urlsafe(32)
        now = datetime.now(UTC)
        ttl = SESSION_TTL if kind == "session" else LINK_TTL
        await self._store.db.write(
            _create_txn, _hash(secret), kind, now.isoformat(), (now + ttl).isoformat()
        )
        return secret

    async def valid(self, secret: str | None) -> bool:
        if not secret or len(secret) > 128:
            return False
        now = datetime.now(UTC).isoformat()
        return await self._store.db.read(_valid, _hash(secret), now)

    async def redeem_link(self, secret: str | None) -> str | None:
        """Spend a one-time link; return a new session secret, or ``None``."""
        if not secret or len(secret) > 128:
            return None
        now = datetime.now(UTC).isoformat()
        if not await self._store.db.write(_redeem_txn, _hash(secret), now):
            return None
        return await self.create("session")

    async def end(self, secret: str | None) -> None:
        if secret:
            await self._store.db.write(_delete_txn, _hash(secret))


def _create_txn(
    conn: sqlite3.Connection, token_hash: str, kind: str, now: str, expires_at: str
) -> None:
    conn.execute("DELETE FROM host_sessions WHERE expires_at <= ?", (now,))
    conn.execute(
        "INSERT INTO host_sessions (token_hash, kind, created_at, expires_at) VALUES (?, ?, ?, ?)",
        (token_hash, kind, now, expires_at),
    )


def _valid(conn: sqlite3.Connection, token_hash: str, now: str) -> bool:
    row = conn.execute(
        "SELECT 1 FROM host_sessions WHERE token_hash = ? AND kind = 'session' AND expires_at > ?",
        (token_hash, now),
    ).fetchone()
    return row is not None


def _redeem_txn(conn: sqlite3.Connection, token_hash: str, now: str) -> bool:
    cur = conn.execute(
        "DELETE FROM host_sessions WHERE token_hash = ? AND kind = 'link' AND expires_at > ?",
        (token_hash, now),
    )
    return cur.rowcount > 0


def _delete_txn(conn: sqlite3.Connection, token_hash: str) -> None:
    conn.execute("DELETE FROM host_sessions WHERE token_hash = ?", (token_hash,))
