"""The Runtime's state machines are sans-I/O cores, like ``lineup.protocol``
(tests/protocol/test_purity.py): the six of them (interactions, ordinary tool calls,
instance lifecycle and focus, capability calls, bundle installs, MCP tool calls) import
only pure standard modules, the protocol, the delivery error codes and each other, anywhere in
their source (in functions too): no event loop, socket, database, HTTP client, file
or clock, so their tests run synchronously and they decide from plain values."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"

MACHINES = (
    "lineup.runtime.interactions",
    "lineup.runtime.apps.tool_calls",
    "lineup.runtime.apps.lifecycle",
    "lineup.runtime.apps.focus",
    "lineup.runtime.capabilities.calls",
    "lineup.runtime.apps.bundle_install",
    "lineup.runtime.mcp.calls",
)
"""The machine modules (lifecycle and focus are the instance machine together)."""

PURE_STANDARD = frozenset(
    {
        "__future__",
        "collections",
        "dataclasses",
        "datetime",
        "enum",
        "functools",
        "itertools",
        "math",
        "types",
        "typing",
    }
)
"""Standard modules that do no I/O; anything else (``asyncio``, ``socket``,
``sqlite3``, ``os``, ``io``, ``pathlib``, ``time``, ``random``, ``threading`` ...) is
refused."""

PURE_LINEUP = ("lineup.protocol", "lineup.delivery.errors", *MACHINES)
"""``lineup`` modules a machine may use: the protocol (pure, see its own test), the
stable delivery codes, and the other machines. Never ``lineup.db``, a store, a
transport or the Runtime."""

FORBIDDEN_CALLS = frozenset({"open", "print", "input", "exec", "eval", "__import__"})


def _path(module: str) -> Path:
    return SRC.joinpath(*module.split(".")).with_suffix(".py")


def _imports(module: str) -> set[str]:
    """Every module ``module`` imports, anywhere in its source, relative ones resolved."""
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    package = module.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                found.add(f"{base}.{node.module}" if node.module else base)
            elif node.module:
                found.add(node.module)
    return found


def _allowed(name: str) -> bool:
    if name.split(".")[0] in PURE_STANDARD:
        return True
    return any(name == pure or name.startswith(pure + ".") for pure in PURE_LINEUP)


@pytest.mark.parametrize("module", MACHINES)
def test_a_machine_imports_nothing_that_does_io(module: str) -> None:
    refused = sorted(name for name in _imports(module) if not _allowed(name))
    assert not refused, f"{module} imports {refused}"


@pytest.mark.parametrize("module", MACHINES)
def test_a_machine_calls_no_io_builtin(module: str) -> None:
    tree = ast.parse(_path(module).read_text(encoding="utf-8"))
    called = {
        node.func.id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    }
    assert not called & FORBIDDEN_CALLS, f"{module} calls {sorted(called & FORBIDDEN_CALLS)}"


def test_the_delivery_codes_are_a_pure_leaf() -> None:
    """``lineup.delivery.errors``, which the install machine takes its codes from,
    imports nothing but ``enum``."""
    assert _imports("lineup.delivery.errors") <= {"__future__", "enum"}


def test_the_check_sees_io_imports() -> None:
    """The check itself: an import of I/O (eager or in a function) is seen."""
    for source in ("import asyncio", "def f():\n    import sqlite3", "from lineup.db import Txn"):
        tree = ast.parse(source)
        names = {
            alias.name if isinstance(node, ast.Import) else str(node.module)
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in node.names
        }
        assert not all(_allowed(n) for n in names), source
