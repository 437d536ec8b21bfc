"""The verified cache: artifacts that passed every check, by their SHA-256.

A write goes to a temporary file in the cache directory, is flushed and fsynced,
renamed over its final name ``<sha256>.tar`` and the directory fsynced: a crash leaves
either no file or the whole verified file, never a partial one under a final name.
Temporary files a crash left behind are removed by ``sweep``. A file is only ever
read back through ``read``, which checks its SHA-256 again, so a file changed on disk
is treated as missing rather than mounted.

Which cached artifact is *active* is not the cache's business: the Runtime's
registry row names it, and is committed only after the rename.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Container
from pathlib import Path

from .files import TEMP_PREFIX, ensure_dir, write_atomic
from .release import sha256_hex

log = logging.getLogger("lineup.delivery")

__all__ = ["VerifiedCache"]

_FINAL = re.compile(r"^[0-9a-f]{64}\.tar\Z")


class VerifiedCache:
    """Verified artifacts under ``directory``. ``stage`` (tests only) is called with
    ``"written"`` after the temporary file is complete and ``"renamed"`` after the
    rename, to let a crash test stop the process exactly there."""

    def __init__(self, directory: Path, *, stage: Callable[[str], None] | None = None) -> None:
        self.directory = Path(directory)
        self._stage = stage or (lambda _: None)

    def path_of(self, sha256: str) -> Path:
        if not re.fullmatch(r"[0-9a-f]{64}", sha256):
            raise ValueError("not a SHA-256")
        return self.directory / f"{sha256}.tar"

    def write(self, sha256: str, artifact: bytes) -> None:
        """Store verified bytes atomically (idempotent for the same digest)."""
        if sha256_hex(artifact) != sha256:
            raise ValueError("the bytes are not the named artifact")
        final = self.path_of(sha256)
        ensure_dir(self.directory)
        if self.read(sha256) is not None:
            return
        write_atomic(final, artifact, mode=0o600, written=lambda: self._stage("written"))
        self._stage("renamed")

    def read(self, sha256: str) -> bytes | None:
        """The cached bytes if present and still exactly ``sha256``; else ``None``."""
        try:
            data = self.path_of(sha256).read_bytes()
        except FileNotFoundError:
            return None
        return data if sha256_hex(data) == sha256 else None

    def sweep(self, keep: Container[str]) -> int:
        """Remove temporary files and artifacts no registry row names. Returns how
        many files went."""
        if not self.directory.is_dir():
            return 0
        removed = 0
        for path in self.directory.iterdir():
            name = path.name
            digest = name.removesuffix(".tar")
            if name.startswith(TEMP_PREFIX) or (_FINAL.match(name) and digest not in keep):
                try:
                    path.unlink()
                except FileNotFoundError:
                    continue
                except OSError as exc:  # a directory, no permission: leave it, go on
                    log.warning("cache entry not removed", extra={"error": type(exc).__name__})
                    continue
                removed += 1
        return removed
