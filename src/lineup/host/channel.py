"""Frames of the host channel: the one WebSocket between the shell and its Runtime.

Everything the shell sends is decoded into these strict types (unknown fields and
ops refused, sizes bounded) exactly like network input; the shell never sees a raw
envelope, a token or the store, only views made for display.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from lineup.protocol.fields import (
    APP_ID_PATTERN,
    CAPABILITY_NAME_PATTERN,
    ID_PATTERN,
    MAX_TEXT_CHARS,
    SEMVER_PATTERN,
)
from lineup.protocol.interactions import MAX_INPUT_CHARS

Id = Annotated[str, msgspec.Meta(pattern=ID_PATTERN)]
MountId = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{24}$")]
RequestId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
CapabilityName = Annotated[str, msgspec.Meta(pattern=CAPABILITY_NAME_PATTERN, max_length=255)]
Code = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
AppId = Annotated[str, msgspec.Meta(pattern=APP_ID_PATTERN, max_length=255)]
SemVer = Annotated[str, msgspec.Meta(pattern=SEMVER_PATTERN, max_length=128)]
RequesterKind = Literal["agent", "app", "mcp"]
McpKey = Annotated[str, msgspec.Meta(pattern=r"^[a-z][a-z0-9_-]{0,40}$")]
MAX_FRAME_BYTES = 256 * 1024


class _In(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="op"):
    pass


class Hello(_In, frozen=True, tag="hello"):
    """Sent first: the Runtime answers with a snapshot. ``locale``: the language the
    tab shows (so the Runtime knows the person's when they chose none)."""

    locale: Literal["en", "zh-CN"] | None = None


class SendMessage(_In, frozen=True, tag="send"):
    conversation_id: Id
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT_CHARS)]


class Retry(_In, frozen=True, tag="retry"):
    conversation_id: Id
    envelope_id: Id


class History(_In, frozen=True, tag="history"):
    """A page of rows just before the row keyed ``before`` (older), just after the
    row keyed ``after`` (newer: scrolling back down, after a long time away), or, with
    neither, the newest page (the way back from far up). Not both."""

    conversation_id: Id
    before: Annotated[int, msgspec.Meta(ge=1)] | None = None
    after: Annotated[int, msgspec.Meta(ge=1)] | None = None


class Seen(_In, frozen=True, tag="seen"):
    """Interact has shown these agent envelopes: acknowledge them in its inbox."""

    conversation_id: Id
    envelope_ids: Annotated[list[Id], msgspec.Meta(min_length=1, max_length=500)]


class Answer(_In, frozen=True, tag="answer"):
    """The person's answer to an interaction: its id and the answer, nothing else.
    The Runtime takes agent, call and app session from its own record."""

    conversation_id: Id
    interaction_id: Id
    answer: dict[str, Any]


class Elicit(_In, frozen=True, tag="elicit"):
    """The person's answer to an MCP server's form (its card): ``accept`` with the
    ``content`` filled in, ``decline`` or ``cancel`` (no content). The Runtime checks
    the content against the server's schema and answers with an ``ElicitReceipt``."""

    conversation_id: Id
    elicitation_id: Id
    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


class Draft(_In, frozen=True, tag="draft"):
    """Unsent text of an ``input`` interaction, kept in Runtime memory only."""

    interaction_id: Id
    text: Annotated[str, msgspec.Meta(max_length=MAX_INPUT_CHARS)]


class AppRequest(_In, frozen=True, tag="app"):
    """The person asks the Runtime to bring an app instance to the front, send it to
    the background, close it, or continue its ended work in a new instance
    (``continue``). The Runtime decides (``runtime.apps``) and answers with an
    ``AppReceipt``."""

    action: Literal["foreground", "background", "close", "continue"]
    instance_id: Id


class MountRequest(_In, frozen=True, tag="mount"):
    """The shell is about to show an app instance: the Web Host mounts its surface on
    the surface origin and answers with a ``Mounted`` (a fresh, single-use URL each
    time: a reload of the shell or of the frame mounts again)."""

    instance_id: Id


class UnmountRequest(_In, frozen=True, tag="unmount"):
    """The shell took a surface's frame down (or found it reloaded)."""

    mount_id: MountId


