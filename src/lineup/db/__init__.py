"""SQLite plumbing shared by the AppServer and the Runtime: one writer, many readers."""

from .migrations import migrate_sqlite, migration_files
from .sqlite import Job, SQLiteDatabase, StorageError, Txn, TxnFactory

__all__ = [
    "Job",
    "SQLiteDatabase",
    "StorageError",
    "Txn",
    "TxnFactory",
    "migrate_sqlite",
    "migration_files",
]
