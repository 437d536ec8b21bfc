"""The per-user Runtime: transport, local store, sync loop, outbox, inbox, audit."""

from .records import (
    AuditRow,
    ConversationInfo,
    InboxItem,
    OutboxItem,
    Received,
    Session,
    TimelineItem,
)
from .runtime import (
    DEFAULT_SCOPE,
    ConnectionChanged,
    NotLoggedIn,
    Runtime,
    RuntimeEvent,
    TimelineChanged,
    classify,
)
from .store import RuntimeStore

__all__ = [
    "DEFAULT_SCOPE",
    "AuditRow",
    "ConnectionChanged",
    "ConversationInfo",
    "InboxItem",
    "NotLoggedIn",
    "OutboxItem",
    "Received",
    "Runtime",
    "RuntimeEvent",
    "RuntimeStore",
    "Session",
    "TimelineChanged",
    "TimelineItem",
    "classify",
]
