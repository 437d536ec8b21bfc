"""The reference MiniApps that ship with LineUp (``bundled`` apps): Task Dashboard,
Whiteboard and Draw-and-Guess. Each is a bundle directory here (manifest plus surface
files, docs/miniapps.md) that uses only the MiniApp SDK and runs sandboxed like any
installed app. ``install_bundled`` installs and enables them in a Runtime."""

from __future__ import annotations

import logging
from importlib import resources
from pathlib import Path

from lineup.runtime import Runtime
from lineup.runtime.apps.registry import RegistryError

__all__ = ["BUNDLED", "bundle_dir", "install_bundled"]

log = logging.getLogger("lineup.miniapps")

BUNDLED = ("task_dashboard", "whiteboard", "draw_guess")
"""The bundle directories, in the order the dock lists them."""


def bundle_dir(name: str) -> Path:
    return Path(str(resources.files(__package__).joinpath(name)))


async def install_bundled(runtime: Runtime) -> list[str]:
    """Install and enable every bundled app present (the same version again is a
    no-op); the app ids installed. A bundle whose version is already installed with
    other bytes is skipped and logged: bump its version."""
    installed = []
    for name in BUNDLED:
        path = bundle_dir(name)
        if not (path / "manifest.json").is_file():
            continue
        try:
            result = await runtime.registry.install_bundle(path, enable=True)
        except RegistryError as refused:
            log.warning("bundled app skipped", extra={"bundle": name, "code": refused.code})
            continue
        installed.append(result.entry.app_id)
    return installed
