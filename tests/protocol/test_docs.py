"""docs/protocol.md cannot drift: its examples decode, and are ones the Runtime would
accept (interaction arguments and answers, the bundled apps' tools and inventory
entries); its tables match the code."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from lineup.formats.manifest import (
    AppManifest,
    compiled_tools,
    load_manifest,
    to_inventory_application,
)
from lineup.miniapps import BUNDLED, bundle_dir
from lineup.protocol import (
    KIND_BY_TYPE,
    ClientInventoryEnvelope,
    Envelope,
    ErrorCode,
    Rejection,
    ToolCallEnvelope,
    ToolResultEnvelope,
    decode,
)
from lineup.protocol import fields as f
from lineup.protocol.interactions import (
    TOOL_IDS,
    Interaction,
    check_answer,
    interactive_tools,
    parse_arguments,
)
from lineup.protocol.payloads import ClientInventory

DOC = Path(__file__).resolve().parents[2] / "docs" / "protocol.md"
TEXT = DOC.read_text(encoding="utf-8")
KIND_HEADING = re.compile(r"^### (lineup\.v1\.\S+)\s*$", re.M)
ANY_HEADING = re.compile(r"^#{1,3} ", re.M)
JSON_BLOCK = re.compile(r"^```json\n(.*?)^```$", re.M | re.S)


def _sections() -> dict[str, list[str]]:
    """``### lineup.v1.<kind>`` heading → the ```json blocks up to the next heading."""
    found: dict[str, list[str]] = {}
    for match in KIND_HEADING.finditer(TEXT):
        following = ANY_HEADING.search(TEXT, match.end())
        body = TEXT[match.end() : following.start() if following else len(TEXT)]
        found[match.group(1)] = JSON_BLOCK.findall(body)
    return found


SECTIONS = _sections()
EXAMPLES = [(kind, block) for kind, blocks in SECTIONS.items() for block in blocks]


def test_every_kind_has_a_section_with_an_example() -> None:
    assert set(SECTIONS) == set(KIND_BY_TYPE)
    for kind, blocks in SECTIONS.items():
        assert blocks, f"### {kind} has no ```json example"


@pytest.mark.parametrize(("kind", "block"), EXAMPLES, ids=[k for k, _ in EXAMPLES])
def test_documented_example_decodes_to_its_kind(kind: str, block: str) -> None:
    result = decode(block)
    assert isinstance(result, KIND_BY_TYPE[kind]), result
    assert result.sender.kind in type(result).senders


def test_every_json_block_in_the_page_decodes() -> None:
    blocks = JSON_BLOCK.findall(TEXT)
    assert len(blocks) > len(EXAMPLES)  # the envelope overview has one too
    for block in blocks:
        assert isinstance(decode(block), Envelope), block


def test_error_code_table_lists_exactly_the_error_codes() -> None:
    start = TEXT.index("\n## Error codes\n")
    section = TEXT[start : TEXT.index("\n## ", start + 1)]
    rows = re.findall(r"^\| `([a-z_]+)` \| [^|]+ \| [^|]+ \|$", section, re.M)
    assert len(rows) == len(set(rows))
    assert set(rows) == {code.value for code in ErrorCode}


def test_every_limit_is_documented_with_its_value() -> None:
    limits = {name: getattr(f, name) for name in dir(f) if name.startswith("MAX_")}
    assert limits
    for name, value in limits.items():
        assert re.search(rf"^\| `{name}` \| {value}\b", TEXT, re.M), name


def test_sender_table_matches_the_models() -> None:
    rows = dict(re.findall(r"^\| `(lineup\.v1\.[a-z_.]+)` \| ([a-z, ]+) \|$", TEXT, re.M))
    assert set(rows) == set(KIND_BY_TYPE)
    for kind, senders in rows.items():
        assert set(senders.split(", ")) == set(KIND_BY_TYPE[kind].senders), kind


# --- the examples are ones the Runtime accepts, not only well-formed -------------------------


def _bundled() -> dict[str, AppManifest]:
    manifests = [load_manifest((bundle_dir(n) / "manifest.json").read_bytes()) for n in BUNDLED]
    return {m.id: m for m in manifests}


BUNDLED_APPS = _bundled()
APP_TOOLS = {tool: m for m in BUNDLED_APPS.values() for tool in compiled_tools(m)}
REAL_INTERACTIVE = {t.id: t for t in interactive_tools()}


