"""Tool-argument validation: jsonschema-rs compiled once vs pure-Python ``jsonschema``.

The Tool Router checks every ``tool.call``'s arguments against the tool's
``input_schema`` (and every result against its ``output_schema``). This measures
validations per second for a realistic tool input schema, the way the Runtime does it
(``lineup.formats.schemas``: Draft 2020-12, compiled once, linear-time regexes,
formats asserted), and the same schema with the pure-Python ``jsonschema`` package
(``Draft202012Validator`` built once) as the reference, in the same process.

``jsonschema`` is not a LineUp dependency. Install it into a throwaway venv and point
the benchmark at it (without it, the reference rows are skipped)::

    python3 -m venv /tmp/jsref && /tmp/jsref/bin/pip install jsonschema
    .venv/bin/python benchmarks/schema_validation.py --reference-venv /tmp/jsref

Rows (each: the best of ``--rounds`` rounds of about ``--seconds`` each):

- ``valid``: arguments that match, the common case (``None`` back);
- ``invalid``: arguments with one fault deep inside, until the first problem with its
  path (LineUp's ``SchemaProblem``, ``jsonschema``'s first ``iter_errors`` item);
- ``compile``: building the validator for both schemas of the tool (LineUp also
  checks sizes, references and the meta-schema; the cache is bypassed).
"""

from __future__ import annotations

import argparse
import copy
import glob
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from importlib.metadata import version as dist_version
from typing import Any

from lineup.formats.schemas import CompiledTool
from lineup.protocol.payloads import ToolDescriptor, ToolTarget

# A task tracker's "create task" tool: the kind of schema an app declares for an agent.
# No `format` keyword: pure-Python jsonschema would skip `date-time` without extra
# packages, and the two sides must do the same work.
INPUT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["title", "priority", "assignees"],
    "additionalProperties": False,
    "properties": {
        "title": {"type": "string", "minLength": 1, "maxLength": 200},
        "description": {"type": "string", "maxLength": 4000},
        "priority": {"enum": ["low", "normal", "high", "urgent"]},
        "due": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "estimate_hours": {"type": "number", "exclusiveMinimum": 0, "maximum": 1000},
        "assignees": {
            "type": "array",
            "minItems": 1,
            "maxItems": 10,
            "uniqueItems": True,
            "items": {"$ref": "#/$defs/user"},
        },
        "tags": {
            "type": "array",
            "maxItems": 20,
            "items": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]{0,31}$"},
        },
        "checklist": {"type": "array", "maxItems": 50, "items": {"$ref": "#/$defs/step"}},
        "notify": {"type": "boolean"},
    },
    "$defs": {
        "user": {
            "type": "object",
            "required": ["id"],
            "additionalProperties": False,
            "properties": {
                "id": {"type": "string", "pattern": "^u_[A-Za-z0-9]{6,32}$"},
                "role": {"enum": ["owner", "reviewer", "watcher"]},
            },
        },
        "step": {
            "type": "object",
            "required": ["text"],
            "additionalProperties": False,
            "properties": {
                "text": {"type": "string", "minLength": 1, "maxLength": 500},
                "done": {"type": "boolean"},
            },
        },
    },
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["task_id"],
    "properties": {"task_id": {"type": "string"}, "url_path": {"type": "string"}},
}

VALID: dict[str, Any] = {
    "title": "Prepare the quarterly release notes",
    "description": "Collect the merged changes since the last tag and draft the notes.",
    "priority": "high",
    "due": "2026-08-14",
    "estimate_hours": 6.5,
    "assignees": [{"id": "u_alice01", "role": "owner"}, {"id": "u_bob0002", "role": "reviewer"}],
    "tags": ["release", "docs", "q3"],
    "checklist": [
        {"text": "List merged pull requests", "done": True},
        {"text": "Group them by area"},
        {"text": "Write the highlights", "done": False},
        {"text": "Ask for review"},
    ],
    "notify": True,
}
INVALID = copy.deepcopy(VALID)
INVALID["checklist"][2]["text"] = ""  # one fault, deep inside: minLength

