"""Typed payloads for every ``lineup.v1`` envelope kind.

Payloads are frozen msgspec structs that refuse unknown fields. Free-form JSON
objects (surface state, event data, tool arguments and results) are checked for
depth and encoded size in ``__post_init__``, which msgspec runs during decoding.
"""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec

from .fields import (
    MAX_BUNDLE_BYTES,
    MAX_EVENT_DATA_BYTES,
    MAX_LIST_ITEMS,
    MAX_TOOL_DESCRIPTION_CHARS,
    AppId,
    AppScope,
    CapabilityName,
    CapabilityVersion,
    ComponentId,
    ComponentVersion,
    ErrorCodeText,
    EventName,
    Id,
    InstanceId,
    Integrity,
    JsonObject,
    Label,
    Locale,
    Revision,
    SemVer,
    ShortText,
    SurfaceId,
    Text,
    Timestamp,
    ToolId,
    check_object,
    version_one,
)

Items = Annotated[int, msgspec.Meta(ge=0)]


class Payload(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """Base of all payloads.

    Subclasses repeat ``frozen=True`` only so that type checkers see it; msgspec
    inherits the whole configuration.
    """


# --- conversation ---------------------------------------------------------------------


class Message(Payload, frozen=True):
    """A chat message. ``markdown`` is rendered by a sanitising renderer, never as HTML."""

    text: Text
    format: Literal["markdown", "plain"] = "markdown"
    reply_to: Id | None = None


class Status(Payload, frozen=True):
    """What the agent is doing now (typing indicator, a short status line)."""

    state: Literal["idle", "thinking", "working", "waiting", "done"]
    text: Label | None = None


class Progress(Payload, frozen=True):
    """Progress of a long piece of work that is not a tool call."""

    progress_id: Id
    state: Literal["running", "completed", "failed", "cancelled"] = "running"
    current: Annotated[float, msgspec.Meta(ge=0)] = 0.0
    total: Annotated[float, msgspec.Meta(gt=0)] | None = None
    label: Label | None = None

    def __post_init__(self) -> None:
        if self.total is not None and self.current > self.total:
            raise ValueError("`current` is greater than `total`")


class ErrorInfo(Payload, frozen=True):
    """A stable code and a human message."""

    code: ErrorCodeText
    message: Label


class Error(Payload, frozen=True):
    """An error report; ``ref_id`` names the envelope it is about, if any."""

    code: ErrorCodeText
    message: Label
    ref_id: Id | None = None


# --- tools and interactions (spec 002 §7.2, §7.3, §8) -----------------------------------


class AppSessionContext(Payload, frozen=True):
    app_session_id: Id


class ToolCall(Payload, frozen=True):
    """An agent asks the Runtime to run an advertised tool."""

    call_id: Id
    tool: ToolId
    inventory_revision: Revision
    arguments: JsonObject = msgspec.field(default_factory=dict)
    app_session_context: AppSessionContext | None = None

    def __post_init__(self) -> None:
        check_object(self.arguments, "arguments")


class ToolProgress(Payload, frozen=True):
    call_id: Id
    current: Annotated[float, msgspec.Meta(ge=0)] = 0.0
    total: Annotated[float, msgspec.Meta(gt=0)] | None = None
    label: Label | None = None

    def __post_init__(self) -> None:
        if self.total is not None and self.current > self.total:
            raise ValueError("`current` is greater than `total`")


ToolResultStatus = Literal[
    "completed", "accepted", "failed", "cancelled", "rejected", "expired", "dismissed"
]


class ToolResult(Payload, frozen=True):
    """The single terminal result of a tool call.

    ``completed`` and ``accepted`` may carry ``result`` and never ``error``; every
    other status carries ``error`` with a stable code (``app_closed``,
    ``tool_input_invalid``, ...) and no ``result``, so an agent never has to guess
    which of the two to trust.
    """

    call_id: Id
    status: ToolResultStatus
    result: JsonObject | None = None
    error: ErrorInfo | None = None

    def __post_init__(self) -> None:
        if self.status in ("completed", "accepted"):
            if self.error is not None:
                raise ValueError(f"status `{self.status}` carries no `error`")
        else:
            if self.error is None:
                raise ValueError(f"status `{self.status}` needs an `error`")
            if self.result is not None:
                raise ValueError(f"status `{self.status}` carries no `result`")
        if self.result is not None:
            check_object(self.result, "result")


class InteractionDismiss(Payload, frozen=True):
    """The agent stops waiting for an interaction (a Runtime-private control)."""

    control_id: Id
    call_id: Id
    reason: Label | None = None


class AppSessionOpened(Payload, frozen=True):
    agent_id: Id
    app_session_id: Id
    app_scope: AppScope
    instance_id: InstanceId
    continues_app_session_id: Id | None = None
    """The earlier sub-session this one continues ("continue" on old work): context
    to load, never a session to append to or whose questions come back."""


class AppSessionClosed(Payload, frozen=True):
    agent_id: Id
    app_session_id: Id
    app_scope: AppScope
    instance_id: InstanceId
    reason: Label | None = None
    pending_interaction_call_ids: Annotated[list[Id], msgspec.Meta(max_length=MAX_LIST_ITEMS)] = (
        msgspec.field(default_factory=list)
    )


# --- inventory and capabilities (spec 000 §5, spec 002 §8) ---------------------------


Risk = Literal["display_only", "user_confirmation", "system_permission", "restricted"]


class ComponentRef(Payload, frozen=True):
    id: ComponentId
    version: ComponentVersion


class SurfaceRef(Payload, frozen=True):
    id: SurfaceId
    events: Annotated[list[EventName], msgspec.Meta(max_length=MAX_LIST_ITEMS)] = msgspec.field(
        default_factory=list
    )


class ApplicationRef(Payload, frozen=True):
    id: AppId
    version: SemVer
    surfaces: Annotated[list[SurfaceRef], msgspec.Meta(max_length=MAX_LIST_ITEMS)] = msgspec.field(
        default_factory=list
    )


class CapabilityDescriptor(Payload, frozen=True):
    name: CapabilityName
    version: CapabilityVersion
    risk: Risk
    input_schema: JsonObject | None = None
    output_schema: JsonObject | None = None

    def __post_init__(self) -> None:
        for name in ("input_schema", "output_schema"):
            schema = getattr(self, name)
            if schema is not None:
                check_object(schema, name)


class ToolTarget(Payload, frozen=True):
    app_scope: AppScope
    requires_foreground: bool
    restore_previous_focus: bool


class ToolDescriptor(Payload, frozen=True):
    """A tool the agent may call (spec 002 §8).

    Interactive tools (``interact.notice``, ...) have neither ``target`` nor
    ``timeout_ms``: the Runtime owns them and their deadline is the interaction's
    ``expires_at``. Every other handling names its ``target`` app scope.
    """

    id: ToolId
    handling: Literal["interactive", "direct", "launch", "foreground", "operation"]
    input_schema: JsonObject
    output_schema: JsonObject
    version: Literal[1] = msgspec.field(default_factory=version_one)
    target: ToolTarget | None = None
    timeout_ms: Annotated[int, msgspec.Meta(ge=1, le=86_400_000)] | None = None
    permissions: Annotated[list[CapabilityName], msgspec.Meta(max_length=MAX_LIST_ITEMS)] | None = (
        None
    )
    title: Label | None = None
    """A short name for people (an MCP tool's ``title``)."""
    description: Annotated[str, msgspec.Meta(max_length=MAX_TOOL_DESCRIPTION_CHARS)] | None = None
    """What the tool does, for the agent's model (an MCP tool's ``description``)."""

    def __post_init__(self) -> None:
        if self.handling == "interactive":
            if self.target is not None:
                raise ValueError("an interactive tool has no `target`")
            if self.timeout_ms is not None:
                raise ValueError("an interactive tool has no `timeout_ms`")
        elif self.target is None:
            raise ValueError(f"a `{self.handling}` tool needs a `target`")
        check_object(self.input_schema, "input_schema")
        check_object(self.output_schema, "output_schema")


class ClientInventory(Payload, frozen=True):
    """The Runtime's revisioned, minimal statement of what the agent may use, and the
    language the person reads."""

    revision: Revision
    standard_components: Annotated[list[ComponentRef], msgspec.Meta(max_length=MAX_LIST_ITEMS)] = (
        msgspec.field(default_factory=list)
    )
    applications: Annotated[list[ApplicationRef], msgspec.Meta(max_length=MAX_LIST_ITEMS)] = (
        msgspec.field(default_factory=list)
    )
    capabilities: Annotated[list[CapabilityDescriptor], msgspec.Meta(max_length=MAX_LIST_ITEMS)] = (
        msgspec.field(default_factory=list)
    )
    tools: Annotated[list[ToolDescriptor], msgspec.Meta(max_length=MAX_LIST_ITEMS)] = msgspec.field(
        default_factory=list
    )
    locale: Locale | None = None
    """The person's language as a BCP 47 tag (``zh-CN``, ``en``): what they chose in
    their client, else what it shows. An agent answers in it when it can."""


class AppList(Payload, frozen=True):
    """Capability-only projection of the inventory, for older agents (spec 000 §5.2)."""

    capabilities: Annotated[list[CapabilityDescriptor], msgspec.Meta(max_length=MAX_LIST_ITEMS)] = (
        msgspec.field(default_factory=list)
    )


class AppCall(Payload, frozen=True):
    """The agent requests a declared capability; the Runtime decides."""

    call_id: Id
    capability: CapabilityName
    reason: ShortText
    expires_at: Timestamp
    arguments: JsonObject = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_object(self.arguments, "arguments")


class AppResult(Payload, frozen=True):
    call_id: Id
    status: Literal["completed", "rejected", "cancelled", "expired", "unsupported", "failed"]
    result: JsonObject | None = None
    error: ErrorInfo | None = None

    def __post_init__(self) -> None:
        if self.status == "completed":
            if self.error is not None:
                raise ValueError("status `completed` carries no `error`")
        elif self.result is not None:
            raise ValueError(f"status `{self.status}` carries no `result`")
        if self.result is not None:
            check_object(self.result, "result")


# --- surfaces (spec 000 §4) ------------------------------------------------------------


class SurfaceApp(Payload, frozen=True):
    """Which app and surface to mount.

    Production hosts mount only an enabled ``id`` + exact ``version`` + ``surface``
    from the inventory. ``html``/``css``/``js`` are a dev-mode inline bundle and are
    only ever accepted together with an ``integrity`` digest.
    """

    id: AppId
    version: SemVer
    surface: SurfaceId | None = None
    name: Label | None = None
    integrity: Integrity | None = None
    html: str | None = None
    css: str | None = None
    js: str | None = None

    def __post_init__(self) -> None:
        parts = [p for p in (self.html, self.css, self.js) if p is not None]
        if parts:
            if self.integrity is None:
                raise ValueError("an inline bundle needs `integrity`")
            size = sum(len(p.encode("utf-8", "surrogatepass")) for p in parts)
            if size > MAX_BUNDLE_BYTES:
                raise ValueError(f"inline bundle is {size} bytes; the limit is {MAX_BUNDLE_BYTES}")
        elif self.surface is None:
            raise ValueError("`surface` is required unless an inline bundle is given")


class UiOpen(Payload, frozen=True):
    instance_id: InstanceId
    app: SurfaceApp
    state: JsonObject = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_object(self.state, "state")


class UiPatch(Payload, frozen=True):
    """New state for an open surface; never code (spec 000 §4.1)."""

    instance_id: InstanceId
    state: JsonObject

    def __post_init__(self) -> None:
        check_object(self.state, "state")


class UiClose(Payload, frozen=True):
    instance_id: InstanceId
    reason: Label | None = None


class UiEvent(Payload, frozen=True):
    """A user's intent from a surface; ``close`` when the user closed it."""

    instance_id: InstanceId
    event: EventName
    data: JsonObject = msgspec.field(default_factory=dict)

    def __post_init__(self) -> None:
        check_object(self.data, "data", MAX_EVENT_DATA_BYTES)
