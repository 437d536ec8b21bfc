"""The Runtime's stored records, as immutable values."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import msgspec

from lineup.protocol import Rejection
from lineup.protocol.interactions import Interaction

DeliveryState = Literal["received", "sending", "sent", "failed"]
"""``received``: from the AppServer. ``sending``: ours, in the outbox. ``sent``: ours,
acknowledged (it has a ``seq``). ``failed``: ours, refused by the AppServer."""


@dataclass(frozen=True, slots=True)
class Session:
    server_url: str
    username: str
    user_id: str
    token: str


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    id: str
    agent_id: str
    title: str
    cursor: int


@dataclass(frozen=True, slots=True)
class TimelineItem:
    id: int
    conversation_id: str
    envelope_id: str
    seq: int | None
    type: str
    sender_kind: str
    body: bytes
    state: DeliveryState
    error_code: str | None
    created_at: str
    interaction: InteractionRecord | None = None
    """For a ``tool.call`` that started a standard interaction: its current record."""
    surface: SurfaceRecord | None = None
    """For a ``ui.open``: the surface it opened, as it is now."""
    artifact: ArtifactRow | None = None
    """For an ``artifact`` row: the file it shows."""


@dataclass(frozen=True, slots=True)
class SurfaceRecord:
    """One surface an agent opened, as the timeline shows it (on its ``ui.open``
    row). The inline parts, if any, are read only when mounting."""

    conversation_id: str
    open_envelope_id: str
    instance_id: str
    app_id: str
    app_version: str
    surface_id: str | None
    state: bytes
    status: str
    """``open``, ``closed``, ``replaced`` or ``unavailable``."""
    reason: str | None
    updated_at: str
    inline: bool


@dataclass(frozen=True, slots=True)
class InteractionRecord:
    id: str
    """What the shell names when it answers (never the agent's call id)."""
    conversation_id: str
    call_id: str
    envelope_id: str
    agent_id: str
    app_session_id: str | None
    tool: str
    arguments: bytes
    state: str
    created_at: str
    expires_at: str | None
    final_at: str | None
    result: bytes | None
    code: str | None


@dataclass(frozen=True, slots=True)
class OutboxItem:
    id: int
    conversation_id: str
    envelope_id: str
    body: bytes


REJECTED_ROW = "rejected"
"""The ``type`` of a timeline row standing for an envelope the Runtime rejected: no
body, its code in ``error_code``."""


def rejected_row_id(seq: int) -> str:
    """The ``envelope_id`` of the row standing for the rejected envelope at ``seq``."""
    return f"rejected:{seq}"


ARTIFACT_ROW = "artifact"
"""The ``type`` of a timeline row standing for a file a capability call kept (an
artifact, saved or picked, for the agent or for an app): the Runtime writes it with
the artifact and never sends it. Its body is the file's metadata (``ArtifactRow``),
never its bytes; its ``seq`` is that of the newest row the conversation held then,
so it sits right after that row for good."""


def artifact_row_id(artifact_id: str) -> str:
    """The ``envelope_id`` of the row that shows the artifact ``artifact_id``."""
    return f"artifact:{artifact_id}"


class ArtifactRow(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What an ``artifact`` row shows: the file's public metadata, and the app
    sub-session it belongs to when an app instance saved or picked it (the IM shows it
    inside that sub-session's group)."""

    artifact_id: str
    name: str
    media_type: str
    size: int
    app_session_id: str | None = None


_artifact_row = msgspec.json.Decoder(ArtifactRow)


def decode_artifact_row(body: bytes) -> ArtifactRow | None:
    """An ``artifact`` row's body; ``None`` if it is not one (never expected)."""
    try:
        return _artifact_row.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


@dataclass(frozen=True, slots=True)
class Received:
    """One envelope frame from the stream, already classified by the sync loop."""

    conversation_id: str
    seq: int
    body: bytes
    envelope_id: str | None = None
    """``None`` when the envelope was rejected; then ``code`` says why."""
    type: str = ""
    sender_kind: str = ""
    app_scope: str | None = None
    code: str | None = None
    call: ToolCallIntent | None = None
    dismiss: DismissIntent | None = None


@dataclass(frozen=True, slots=True)
class ToolCallIntent:
    """A ``tool.call`` from the agent, checked as far as it can be without the store."""

    call_id: str
    sender_id: str
    app_session_id: str | None
    interaction: Interaction | None
    refusal: Rejection | None
    elsewhere: bool = False
    """It names an inventory revision newer than any this Runtime published: another
    Runtime of the person's (the desktop window beside the demo) advertised it, and
    that one answers; this one stores and answers nothing."""


@dataclass(frozen=True, slots=True)
class DismissIntent:
    control_id: str
    call_id: str
    sender_id: str
    envelope_id: str


@dataclass(frozen=True, slots=True)
class InboxItem:
    id: int
    app_scope: str
    conversation_id: str
    envelope_id: str
    body: bytes


@dataclass(frozen=True, slots=True)
class AuditRow:
    id: int
    at: str
    actor: str
    action: str
    subject: str
    outcome: str
    code: str | None
