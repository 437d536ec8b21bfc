"""The artifact format: a deterministic, uncompressed POSIX ustar archive of a bundle.

``pack`` writes the bundle's files in sorted path order with every header field that
could vary fixed (mode 0644, uid/gid 0, empty owner names, mtime 0), so the same files
always give the same bytes and the same SHA-256. The archive is not compressed: its
length is the memory it takes to check, which the release states exactly (no
decompression bombs), and a bundle is small text anyway.

``unpack`` reads an archive from memory into ``{path: bytes}``, accepting regular
files only (no links, devices or directories' metadata) and each path once; the
bundle checks (``load_bundle``) then judge the paths and contents.
"""

from __future__ import annotations

import io
import tarfile
from collections.abc import Mapping

from lineup.formats.bundle import MAX_BUNDLE_FILES

from .errors import DeliveryError, DeliveryErrorCode

__all__ = ["pack", "unpack"]


def pack(files: Mapping[str, bytes]) -> bytes:
    """The archive of ``files`` (already checked with ``load_bundle``)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as archive:
        for path in sorted(files):
            body = files[path]
            info = tarfile.TarInfo(path)
            info.size = len(body)
            info.mode = 0o644
            info.mtime = 0
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            info.type = tarfile.REGTYPE
            archive.addfile(info, io.BytesIO(body))
    return out.getvalue()


def unpack(data: bytes) -> dict[str, bytes]:
    """The files of an archive. Raises ``archive_invalid``."""
    files: dict[str, bytes] = {}
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for member in archive:
                if not member.isreg():
                    raise _invalid("only regular files may be archived")
                if member.name in files:
                    raise _invalid("a path is archived twice")
                if len(files) >= MAX_BUNDLE_FILES:
                    raise _invalid(f"more than {MAX_BUNDLE_FILES} files")
                reader = archive.extractfile(member)
                if reader is None:  # pragma: no cover - isreg() members always have one
                    raise _invalid("an archived file cannot be read")
                files[member.name] = reader.read()
    except (tarfile.TarError, EOFError, UnicodeDecodeError):
        raise _invalid("not a ustar archive") from None
    if not files:
        raise _invalid("the archive is empty")
    return files


def _invalid(message: str) -> DeliveryError:
    return DeliveryError(DeliveryErrorCode.ARCHIVE_INVALID, message)