class AppCall(_In, frozen=True, tag="app_call"):
    """A MiniApp SDK request that came through the frame of ``mount_id`` (the shell
    checked the frame; the Web Host checks the mount is its own and whose instance it
    is). Answered with an ``AppReply``."""

    mount_id: MountId
    id: RequestId
    method: Annotated[str, msgspec.Meta(max_length=64)]
    params: dict[str, Any]


class MountUi(_In, frozen=True, tag="mount_ui"):
    """The shell is about to show a surface the agent opened (its ``ui.open`` row):
    mount it (bridge only, no MiniApp SDK). Answered with a ``UiMounted``."""

    conversation_id: Id
    instance_id: Id


class AppEventFrame(_In, frozen=True, tag="app_event"):
    """An event an app instance's surface sent (``LineUpSurface.event``) through the
    frame of ``mount_id``; for the agent as ``lineup.v1.ui.event``. Answered with a
    ``UiEventReceipt``."""

    mount_id: MountId
    event: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z][A-Za-z0-9._:-]{0,63}$")]
    data: dict[str, Any]


class SurfaceStopped(_In, frozen=True, tag="surface_stopped"):
    """The frame of ``mount_id`` kept reloading or navigating itself, and the shell
    stopped mounting it (surface_host.js's reload limit). Not answered: for a surface
    the agent opened, the agent hears it once (``surface_reloading``)."""

    mount_id: MountId


class UiEventFrame(_In, frozen=True, tag="ui_event"):
    """The person's event from the frame of ``mount_id`` (the shell checked name and
    data), for the agent as ``lineup.v1.ui.event``. Answered with a ``UiEventReceipt``."""

    mount_id: MountId
    event: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z][A-Za-z0-9._:-]{0,63}$")]
    data: dict[str, Any]


class Consent(_In, frozen=True, tag="consent"):
    """The person's decision on a capability call's dialog. ``acknowledged`` is the
    second step of a ``system_permission`` dialog; ``confirmation`` the phrase typed
    back for a ``restricted`` one. Answered with a ``CapabilityReceipt`` (and, when it
    approves a capability that runs in the shell, a ``CapabilityRun``: this tab runs it)."""

    conversation_id: Id
    call_id: Id
    requester_kind: RequesterKind
    allow: bool
    remember: bool = False
    acknowledged: bool = False
    confirmation: Annotated[str, msgspec.Meta(max_length=64)] | None = None


class Claim(_In, frozen=True, tag="claim"):
    """The tab offers to run an approved call nobody claimed yet (``display_only``,
    remembered consent): the first claim wins (``CapabilityRun``), others get a
    ``CapabilityReceipt``."""

    conversation_id: Id
    call_id: Id
    requester_kind: RequesterKind


class CapabilityDone(_In, frozen=True, tag="capability_done"):
    """The tab that claimed a call ran its provider: ``ok`` with ``result``, or not,
    with ``code``."""

    conversation_id: Id
    call_id: Id
    requester_kind: RequesterKind
    ok: bool
    result: dict[str, Any] | None = None
    code: Code | None = None


class GrantsRequest(_In, frozen=True, tag="grants"):
    """The settings panel asks for the remembered grants and the host capabilities."""


class Forget(_In, frozen=True, tag="forget"):
    """Revoke a remembered grant (``requester`` as the ``grants`` frame names it)."""

    requester: Annotated[str, msgspec.Meta(min_length=1, max_length=300)]
    capability: CapabilityName


class CapabilityPolicy(_In, frozen=True, tag="capability_policy"):
    """Turn a host capability off (``revoked``) or on again."""

    capability: CapabilityName
    revoked: bool


class AppsRequest(_In, frozen=True, tag="apps"):
    """The App centre opens (or wants a fresh look): answered with an ``AppCentre``.
    From then on this tab is sent a fresh ``AppCentre`` whenever it changes."""


AppsActionName = Literal["install", "update", "enable", "disable", "remove", "refresh"]


