"""Dev surfaces: the bundles in one directory, shown as dev-mode surfaces an agent
opens with ``ui.open`` (``Runtime(dev_surfaces=DIR)``; ``lineup client`` and
``lineup demo`` with ``--dev-surfaces DIR``).

Every subdirectory of DIR that is not hidden is one bundle, exactly as a MiniApp's
(``manifest.json`` and, per surface, its ``entry`` HTML with the ``.css`` and ``.js``
of the same stem; docs/miniapps.md, "Bundles"), checked by ``load_bundle_dir``. The
directory is read afresh each time it is asked: on every ``ui.open``, every mount of
a card (a page reload, the card's "Reload") and every ``ui.event`` from one. So an
edited file shows at the next open or reload, with no restart and no file watcher.
A bundle is about 2 MiB at most and its files are small: reading them again is
cheaper than a cache keyed by modification times that can miss an edit made within
the same clock tick.

An agent names a dev surface as it names an installed app's: ``id``, exact
``version`` and ``surface`` (else the first). A dev bundle with that id and version
comes before the registry. Its manifest's tools and permissions are not used: a dev
bundle is a surface, never an installed app. The ``ui.open`` is stored as an inline
surface (the parts it showed, for the timeline), so the shell marks it dev mode.

A bundle that does not load is refused with its stable code (``BundleError``'s or
``ManifestError``'s; ``dev_surface_duplicate`` for a second bundle with an id and
version already taken) and logged once, with its directory and code, each time its
problem changes; it never stops the Runtime. An agent that opens it gets
``surface_invalid``. Logs name directories, app ids and codes, never file contents.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import msgspec

from lineup.formats.bundle import (
    MANIFEST_FILE,
    AppBundle,
    BundleError,
    SurfaceSource,
    files_digest,
    load_bundle_dir,
    surface_source,
)
from lineup.formats.manifest import ManifestError
from lineup.protocol import ErrorCode

__all__ = [
    "DevProblem",
    "DevSurface",
    "DevSurfaceCode",
    "DevSurfaces",
]

log = logging.getLogger("lineup.runtime.dev_surfaces")


class DevSurfaceCode(StrEnum):
    """Why a directory is refused besides its bundle's own code (``BundleErrorCode``,
    ``ManifestErrorCode``). Logged, never sent. Never renamed or reused."""

    DUPLICATE = "dev_surface_duplicate"
    """A second bundle in DIR with an app id and version another one (first by name)
    has."""
    UNREADABLE = "dev_surfaces_unreadable"
    """DIR (or a bundle in it) is missing, not a directory, or cannot be read."""


@dataclass(frozen=True, slots=True)
class DevProblem:
    """Why one directory under DIR (``""``: DIR itself) is not a dev surface."""

    directory: str
    code: str
    message: str
    path: str = ""
    app_id: str | None = None
    """The manifest's ``id`` when it could be read at all, else the one the directory
    last loaded with (so an agent, or a card, that names it hears ``surface_invalid``)."""


@dataclass(frozen=True, slots=True)
class DevSurface:
    """One dev surface as its files are now: its texts, the manifest's display name and
    the events the surface declares."""

    source: SurfaceSource
    name: str
    events: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Scan:
    bundles: dict[tuple[str, str], tuple[str, AppBundle]]  # (id, version) -> (dir, bundle)
    problems: list[DevProblem]


class DevSurfaces:
    """The dev bundles under ``root``; safe to ask from any thread."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._lock = threading.Lock()
        self._reported: dict[str, tuple[str, ...]] = {}  # directory -> what was logged last
        self._last_id: dict[str, str] = {}  # directory -> the app id it last loaded with

    def find(
        self, app_id: str, version: str, surface_id: str | None = None
    ) -> DevSurface | ErrorCode | None:
        """The dev surface ``app_id`` at ``version`` (``surface_id``, else its first),
        read now; ``surface_invalid`` when a bundle for that id does not load;
        ``surface_unavailable`` when the bundle has no such surface; ``None`` when DIR
        has no bundle for that id and version."""
        scan = self._scan()
        found = scan.bundles.get((app_id, version))
        if found is None:
            if any(p.app_id == app_id for p in scan.problems):
                return ErrorCode.SURFACE_INVALID
            return None
        manifest = found[1].manifest
        source = surface_source(manifest, found[1].files, surface_id)
        if source is None:
            return ErrorCode.SURFACE_UNAVAILABLE
        events = next(s.events for s in manifest.surfaces if s.id == source.surface_id)
        return DevSurface(source, manifest.name, tuple(events))

    def report(self) -> list[DevProblem]:
        """Read DIR now, log what changed, and return what is refused."""
        scan = self._scan()
        log.info(
            "dev surfaces: %d bundle(s) from %s, %d refused",
            len(scan.bundles),
            self.root,
            len(scan.problems),
            extra={"bundles": len(scan.bundles), "refused": len(scan.problems)},
        )
        return scan.problems

    # --- reading --------------------------------------------------------------------------

    def _scan(self) -> _Scan:
        bundles: dict[tuple[str, str], tuple[str, AppBundle]] = {}
        problems: list[DevProblem] = []
        try:
            directories = sorted(
                p for p in self.root.iterdir() if p.is_dir() and not p.name.startswith(".")
            )
        except OSError as exc:
            problem = DevProblem("", DevSurfaceCode.UNREADABLE, type(exc).__name__)
            self._note({"": (problem, None)})
            return _Scan(bundles, [problem])
        seen: dict[str, tuple[DevProblem | None, str | None]] = {}
        for directory in directories:
            name = directory.name
            try:
                bundle = load_bundle_dir(directory)
            except (BundleError, ManifestError) as exc:
                path = getattr(exc, "path", "")
                problem = DevProblem(
                    name, str(exc.code), exc.message, path, self._app_id_of(directory)
                )
                problems.append(problem)
                seen[name] = (problem, None)
                continue
            except OSError as exc:  # vanished or unreadable mid-read (an editor's save)
                problem = DevProblem(
                    name,
                    DevSurfaceCode.UNREADABLE,
                    type(exc).__name__,
                    "",
                    self._app_id_of(directory),
                )
                problems.append(problem)
                seen[name] = (problem, None)
                continue
            key = (bundle.manifest.id, bundle.manifest.version)
            if key in bundles:
                problem = DevProblem(
                    name,
                    DevSurfaceCode.DUPLICATE,
                    f"the same id and version as {bundles[key][0]}",
                    MANIFEST_FILE,
                )
                problems.append(problem)
                seen[name] = (problem, None)
                continue
            bundles[key] = (name, bundle)
            seen[name] = (None, files_digest(bundle.files))
            self._last_id[name] = bundle.manifest.id
        self._note(seen)
        return _Scan(bundles, problems)

    def _app_id_of(self, directory: Path) -> str | None:
        """Whose bundle a directory that does not load is: its manifest's ``id`` if
        its JSON still has one, else the id it last loaded with."""
        return _loose_id(directory) or self._last_id.get(directory.name)

    def _note(self, seen: dict[str, tuple[DevProblem | None, str | None]]) -> None:
        """Log each directory whose state changed since it was last logged."""
        with self._lock:
            for name, (problem, digest) in seen.items():
                if problem is not None:
                    state: tuple[str, ...] = ("refused", problem.code, problem.path)
                    if self._reported.get(name) != state:
                        log.warning(
                            "dev surface %s refused: %s: %s%s",
                            name or self.root,
                            problem.code,
                            problem.message,
                            f" ({problem.path})" if problem.path else "",
                            extra={"directory": name, "code": problem.code, "path": problem.path},
                        )
                else:
                    state = ("loaded", digest or "")
                    if self._reported.get(name) != state:
                        log.info(
                            "dev surface %s loaded (%s)",
                            name,
                            (digest or "")[:12],
                            extra={"directory": name, "digest": (digest or "")[:12]},
                        )
                self._reported[name] = state
            for gone in set(self._reported) - set(seen):
                del self._reported[gone]


def _loose_id(directory: Path) -> str | None:
    """The ``id`` of a manifest that does not load, if its JSON has one."""
    try:
        raw = (directory / MANIFEST_FILE).read_bytes()
        value = msgspec.json.decode(raw[: 256 * 1024])
    except (OSError, msgspec.DecodeError):
        return None
    found = value.get("id") if isinstance(value, dict) else None
    return found if isinstance(found, str) else None
