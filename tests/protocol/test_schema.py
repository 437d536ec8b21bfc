"""The committed JSON Schemas in docs/protocol/ are exactly what the models generate."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lineup.protocol import KIND_BY_TYPE
from lineup.protocol.schema import DIALECT
from lineup.schema_files import committed_schemas, render_schema_files

ROOT = Path(__file__).resolve().parents[2]
SCHEMA_DIR = ROOT / "docs" / "protocol"
SCRIPT = ROOT / "scripts" / "gen_schemas.py"
FIX = "run `python scripts/gen_schemas.py` and commit docs/protocol/"
SCHEMAS = committed_schemas()


def test_one_schema_per_kind_plus_union_error_and_release() -> None:
    expected = {f"{tag}.json" for tag in KIND_BY_TYPE} | {
        "envelope.json",
        "error.json",
        "release.json",
    }
    assert set(SCHEMAS) == expected


def test_committed_schemas_match_the_models() -> None:
    files = render_schema_files()
    committed = {p.name for p in SCHEMA_DIR.glob("*.json")}
    assert committed == set(files), f"schema files differ: {FIX}"
    for name, text in files.items():
        on_disk = (SCHEMA_DIR / name).read_text(encoding="utf-8")
        assert on_disk == text, f"docs/protocol/{name} is stale: {FIX}"


def test_script_check_mode_agrees(tmp_path: Path) -> None:
    run = [sys.executable, str(SCRIPT)]
    assert subprocess.run([*run, "--check"], capture_output=True, timeout=60).returncode == 0
    # Writing into an empty directory produces the same files; --check then passes there.
    subprocess.run([*run, "--out", str(tmp_path)], capture_output=True, check=True, timeout=60)
    (tmp_path / "stale.json").write_text("{}\n", encoding="utf-8")
    assert subprocess.run([*run, "--check", "--out", str(tmp_path)], timeout=60).returncode == 1
    subprocess.run([*run, "--out", str(tmp_path)], capture_output=True, check=True, timeout=60)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(render_schema_files())


def test_rendering_is_sorted_indented_and_ends_with_a_newline() -> None:
    for text in render_schema_files().values():
        assert text.endswith("}\n")
        assert not text.endswith("\n\n")
        parsed = json.loads(text)
        assert json.dumps(parsed, sort_keys=True, indent=2, ensure_ascii=False) + "\n" == text


@pytest.mark.parametrize("name", sorted(SCHEMAS))
def test_schemas_use_draft_2020_12_and_ecma_patterns(name: str) -> None:
    schema = SCHEMAS[name]
    assert schema["$schema"] == DIALECT
    for pattern in _patterns(schema):
        assert pattern.startswith("^")
        assert pattern.endswith("$")
        assert r"\Z" not in pattern
        re.compile(pattern)


def test_kind_schema_pins_its_type_and_refuses_unknown_fields(kind: str) -> None:
    schema = SCHEMAS[f"{kind}.json"]
    ref = schema["$ref"].removeprefix("#/$defs/")
    root = schema["$defs"][ref]
    assert root["properties"]["type"] == {"enum": [kind]}
    assert root["additionalProperties"] is False
    assert {"type", "id", "conversation_id", "sender", "created_at", "payload"} <= set(
        root["required"]
    )
    for definition in schema["$defs"].values():
        if definition.get("type") == "object" and "properties" in definition:
            assert definition["additionalProperties"] is False, definition["title"]


def test_error_schema_lists_every_error_code() -> None:
    from lineup.protocol import ErrorCode

    schema = SCHEMAS["error.json"]
    assert set(schema["$defs"]["ErrorCode"]["enum"]) == {c.value for c in ErrorCode}


def _patterns(node: Any) -> list[str]:
    found: list[str] = []
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                found.append(value)
            else:
                found.extend(_patterns(value))
    elif isinstance(node, list):
        for item in node:
            found.extend(_patterns(item))
    return found
