"""Hypothesis feeds ``decode`` malformed input: it must never raise, and whatever it
accepts must survive a canonical round trip.

The strategies below run 3,000 + 3,000 + 2,000 + 2,000 = 10,000 examples per run.
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from lineup.protocol import (
    ENVELOPE_KINDS,
    KIND_BY_TYPE,
    Envelope,
    ErrorCode,
    Rejection,
    Unsupported,
    decode,
    encode,
)
from lineup.protocol.fields import TYPE_PATTERN

from .examples import KINDS, accepted, envelope

DECODER_CODES = frozenset(
    {
        ErrorCode.ENVELOPE_TOO_LARGE,
        ErrorCode.MALFORMED_ENVELOPE,
        ErrorCode.UNSUPPORTED_TYPE,
        ErrorCode.UNSUPPORTED_VERSION,
    }
)
FUZZ = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

EXAMPLES = [envelope(kind) for kind in sorted(KINDS)]
CANONICAL = [encode(accepted(x)) for x in EXAMPLES]


def check(data: bytes | str) -> None:
    """The decoder's whole contract, for one input."""
    result = decode(data)
    event(result.code.value if isinstance(result, Rejection) else type(result).__name__)
    if isinstance(result, Rejection):
        assert result.code in DECODER_CODES, result
        assert "\n" not in result.message
        assert 0 < len(result.message) <= 500
        assert result.path is None or result.path.startswith("$")
    elif isinstance(result, Unsupported):
        assert result.type not in KIND_BY_TYPE
        assert re.search(TYPE_PATTERN, result.type)
        assert result.payload_bytes >= 2
    else:
        assert isinstance(result, ENVELOPE_KINDS)
        canonical = encode(result)
        again = decode(canonical)
        assert again == result
        assert isinstance(again, Envelope)
        assert encode(again) == canonical
        assert result.sender.kind in ("agent", "user", "runtime")


# --- building blocks -------------------------------------------------------------------------

SURROGATES = st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff"])
TEXT = st.one_of(
    st.text(max_size=20),
    st.sampled_from(["", "a", "A-z_0.9:x", "com.lineup.x", "1.0.0", "lineup.v1.x", "idle"]),
    st.builds(lambda a, s, b: a + s + b, st.text(max_size=5), SURROGATES, st.text(max_size=5)),
    st.builds(lambda s, n: s * n, st.text(min_size=1, max_size=3), st.integers(1, 20_000)),
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
)
JSON_VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(TEXT, children, max_size=4)
    ),
    max_leaves=8,
)
KNOWN_TYPES = sorted(KIND_BY_TYPE)
TYPES = st.one_of(
    st.sampled_from(KNOWN_TYPES),
    st.sampled_from(["lineup.v1.future", "lineup.v1.whiteboard.stroke", "lineup.v1.a_b.c"]),
    st.sampled_from(["lineup.v2.message", "lineup.v1.", "chat.message", "lineup.v1.A"]),
    TEXT,
)
PLAUSIBLE: st.SearchStrategy[Any] = st.sampled_from(
    [
        "a",
        "x" * 128,
        "com.lineup.x",
        "1.0.0-rc.1+b",
        "task-dashboard",
        "interact.notice",
        "2026-01-01T00:00:00+05:30",
        "\U0001f600 é",
        0,
        1.5,
        10**20,
        True,
        None,
        [],
        {},
        {"k": [1, "é", None, {"n": 2.5}]},
    ]
).map(copy.deepcopy)  # fresh containers: the mutations below edit them in place


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(node, dict):
        for key, value in node.items():
            found.extend(_paths(value, (*prefix, key)))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found.extend(_paths(value, (*prefix, index)))
    return found


def _parent(root: Any, path: tuple[Any, ...]) -> Any:
    node = root
    for step in path[:-1]:
        node = node[step]
    return node


