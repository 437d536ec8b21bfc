"""The ``lineup.v1`` envelope and one tagged subclass per kind.

An envelope is ``{v, id, type, conversation_id, sender, target?, created_at, payload}``.
Each kind is its own frozen struct tagged by ``type``, so one msgspec decoder
validates header and payload in a single pass.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import msgspec

from . import payloads as p
from .fields import AppScope, Id, InstanceId, Timestamp, version_one

PROTOCOL_VERSION = 1
TYPE_PREFIX = "lineup.v1."

SenderKind = Literal["agent", "user", "runtime"]
"""``agent``: the remote agent. ``user``: words a person typed. ``runtime``: the
user's Runtime speaking for itself (results, inventory, app sessions)."""

AGENT: frozenset[str] = frozenset({"agent"})
USER: frozenset[str] = frozenset({"user"})
RUNTIME: frozenset[str] = frozenset({"runtime"})
ANYONE: frozenset[str] = AGENT | USER | RUNTIME


class Sender(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    kind: SenderKind
    id: Id


class Target(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """Narrows delivery inside the Runtime to an app scope and/or one instance."""

    app_scope: AppScope | None = None
    instance_id: InstanceId | None = None

    def __post_init__(self) -> None:
        if self.app_scope is None and self.instance_id is None:
            raise ValueError("`target` names an `app_scope`, an `instance_id` or both")


class Envelope(
    msgspec.Struct,
    frozen=True,
    kw_only=True,
    forbid_unknown_fields=True,
    omit_defaults=True,
    tag_field="type",
):
    """Common header. Concrete kinds subclass it with a typed ``payload``."""

    senders: ClassVar[frozenset[str]] = ANYONE
    """Sender kinds allowed to send this kind; the AppServer enforces it."""

    v: Literal[1] = msgspec.field(default_factory=version_one)
    """Always written, so every stored envelope says which protocol it speaks; on
    input a missing ``v`` means 1."""
    id: Id
    conversation_id: Id
    sender: Sender
    created_at: Timestamp
    target: Target | None = None

    @property
    def type(self) -> str:
        tag = type(self).__struct_config__.tag
        assert isinstance(tag, str)
        return tag


class MessageEnvelope(Envelope, frozen=True, tag="lineup.v1.message"):
    senders = AGENT | USER
    payload: p.Message


class StatusEnvelope(Envelope, frozen=True, tag="lineup.v1.status"):
    senders = AGENT
    payload: p.Status


class ProgressEnvelope(Envelope, frozen=True, tag="lineup.v1.progress"):
    senders = AGENT
    payload: p.Progress


class ErrorEnvelope(Envelope, frozen=True, tag="lineup.v1.error"):
    payload: p.Error


class ToolCallEnvelope(Envelope, frozen=True, tag="lineup.v1.tool.call"):
    senders = AGENT
    payload: p.ToolCall


class ToolProgressEnvelope(Envelope, frozen=True, tag="lineup.v1.tool.progress"):
    senders = RUNTIME
    payload: p.ToolProgress


class ToolResultEnvelope(Envelope, frozen=True, tag="lineup.v1.tool.result"):
    senders = RUNTIME
    payload: p.ToolResult


class InteractionDismissEnvelope(Envelope, frozen=True, tag="lineup.v1.interaction.dismiss"):
    senders = AGENT
    payload: p.InteractionDismiss


class AppSessionOpenedEnvelope(Envelope, frozen=True, tag="lineup.v1.app_session.opened"):
    senders = RUNTIME
    payload: p.AppSessionOpened


class AppSessionClosedEnvelope(Envelope, frozen=True, tag="lineup.v1.app_session.closed"):
    senders = RUNTIME
    payload: p.AppSessionClosed


class ClientInventoryEnvelope(Envelope, frozen=True, tag="lineup.v1.client.inventory"):
    senders = RUNTIME
    payload: p.ClientInventory


class AppListEnvelope(Envelope, frozen=True, tag="lineup.v1.app.list"):
    senders = RUNTIME
    payload: p.AppList


class AppCallEnvelope(Envelope, frozen=True, tag="lineup.v1.app.call"):
    senders = AGENT
    payload: p.AppCall


class AppResultEnvelope(Envelope, frozen=True, tag="lineup.v1.app.result"):
    senders = RUNTIME
    payload: p.AppResult


class UiOpenEnvelope(Envelope, frozen=True, tag="lineup.v1.ui.open"):
    senders = AGENT
    payload: p.UiOpen


class UiPatchEnvelope(Envelope, frozen=True, tag="lineup.v1.ui.patch"):
    senders = AGENT
    payload: p.UiPatch


class UiCloseEnvelope(Envelope, frozen=True, tag="lineup.v1.ui.close"):
    senders = AGENT
    payload: p.UiClose


class UiEventEnvelope(Envelope, frozen=True, tag="lineup.v1.ui.event"):
    senders = RUNTIME
    payload: p.UiEvent


AnyEnvelope = (
    MessageEnvelope
    | StatusEnvelope
    | ProgressEnvelope
    | ErrorEnvelope
    | ToolCallEnvelope
    | ToolProgressEnvelope
    | ToolResultEnvelope
    | InteractionDismissEnvelope
    | AppSessionOpenedEnvelope
    | AppSessionClosedEnvelope
    | ClientInventoryEnvelope
    | AppListEnvelope
    | AppCallEnvelope
    | AppResultEnvelope
    | UiOpenEnvelope
    | UiPatchEnvelope
    | UiCloseEnvelope
    | UiEventEnvelope
)

ENVELOPE_KINDS: tuple[type[Envelope], ...] = (
    MessageEnvelope,
    StatusEnvelope,
    ProgressEnvelope,
    ErrorEnvelope,
    ToolCallEnvelope,
    ToolProgressEnvelope,
    ToolResultEnvelope,
    InteractionDismissEnvelope,
    AppSessionOpenedEnvelope,
    AppSessionClosedEnvelope,
    ClientInventoryEnvelope,
    AppListEnvelope,
    AppCallEnvelope,
    AppResultEnvelope,
    UiOpenEnvelope,
    UiPatchEnvelope,
    UiCloseEnvelope,
    UiEventEnvelope,
)


def _tag(kind: type[Envelope]) -> str:
    tag = kind.__struct_config__.tag
    assert isinstance(tag, str)
    return tag


KIND_BY_TYPE: dict[str, type[Envelope]] = {_tag(k): k for k in ENVELOPE_KINDS}
"""``"lineup.v1.message"`` → ``MessageEnvelope``, for every known kind."""
