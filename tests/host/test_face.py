"""The hosts ask the Runtime through its face only (docs/decisions.md, "The Runtime's
face"): no module of a host reaches the Runtime's store, its database connection or
its tables. Read as syntax trees, not text, so a comment or a docstring never counts
and a renamed variable cannot hide an attribute."""

from __future__ import annotations

import ast
import re
from pathlib import Path

SOURCE = Path(__file__).resolve().parents[2] / "src" / "lineup"
HOSTS = [
    *sorted((SOURCE / "host").rglob("*.py")),
    *sorted((SOURCE / "desktop").rglob("*.py")),
    SOURCE / "demo.py",
    SOURCE / "cli.py",
]

STORE_ATTRIBUTES = frozenset({"store", "_store", "db", "_db"})
"""The Runtime's store, and the database connection of any store."""
DATABASE_MODULES = ("sqlite3", "lineup.db", "lineup.runtime.store")
SQL_CALLS = frozenset({"execute", "executemany", "executescript"})
SQL = re.compile(
    r"^\s*(SELECT\s.+\sFROM\s|INSERT\s+INTO\s|UPDATE\s+\w+\s+SET\s|DELETE\s+FROM\s|CREATE\s+TABLE\s)",
    re.IGNORECASE | re.DOTALL,
)


def violations(source: str, name: str) -> list[str]:
    """Where ``source`` reaches past the Runtime's face, as ``name:line: what``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename=name)):
        where = f"{name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute) and node.attr in STORE_ATTRIBUTES:
            found.append(f"{where}: .{node.attr}")
        elif isinstance(node, ast.Import):
            found += [f"{where}: import {a.name}" for a in node.names if _database(a.name)]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _database(node.module):
            found.append(f"{where}: from {node.module} import")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in SQL_CALLS
        ):
            found.append(f"{where}: .{node.func.attr}()")
        elif (
            isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value)
        ):
            found.append(f"{where}: SQL text")
    return sorted(found)


def _database(module: str | None) -> bool:
    return module is not None and any(
        module == m or module.startswith(f"{m}.") for m in DATABASE_MODULES
    )


def test_the_check_sees_every_way_past_the_face() -> None:
    reaching = """
import sqlite3
from lineup.runtime.store import RuntimeStore
async def f(runtime, conn):
    await runtime.store.timeline("c")
    await runtime.store.db.read(g)
    conn.execute("SELECT id FROM artifacts WHERE id = ?")
    self._store = runtime
"""
    assert len(violations(reaching, "x.py")) == 8
    harmless = '''
"""Select an app, update the dock, delete nothing: words, not SQL."""
from lineup.runtime import Runtime
async def f(runtime):
    await runtime.history("c")
    restored = runtime.restore_geometry
'''
    assert violations(harmless, "y.py") == []


def test_no_host_reaches_the_runtime_store_its_connection_or_its_tables() -> None:
    assert SOURCE / "host" / "app.py" in HOSTS
    found = [
        v
        for path in HOSTS
        for v in violations(path.read_text("utf-8"), str(path.relative_to(SOURCE)))
    ]
    assert found == []
