"""Read-only queries over the gateway's tables (``capability_calls``, ``artifacts``,
``host_capabilities``) that hosts ask about. Each runs on one of the store's readers
(``store.db.read``) and never writes; hosts reach them through the Runtime's face
(``Runtime.artifact_results``, ``Runtime.declared_capabilities``), never by SQL of
their own."""

from __future__ import annotations

import sqlite3

from .declared import declared

__all__ = ["artifact_results", "declared_names"]


def artifact_results(conn: sqlite3.Connection, conversation_id: str) -> dict[str, str]:
    """Artifact id -> the ``app.result`` envelope of the agent call that made it (the
    gateway's ``Artifact`` does not carry its call)."""
    rows = conn.execute(
        "SELECT a.id, c.result_envelope_id FROM artifacts a JOIN capability_calls c"
        " ON c.conversation_id = a.conversation_id AND c.call_id = a.call_id"
        " AND c.requester_kind = 'agent' WHERE a.conversation_id = ?",
        (conversation_id,),
    ).fetchall()
    return {r[0]: r[1] for r in rows if r[1] is not None}


def declared_names(conn: sqlite3.Connection) -> frozenset[str]:
    """The capabilities declared now (provided by an attached host, not revoked)."""
    return frozenset(declared(conn))
