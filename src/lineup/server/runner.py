"""Run the AppServer under uvicorn (one process; SQLite)."""

from __future__ import annotations

import gc
from pathlib import Path

import uvicorn

from lineup.serving import EmbeddedServer, uvicorn_config

from .app import create_app
from .catalog import catalog_for
from .storage import SQLiteStorage

DATABASE_FILE = "appserver.sqlite3"
GC_THRESHOLDS = (20_000, 20, 20)
"""Young collections every 20,000 net allocations instead of 700: each envelope
allocates a few dozen short-lived objects (frames, structs, futures)."""


def storage_for(data_dir: Path) -> SQLiteStorage:
    return SQLiteStorage(data_dir / DATABASE_FILE)


def build_server(
    data_dir: Path, *, host: str = "127.0.0.1", port: int = 8765, embedded: bool = False
) -> uvicorn.Server:
    app = create_app(storage_for(data_dir), catalog=catalog_for(data_dir))
    # Move everything allocated so far (modules, app, routes) out of the collector's
    # sight, so collections only walk what requests allocate.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)
    config = uvicorn_config(app, host=host, port=port)
    return (EmbeddedServer if embedded else uvicorn.Server)(config)
