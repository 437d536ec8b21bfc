"""The AppServer's catalog of signed MiniApp releases and their artifacts (spec 002 §9.2).

The AppServer only *serves* releases and artifacts; it is not trusted to verify them:
every Runtime checks the signature, length and SHA-256 itself. ``publish`` still
refuses an unsigned release or an artifact that is not exactly its release's bundle,
so an operator's mistake is caught before anyone downloads it.

On disk, under ``<data_dir>/catalog/``::

    releases/<app_id>/<version>.json   the release, exactly as ``encode_release`` gives
    artifacts/<artifact_id>            the artifact's bytes
    revocations.json                   {"versions": [{"app_id", "version"}], "keys": [...]}

Every write goes to a temporary file in the same directory, is fsynced, renamed over
its final name, and the directory fsynced. ``publish`` writes the artifact before the
release, so a listed release always has its bytes. Writers (``publish``, ``revoke_*``)
hold an exclusive ``flock`` on ``.lock``, so two operator commands never interleave.

Releases are immutable: the same app and version again with the same release is a
no-op, with another release ``app_version_conflict`` (a new artifact needs a new
version); an artifact id names one release only (``artifact_conflict``).
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import logging
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from lineup.delivery.errors import DeliveryError, DeliveryErrorCode
from lineup.delivery.files import TEMP_PREFIX, ensure_dir, write_atomic
from lineup.delivery.release import (
    ARTIFACT_ID_PATTERN,
    KEY_ID_PATTERN,
    MAX_RELEASE_BYTES,
    Release,
    decode_release,
    encode_release,
    sha256_hex,
)
from lineup.delivery.verify import check_artifact
from lineup.formats.semver import compare_semver
from lineup.protocol.fields import APP_ID_PATTERN, SEMVER_PATTERN

__all__ = [
    "CATALOG_DIRECTORY",
    "Catalog",
    "CatalogEntry",
    "catalog_for",
    "empty_document",
]

log = logging.getLogger("lineup.server.catalog")

CATALOG_DIRECTORY = "catalog"
REVISION_PREFIX = "cat-"
MAX_REVOCATIONS_BYTES = 4 * 1024 * 1024
_RELEASE_SUFFIX = ".json"


def catalog_for(data_dir: Path) -> Catalog:
    """The catalog of the AppServer whose data directory is ``data_dir``."""
    return Catalog(Path(data_dir) / CATALOG_DIRECTORY)


@dataclass(frozen=True, slots=True)
class CatalogEntry:
    """One published release as listed, and whether it may still be installed."""

    release: Release
    version_revoked: bool
    key_revoked: bool


@dataclass(frozen=True, slots=True)
class _Snapshot:
    body: bytes
    revision: str
    releases: tuple[Release, ...] = ()
    by_artifact: dict[str, Release] = field(default_factory=dict)
    revoked_versions: frozenset[tuple[str, str]] = frozenset()
    revoked_keys: frozenset[str] = frozenset()


class _Revocations(msgspec.Struct, forbid_unknown_fields=True):
    versions: list[dict[str, str]] = []
    keys: list[str] = []


def _version_order(version: str, other: str) -> int:
    return compare_semver(version, other) or (version > other) - (version < other)


def _sorted_versions(pairs: set[tuple[str, str]]) -> list[tuple[str, str]]:
    """By app id, then SemVer precedence (the string breaks ties of build metadata)."""

    def compare(left: tuple[str, str], right: tuple[str, str]) -> int:
        if left[0] != right[0]:
            return -1 if left[0] < right[0] else 1
        return _version_order(left[1], right[1])

    return sorted(pairs, key=functools.cmp_to_key(compare))


def _build(
    releases: list[tuple[Release, bytes]],
    revoked_versions: set[tuple[str, str]],
    revoked_keys: set[str],
) -> _Snapshot:
    def compare(left: tuple[Release, bytes], right: tuple[Release, bytes]) -> int:
        a, b = left[0], right[0]
        if a.app_id != b.app_id:
            return -1 if a.app_id < b.app_id else 1
        return _version_order(a.version, b.version)

    ordered = sorted(releases, key=functools.cmp_to_key(compare))
    apps: list[dict[str, Any]] = []
    for release, raw in ordered:
        if not apps or apps[-1]["app_id"] != release.app_id:
            apps.append({"app_id": release.app_id, "releases": []})
        apps[-1]["releases"].append(msgspec.Raw(raw))
    revoked = {
        "versions": [{"app_id": a, "version": v} for a, v in _sorted_versions(revoked_versions)],
        "keys": sorted(revoked_keys),
    }
    content = msgspec.json.encode({"apps": apps, "revoked": revoked}, order="sorted")
    revision = REVISION_PREFIX + sha256_hex(content)[:20]
    body = msgspec.json.encode(
        {"revision": revision, "apps": apps, "revoked": revoked}, order="sorted"
    )
    return _Snapshot(
        body=body,
        revision=revision,
        releases=tuple(release for release, _ in ordered),
        by_artifact={release.artifact_id: release for release, _ in ordered},
        revoked_versions=frozenset(revoked_versions),
        revoked_keys=frozenset(revoked_keys),
    )


def empty_document() -> tuple[bytes, str]:
    """The document of a catalog with nothing published (an AppServer without one)."""
    snapshot = _build([], set(), set())
    return snapshot.body, snapshot.revision


# --- files ---------------------------------------------------------------------------------


def _read_limited(path: Path, limit: int) -> bytes:
    with path.open("rb") as source:
        return source.read(limit + 1)


def _read_if_exists(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


# --- the catalog -----------------------------------------------------------------------------


class Catalog:
    """Published releases, artifacts and revocations under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self.releases_dir = self.directory / "releases"
        self.artifacts_dir = self.directory / "artifacts"
        self.revocations_path = self.directory / "revocations.json"
        self._cache_lock = threading.Lock()
        self._cached: tuple[object, _Snapshot] | None = None

    def __repr__(self) -> str:
        return "Catalog()"

    # --- writing ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold the writers' lock (across processes); drop stale temporary files."""
        ensure_dir(self.directory)
        fd = os.open(self.directory / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            self._sweep()
            yield
        finally:
            os.close(fd)  # releases the lock
            self._invalidate()

    def _sweep(self) -> None:
        """Remove temporary files a crashed writer left (only writers make them, and
        the caller holds the writers' lock)."""
        places = [self.directory, self.artifacts_dir]
        if self.releases_dir.is_dir():
            places.extend(p for p in self.releases_dir.iterdir() if p.is_dir())
        for place in places:
            if not place.is_dir():
                continue
            for path in place.iterdir():
                if path.name.startswith(TEMP_PREFIX):
                    with contextlib.suppress(FileNotFoundError):
                        path.unlink()

    def _invalidate(self) -> None:
        with self._cache_lock:
            self._cached = None

    def _release_path(self, app_id: str, version: str) -> Path:
        if not re.match(APP_ID_PATTERN, app_id) or not re.match(SEMVER_PATTERN, version):
            raise DeliveryError(DeliveryErrorCode.RELEASE_INVALID, "not an app id and version")
        return self.releases_dir / app_id / f"{version}{_RELEASE_SUFFIX}"

    def publish(self, release_bytes: bytes, artifact: bytes) -> Release:
        """Check and store a signed release and its artifact. Idempotent for the same
        release; raises ``DeliveryError`` (nothing is written then)."""
        release = decode_release(release_bytes)
        if not release.signed:
            raise DeliveryError(DeliveryErrorCode.RELEASE_INVALID, "the release is not signed")
        check_artifact(release, artifact)
        encoded = encode_release(release)
        release_path = self._release_path(release.app_id, release.version)
        with self._writing():
            stored = _read_if_exists(release_path)
            if stored is not None and not self._same_release(stored, encoded):
                raise DeliveryError(
                    DeliveryErrorCode.VERSION_CONFLICT,
                    "this version is already published with another release; "
                    "a new artifact needs a new version",
                )
            for other, _ in self._read_releases():
                if other.artifact_id == release.artifact_id and (
                    (other.app_id, other.version) != (release.app_id, release.version)
                ):
                    raise DeliveryError(
                        DeliveryErrorCode.ARTIFACT_CONFLICT,
                        "the artifact id is already used by another release",
                    )
            artifact_path = self.artifacts_dir / release.artifact_id
            if _read_if_exists(artifact_path) != artifact:
                # Either new, or a leftover no release names (checked above).
                write_atomic(artifact_path, artifact)
            if stored is None:
                write_atomic(release_path, encoded)
        log.info(
            "catalog release published",
            extra={
                "app_id": release.app_id,
                "version": release.version,
                "artifact_id": release.artifact_id,
                "bytes": release.length,
                "duplicate": stored is not None,
            },
        )
        return release

    @staticmethod
    def _same_release(stored: bytes, encoded: bytes) -> bool:
        try:
            return encode_release(decode_release(stored)) == encoded
        except DeliveryError:
            return False

    def revoke_version(self, app_id: str, version: str) -> bool:
        """Revoke one app version (published or not). Returns whether it is new."""
        if not re.match(APP_ID_PATTERN, app_id):
            raise DeliveryError(DeliveryErrorCode.RELEASE_INVALID, "not an app id")
        if not re.match(SEMVER_PATTERN, version):
            raise DeliveryError(DeliveryErrorCode.RELEASE_INVALID, "not a SemVer version")
        with self._writing():
            versions, keys = self._read_revocations()
            if (app_id, version) in versions:
                return False
            self._write_revocations(versions | {(app_id, version)}, keys)
        log.info("catalog version revoked", extra={"app_id": app_id, "version": version})
        return True

    def revoke_key(self, key_id: str) -> bool:
        """Revoke a publisher key. Returns whether it is new."""
        if not re.match(KEY_ID_PATTERN, key_id):
            raise DeliveryError(DeliveryErrorCode.RELEASE_INVALID, "not a key id")
        with self._writing():
            versions, keys = self._read_revocations()
            if key_id in keys:
                return False
            self._write_revocations(versions, keys | {key_id})
        log.info("catalog key revoked", extra={"key_id": key_id})
        return True

    def _write_revocations(self, versions: set[tuple[str, str]], keys: set[str]) -> None:
        document = {
            "versions": [{"app_id": a, "version": v} for a, v in _sorted_versions(versions)],
            "keys": sorted(keys),
        }
        write_atomic(self.revocations_path, msgspec.json.encode(document, order="sorted"))

    # --- reading ---------------------------------------------------------------------

    def _read_revocations(self) -> tuple[set[tuple[str, str]], set[str]]:
        """The revocations; an unreadable file fails closed (``catalog_unavailable``):
        ignoring it would silently un-revoke."""
        try:
            raw = _read_limited(self.revocations_path, MAX_REVOCATIONS_BYTES)
        except FileNotFoundError:
            return set(), set()
        try:
            if len(raw) > MAX_REVOCATIONS_BYTES:
                raise ValueError("too large")
            document = msgspec.json.decode(raw, type=_Revocations)
            versions = {(item["app_id"], item["version"]) for item in document.versions}
        except (msgspec.DecodeError, KeyError, ValueError):
            log.error("catalog revocations unreadable")
            raise DeliveryError(
                DeliveryErrorCode.CATALOG_UNAVAILABLE, "the revocations file is unreadable"
            ) from None
        return versions, set(document.keys)

    def _release_files(self) -> Iterator[tuple[str, str, Path, int]]:
        """``(app_id, file name, path, inode)`` of every release file under a valid app
        id (directory listings only; no file is opened)."""
        if not self.releases_dir.is_dir():
            return
        with os.scandir(self.releases_dir) as apps:
            app_dirs = [e for e in apps if re.match(APP_ID_PATTERN, e.name) and e.is_dir()]
        for app_dir in app_dirs:
            with os.scandir(app_dir.path) as files:
                for entry in files:
                    name = entry.name
                    if name.endswith(_RELEASE_SUFFIX) and not name.startswith("."):
                        yield app_dir.name, name, Path(entry.path), entry.inode()

    def _read_releases(self) -> list[tuple[Release, bytes]]:
        """Every readable release with its file's bytes; others are skipped and logged
        (ids and codes only)."""
        found: list[tuple[Release, bytes]] = []
        for app_id, name, path, _ in self._release_files():
            version = name.removesuffix(_RELEASE_SUFFIX)
            shown = version if re.match(SEMVER_PATTERN, version) else "?"
            try:
                raw = _read_limited(path, MAX_RELEASE_BYTES)
                release = decode_release(raw)
            except DeliveryError as exc:
                log.warning(
                    "catalog release skipped",
                    extra={"app_id": app_id, "version": shown, "code": exc.code},
                )
                continue
            except OSError as exc:
                log.warning(
                    "catalog release skipped",
                    extra={"app_id": app_id, "version": shown, "error": type(exc).__name__},
                )
                continue
            if (release.app_id, release.version) != (app_id, version):
                log.warning(
                    "catalog release skipped",
                    extra={"app_id": app_id, "version": shown, "code": "release_misplaced"},
                )
                continue
            found.append((release, encode_release(release)))
        return found

    def _marker(self) -> object:
        """What changes whenever the document may: the release files (by name and inode;
        a release is only ever created, by rename) and the revocations file's identity.
        Directory listings only; no file is read."""
        files = sorted((app_id, name, inode) for app_id, name, _, inode in self._release_files())
        try:
            stat = self.revocations_path.stat()
            revocations: tuple[int, int, int] | None = (
                stat.st_ino,
                stat.st_mtime_ns,
                stat.st_size,
            )
        except FileNotFoundError:
            revocations = None
        return (tuple(files), revocations)

    def _snapshot(self) -> _Snapshot:
        with self._cache_lock:
            marker = self._marker()
            if self._cached is not None and self._cached[0] == marker:
                return self._cached[1]
            versions, keys = self._read_revocations()
            snapshot = _build(self._read_releases(), versions, keys)
            self._cached = (marker, snapshot)
            log.debug(
                "catalog loaded",
                extra={"revision": snapshot.revision, "releases": len(snapshot.releases)},
            )
            return snapshot

    def document(self) -> tuple[bytes, str]:
        """The catalog document and its revision. Raises ``catalog_unavailable`` when
        the revocations cannot be read."""
        snapshot = self._snapshot()
        return snapshot.body, snapshot.revision

    def entries(self) -> list[CatalogEntry]:
        """Every listed release, oldest version first per app, with its revocations."""
        snapshot = self._snapshot()
        return [
            CatalogEntry(
                release,
                (release.app_id, release.version) in snapshot.revoked_versions,
                release.key_id in snapshot.revoked_keys,
            )
            for release in snapshot.releases
        ]

    def revocations(self) -> tuple[list[tuple[str, str]], list[str]]:
        snapshot = self._snapshot()
        return _sorted_versions(set(snapshot.revoked_versions)), sorted(snapshot.revoked_keys)

    def artifact_path(self, artifact_id: str) -> Path | None:
        """The file of an artifact, if ``artifact_id`` is an artifact id and it exists."""
        if not re.match(ARTIFACT_ID_PATTERN, artifact_id):
            return None
        path = self.artifacts_dir / artifact_id
        return path if path.is_file() else None

    def artifact(self, artifact_id: str) -> tuple[Path, Release] | None:
        """The file of an artifact a listed release names, and that release."""
        path = self.artifact_path(artifact_id)
        if path is None:
            return None
        release = self._snapshot().by_artifact.get(artifact_id)
        return (path, release) if release is not None else None
