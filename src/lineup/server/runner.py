"""Run the AppServer under uvicorn: one process on SQLite (the default), or several
worker processes on one PostgreSQL database (``--database postgresql://...``)."""

from __future__ import annotations

import gc
import logging
import os
from pathlib import Path

import uvicorn
from starlette.applications import Starlette
from uvicorn.supervisors import Multiprocess

from lineup import logs
from lineup.serving import EmbeddedServer, LineUpServer, uvicorn_config

from .app import create_app
from .catalog import catalog_for
from .storage import SQLiteStorage, Storage

DATABASE_FILE = "appserver.sqlite3"
DEFAULT_POOL_SIZE = 10
GC_THRESHOLDS = (20_000, 20, 20)
"""Young collections every 20,000 net allocations instead of 700: each envelope
allocates a few dozen short-lived objects (frames, structs, futures)."""

_ENV_DATA_DIR = "LINEUP_SERVER_DATA_DIR"
_ENV_DATABASE = "LINEUP_DATABASE_URL"
_ENV_POOL_SIZE = "LINEUP_POOL_SIZE"
_ENV_LOG_LEVEL = "LINEUP_LOG_LEVEL"


def is_postgres(database: str | None) -> bool:
    return database is not None and database.startswith(("postgresql://", "postgres://"))


def storage_for(
    data_dir: Path, database: str | None = None, *, pool_size: int = DEFAULT_POOL_SIZE
) -> Storage:
    """SQLite in ``data_dir`` without ``database``; PostgreSQL for a
    ``postgresql://`` URL. Raises ``ValueError`` for anything else."""
    if database is None:
        return SQLiteStorage(data_dir / DATABASE_FILE)
    if is_postgres(database):
        from .storage.postgres import PostgresStorage

        return PostgresStorage(database, pool_size=pool_size)
    raise ValueError("--database takes a postgresql:// URL (SQLite is the default)")


def _tune_gc() -> None:
    # Move everything allocated so far (modules, app, routes) out of the collector's
    # sight, so collections only walk what requests allocate.
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def build_server(
    data_dir: Path,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    embedded: bool = False,
    database: str | None = None,
    pool_size: int = DEFAULT_POOL_SIZE,
) -> uvicorn.Server:
    """One AppServer process."""
    storage = storage_for(data_dir, database, pool_size=pool_size)
    app = create_app(storage, catalog=catalog_for(data_dir))
    _tune_gc()
    config = uvicorn_config(app, host=host, port=port)
    return (EmbeddedServer if embedded else LineUpServer)(config)


def app_from_env() -> Starlette:
    """The app of one worker process (``run_workers``), configured by environment."""
    logs.configure(os.environ.get(_ENV_LOG_LEVEL, logs.DEFAULT_LEVEL))
    data_dir = Path(os.environ[_ENV_DATA_DIR])
    logs.use_data_dir(data_dir)
    storage = storage_for(
        data_dir,
        os.environ[_ENV_DATABASE],
        pool_size=int(os.environ.get(_ENV_POOL_SIZE, DEFAULT_POOL_SIZE)),
    )
    app = create_app(storage, catalog=catalog_for(data_dir))
    _tune_gc()
    return app


def run_workers(
    data_dir: Path,
    *,
    host: str,
    port: int,
    database: str,
    workers: int,
    pool_size: int = DEFAULT_POOL_SIZE,
) -> None:
    """``workers`` AppServer processes sharing one listening socket and one
    PostgreSQL database; uvicorn's supervisor restarts a worker that dies and stops
    them all gracefully on SIGTERM (open requests get 10 s)."""
    if not is_postgres(database):
        raise ValueError("several processes need a postgresql:// database")
    os.environ[_ENV_DATA_DIR] = str(data_dir)
    os.environ[_ENV_DATABASE] = database
    os.environ[_ENV_POOL_SIZE] = str(pool_size)
    os.environ.setdefault(_ENV_LOG_LEVEL, logging.getLevelName(logging.getLogger().level))
    config = uvicorn_config("lineup.server.runner:app_from_env", host=host, port=port)
    config.factory = True
    config.workers = workers
    sock = config.bind_socket()
    # Listen before the workers start: connections wait in the backlog until a worker
    # accepts them (uvicorn's own supervisor leaves the socket unlistened, so clients
    # and load balancers get "connection refused" while workers boot).
    sock.listen(config.backlog)
    Multiprocess(config, sockets=[sock]).run()
