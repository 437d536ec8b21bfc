"""JSON Schemas (draft 2020-12) generated from the envelope models.

The models are the source of truth; ``scripts/gen_schemas.py`` writes these schemas
to ``docs/protocol/`` through ``lineup.schema_files``, which adds the signed release's
(the protocol is the bottom layer and imports no other package), and a test fails
when the committed files drift. A schema says what shape an envelope has; limits that
JSON Schema cannot state (nesting depth and encoded size of free-form objects,
cross-field rules such as "a failed tool result carries an error") are enforced only
by ``decode``, which stays the authority.
"""

from __future__ import annotations

from typing import Any

import msgspec

from .envelope import KIND_BY_TYPE, AnyEnvelope
from .errors import ErrorResponse

__all__ = ["DIALECT", "ecma_patterns", "envelope_schemas", "schema_for"]

DIALECT = "https://json-schema.org/draft/2020-12/schema"


def envelope_schemas() -> dict[str, dict[str, Any]]:
    """One schema per file name: each kind, the whole union, and the error body."""
    schemas: dict[str, dict[str, Any]] = {}
    for tag, kind in KIND_BY_TYPE.items():
        schemas[f"{tag}.json"] = schema_for(kind, title=tag, description=f"A `{tag}` envelope.")
    schemas["envelope.json"] = schema_for(
        AnyEnvelope,
        title="lineup.v1 envelope",
        description="Any lineup.v1 envelope of a known kind, tagged by `type`.",
    )
    schemas["error.json"] = schema_for(
        ErrorResponse,
        title="LineUp error",
        description='The one error shape: {"error": {"code", "message", "path"?}}.',
    )
    return schemas


def schema_for(model: Any, *, title: str, description: str) -> dict[str, Any]:
    """The draft 2020-12 schema of ``model``, with patterns in ECMA-262 form."""
    generated = msgspec.json.schema(model)
    schema: dict[str, Any] = {"$schema": DIALECT, "title": title, "description": description}
    schema.update(generated)
    result = ecma_patterns(schema)
    assert isinstance(result, dict)
    return result


def ecma_patterns(node: Any) -> Any:
    r"""Spell Python's end anchor ``\Z`` as ECMA-262's ``$`` (which has no newline quirk)."""
    if isinstance(node, dict):
        return {
            key: (
                _ecma_pattern(value)
                if key == "pattern" and isinstance(value, str)
                else ecma_patterns(value)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [ecma_patterns(item) for item in node]
    return node


def _ecma_pattern(pattern: str) -> str:
    if pattern.endswith(r"\Z"):
        return pattern[:-2] + "$"
    return pattern
