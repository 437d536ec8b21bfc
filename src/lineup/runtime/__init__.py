"""The per-user Runtime: transport, local store, sync loop, outbox, inbox, audit, and
the standard interactions."""

from .events import ConnectionChanged, RuntimeEvent, TimelineChanged, ToolCallsChanged
from .receive import DEFAULT_SCOPE, INVENTORY, classify
from .records import (
    AuditRow,
    ConversationInfo,
    InboxItem,
    InteractionRecord,
    OutboxItem,
    Received,
    Session,
    TimelineItem,
)
from .runtime import InteractionRefused, NotLoggedIn, Runtime
from .store import RuntimeStore
from .timeline_pages import TimelinePage

__all__ = [
    "DEFAULT_SCOPE",
    "INVENTORY",
    "AuditRow",
    "ConnectionChanged",
    "ConversationInfo",
    "InboxItem",
    "InteractionRecord",
    "InteractionRefused",
    "NotLoggedIn",
    "OutboxItem",
    "Received",
    "Runtime",
    "RuntimeEvent",
    "RuntimeStore",
    "Session",
    "TimelineChanged",
    "TimelineItem",
    "TimelinePage",
    "ToolCallsChanged",
    "classify",
]
