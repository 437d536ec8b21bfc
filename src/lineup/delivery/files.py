"""Durable file writes: a file appears whole under its name or not at all.

``write_atomic`` writes a temporary file beside the target (``.incoming-<random>``),
flushes and fsyncs it, renames it over the target and fsyncs the directory;
``ensure_dir`` creates missing directories and fsyncs each parent a new entry was
made in. Used by the Runtime's verified cache and the AppServer's catalog.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Callable
from pathlib import Path

__all__ = ["TEMP_PREFIX", "ensure_dir", "fsync_dir", "write_atomic"]

TEMP_PREFIX = ".incoming-"
"""The name prefix of a file being written (what a crash can leave behind)."""


def fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def ensure_dir(directory: Path) -> None:
    """Create ``directory`` (and parents) durably: each new entry's parent is fsynced."""
    if directory.is_dir():
        return
    ensure_dir(directory.parent)
    with contextlib.suppress(FileExistsError):
        directory.mkdir()
    fsync_dir(directory.parent)


def write_atomic(
    path: Path,
    data: bytes,
    *,
    mode: int = 0o644,
    written: Callable[[], None] | None = None,
) -> None:
    """Write ``data`` to ``path`` atomically and durably. ``written`` (tests) runs
    after the temporary file is complete, before the rename."""
    ensure_dir(path.parent)
    temp = path.with_name(f"{TEMP_PREFIX}{secrets.token_hex(8)}")
    try:
        fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        if written is not None:
            written()
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    fsync_dir(path.parent)
