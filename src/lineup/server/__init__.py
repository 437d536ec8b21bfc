"""The AppServer: users, agents, conversations, an ordered log per conversation."""

from .app import create_app
from .service import AppServerService
from .storage import SQLiteStorage, Storage

__all__ = ["AppServerService", "SQLiteStorage", "Storage", "create_app"]
