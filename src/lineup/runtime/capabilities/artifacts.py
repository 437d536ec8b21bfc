"""Artifacts: files a capability call kept for a conversation (``artifact.save`` saved
them in the Runtime; ``device.pick_file`` brought them from the person's browser).

An artifact's bytes live in the store with their size and SHA-256; the call's result
carries its metadata only (id, name, media type, size), never a path. Hosts read them
back through the gateway (``CapabilityGateway.artifact``, ``artifacts``).
"""

from __future__ import annotations

import base64
import hashlib
import uuid
from dataclasses import dataclass
from typing import Any

from ..tables import audit
from ..txn import Sql

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
    conn: Sql,
    conversation_id: str,
    name: str,
    media_type: str,
    body: bytes,
    call_id: str | None,
    now: str,
) -> dict[str, Any]:
    """Keep ``body`` as an artifact of the conversation; its public metadata."""
    artifact_id = f"art_{uuid.uuid4().hex}"
    conn.execute(
        "INSERT INTO artifacts (id, conversation_id, name, media_type, size, sha256, body,"
        " call_id, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
        ),
    )
    audit(conn, now, "runtime", "artifact.store", artifact_id, f"bytes:{len(body)}")
    return {"artifact_id": artifact_id, "name": name, "media_type": media_type, "size": len(body)}


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
