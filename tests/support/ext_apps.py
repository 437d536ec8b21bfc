"""The MCP Apps reference code for the browser tests, from the npm registry.

``package_dir(name)`` installs one pinned package of ``PACKAGES`` once into a cache
outside the repository (``${XDG_CACHE_HOME:-~/.cache}/lineup/npm/<name>-<version>``)
with ``npm install --prefix``, under a file lock (parallel test processes), like
``tests.support.axe``. Nothing is fetched by a page: a test inlines the files' text.

- ``app_sdk_script()``: ``@modelcontextprotocol/ext-apps``'s self-contained build
  (``dist/src/app-with-deps.js``, an ES module), its one ``export{...}`` turned into
  ``globalThis.ExtApps = {...}``, for an inline ``<script type="module">`` in a test view:
  the view side of the handshake is then the real library, not our reading of the spec.
- ``example_view(package)``: an official example server's ``dist/mcp-app.html``, the
  exact HTML its ``ui://`` resource serves; ``example_server(package)``: the command
  that runs the server over stdio (``node dist/index.js --stdio``).
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from functools import cache
from pathlib import Path

PACKAGES = {
    "@modelcontextprotocol/ext-apps": "2.0.4",
    "@modelcontextprotocol/server-basic-vanillajs": "2.0.3",
    "@modelcontextprotocol/server-budget-allocator": "2.0.3",
    "@modelcontextprotocol/server-system-monitor": "2.0.3",
}
INSTALL_TIMEOUT_S = 300
_EXPORT = re.compile(r"export\{([^}]*)\};?\s*\Z")


class ExtAppsUnavailable(RuntimeError):
    """A package could not be installed (no npm, or the registry did not answer)."""


def _prefix(name: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lineup" / "npm" / f"{name.replace('/', '+')}-{PACKAGES[name]}"


def _installed(prefix: Path, name: str) -> bool:
    package = prefix / "node_modules" / name / "package.json"
    try:
        version = json.loads(package.read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return False
    return bool(version == PACKAGES[name])


@cache
def package_dir(name: str) -> Path:
    """The installed package's directory (``node_modules/<name>``), installed on first use."""
    prefix = _prefix(name)
    if not _installed(prefix, name):
        prefix.mkdir(parents=True, exist_ok=True)
        with (prefix.parent / f"{prefix.name}.lock").open("w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing it
            if not _installed(prefix, name):
                _install(prefix, name)
            if not _installed(prefix, name):
                raise ExtAppsUnavailable(f"npm installed {name} but it is missing")
    return prefix / "node_modules" / name


def _install(prefix: Path, name: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise ExtAppsUnavailable(f"{name} needs npm (Node.js): run scripts/system-deps")
    spec = f"{name}@{PACKAGES[name]}"
    command = [
        npm,
        "install",
        "--prefix",
        str(prefix),
        spec,
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        "--fetch-retries=2",
        "--fetch-retry-mintimeout=2000",
        "--fetch-retry-maxtimeout=10000",
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise ExtAppsUnavailable(f"npm install {spec} took over {INSTALL_TIMEOUT_S} s") from None
    if done.returncode != 0:
        lines = [line.strip() for line in done.stderr.splitlines() if line.strip()]
        raise ExtAppsUnavailable(
            f"npm install {spec} failed: {lines[-1] if lines else done.returncode}"
        )


@cache
def app_sdk_script() -> str:
    """The App SDK as module code that leaves its exports on ``globalThis.ExtApps``."""
    path = package_dir("@modelcontextprotocol/ext-apps") / "dist" / "src" / "app-with-deps.js"
    source = path.read_text(encoding="utf-8")
    found = _EXPORT.search(source)
    if found is None or re.search(r"</script|<script|<!--", source, re.IGNORECASE):
        raise ExtAppsUnavailable(f"{path} is not the single-export build this test inlines")
    pairs = []
    for item in found[1].split(","):
        local, _, exported = item.strip().partition(" as ")
        pairs.append(f"{exported or local}:{local}")
    return source[: found.start()] + "globalThis.ExtApps={" + ",".join(pairs) + "};\n"


def example_view(package: str) -> str:
    """An example server's view HTML (its ``ui://`` resource's text)."""
    return (package_dir(package) / "dist" / "mcp-app.html").read_text(encoding="utf-8")


def example_server(package: str) -> list[str]:
    """The command line of an example server over stdio."""
    node = shutil.which("node")
    if node is None:
        raise ExtAppsUnavailable("the example servers need Node.js: run scripts/system-deps")
    return [node, str(package_dir(package) / "dist" / "index.js"), "--stdio"]
