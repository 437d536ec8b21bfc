"""The MCP Apps reference code for the browser tests, from the npm registry.

``package_dir(name)`` installs one pinned package of ``PACKAGES`` once into a cache
outside the repository (``${XDG_CACHE_HOME:-~/.cache}/lineup/npm/<name>-<version>``)
with ``npm install --prefix``, under a file lock (``tests.support.npm``). Nothing is
fetched by a page: a test inlines the files' text.

- ``app_sdk_script()``: ``@modelcontextprotocol/ext-apps``'s self-contained build
  (``dist/src/app-with-deps.js``, an ES module), its one ``export{...}`` turned into
  ``globalThis.ExtApps = {...}``, for an inline ``<script type="module">`` in a test view:
  the view side of the handshake is then the real library, not our reading of the spec.
- ``example_view(package)``: an official example server's ``dist/mcp-app.html``, the
  exact HTML its ``ui://`` resource serves; ``example_server(package)``: the command
  that runs the server over stdio (``node dist/index.js --stdio``).
"""

from __future__ import annotations

import re
import shutil
from functools import cache
from pathlib import Path

from tests.support.npm import NpmUnavailable, npm_package

PACKAGES = {
    "@modelcontextprotocol/ext-apps": "2.0.4",
    "@modelcontextprotocol/server-basic-vanillajs": "2.0.3",
    "@modelcontextprotocol/server-budget-allocator": "2.0.3",
    "@modelcontextprotocol/server-system-monitor": "2.0.3",
}
_EXPORT = re.compile(r"export\{([^}]*)\};?\s*\Z")


ExtAppsUnavailable = NpmUnavailable
"""A package could not be installed (no npm, or the registry did not answer)."""


@cache
def package_dir(name: str) -> Path:
    """The installed package's directory (``node_modules/<name>``), installed on first use."""
    return npm_package(name, PACKAGES[name])


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