class AppsAction(_In, frozen=True, tag="apps_action"):
    """The person asks for a change in the App centre. ``install``/``update`` name an
    app and an exact version; ``enable``/``disable``/``remove`` an app only;
    ``refresh`` (fetch the catalog now) neither. Answered with an ``AppsReceipt``."""

    action: AppsActionName
    app_id: AppId | None = None
    version: SemVer | None = None

    def __post_init__(self) -> None:
        if self.action == "refresh":
            if self.app_id is not None or self.version is not None:
                raise ValueError("refresh takes no app_id or version")
            return
        if self.app_id is None:
            raise ValueError(f"{self.action} needs an app_id")
        if self.action in ("install", "update") and self.version is None:
            raise ValueError(f"{self.action} needs a version")
        if self.action not in ("install", "update") and self.version is not None:
            raise ValueError(f"{self.action} takes no version")


class ChooseLocale(_In, frozen=True, tag="locale"):
    """The person chose the shell's language (``None``: as the browser says). Every tab
    is told with a ``LocaleFrame`` and shows itself again in it."""

    locale: Literal["en", "zh-CN"] | None


class McpAction(_In, frozen=True, tag="mcp_action"):
    """The person acts on an MCP server in the App centre: ``enable``, ``disable``,
    ``remove``, or ``policy`` (with ``policy``: ``ask``, ``read_only`` or ``allow``).
    Answered with an ``AppsReceipt`` (``action`` ``mcp_<action>``, ``app_id`` the key)."""

    action: Literal["enable", "disable", "remove", "policy"]
    key: McpKey
    policy: Literal["ask", "read_only", "allow"] | None = None

    def __post_init__(self) -> None:
        if (self.action == "policy") != (self.policy is not None):
            raise ValueError("`policy` goes with the action `policy`, and only with it")


CapabilityFrame = Consent | Claim | CapabilityDone | GrantsRequest | Forget | CapabilityPolicy

ShellFrame = (
    Hello
    | SendMessage
    | Retry
    | History
    | Seen
    | Answer
    | Elicit
    | Draft
    | AppRequest
    | MountRequest
    | UnmountRequest
    | AppCall
    | MountUi
    | UiEventFrame
    | AppEventFrame
    | SurfaceStopped
    | Consent
    | Claim
    | CapabilityDone
    | GrantsRequest
    | Forget
    | CapabilityPolicy
    | AppsRequest
    | AppsAction
    | McpAction
    | ChooseLocale
)


ItemKind = Literal[
    "message",
    "status",
    "progress",
    "error",
    "interaction",
    "elicitation",
    "surface",
    "artifact",
    "unsupported",
]
"""What a timeline row is, as the shell shows it."""


class ItemView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One timeline row, ready to display."""

    key: int
    conversation_id: str
    envelope_id: str
    seq: int | None
    kind: ItemKind
    sender: Literal["agent", "user", "runtime"]
    sender_id: str = ""
    state: str
    error_code: str | None = None
    created_at: str
    html: str | None = None
    """Sanitized HTML (messages): the only HTML the shell ever inserts."""
    unread: bool = False
    """An agent envelope still unacknowledged in Interact's inbox."""
    data: dict[str, Any] = msgspec.field(default_factory=dict)
    """Plain fields for status/progress/error/interaction/artifact rows, rendered as
    text (an ``artifact`` row: ``artifact_id``, ``name``, ``media_type``, ``size``,
    ``url`` and, in a group, ``app_session_id``)."""


class ConversationView(msgspec.Struct, frozen=True):
    id: str
    agent_id: str
    title: str


class AppInstanceView(msgspec.Struct, frozen=True, kw_only=True):
    """One live MiniApp instance, as the dock shows it."""

    instance_id: str
    app_scope: str
    """For tooltips and developer views; people read ``label``."""
    state: str
    """``starting``, ``foreground``, ``background``, ``suspended`` or ``stopping``."""
    started_at: str
    name: str
    """The app's display name (the scope, for a scope no registered app has)."""
    ordinal: int
    """Which live instance of its app this is (1 for the first); fixed for its life."""
    label: str
    """What to call it: ``name``, with ``ordinal`` from 2 on ("Task Dashboard 2")."""
    icon: str
    """The app's icon on the shell origin (a generic one when the app has none)."""


class AppsView(msgspec.Struct, frozen=True, kw_only=True):
    """The live instances (opening order), the focus stack (bottom first) and the
    instance holding focus, if any."""

    records: list[AppInstanceView] = msgspec.field(default_factory=list)
    stack: list[str] = msgspec.field(default_factory=list)
    focus: str | None = None


