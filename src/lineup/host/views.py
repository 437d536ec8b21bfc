"""Timeline rows as the shell shows them: messages as sanitized HTML, the rest as data."""

from __future__ import annotations

import functools
from datetime import UTC
from typing import Any, Literal

import msgspec

from lineup.protocol import (
    AppCallEnvelope,
    AppListEnvelope,
    AppResultEnvelope,
    AppSessionClosedEnvelope,
    AppSessionOpenedEnvelope,
    ClientInventoryEnvelope,
    Envelope,
    ErrorEnvelope,
    InteractionDismissEnvelope,
    MessageEnvelope,
    ProgressEnvelope,
    StatusEnvelope,
    ToolCallEnvelope,
    ToolProgressEnvelope,
    ToolResultEnvelope,
    UiCloseEnvelope,
    UiEventEnvelope,
    UiOpenEnvelope,
    UiPatchEnvelope,
    decode,
)
from lineup.protocol.interactions import KIND_BY_TOOL
from lineup.runtime.apps.focus import Instances
from lineup.runtime.apps.lifecycle import LIVE
from lineup.runtime.apps.sessions_view import AppSessionGroup
from lineup.runtime.markdown import render_markdown, render_plain
from lineup.runtime.mcp.elicitation_store import ELICITATION_ROW, decode_row
from lineup.runtime.records import ARTIFACT_ROW, InteractionRecord, TimelineItem

from .channel import (
    AppInstanceView,
    AppSessionView,
    AppsView,
    ConversationView,
    ItemKind,
    ItemView,
)
from .names import icon_url, instance_label, name_or_scope, record_label

DEFAULT_TITLE = "Chat"
"""The title the client gives the conversation it opens with its agent. The shell
names such a conversation in the person's language instead (``conversation_view``)."""


def conversation_view(conversation_id: str, agent_id: str, title: str) -> ConversationView:
    """A conversation for the shell: the client's own default title left out, so the
    shell shows its word for it (聊天 / Chat)."""
    return ConversationView(conversation_id, agent_id, "" if title == DEFAULT_TITLE else title)


Kind = ItemKind

HIDDEN = (
    AppCallEnvelope,
    AppResultEnvelope,
    ClientInventoryEnvelope,
    AppListEnvelope,
    ToolResultEnvelope,
    ToolProgressEnvelope,
    InteractionDismissEnvelope,
    AppSessionOpenedEnvelope,
    AppSessionClosedEnvelope,
    UiPatchEnvelope,
    UiCloseEnvelope,
    UiEventEnvelope,
)
"""Runtime bookkeeping, not content: the inventory, results (shown on their card),
the agent's dismiss control, app sub-session notices to the agent (the IM shows each
sub-session as a group of its own: ``group_view``), a surface's patches, close and
events (its ``ui.open`` row shows the surface as it is now), and an agent's
``app.call`` (the consent dialog shows it) and its ``app.result`` (a file it saved or
picked has a row of its own, as an app's does: ``artifact``)."""
Sender = Literal["agent", "user", "runtime"]


MAX_MARKDOWN_CHARS = 16 * 1024
"""Longer messages are shown as plain text: pure-Python Markdown of 64 KiB of hostile
input takes over a second, which would stall the Runtime's event loop."""


@functools.lru_cache(maxsize=4096)
def _message_html(text: str, plain: bool) -> str:
    """Rendered once per distinct message: every tab, snapshot and page reuses it."""
    if plain or len(text) > MAX_MARKDOWN_CHARS:
        return render_plain(text)
    return render_markdown(text)


def interaction_data(record: InteractionRecord) -> dict[str, Any]:
    """What a card shows: the agent's arguments (as data, rendered as text), the
    state, when it expires and, once answered, the answer."""
    data: dict[str, Any] = {
        "interaction_id": record.id,
        "kind": KIND_BY_TOOL.get(record.tool, "notice"),
        "state": record.state,
        "arguments": msgspec.json.decode(record.arguments),
        "expires_at": record.expires_at,
        "final_at": record.final_at,
    }
    if record.result is not None:
        data["result"] = msgspec.json.decode(record.result)
    if record.app_session_id is not None:
        data["app_session_id"] = record.app_session_id
    return data


def group_of(item: TimelineItem) -> str | None:
    """The app sub-session whose group shows this row (an interaction that named it,
    a file its instance kept), or ``None`` for a loose row."""
    if item.interaction is not None:
        return item.interaction.app_session_id
    if item.artifact is not None:
        return item.artifact.app_session_id
    return None


def in_group(item: TimelineItem) -> bool:
    """A row of an app sub-session: shown inside its group, never loose."""
    return group_of(item) is not None


def artifact_data(item: TimelineItem) -> dict[str, Any] | None:
    """What an ``artifact`` row shows: the file's name, type and size, and where to
    download it (``GET /artifacts/{id}``, the one download of every kept file)."""
    row = item.artifact
    if row is None:
        return None
    data: dict[str, Any] = {
        "artifact_id": row.artifact_id,
        "name": row.name,
        "media_type": row.media_type,
        "size": row.size,
        "url": f"/artifacts/{row.artifact_id}",
    }
    if row.app_session_id is not None:
        data["app_session_id"] = row.app_session_id
    return data