@st.composite
def mutated_envelopes(draw: st.DrawFn) -> bytes:
    """A valid envelope with 1-4 structural mutations, serialised several ways."""
    doc: Any = copy.deepcopy(draw(st.sampled_from(EXAMPLES)))
    deep_marker = None
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(doc) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _parent(doc, path)
        key = path[-1]
        action = draw(
            st.sampled_from(
                ["drop", "replace", "plausible", "retype", "extra", "huge", "deep", "swap"]
            )
        )
        if action == "drop":
            del parent[key]
        elif action == "replace":
            parent[key] = draw(JSON_VALUES)
        elif action == "plausible":
            parent[key] = draw(PLAUSIBLE)
        elif action == "retype":
            parent[key] = draw(st.sampled_from([None, True, 0, -1, 1.5, "", [], {}, "x"]))
        elif action == "extra" and isinstance(parent, dict):
            parent[draw(TEXT)] = draw(JSON_VALUES)
        elif action == "huge":
            parent[key] = "x" * draw(st.integers(1_000, 300_000))
        elif action == "deep":
            deep_marker = "DEEP_MARKER_6a1f"
            parent[key] = deep_marker
        elif action == "swap" and isinstance(parent, dict):
            parent[key] = copy.deepcopy(draw(st.sampled_from(EXAMPLES))["payload"])
    text = json.dumps(doc, ensure_ascii=draw(st.booleans()), allow_nan=True)
    data = text.encode("utf-8", "surrogatepass")
    if deep_marker is not None:
        depth = draw(st.integers(20, 3_000))
        opener, closer = draw(st.sampled_from([(b"[", b"]"), (b'{"a":', b"}")]))
        filler = b"1" if opener != b"[" else b""
        data = data.replace(
            json.dumps(deep_marker).encode(), opener * depth + filler + closer * depth
        )
    return data


@st.composite
def byte_mutations(draw: st.DrawFn) -> bytes:
    """Canonical bytes damaged at the byte level: truncation, splices, duplicate keys."""
    data = bytearray(draw(st.sampled_from(CANONICAL)))
    for _ in range(draw(st.integers(1, 3))):
        position = draw(st.integers(0, len(data)))
        action = draw(
            st.sampled_from(["truncate", "splice", "flip", "delete", "duplicate", "utf8"])
        )
        if action == "truncate":
            del data[position:]
        elif action == "splice":
            data[position:position] = draw(st.binary(min_size=1, max_size=16))
        elif action == "flip" and position < len(data):
            data[position] ^= 1 << draw(st.integers(0, 7))
        elif action == "delete":
            del data[position : position + draw(st.integers(1, 40))]
        elif action == "duplicate":
            key = draw(st.sampled_from([b"id", b"type", b"v", b"sender", b"payload", b"text"]))
            value = draw(st.sampled_from([b'"x"', b"2", b'"lineup.v1.status"', b"{}", b"null"]))
            data[1:1] = b'"' + key + b'":' + value + b","
        elif action == "utf8":
            data[position:position] = draw(
                st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00"])
            )
    return bytes(data)


@st.composite
def random_payloads(draw: st.DrawFn) -> bytes:
    """A valid header with any type and any JSON as payload and target."""
    doc = envelope(draw(st.sampled_from(KNOWN_TYPES)))
    doc["type"] = draw(TYPES)
    doc["payload"] = draw(
        st.one_of(st.dictionaries(TEXT, st.one_of(PLAUSIBLE, JSON_VALUES), max_size=6), JSON_VALUES)
    )
    if draw(st.integers(0, 4)) == 0:
        doc["target"] = draw(JSON_VALUES)
    if draw(st.integers(0, 4)) == 0:
        doc["v"] = draw(st.one_of(st.integers(-3, 3), SCALARS))
    return json.dumps(doc, allow_nan=True, ensure_ascii=False).encode("utf-8", "surrogatepass")


# --- the runs --------------------------------------------------------------------------------


@settings(FUZZ, max_examples=3_000)
@given(mutated_envelopes())
def test_mutated_envelopes_never_break_the_decoder(data: bytes) -> None:
    check(data)


@settings(FUZZ, max_examples=3_000)
@given(byte_mutations())
def test_damaged_bytes_never_break_the_decoder(data: bytes) -> None:
    check(data)


@settings(FUZZ, max_examples=2_000)
@given(random_payloads())
def test_random_payloads_never_break_the_decoder(data: bytes) -> None:
    check(data)


@settings(FUZZ, max_examples=2_000)
@given(
    st.one_of(
        st.binary(max_size=512),
        st.text(max_size=256),
        JSON_VALUES.map(lambda v: json.dumps(v, allow_nan=True)),
    )
)
def test_arbitrary_input_never_breaks_the_decoder(data: bytes | str) -> None:
    check(data)
    if isinstance(data, str):
        check(data.encode("utf-8", "surrogatepass"))
