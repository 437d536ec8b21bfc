"""``lineup.protocol`` is a sans-I/O core: importing it pulls in no event loop,
socket or database, and its source imports none."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import lineup.protocol

FORBIDDEN = ("asyncio", "socket", "sqlite3", "ssl", "selectors", "subprocess", "threading")
PACKAGE_DIR = Path(lineup.protocol.__file__).parent
SOURCES = sorted(PACKAGE_DIR.glob("*.py"))


def test_importing_the_package_loads_no_io_module() -> None:
    modules = ", ".join(f"lineup.protocol.{p.stem}" for p in SOURCES if p.stem != "__init__")
    code = (
        f"import sys, lineup.protocol, {modules}\n"
        f"print(','.join(m for m in {FORBIDDEN!r} if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == ""


@pytest.mark.parametrize("source", SOURCES, ids=lambda p: p.name)
def test_source_imports_no_io_module(source: Path) -> None:
    tree = ast.parse(source.read_text(encoding="utf-8"))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            imported.add(node.module.split(".")[0])
    assert not imported & {*FORBIDDEN, "os", "io", "pathlib", "open"}


def test_public_names_are_exported() -> None:
    for name in lineup.protocol.__all__:
        assert hasattr(lineup.protocol, name), name