def _runtime_row(item: TimelineItem, kind: ItemKind, data: Any) -> ItemView:
    """A row the Runtime wrote for the person (a kept file, a server's form)."""
    return ItemView(
        key=item.id,
        conversation_id=item.conversation_id,
        envelope_id=item.envelope_id,
        seq=item.seq,
        kind=kind,
        sender="runtime",
        state=item.state,
        created_at=item.created_at,
        data=data,
    )


def item_view(item: TimelineItem, *, unread: bool = False) -> ItemView | None:
    """The row as the shell shows it, or ``None`` for rows that are not shown."""
    if item.type == ARTIFACT_ROW:
        shown = artifact_data(item)
        # A body that does not decode was never written: nothing to show.
        return None if shown is None else _runtime_row(item, "artifact", shown)
    if item.type == ELICITATION_ROW:
        form = decode_row(item.body)
        return (
            None if form is None else _runtime_row(item, "elicitation", msgspec.to_builtins(form))
        )
    envelope = decode(item.body)
    if isinstance(envelope, HIDDEN):
        return None
    if isinstance(envelope, ErrorEnvelope) and item.sender_kind == "runtime":
        return None  # the Runtime's receipt to the agent (a dismiss of an unknown call)
    if isinstance(envelope, ToolCallEnvelope) and item.interaction is None:
        return None  # a refused call: it created nothing; the agent got its rejection
    html: str | None = None
    data: dict[str, Any] = {}
    sender_id = ""
    kind: Kind
    if isinstance(envelope, MessageEnvelope):
        kind = "message"
        text = envelope.payload.text
        html = _message_html(text, envelope.payload.format == "plain")
    elif isinstance(envelope, StatusEnvelope):
        kind = "status"
        data = {"state": envelope.payload.state, "text": envelope.payload.text or ""}
    elif isinstance(envelope, ProgressEnvelope):
        kind = "progress"
        p = envelope.payload
        data = {
            "progress_id": p.progress_id,
            "state": p.state,
            "current": p.current,
            "total": p.total,
            "label": p.label or "",
        }
    elif isinstance(envelope, ErrorEnvelope):
        kind = "error"
        data = {"code": envelope.payload.code, "message": envelope.payload.message}
    elif isinstance(envelope, ToolCallEnvelope) and item.interaction is not None:
        kind = "interaction"
        data = interaction_data(item.interaction)
    elif isinstance(envelope, UiOpenEnvelope) and item.surface is not None:
        kind = "surface"
        surface = item.surface
        data = {
            "instance_id": surface.instance_id,
            "app_id": surface.app_id,
            "app_version": surface.app_version,
            "surface_id": surface.surface_id or "",
            "name": envelope.payload.app.name or surface.app_id,
            "status": surface.status,
            "reason": surface.reason or "",
            "state": msgspec.json.decode(surface.state),
            "dev": surface.inline,
        }
    else:
        kind = "unsupported"
        data = {"type": item.type[:128]}
    if isinstance(envelope, Envelope):
        sender_id = envelope.sender.id
    sender: Sender = "runtime"
    if item.sender_kind in ("agent", "user"):
        sender = "agent" if item.sender_kind == "agent" else "user"
    return ItemView(
        key=item.id,
        conversation_id=item.conversation_id,
        envelope_id=item.envelope_id,
        seq=item.seq,
        kind=kind,
        sender=sender,
        sender_id=sender_id,
        state=item.state,
        error_code=item.error_code,
        created_at=item.created_at,
        html=html,
        unread=unread,
        data=data,
    )


def apps_view(instances: Instances) -> AppsView:
    """The live instances, the focus stack and the focus, as the dock shows them
    (stopped and failed records are history, not shown)."""
    return AppsView(
        records=[
            AppInstanceView(
                instance_id=r.instance_id,
                app_scope=r.app_scope,
                state=str(r.state),
                started_at=r.started_at.astimezone(UTC).isoformat(timespec="milliseconds"),
                name=name_or_scope(r.name, r.app_scope),
                ordinal=r.ordinal,
                label=record_label(r),
                icon=icon_url(r.app_scope),
            )
            for r in instances.records.values()
            if r.state in LIVE
        ],
        stack=list(instances.stack),
        focus=instances.focus,
    )


def group_view(group: AppSessionGroup) -> AppSessionView:
    """A sub-session as one IM group: its interactions, as cards, and its files."""
    rows = sorted((*group.interactions, *group.files), key=lambda i: i.id)
    items = [item_view(i) for i in rows]
    name = name_or_scope(group.app_name, group.app_scope)
    return AppSessionView(
        app_session_id=group.id,
        conversation_id=group.conversation_id,
        app_scope=group.app_scope,
        instance_id=group.instance_id,
        name=name,
        ordinal=group.ordinal,
        label=instance_label(name, group.ordinal),
        icon=icon_url(group.app_scope),
        state="open" if group.state == "open" else "closed",
        opened_at=group.opened_at,
        closed_at=group.closed_at,
        # Without its opened row (never expected), order it after everything stored.
        key=group.anchor_id if group.anchor_id is not None else 2**53 - 1,
        seq=group.anchor_seq,
        count=group.count,
        pending=group.pending,
        items=[view for view in items if view is not None],
        continues=group.continues,
        files=group.file_count,
    )
