"""docs/protocol.md cannot drift: its examples decode, its tables match the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lineup.protocol import KIND_BY_TYPE, Envelope, ErrorCode, decode
from lineup.protocol import fields as f

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
