"""The JSON Schema files committed in ``docs/protocol/``: one per ``lineup.v1``
envelope kind, the union and the error body (``lineup.protocol.schema``), and the
signed MiniApp release (``lineup.delivery.release``).

The release is a delivery document, not an envelope, and ``lineup.protocol`` is the
bottom layer, which imports nothing above it; so the set of files is put together
here, above both. ``scripts/gen_schemas.py`` writes what ``render_schema_files``
returns, and a test fails when the committed files differ.
"""

from __future__ import annotations

import json
from typing import Any

from lineup.delivery.release import Release
from lineup.protocol.schema import envelope_schemas, schema_for

__all__ = ["committed_schemas", "render_schema_files"]


def committed_schemas() -> dict[str, dict[str, Any]]:
    """One schema per file name: the envelope schemas and ``release.json``."""
    schemas = envelope_schemas()
    schemas["release.json"] = schema_for(
        Release,
        title="lineup.release.v1",
        description="A signed MiniApp release (docs/delivery.md); unknown fields refused.",
    )
    return schemas


def render_schema_files() -> dict[str, str]:
    """File name → exact text of the committed file (sorted keys, indent 2, final newline)."""
    return {
        name: json.dumps(schema, sort_keys=True, indent=2, ensure_ascii=False) + "\n"
        for name, schema in sorted(committed_schemas().items())
    }
