"""Artifacts: files a capability call kept for a conversation (``artifact.save`` saved
them in the Runtime; ``device.pick_file`` brought them from the person's browser),
whoever asked: the agent or an app instance.

An artifact's bytes live in the store with their size and SHA-256; the call's result
carries its metadata only (id, name, media type, size), never a path. Hosts read them
back through the gateway (``CapabilityGateway.artifact``, ``artifacts``).

Keeping one is the only way a file becomes visible: in the same transaction it gets
its timeline row (``records.ARTIFACT_ROW``), which every host shows with a download,
live, after a reload, in every tab and after a restart, like any other row. A file an
app instance kept belongs to that instance's sub-session, and its row says so: the IM
shows it inside that sub-session's group. So the agent's files and an app's take one
path, and each shows exactly once.
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

import msgspec

from ..records import ARTIFACT_ROW, ArtifactRow, artifact_row_id
from ..tables import audit, show
from ..txn import RuntimeTxn, Sql

__all__ = ["Artifact", "artifact", "artifacts", "saved_body", "store_artifact"]


@dataclass(frozen=True, slots=True)
class Artifact:
    id: str
    conversation_id: str
    name: str
    media_type: str
    size: int
    sha256: str
    created_at: str
    call_id: str | None = None
    """The capability call that saved or picked it."""


def saved_body(arguments: dict[str, Any]) -> bytes | None:
    """The bytes ``artifact.save`` is asked to keep (``text`` as UTF-8, or ``base64``);
    ``None`` when the base64 does not decode."""
    if "base64" in arguments:
        try:
            return base64.b64decode(arguments["base64"], validate=True)
        except ValueError:
            return None
    text: str = arguments["text"]
    return text.encode("utf-8")


def store_artifact(
    txn: RuntimeTxn,
    conversation_id: str,
    name: str,
    media_type: str,
    body: bytes,
    call_id: str | None,
    now: str,
    *,
    instance_id: str | None = None,
) -> dict[str, Any]:
    """Keep ``body`` as an artifact of the conversation, with its timeline row (hosts
    hear it after the commit); its public metadata. ``instance_id``: the app instance
    that asked for it (``None`` for the agent); the file belongs to its sub-session."""
    artifact_id = f"art_{uuid.uuid4().hex}"
    app_session_id = None if instance_id is None else _app_session_of(txn, instance_id)
    txn.execute(
        "INSERT INTO artifacts (id, conversation_id, name, media_type, size, sha256, body,"
        " call_id, created_at, app_session_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            artifact_id,
            conversation_id,
            name,
            media_type,
            len(body),
            hashlib.sha256(body).hexdigest(),
            body,
            call_id,
            now,
            app_session_id,
        ),
    )
    row = ArtifactRow(
        artifact_id=artifact_id,
        name=name,
        media_type=media_type,
        size=len(body),
        app_session_id=app_session_id,
    )
    # After the newest row the conversation holds now (its seq, if any): the row stays
    # where the file was kept, whatever arrives later (a row of ours still on its way
    # to the AppServer gets a later seq).
    (newest,) = txn.execute(
        "SELECT COALESCE(MAX(seq), 0) FROM timeline WHERE conversation_id = ?",
        (conversation_id,),
    ).fetchone()
    txn.execute(
        "INSERT INTO timeline (conversation_id, envelope_id, seq, type, sender_kind, body,"
        " state, created_at) VALUES (?, ?, ?, ?, 'runtime', ?, 'received', ?)",
        (
            conversation_id,
            artifact_row_id(artifact_id),
            newest,
            ARTIFACT_ROW,
            msgspec.json.encode(row),
            now,
        ),
    )
    audit(txn, now, "runtime", "artifact.store", artifact_id, f"bytes:{len(body)}")
    show(txn, conversation_id, artifact_row_id(artifact_id))
    return {"artifact_id": artifact_id, "name": name, "media_type": media_type, "size": len(body)}


def _app_session_of(conn: Sql, instance_id: str) -> str | None:
    """The sub-session of the app instance (``app_instances``; no import of the app
    kernel's store, which imports this package)."""
    row = conn.execute(
        "SELECT app_session_id FROM app_instances WHERE instance_id = ?", (instance_id,)
    ).fetchone()
    return None if row is None else row[0]


def artifact(conn: Sql, artifact_id: str) -> tuple[Artifact, bytes] | None:
    row = conn.execute(
        "SELECT id, conversation_id, name, media_type, size, sha256, created_at, call_id, body"
        " FROM artifacts WHERE id = ?",
        (artifact_id,),
    ).fetchone()
    return None if row is None else (Artifact(*row[:8]), bytes(row[8]))


def artifacts(conn: Sql, conversation_id: str) -> list[Artifact]:
    rows = conn.execute(
        "SELECT id, conversation_id, name, media_type, size, sha256, created_at, call_id"
        " FROM artifacts WHERE conversation_id = ? ORDER BY created_at, id",
        (conversation_id,),
    ).fetchall()
    return [Artifact(*r) for r in rows]