class AppSessionView(msgspec.Struct, frozen=True, kw_only=True):
    """One app sub-session as the IM shows it: one collapsible group, placed where it
    opened (``key``/``seq`` order it among the timeline rows), holding only the
    interactions that named it as their context."""

    app_session_id: str
    conversation_id: str
    app_scope: str
    instance_id: str
    name: str
    """Its instance's ``name``, ``ordinal``, ``label`` and ``icon``, as in the dock
    (kept after the instance is gone)."""
    ordinal: int
    label: str
    icon: str
    state: Literal["open", "closed"]
    """``closed``: read-only history (its pending questions stay answerable)."""
    opened_at: str
    closed_at: str | None = None
    key: int
    """The timeline row of its (hidden) ``app_session.opened`` envelope."""
    seq: int | None
    count: int
    """How many interactions it holds (``items`` carries the newest 100)."""
    pending: int
    """How many of them still wait for an answer."""
    items: list[ItemView]
    """Its interaction rows and the ``artifact`` rows of the files its instance kept,
    oldest first: never shown as loose rows."""
    continues: str | None = None
    """The earlier sub-session this one continues."""
    files: int = 0
    """How many files its instance kept (``items`` carries the newest 100)."""


class CapabilityCallView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One capability call as the consent dialog and the providers need it. ``reason``
    and ``arguments`` come from the requester: the shell shows them as text only."""

    conversation_id: str
    call_id: str
    requester_kind: str
    requester: str
    """The agent's id, or the app's scope (for tooltips)."""
    requester_label: str
    """What to call the requester: the agent's id, or the app instance's label
    ("Task Dashboard 2")."""
    capability: str
    risk: str
    runs_in: str
    """``shell`` (a tab runs it) or ``runtime``."""
    reason: str
    arguments: dict[str, Any]
    phrase: str | None = None
    """``restricted`` only: what the person must type back."""
    state: str
    decision: str | None = None
    code: str | None = None
    result: dict[str, Any] | None = None
    expires_at: str
    tool: str | None = None
    """``mcp`` calls: the tool's name on its server."""
    tool_title: str | None = None
    """``mcp`` calls: the tool's title (its name when it has none)."""
    read_only: bool | None = None
    """``mcp`` calls: the server marks the tool read-only."""


class RowBound(msgspec.Struct, frozen=True):
    """Where a page ends: the key and ``seq`` of its first or last row, shown or
    hidden. The next page is asked for by that key; the shell places a row by
    comparing (``seq``, key) with it (rows not yet sent, ``seq`` null, come last)."""

    key: int
    seq: int | None


class Snapshot(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="snapshot"):
    user_id: str
    username: str
    connection: str
    conversations: list[ConversationView]
    items: list[ItemView]
    now: str
    """The Runtime's clock, so the page can show time left on pending interactions."""
    drafts: dict[str, str] = msgspec.field(default_factory=dict)
    complete: list[str] = msgspec.field(default_factory=list)
    """Conversations whose whole history is in ``items``: nothing older to load."""
    oldest: dict[str, RowBound] = msgspec.field(default_factory=dict)
    """Per conversation, the oldest row of its page in ``items`` (shown or hidden):
    older rows are asked for before it, and only rows from it on are placed."""
    apps: AppsView = msgspec.field(default_factory=AppsView)
    """The MiniApp instances and focus."""
    app_sessions: list[AppSessionView] = msgspec.field(default_factory=list)
    """The app sub-sessions of the conversations, in opening order."""
    capability_calls: list[CapabilityCallView] = msgspec.field(default_factory=list)
    """The open capability calls (their dialogs show again after a reload). The files
    calls kept are rows of ``items`` (and of ``app_sessions``' groups): ``artifact``."""


class ItemChanged(msgspec.Struct, frozen=True, tag_field="op", tag="item"):
    item: ItemView


class ConnectionState(msgspec.Struct, frozen=True, tag_field="op", tag="connection"):
    state: str


