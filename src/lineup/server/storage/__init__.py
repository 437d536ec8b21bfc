"""AppServer storage: one interface, one engine per database."""

from typing import TYPE_CHECKING, Any

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
from .sqlite import SQLiteStorage

if TYPE_CHECKING:
    from .postgres import PostgresStorage


def __getattr__(name: str) -> Any:
    # PostgresStorage needs asyncpg (lineup[postgres]): imported only when asked for.
    if name == "PostgresStorage":
        from .postgres import PostgresStorage

        return PostgresStorage
    raise AttributeError(name)


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
