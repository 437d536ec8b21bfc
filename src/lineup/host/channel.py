"""Frames of the host channel: the one WebSocket between the shell and its Runtime.

Everything the shell sends is decoded into these strict types (unknown fields and
ops refused, sizes bounded) exactly like network input; the shell never sees a raw
envelope, a token or the store, only views made for display.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

import msgspec

from lineup.protocol.fields import ID_PATTERN, MAX_TEXT_CHARS
from lineup.protocol.interactions import MAX_INPUT_CHARS

Id = Annotated[str, msgspec.Meta(pattern=ID_PATTERN)]
MountId = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{24}$")]
RequestId = Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z0-9_-]{1,64}$")]
MAX_FRAME_BYTES = 256 * 1024


class _In(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, tag_field="op"):
    pass


class Hello(_In, frozen=True, tag="hello"):
    """Sent first: the Runtime answers with a snapshot."""


class SendMessage(_In, frozen=True, tag="send"):
    conversation_id: Id
    text: Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_TEXT_CHARS)]


class Retry(_In, frozen=True, tag="retry"):
    conversation_id: Id
    envelope_id: Id


class History(_In, frozen=True, tag="history"):
    conversation_id: Id
    before_seq: Annotated[int, msgspec.Meta(ge=1)]


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


class UiEventFrame(_In, frozen=True, tag="ui_event"):
    """The person's event from the frame of ``mount_id`` (the shell checked name and
    data), for the agent as ``lineup.v1.ui.event``. Answered with a ``UiEventReceipt``."""

    mount_id: MountId
    event: Annotated[str, msgspec.Meta(pattern=r"^[A-Za-z][A-Za-z0-9._:-]{0,63}$")]
    data: dict[str, Any]


ShellFrame = (
    Hello
    | SendMessage
    | Retry
    | History
    | Seen
    | Answer
    | Draft
    | AppRequest
    | MountRequest
    | UnmountRequest
    | AppCall
    | MountUi
    | UiEventFrame
)


class ItemView(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One timeline row, ready to display."""

    key: int
    conversation_id: str
    envelope_id: str
    seq: int | None
    kind: Literal["message", "status", "progress", "error", "interaction", "surface", "unsupported"]
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
    """Plain fields for status/progress/error/interaction rows, rendered as text."""


class ConversationView(msgspec.Struct, frozen=True):
    id: str
    agent_id: str
    title: str


class AppInstanceView(msgspec.Struct, frozen=True, kw_only=True):
    """One live MiniApp instance, as the dock shows it."""

    instance_id: str
    app_scope: str
    state: str
    """``starting``, ``foreground``, ``background``, ``suspended`` or ``stopping``."""
    started_at: str


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
    """Its interaction rows, oldest first: never shown as loose cards."""
    continues: str | None = None
    """The earlier sub-session this one continues."""


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
    apps: AppsView = msgspec.field(default_factory=AppsView)
    """The MiniApp instances and focus."""
    app_sessions: list[AppSessionView] = msgspec.field(default_factory=list)
    """The app sub-sessions of the conversations, in opening order."""


class ItemChanged(msgspec.Struct, frozen=True, tag_field="op", tag="item"):
    item: ItemView


class ConnectionState(msgspec.Struct, frozen=True, tag_field="op", tag="connection"):
    state: str


class HistoryPage(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="history"):
    conversation_id: str
    items: list[ItemView]
    complete: bool


class ChannelError(msgspec.Struct, frozen=True, tag_field="op", tag="error"):
    code: str
    message: str


class AnswerReceipt(msgspec.Struct, frozen=True, kw_only=True, tag_field="op", tag="receipt"):
    """To the tab that answered: ``accepted``, or the code saying why it did not count
    (``call_already_final``, ``interaction_expired``, ``answer_invalid``, ...)."""

    interaction_id: str
    outcome: str
    message: str = ""


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
    ``surface_too_large``)."""

    conversation_id: str
    instance_id: str
    outcome: str
    mount_id: str = ""
    url: str = ""


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