class HistoryPage(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="history"):
    """The rows just before (``direction`` ``older``) or just after (``newer``) the
    row the tab named, or the newest ones (``newest``), in the conversation's order,
    with the sub-session groups placed in it."""

    conversation_id: str
    direction: Literal["older", "newer", "newest"]
    items: list[ItemView]
    app_sessions: list[AppSessionView] = msgspec.field(default_factory=list)
    """The groups whose (hidden) ``app_session.opened`` row is in this page."""
    first: RowBound | None = None
    last: RowBound | None = None
    older: bool
    """More rows before ``first``."""
    newer: bool
    """More rows after ``last``."""


class ChannelError(msgspec.Struct, frozen=True, tag_field="op", tag="error"):
    code: str
    message: str


class AnswerReceipt(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="receipt"):
    """To the tab that answered: ``accepted``, or the code saying why it did not count
    (``call_already_final``, ``interaction_expired``, ``answer_invalid``, ...)."""

    interaction_id: str
    outcome: str
    message: str = ""


class ElicitReceipt(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="elicit_receipt"
):
    """To the tab that answered a form: ``accepted`` (the answer counted, whichever
    action it was), or the code saying why not (``call_already_final``: another tab
    answered first; ``interaction_expired``, ``elicitation_not_found``,
    ``elicitation_answer_invalid``)."""

    elicitation_id: str
    outcome: str


class AppsChangedFrame(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="apps"):
    """To every tab, on every change of the instances or the focus: the whole value."""

    records: list[AppInstanceView]
    stack: list[str]
    focus: str | None


class AppSessionsChanged(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="app_sessions"
):
    """To every tab: these sub-sessions changed (opened, closed, or one of their
    interactions changed); each replaces the group of the same id."""

    sessions: list[AppSessionView]


class Mounted(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="mounted"):
    """To the tab that asked: the surface of ``instance_id`` is at ``url`` (served
    once), or why not (``outcome``: ``app_instance_not_found``,
    ``surface_unavailable``, ``surface_invalid``, ``surface_too_large``)."""

    instance_id: str
    outcome: str
    mount_id: str = ""
    url: str = ""


class UiMounted(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="ui_mounted"):
    """The surface ``instance_id`` of the conversation is at ``url`` (served once), or
    why not (``app_instance_not_found``, ``surface_unavailable``, ``surface_invalid``,
    ``surface_too_large``). ``name``: the app's display name (its manifest's), for the
    card's title when the agent gave it none."""

    conversation_id: str
    instance_id: str
    outcome: str
    mount_id: str = ""
    url: str = ""
    name: str = ""


class UiEventReceipt(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="ui_event_receipt"
):
    """``accepted`` (on its way to the agent), or why not (``mount_not_found``,
    ``app_instance_not_found``, ``event_not_declared``, ``malformed_envelope``)."""

    mount_id: str
    event: str
    outcome: str


class AppReply(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="app_reply"):
    """The answer to one ``AppCall``: ``ok`` with ``result``, or ``error``
    ``{code, message}``."""

    mount_id: str
    id: str
    ok: bool
    result: Any = None
    error: dict[str, str] | None = None


class AppPush(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="app_push"):
    """To every tab: something changed for these instances' apps (``topic``
    ``tools`` or ``inbox``): the tab that shows one nudges its frame to ask again."""

    instance_ids: list[str]
    topic: str


class AppReceipt(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="app_receipt"):
    """To the tab that asked: ``accepted``, or the Runtime's refusal code
    (``app_instance_not_found``, ``lifecycle_denied``)."""

    instance_id: str
    action: str
    outcome: str


class CapabilitiesFrame(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="capabilities"
):
    """To every tab: these calls changed (arrived, decided, claimed or ended)."""

    calls: list[CapabilityCallView]


class CapabilityRun(
    CapabilityCallView, frozen=True, kw_only=True, tag_field="op", tag="capability_run"
):
    """To the one tab that claimed the call: run its provider now, then report
    ``capability_done`` (``device.pick_file``: upload with ``upload_token``)."""

    upload_token: str = ""


class CapabilityReceipt(
    msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="capability_receipt"
):
    """To the tab that asked (``action``: ``consent``, ``claim`` or ``done``):
    ``accepted`` or a stable code (``confirmation_required``, ``call_already_final``,
    ``capability_call_busy``, ``capability_call_not_found``, ...)."""

    conversation_id: str
    call_id: str
    requester_kind: str
    action: str
    outcome: str


