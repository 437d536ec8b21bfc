"""SQLite plumbing shared by the AppServer and the Runtime: one writer, many readers."""

from .migrations import migrate_sqlite, migration_files
from .sqlite import Job, SQLiteDatabase, StorageError

__all__ = ["Job", "SQLiteDatabase", "StorageError", "migrate_sqlite", "migration_files"]