def _resolved(schema: dict[str, Any]) -> dict[str, Any]:
    """A generated schema is a ``$ref`` into its ``$defs``: the object it names."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        found: dict[str, Any] = schema["$defs"][ref.removeprefix("#/$defs/")]
        return found
    return schema


def _schema_problems(name: str, shown: dict[str, Any], real: dict[str, Any]) -> list[str]:
    """What a shortened schema in the docs says that the real one does not: a required
    or listed property the real one lacks, a property the real one does not require
    marked required, or another type."""
    real = _resolved(real)
    known = set(real.get("properties", {}))
    problems = [f"{name}: no property `{p}`" for p in shown.get("properties", {}) if p not in known]
    problems += [
        f"{name}: `{p}` is not required"
        for p in shown.get("required", [])
        if p not in set(real.get("required", []))
    ]
    if shown.get("type", real.get("type")) != real.get("type"):
        problems.append(f"{name}: not of type {real.get('type')}")
    return problems


def runtime_problems(blocks: list[str]) -> list[str]:
    """Check the page's examples as the Runtime would: interaction calls parse, their
    answers fit the question, app tool calls and results fit the bundled app's
    schemas, and inventories advertise what the Runtime and the bundled apps do."""
    problems: list[str] = []
    envelopes = [e for e in (decode(b) for b in blocks) if isinstance(e, Envelope)]
    asked: dict[str, Interaction] = {}
    app_calls: dict[str, str] = {}
    for envelope in envelopes:
        if isinstance(envelope, ToolCallEnvelope):
            p = envelope.payload
            if p.tool in TOOL_IDS:
                parsed = parse_arguments(p.tool, p.arguments)
                if isinstance(parsed, Rejection):
                    problems.append(f"{envelope.id}: {parsed.code} {parsed.path}: {parsed.message}")
                else:
                    asked[p.call_id] = parsed
            elif p.tool in APP_TOOLS:
                app_calls[p.call_id] = p.tool
                problem = compiled_tools(APP_TOOLS[p.tool])[p.tool].validate_input(p.arguments)
                if problem is not None:
                    problems.append(f"{envelope.id}: tool_input_invalid {problem.describe()}")
            else:
                problems.append(f"{envelope.id}: no bundled app or interaction has {p.tool}")
    for envelope in envelopes:
        if not isinstance(envelope, ToolResultEnvelope) or envelope.payload.status != "completed":
            continue
        r = envelope.payload
        if r.call_id in asked:
            answer = check_answer(asked[r.call_id], r.result)
            if isinstance(answer, Rejection) or answer != r.result:
                problems.append(f"{envelope.id}: the result does not answer {r.call_id}")
        elif r.call_id in app_calls:
            tool = app_calls[r.call_id]
            problem = compiled_tools(APP_TOOLS[tool])[tool].validate_output(r.result or {})
            if problem is not None:
                problems.append(f"{envelope.id}: tool_output_invalid {problem.describe()}")
    for envelope in envelopes:
        if isinstance(envelope, ClientInventoryEnvelope):
            problems += _inventory_problems(envelope.id, envelope.payload)
    return problems


def _inventory_problems(envelope_id: str, inventory: ClientInventory) -> list[str]:
    problems = []
    for app in inventory.applications:
        manifest = BUNDLED_APPS.get(app.id)
        if manifest is None or manifest.version != app.version:
            problems.append(f"{envelope_id}: {app.id} {app.version} is not a bundled app")
        elif app != to_inventory_application(manifest):
            problems.append(f"{envelope_id}: {app.id} is advertised otherwise")
    for tool in inventory.tools:
        real = REAL_INTERACTIVE.get(tool.id)
        if real is not None:
            if tool.handling != real.handling:
                problems.append(f"{envelope_id}: {tool.id} is {real.handling}")
            problems += _schema_problems(f"{tool.id} input", tool.input_schema, real.input_schema)
            problems += _schema_problems(
                f"{tool.id} output", tool.output_schema, real.output_schema
            )
            continue
        manifest = APP_TOOLS.get(tool.id)
        declared = next((t for t in manifest.tools if t.id == tool.id), None) if manifest else None
        if declared is None:
            problems.append(f"{envelope_id}: no bundled app declares {tool.id}")
            continue
        if (tool.handling, tool.target, tool.timeout_ms) != (
            declared.handling,
            declared.target,
            declared.timeout_ms,
        ):
            problems.append(f"{envelope_id}: {tool.id} is declared otherwise")
        problems += _schema_problems(f"{tool.id} input", tool.input_schema, declared.input_schema)
        problems += _schema_problems(
            f"{tool.id} output", tool.output_schema, declared.output_schema
        )
    return problems


def test_every_example_is_one_the_runtime_accepts() -> None:
    assert runtime_problems(JSON_BLOCK.findall(TEXT)) == []


@pytest.mark.parametrize(
    ("wrong", "right", "expected"),
    [
        ('"prompt": "Deploy now?"', '"question": "Deploy now?"', "tool_input_invalid"),
        ('{"id": "no", "label": "Not yet"}', '"no"', "tool_input_invalid"),
        ('"result": {"selected": ["yes"]}', '"result": {"choice": "yes"}', "does not answer"),
        ('"required": ["prompt"]', '"required": ["question"]', "`question` is not required"),
        ('"restore_previous_focus": false}', '"restore_previous_focus": true}', "otherwise"),
        ('"title": "Book the venue"', '"name": "Book the venue"', "tool_input_invalid"),
    ],
)
def test_a_wrong_field_in_an_example_is_found(wrong: str, right: str, expected: str) -> None:
    # The checker must catch the mistakes these examples once had (or could have).
    assert TEXT.count(wrong) == 1, wrong
    broken = JSON_BLOCK.findall(TEXT.replace(wrong, right))
    problems = runtime_problems(broken)
    assert any(expected in problem for problem in problems), problems