class GrantView(msgspec.Struct, frozen=True, kw_only=True):
    requester: str
    """``agent:<id>`` or ``app:<scope>``."""
    label: str
    """The agent's id, or the app's display name."""
    capability: str


class HostCapabilityView(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    risk: str
    revoked: bool


class LocaleFrame(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="locale"):
    """The person's language setting changed: ``auto`` (the browser's) or a language."""

    choice: str


class GrantsFrame(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="grants"):
    """The remembered grants (this Runtime session) and the host capabilities."""

    grants: list[GrantView]
    capabilities: list[HostCapabilityView]


class PublisherView(msgspec.Struct, frozen=True, kw_only=True):
    """Who signed a release: the key's id, shortened for display, and the name the
    person's trusted key carries (empty for a key this Runtime does not trust)."""

    key_id: str
    name: str
    trusted: bool


class CentreAppView(msgspec.Struct, frozen=True, kw_only=True):
    """One installed app in the App centre (display only: no URL, digest or
    signature)."""

    app_id: str
    name: str
    kind: Literal["built-in", "installed"]
    version: str
    enabled: bool
    publisher: PublisherView | None
    """``None`` for a built-in app."""
    permissions: list[str]
    versions: list[str]
    """Every version stored here, oldest first."""
    update: str | None
    """A newer version the catalog offers (never moved to by itself)."""
    unavailable: str | None
    """Why no version may run: ``version_revoked``, ``key_revoked``; else ``None``."""
    running: int = 0
    """Its live instances (turning it off or removing it closes them: the shell asks
    first)."""


class OfferView(msgspec.Struct, frozen=True, kw_only=True):
    """An app the catalog offers that is not installed: its newest installable
    version."""

    app_id: str
    version: str
    publisher: PublisherView
    permissions: list[str]
    name: str = ""
    """The app's display name, signed in its release (empty: the release names none,
    and the shell shows the app id)."""


class CatalogStateView(msgspec.Struct, frozen=True, kw_only=True):
    """The catalog as last fetched: ``production`` (HTTPS) or a development catalog
    (plain HTTP on this machine); ``fetched_at`` ``None`` if never fetched."""

    production: bool
    fetched_at: str | None


class McpToolView(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    title: str | None
    read_only: bool
    has_ui: bool


class McpServerView(msgspec.Struct, frozen=True, kw_only=True):
    """One configured MCP server in the App centre."""

    key: str
    name: str
    """What the server calls itself (its title or name), else the config's name."""
    configured_name: str
    version: str | None
    enabled: bool
    state: str
    """``disabled``, ``stopped``, ``starting``, ``ready``, ``restarting`` or ``failed``."""
    policy: str
    has_ui: bool
    tools: list[McpToolView]
    reason: str | None = None
    """Why it failed or restarts (one line, from the server's exit or its stderr)."""


class McpNotice(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="mcp_notice"):
    """To every tab: a configured MCP server stopped working (``failed``: it will not be
    started again until the person turns it on; ``restarting``: it is being started
    again). Its calls in flight ended with ``mcp_server_unavailable``."""

    key: str
    name: str
    state: Literal["failed", "restarting"]
    reason: str | None


class AppCentre(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="app_centre"):
    """To a tab that opened the App centre (and again on every change): installed
    apps, the catalog's apps not installed, the catalog's state and the configured MCP
    servers."""

    apps: list[CentreAppView]
    offers: list[OfferView]
    catalog: CatalogStateView
    mcp_servers: list[McpServerView] = msgspec.field(default_factory=list)


class AppFallback(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="app_fallback"):
    """To every tab: a revocation moved an app back (``rolled_back`` to
    ``to_version``) or left it with nothing to run (``unavailable``); ``reason`` is
    ``version_revoked`` or ``key_revoked``."""

    app_id: str
    name: str
    outcome: Literal["rolled_back", "unavailable"]
    from_version: str
    to_version: str | None
    reason: str


class AppsReceipt(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="apps_receipt"):
    """To the tab that asked: ``outcome`` ``ok``, or the stable code of the refusal
    (``key_unknown``, ``version_revoked``, ``app_not_removable``, ``app_unavailable``,
    ``catalog_unavailable``, ...), with ``message`` in words for the person."""

    action: str
    app_id: str | None = None
    version: str | None = None
    outcome: str
    message: str = ""