DESCRIPTOR = ToolDescriptor(
    id="task-dashboard.create_task",
    handling="direct",
    input_schema=INPUT_SCHEMA,
    output_schema=OUTPUT_SCHEMA,
    target=ToolTarget(
        app_scope="task-dashboard", requires_foreground=False, restore_previous_focus=False
    ),
    timeout_ms=10_000,
)


def rate(function: Callable[[], object], seconds: float, rounds: int) -> float:
    """Best calls per second over ``rounds`` rounds of about ``seconds`` each."""
    batch = 1
    while True:  # find a batch that takes about a tenth of a round
        start = time.perf_counter()
        for _ in range(batch):
            function()
        if time.perf_counter() - start >= seconds / 10:
            break
        batch *= 2
    best = 0.0
    for _ in range(rounds):
        calls = 0
        start = time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds:
            for _ in range(batch):
                function()
            calls += batch
        best = max(best, calls / elapsed)
    return best


def load_reference(venv: str | None) -> Any:
    if venv:
        found = glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))
        if not found:
            sys.exit(f"no site-packages under {venv}")
        sys.path.extend(found)
    try:
        import jsonschema  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None
    return jsonschema


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference-venv", help="a venv that has `jsonschema` installed")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds per row; the best counts")
    parser.add_argument("--json", dest="json_path", help="also write the figures here")
    args = parser.parse_args()

    compiled = CompiledTool(DESCRIPTOR)
    assert compiled.validate_input(VALID) is None
    problem = compiled.validate_input(INVALID)
    assert problem is not None
    print(f"invalid arguments give: {problem.describe()}")

    rows: dict[str, dict[str, float]] = {}
    rows["valid"] = {
        "lineup": rate(lambda: compiled.validate_input(VALID), args.seconds, args.rounds)
    }
    rows["invalid"] = {
        "lineup": rate(lambda: compiled.validate_input(INVALID), args.seconds, args.rounds)
    }
    rows["compile"] = {"lineup": rate(lambda: CompiledTool(DESCRIPTOR), args.seconds, args.rounds)}

    jsonschema = load_reference(args.reference_venv)
    version = None
    if jsonschema is not None:
        version = dist_version("jsonschema")
        cls = jsonschema.Draft202012Validator
        cls.check_schema(INPUT_SCHEMA)
        reference = cls(INPUT_SCHEMA)
        assert reference.is_valid(VALID)
        assert not reference.is_valid(INVALID)

        def first_error() -> object:
            return None if reference.is_valid(INVALID) else next(reference.iter_errors(INVALID))

        def build() -> object:
            cls.check_schema(INPUT_SCHEMA)
            cls.check_schema(OUTPUT_SCHEMA)
            return cls(INPUT_SCHEMA), cls(OUTPUT_SCHEMA)

        rows["valid"]["reference"] = rate(
            lambda: reference.is_valid(VALID), args.seconds, args.rounds
        )
        rows["invalid"]["reference"] = rate(first_error, args.seconds, args.rounds)
        rows["compile"]["reference"] = rate(build, args.seconds, args.rounds)

    print(
        f"python {platform.python_version()}, jsonschema-rs {dist_version('jsonschema_rs')},"
        f" jsonschema {version or 'not installed (reference skipped)'}"
    )
    print(f"schema {len(json.dumps(INPUT_SCHEMA))} bytes, arguments {len(json.dumps(VALID))} bytes")
    print(f"{'per second':<10} {'LineUp (jsonschema-rs)':>24} {'jsonschema (Python)':>22}  ratio")
    for name, row in rows.items():
        ours, theirs = row["lineup"], row.get("reference")
        ratio = f"{ours / theirs:7.1f}x" if theirs else "      -"
        theirs_text = f"{theirs:22,.0f}" if theirs else f"{'-':>22}"
        print(f"{name:<10} {ours:24,.0f} {theirs_text} {ratio}")
    if args.json_path:
        with open(args.json_path, "w") as out:
            json.dump({"jsonschema": version, "rows": rows}, out, indent=2)


if __name__ == "__main__":
    main()
