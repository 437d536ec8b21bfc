"""AppServer storage: one interface, one engine per database."""

from lineup.db import StorageError

from .base import (
    AgentRecord,
    AlreadyExists,
    AppendOutcome,
    AppendRequest,
    AppendStatus,
    ConversationRecord,
    Principal,
    Storage,
    StoredEnvelope,
    UserRecord,
)
from .postgres import PostgresStorage
from .sqlite import SQLiteStorage

__all__ = [
    "AgentRecord",
    "AlreadyExists",
    "AppendOutcome",
    "AppendRequest",
    "AppendStatus",
    "ConversationRecord",
    "PostgresStorage",
    "Principal",
    "SQLiteStorage",
    "Storage",
    "StorageError",
    "StoredEnvelope",
    "UserRecord",
]
