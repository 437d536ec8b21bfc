"""Read-only queries over the gateway's tables (``host_capabilities``) that hosts ask
about. Each runs on one of the store's readers (``store.db.read``) and never writes;
hosts reach them through the Runtime's face (``Runtime.declared_capabilities``), never
by SQL of their own. (A host finds a conversation's files in its timeline: each has a
row of its own, ``records.ARTIFACT_ROW``.)"""

from __future__ import annotations

import sqlite3

from .declared import declared

__all__ = ["declared_names"]


def declared_names(conn: sqlite3.Connection) -> frozenset[str]:
    """The capabilities declared now (provided by an attached host, not revoked)."""
    return frozenset(declared(conn))
