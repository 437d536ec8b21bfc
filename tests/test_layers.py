"""The layers of ``lineup`` point one way (docs/decisions.md, "Layers in one direction").

Bottom to top: ``lineup.protocol`` imports nothing else of lineup; ``lineup.formats``
(the MiniApp formats) imports only the protocol; ``lineup.delivery`` imports only the
protocol, the formats and ``lineup.db``; the AppServer (``lineup.server``) never loads
the Runtime, a host or the agent SDK; the Runtime and the hosts sit above them.

Two kinds of check. Every module imports on its own in a fresh interpreter, so no
module works only because another one happened to be imported first. And the import
graph, read from the source, has no cycle between the top-level packages, breaks none
of the rules above, and has no cycle inside the Runtime, counting the imports hidden
in functions.
"""

from __future__ import annotations

import importlib.util
import itertools
import os
import subprocess
import sys
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path

import pytest

from tests.support.import_graph import Module, find_cycles, layer_of, module_names, read_modules

SRC = Path(__file__).resolve().parents[1] / "src"
IMPORT_TIMEOUT = 60
WORKERS = 4
STDERR_LINES = 15

ALLOWED: dict[str, frozenset[str]] = {
    "protocol": frozenset(),
    "formats": frozenset({"protocol"}),
    "delivery": frozenset({"protocol", "formats", "db"}),
}
"""Layer → the only other layers it may import, eagerly or lazily."""

FORBIDDEN: dict[str, frozenset[str]] = {
    "server": frozenset({"runtime", "host", "agent"}),
}
"""Layer → layers it must never import, eagerly or lazily."""


# --- every module imports alone -------------------------------------------------------


def _importable_modules() -> list[object]:
    desktop_ready = importlib.util.find_spec("PySide6") is not None
    params: list[object] = []
    for name in module_names(SRC):
        if name == "lineup.__main__":
            continue  # the `python -m lineup` entry point: importing it runs the CLI
        marks: list[pytest.MarkDecorator] = []
        if (name == "lineup.desktop" or name.startswith("lineup.desktop.")) and not desktop_ready:
            marks.append(pytest.mark.skip(reason="PySide6 (the desktop extra) is not installed"))
        params.append(pytest.param(name, marks=marks, id=name))
    return params


def _import_alone(name: str) -> subprocess.CompletedProcess[str]:
    # Beside the import, the child checks that every lineup module it loaded came
    # from this tree, not from another checkout installed in the same environment.
    code = (
        f"import sys, {name}\n"
        f"src = {str(SRC) + os.sep!r}\n"
        "stray = sorted(n for n, m in list(sys.modules.items()) if n.startswith('lineup.')"
        " and not (getattr(m, '__file__', None) or src).startswith(src))\n"
        "if stray: sys.exit('loaded from outside ' + src + ': ' + ', '.join(stray))\n"
    )
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        return subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            timeout=IMPORT_TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return subprocess.CompletedProcess(code, -1, "", f"timed out after {IMPORT_TIMEOUT} s")


@pytest.fixture(scope="module")
def fresh_imports(request: pytest.FixtureRequest) -> Mapping[str, subprocess.CompletedProcess[str]]:
    """``import <module>`` in its own interpreter, for every selected module at once
    (a few at a time), so the whole set takes seconds rather than minutes."""
    selected: list[str] = sorted(
        {
            str(item.callspec.params["name"])
            for item in request.session.items
            if isinstance(item, pytest.Function)
            and item.originalname == "test_every_module_imports_alone"
            and item.get_closest_marker("skip") is None
        }
    )
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        return dict(zip(selected, pool.map(_import_alone, selected), strict=True))


@pytest.mark.parametrize("name", _importable_modules())
def test_every_module_imports_alone(
    name: str, fresh_imports: Mapping[str, subprocess.CompletedProcess[str]]
) -> None:
    result = fresh_imports[name]
    tail = "\n".join(result.stderr.strip().splitlines()[-STDERR_LINES:])
    assert result.returncode == 0, f"`import {name}` alone fails:\n{tail}"


# --- the import graph -----------------------------------------------------------------


@cache
def _modules() -> Mapping[str, Module]:
    return read_modules(SRC)


def _layer_edges(*, lazy: bool) -> dict[tuple[str, str], list[str]]:
    """(from layer, to layer) → the imports that make the edge, as ``module → module``."""
    edges: dict[tuple[str, str], list[str]] = {}
    for module in _modules().values():
        for target in sorted(module.imports if lazy else module.eager):
            edge = (layer_of(module.name), layer_of(target))
            if edge[0] != edge[1]:
                edges.setdefault(edge, []).append(f"{module.name} → {target}")
    return edges


def test_the_graph_sees_every_layer() -> None:
    layers = {layer_of(name) for name in _modules()}
    assert {*ALLOWED, *FORBIDDEN, "runtime", "host", "agent", "client", "db"} <= layers


def test_no_import_cycle_between_packages() -> None:
    """Module-level imports only: the CLI and the desktop launcher import their
    commands lazily, which is how a command line stays quick, not a layer's edge."""
    edges = _layer_edges(lazy=False)
    graph: dict[str, set[str]] = {}
    for source, target in edges:
        graph.setdefault(source, set()).add(target)
    cycles = find_cycles(graph)
    described = [
        " → ".join(cycle.path)
        + "".join(
            f"\n    {line}" for a, b in itertools.pairwise(cycle.path) for line in edges[a, b]
        )
        for cycle in cycles
    ]
    assert not cycles, "import cycle between packages:\n" + "\n".join(described)


@pytest.mark.parametrize("layer", sorted({*ALLOWED, *FORBIDDEN}))
def test_a_layer_imports_only_what_it_may(layer: str) -> None:
    """Eager and lazy imports both count: an import moved into a function still makes
    the lower layer depend on the higher one (``lineup.protocol.schema`` once reached
    ``lineup.delivery`` that way)."""
    broken = [
        line
        for (source, target), lines in sorted(_layer_edges(lazy=True).items())
        if source == layer
        and (
            (layer in ALLOWED and target not in ALLOWED[layer])
            or target in FORBIDDEN.get(layer, frozenset())
        )
        for line in lines
    ]
    assert not broken, f"lineup.{layer} imports what it may not:\n" + "\n".join(broken)


def test_no_import_cycle_in_runtime() -> None:
    """Inside ``lineup.runtime``, a function-level import counts as an edge: it is a
    circle all the same, only hidden from the interpreter until the function runs."""
    graph = {
        name: {target for target in module.imports if target.startswith("lineup.runtime")}
        for name, module in _modules().items()
        if name == "lineup.runtime" or name.startswith("lineup.runtime.")
    }
    cycles = find_cycles(graph)
    described = []
    for cycle in cycles:
        lines = [f"  {len(cycle.members)} modules import each other: {', '.join(cycle.members)}"]
        lines.append("  one circle: " + " → ".join(cycle.path))
        for a, b in itertools.pairwise(cycle.path):
            kind = "" if b in _modules()[a].eager else "  (in a function)"
            lines.append(f"    {a} → {b}{kind}")
        described.append("\n".join(lines))
    assert not cycles, "import cycle inside the Runtime:\n" + "\n".join(described)
