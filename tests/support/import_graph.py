"""The import graph of ``src/lineup``, read from the source with ``ast`` (nothing is
imported), for the layer tests (tests/test_layers.py).

Each module's imports are split by when they run. ``eager`` ones run when the module
is imported: module level, class bodies, module-level ``if`` / ``try`` / ``with``.
``lazy`` ones sit inside a function or lambda and run on its first call: they hide a
dependency from an import-time check, but they are a dependency all the same. Imports
under ``if TYPE_CHECKING:`` never run and are left out of both.

An import is recorded as the module it loads: ``from pkg import name`` is
``pkg.name`` when that is a module of the tree, else ``pkg`` itself; a name outside
``lineup`` is dropped.
"""

from __future__ import annotations

import ast
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Cycle", "Module", "find_cycles", "layer_of", "module_names", "read_modules"]

PACKAGE = "lineup"


@dataclass(frozen=True)
class Module:
    """One module of the tree and the ``lineup`` modules it imports."""

    name: str
    path: Path
    eager: frozenset[str]
    lazy: frozenset[str]

    @property
    def imports(self) -> frozenset[str]:
        """Every import that can run, eager or lazy."""
        return self.eager | self.lazy


def module_names(src: Path) -> dict[str, Path]:
    """Dotted name → file, for every ``.py`` file under ``src/lineup``."""
    names: dict[str, Path] = {}
    for path in sorted((src / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def read_modules(src: Path) -> dict[str, Module]:
    """Every module under ``src/lineup`` with its eager and lazy ``lineup`` imports."""
    names = module_names(src)
    modules: dict[str, Module] = {}
    for name, path in names.items():
        eager: set[str] = set()
        lazy: set[str] = set()
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node, deferred in _imports(tree):
            (lazy if deferred else eager).update(_targets(node, package, names))
        eager.discard(name)
        lazy.discard(name)
        modules[name] = Module(name, path, frozenset(eager), frozenset(lazy - eager))
    return modules


def layer_of(name: str) -> str:
    """The top-level package or module of ``lineup`` that ``name`` belongs to:
    ``lineup.runtime.apps.router`` → ``runtime``, ``lineup.cli`` → ``cli``."""
    return name.split(".")[1]


@dataclass(frozen=True)
class Cycle:
    """A set of modules (or layers) that import each other, and one circle through
    them: ``path`` is ``[a, b, ..., a]``."""

    members: tuple[str, ...]
    path: tuple[str, ...]


def find_cycles(graph: Mapping[str, Iterable[str]]) -> list[Cycle]:
    """One ``Cycle`` per strongly connected component of more than one node; its path
    is the shortest circle through the component's first node. Sorted, so the answer
    is the same on every run. Self-edges are ignored."""
    edges = {node: sorted(set(graph.get(node, ())) - {node}) for node in graph}
    for targets in list(edges.values()):
        for target in targets:
            edges.setdefault(target, [])
    cycles = [
        Cycle(tuple(sorted(component)), _shortest_cycle(edges, min(component), component))
        for component in _components(edges)
        if len(component) > 1
    ]
    return sorted(cycles, key=lambda cycle: cycle.members)


# --- reading --------------------------------------------------------------------------


def _imports(tree: ast.Module) -> Iterator[tuple[ast.Import | ast.ImportFrom, bool]]:
    """Every import statement that can run, and whether it is deferred (in a function)."""
    stack: list[tuple[ast.AST, bool]] = [(node, False) for node in reversed(tree.body)]
    while stack:
        node, deferred = stack.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node, deferred
            continue
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            children: list[ast.AST] = list(node.orelse)
        else:
            children = list(ast.iter_child_nodes(node))
        inner = deferred or isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda)
        stack.extend((child, inner) for child in reversed(children))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _targets(
    node: ast.Import | ast.ImportFrom, package: str, names: Mapping[str, Path]
) -> set[str]:
    if isinstance(node, ast.Import):
        wanted = [alias.name for alias in node.names]
    else:
        if node.level:
            parts = package.split(".")
            base = ".".join(parts[: len(parts) - (node.level - 1)])
            source = f"{base}.{node.module}" if node.module else base
        else:
            source = node.module or ""
        wanted = [
            f"{source}.{alias.name}" if f"{source}.{alias.name}" in names else source
            for alias in node.names
        ]
    found = set()
    for target in wanted:
        while target and target not in names:  # a name inside a module: the module
            target = target.rpartition(".")[0]
        if target.startswith(f"{PACKAGE}."):
            found.add(target)
    return found


# --- cycles ---------------------------------------------------------------------------


def _components(edges: Mapping[str, list[str]]) -> list[set[str]]:
    """Tarjan's strongly connected components, iteratively."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[set[str]] = []
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(edges[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(edges[target])))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    components.append(component)
    return components


def _shortest_cycle(
    edges: Mapping[str, list[str]], start: str, within: set[str]
) -> tuple[str, ...]:
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        for target in edges[node]:
            if target not in within:
                continue
            if target == start:
                path = [node]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                return (*reversed(path), start)
            if target not in came_from:
                came_from[target] = node
                queue.append(target)
    raise AssertionError(f"{start} is in a component but on no cycle")  # pragma: no cover
