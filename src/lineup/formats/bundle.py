"""A MiniApp bundle: its manifest and the files its surfaces are built from.

A bundle is a directory (or, later, a verified signed archive unpacked in memory):
``manifest.json`` and the files it names. Each surface's ``entry`` is an HTML file;
its CSS and JS are the files of the same stem beside it (``index.html``,
``index.css``, ``index.js``), both optional. The surface origin serves the three as
one document with inline ``<style>`` and ``<script>`` (docs/miniapps.md), so a
surface can load nothing else: no script or stylesheet URLs, no fonts, no images but
``data:``/``blob:`` ones.

``load_bundle`` reads and checks everything before anything is stored: the manifest
(``load_manifest``), file names, counts and sizes, UTF-8 text, that every surface's
entry exists and that each surface fits the 160 KiB surface limit. Problems raise a
``BundleError`` with a stable code (or the manifest's ``ManifestError``); its message
names the rule and the path, never a file's contents.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path, PurePosixPath

from lineup.protocol.fields import MAX_BUNDLE_BYTES

from .manifest import AppManifest, Surface, load_manifest

__all__ = [
    "MAX_BUNDLE_FILES",
    "MAX_BUNDLE_TOTAL_BYTES",
    "AppBundle",
    "BundleError",
    "BundleErrorCode",
    "SurfaceSource",
    "files_digest",
    "load_bundle",
    "load_bundle_dir",
    "surface_source",
]

MAX_BUNDLE_FILES = 64
MAX_BUNDLE_TOTAL_BYTES = 2 * 1024 * 1024
"""Every file of a bundle together (surfaces are limited to 160 KiB each on top)."""

MANIFEST_FILE = "manifest.json"
_PATH = re.compile(r"^(?:[a-z0-9][a-z0-9_-]{0,63}/){0,4}[a-z0-9][a-z0-9_.-]{0,63}\Z")
_TEXT_SUFFIXES = frozenset({".html", ".css", ".js", ".json", ".svg"})


class BundleErrorCode(StrEnum):
    """Stable reasons a bundle is refused. Never renamed or reused."""

    TOO_LARGE = "bundle_too_large"
    BAD_PATH = "bundle_bad_path"
    NOT_TEXT = "bundle_not_text"
    MISSING_FILE = "bundle_missing_file"
    SURFACE_TOO_LARGE = "bundle_surface_too_large"
    NO_MANIFEST = "bundle_no_manifest"


class BundleError(Exception):
    def __init__(self, code: BundleErrorCode, message: str, path: str = "") -> None:
        super().__init__(f"{code}: {message}" + (f" ({path})" if path else ""))
        self.code = code
        self.message = message
        self.path = path


@dataclass(frozen=True, slots=True)
class AppBundle:
    """A checked bundle: the manifest and every file by its bundle path."""

    manifest: AppManifest
    files: Mapping[str, bytes]


@dataclass(frozen=True, slots=True)
class SurfaceSource:
    """The three texts of one surface, from a stored bundle (what the surface origin
    composes into one document). The contents stay out of ``repr``."""

    app_id: str
    app_version: str
    surface_id: str
    html: str
    css: str
    js: str

    def __repr__(self) -> str:
        return f"SurfaceSource({self.app_id}@{self.app_version}#{self.surface_id})"


def files_digest(files: Mapping[str, bytes]) -> str:
    """SHA-256 over the sorted (path, SHA-256 of body) pairs: a bundle's identity."""
    outer = hashlib.sha256()
    for path in sorted(files):
        outer.update(path.encode("utf-8") + b"\0" + hashlib.sha256(files[path]).digest())
    return outer.hexdigest()


def _parts(surface: Surface) -> tuple[str, str, str]:
    stem = surface.entry.removesuffix(".html")
    return surface.entry, f"{stem}.css", f"{stem}.js"


def surface_source(
    manifest: AppManifest, files: Mapping[str, bytes], surface_id: str | None = None
) -> SurfaceSource | None:
    """The surface ``surface_id`` (by default the first) built from ``files``, or
    ``None`` when the manifest has no such surface."""
    surfaces = [s for s in manifest.surfaces if surface_id in (None, s.id)]
    if not surfaces:
        return None
    surface = surfaces[0]
    html, css, js = (files.get(path, b"").decode("utf-8") for path in _parts(surface))
    return SurfaceSource(manifest.id, manifest.version, surface.id, html, css, js)


def load_bundle(files: Mapping[str, bytes]) -> AppBundle:
    """Check a bundle given as {path: bytes} (``manifest.json`` among them)."""
    if len(files) > MAX_BUNDLE_FILES:
        raise BundleError(BundleErrorCode.TOO_LARGE, f"more than {MAX_BUNDLE_FILES} files")
    total = 0
    for path, body in files.items():
        if not _PATH.match(path) or ".." in PurePosixPath(path).parts:
            raise BundleError(BundleErrorCode.BAD_PATH, "not a bundle path", path)
        total += len(body)
        if PurePosixPath(path).suffix in _TEXT_SUFFIXES:
            try:
                body.decode("utf-8")
            except UnicodeDecodeError:
                raise BundleError(BundleErrorCode.NOT_TEXT, "not UTF-8 text", path) from None
    if total > MAX_BUNDLE_TOTAL_BYTES:
        raise BundleError(BundleErrorCode.TOO_LARGE, f"more than {MAX_BUNDLE_TOTAL_BYTES} bytes")
    if MANIFEST_FILE not in files:
        raise BundleError(BundleErrorCode.NO_MANIFEST, "no manifest.json")
    manifest = load_manifest(files[MANIFEST_FILE])
    for surface in manifest.surfaces:
        entry, css, js = _parts(surface)
        if entry not in files:
            raise BundleError(BundleErrorCode.MISSING_FILE, "a surface entry is missing", entry)
        size = sum(len(files.get(path, b"")) for path in (entry, css, js))
        if size > MAX_BUNDLE_BYTES:
            raise BundleError(
                BundleErrorCode.SURFACE_TOO_LARGE,
                f"html + css + js is {size} bytes, more than {MAX_BUNDLE_BYTES}",
                entry,
            )
    if manifest.icon is not None and manifest.icon not in files:
        raise BundleError(BundleErrorCode.MISSING_FILE, "the icon is missing", manifest.icon)
    return AppBundle(manifest, dict(files))


def load_bundle_dir(directory: Path) -> AppBundle:
    """Read a bundle directory (regular files only; symlinks are refused)."""
    files: dict[str, bytes] = {}
    for path in sorted(directory.rglob("*")):
        relative = path.relative_to(directory).as_posix()
        if path.is_symlink():
            raise BundleError(BundleErrorCode.BAD_PATH, "symlinks are not allowed", relative)
        if path.is_dir():
            continue
        if len(files) >= MAX_BUNDLE_FILES:
            raise BundleError(BundleErrorCode.TOO_LARGE, f"more than {MAX_BUNDLE_FILES} files")
        files[relative] = path.read_bytes()
    return load_bundle(files)
