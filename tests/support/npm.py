"""Pinned npm packages for the tests: installed from the npm registry into a cache.

``npm_package(name, version)`` installs one pinned package once into a cache outside
the repository (``${XDG_CACHE_HOME:-~/.cache}/lineup/npm/<name>-<version>``, the
scope's ``/`` written ``+``) with ``npm install --prefix``, and returns the package's
directory. A file lock keeps parallel test processes from installing the same package
at the same time. ``NpmUnavailable`` says why it could not (no npm, no registry).

The MCP servers the MCP tests run, and how each is started (read from their
``package.json`` and ``dist``):

- ``@modelcontextprotocol/server-everything`` (``EVERYTHING``): bin ``dist/index.js``;
  ``node dist/index.js stdio`` (the default transport) speaks stdio;
  ``node dist/index.js streamableHttp`` serves streamable HTTP on ``/mcp`` at the port
  in ``PORT`` (default 3001), bound to every interface (the tests pick a free
  loopback port). Its tools: ``echo``, ``get-sum``, ``trigger-long-running-operation``
  (progress), ``get-structured-content``, ``trigger-elicitation-request``,
  ``get-annotated-message``, ... (see the tests).
- ``@modelcontextprotocol/server-basic-vanillajs``, ``server-budget-allocator``,
  ``server-system-monitor`` (``MCP_APPS``, the ext-apps examples): bin
  ``dist/index.js``; ``node dist/index.js --stdio`` speaks stdio; without it they
  serve streamable HTTP on ``/mcp`` at ``PORT`` (default 3001).
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

INSTALL_TIMEOUT_S = 300

EVERYTHING = ("@modelcontextprotocol/server-everything", "2026.8.31")
MCP_APPS = (
    ("@modelcontextprotocol/server-basic-vanillajs", "2.0.3"),
    ("@modelcontextprotocol/server-budget-allocator", "2.0.3"),
    ("@modelcontextprotocol/server-system-monitor", "2.0.3"),
)


class NpmUnavailable(RuntimeError):
    """A package could not be installed (no npm, or the registry did not answer)."""


def cache_dir(name: str, version: str) -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "lineup" / "npm" / f"{name.replace('/', '+')}-{version}"


def npm_package(name: str, version: str, *, marker: str = "package.json") -> Path:
    """The installed package's directory (``node_modules/<name>``), installed on first use.

    ``marker`` is a file in the package that must exist for the install to count.
    """
    prefix = cache_dir(name, version)
    package = prefix / "node_modules" / name
    if _installed(package, version, marker):
        return package
    prefix.mkdir(parents=True, exist_ok=True)
    with prefix.with_name(prefix.name + ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # another process may be installing it
        if not _installed(package, version, marker):
            _install(prefix, name, version)
        if not _installed(package, version, marker):
            raise NpmUnavailable(
                f"npm installed {name}@{version} but {package / marker} is missing"
            )
    return package


def _installed(package: Path, version: str, marker: str) -> bool:
    try:
        found = json.loads((package / "package.json").read_text(encoding="utf-8")).get("version")
    except (OSError, ValueError):
        return False
    return found == version and (package / marker).is_file()


def _install(prefix: Path, name: str, version: str) -> None:
    npm = shutil.which("npm")
    if npm is None:
        raise NpmUnavailable(f"{name} needs npm (Node.js): run scripts/system-deps")
    command = [
        npm,
        "install",
        "--prefix",
        str(prefix),
        f"{name}@{version}",
        "--no-audit",
        "--no-fund",
        "--no-save",
        "--loglevel=error",
        # An unreachable registry says so in seconds, not after npm's minute of retries.
        "--fetch-retries=2",
        "--fetch-retry-mintimeout=2000",
        "--fetch-retry-maxtimeout=10000",
    ]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise NpmUnavailable(
            f"npm install {name}@{version} took over {INSTALL_TIMEOUT_S} s:"
            " is the npm registry reachable?"
        ) from None
    if done.returncode != 0:
        lines = [line.removeprefix("npm error").strip() for line in done.stderr.splitlines()]
        # The line that says why (FetchError ..., 404 ...), else the error code.
        why = next((line for line in lines if "Error" in line or " 404 " in line), None)
        why = why or next((line for line in lines if line), f"exit {done.returncode}")
        raise NpmUnavailable(
            f"npm install {name}@{version} failed (is the npm registry reachable?): {why}"
        )
