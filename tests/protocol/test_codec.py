"""``decode`` / ``encode``: the three outcomes, canonical bytes and every decoder code."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import msgspec
import pytest

from lineup.protocol import (
    KIND_BY_TYPE,
    MAX_ENVELOPE_BYTES,
    Envelope,
    ErrorCode,
    MessageEnvelope,
    Rejection,
    Sender,
    Unsupported,
    decode,
    encode,
    payloads,
)
from lineup.protocol.fields import MAX_JSON_DEPTH

from .examples import (
    DROP,
    HEADER,
    INTERACTIVE_TOOL,
    KINDS,
    accepted,
    dumps,
    envelope,
    payload,
    rejected,
)

# --- valid envelopes -------------------------------------------------------------------


def test_example_decodes_to_the_class_of_its_kind(kind: str, example: dict[str, Any]) -> None:
    result = accepted(example)
    assert type(result) is KIND_BY_TYPE[kind]
    assert result.type == kind
    assert result.sender.kind in type(result).senders


def test_encode_of_decode_is_a_fixed_point_with_sorted_keys(example: dict[str, Any]) -> None:
    first = encode(accepted(example))
    second = encode(accepted(first))
    assert first == second
    assert decode(first) == decode(dumps(example))

    def keys_sorted(node: Any) -> bool:
        if isinstance(node, dict):
            return list(node) == sorted(node) and all(keys_sorted(v) for v in node.values())
        if isinstance(node, list):
            return all(keys_sorted(v) for v in node)
        return True

    assert keys_sorted(json.loads(first))
    # Canonical: exactly what a sorted, whitespace-free encoder makes of the same JSON.
    assert first == msgspec.json.encode(json.loads(first), order="sorted")


def test_canonical_bytes_have_no_whitespace_and_always_carry_v() -> None:
    pretty = json.dumps(envelope("lineup.v1.status"), indent=4).encode()
    canonical = encode(accepted(pretty))
    assert canonical == (
        b'{"conversation_id":"conv_01","created_at":"2026-08-02T12:00:00Z","id":"env_0001",'
        b'"payload":{"state":"working","text":"Reading the repository"},'
        b'"sender":{"id":"agent_hermes_main","kind":"agent"},"type":"lineup.v1.status","v":1}'
    )


def test_encode_omits_defaults_but_keeps_v_for_constructed_envelopes() -> None:
    built = MessageEnvelope(
        id="m1",
        conversation_id="c1",
        sender=Sender(kind="user", id="u1"),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
        payload=payloads.Message(text="hi"),
    )
    assert encode(built) == (
        b'{"conversation_id":"c1","created_at":"2026-01-01T00:00:00Z","id":"m1",'
        b'"payload":{"text":"hi"},"sender":{"id":"u1","kind":"user"},'
        b'"type":"lineup.v1.message","v":1}'
    )


def test_tool_descriptor_version_is_always_written() -> None:
    kind = "lineup.v1.client.inventory"
    tool = {k: v for k, v in INTERACTIVE_TOOL.items() if k != "version"}
    result = accepted(envelope(kind, payload(kind, tools=[tool])))
    assert b'"version":1}' in encode(result)


def test_missing_v_means_version_one() -> None:
    result = accepted(envelope("lineup.v1.message", v=DROP))
    assert result.v == 1


def test_timestamps_are_normalised_to_one_spelling() -> None:
    result = accepted(envelope("lineup.v1.message", created_at="2026-08-02T14:00:00.5+02:00"))
    assert b'"created_at":"2026-08-02T14:00:00.500000+02:00"' in encode(result)
    assert result.created_at == datetime(2026, 8, 2, 12, 0, 0, 500000, tzinfo=UTC)


def test_decode_accepts_str_bytearray_and_memoryview() -> None:
    data = dumps(envelope("lineup.v1.message"))
    expected = decode(data)
    assert isinstance(expected, MessageEnvelope)
    assert decode(data.decode()) == expected
    assert decode(bytearray(data)) == expected
    assert decode(memoryview(data)) == expected


def test_envelopes_are_frozen() -> None:
    result = accepted(envelope("lineup.v1.message"))
    with pytest.raises(AttributeError):
        result.id = "other"  # type: ignore[misc]


# --- one test per decoder code -----------------------------------------------------------


def test_envelope_too_large_is_refused_before_parsing() -> None:
    # Not even JSON: only the size can have caused this rejection.
    rejection = rejected(b"\xff" * (MAX_ENVELOPE_BYTES + 1), ErrorCode.ENVELOPE_TOO_LARGE)
    assert rejection.path is None
    rejected("x" * (MAX_ENVELOPE_BYTES + 1), ErrorCode.ENVELOPE_TOO_LARGE)


def test_size_limit_counts_utf8_bytes_of_text_input() -> None:
    body = envelope("lineup.v1.message", {"text": "é" * (MAX_ENVELOPE_BYTES // 2)})
    as_text = json.dumps(body, ensure_ascii=False)
    assert len(as_text) <= MAX_ENVELOPE_BYTES < len(as_text.encode())
    rejected(as_text, ErrorCode.ENVELOPE_TOO_LARGE)


def test_envelope_at_exactly_the_limit_is_parsed() -> None:
    data = dumps(envelope("lineup.v1.message"))
    padded = data[:-1] + b" " * (MAX_ENVELOPE_BYTES - len(data)) + b"}"
    assert len(padded) == MAX_ENVELOPE_BYTES
    assert isinstance(decode(padded), MessageEnvelope)


@pytest.mark.parametrize(
    "data",
    [b"", b"not json", b"{", b'{"v":1,', b"[]", b"null", b"42", b'"lineup.v1.message"', b"{}"],
)
def test_non_envelope_json_is_malformed(data: bytes) -> None:
    rejected(data, ErrorCode.MALFORMED_ENVELOPE)


@pytest.mark.parametrize(
    "data",
    [
        b"\xff\xfe{}",
        b'{"v":1,"id":"\xc3"}',
        b'{"v":1,"id":"\xed\xa0\x80"}',  # a surrogate encoded directly as UTF-8
        b'{"v":1,"id":"\xf8\x88\x80\x80\x80"}',
    ],
)
def test_invalid_utf8_is_malformed(data: bytes) -> None:
    rejected(data, ErrorCode.MALFORMED_ENVELOPE)


def test_invalid_utf8_inside_a_valid_envelope_is_malformed() -> None:
    data = dumps(envelope("lineup.v1.message", {"text": "PLACEHOLDER"}))
    rejected(data.replace(b"PLACEHOLDER", b"ab\x80cd"), ErrorCode.MALFORMED_ENVELOPE)


@pytest.mark.parametrize("escape", [rb"\ud800", rb"\udfff", rb"\ud800\u0041", rb"x\udc00y"])
def test_lone_surrogate_escapes_are_malformed(escape: bytes) -> None:
    data = dumps(envelope("lineup.v1.message", {"text": "PLACEHOLDER"}))
    rejected(data.replace(b"PLACEHOLDER", escape), ErrorCode.MALFORMED_ENVELOPE)


def test_lone_surrogate_in_a_free_form_key_is_malformed() -> None:
    data = dumps(envelope("lineup.v1.ui.patch", {"instance_id": "i", "state": {"K": 1}}))
    rejected(data.replace(b'"K"', rb'"\ud800"'), ErrorCode.MALFORMED_ENVELOPE)


def test_lone_surrogate_characters_in_text_input_are_malformed() -> None:
    text = json.dumps(envelope("lineup.v1.message", {"text": "PLACEHOLDER"}))
    rejected(text.replace("PLACEHOLDER", "\ud800"), ErrorCode.MALFORMED_ENVELOPE)


def test_surrogate_pairs_are_text() -> None:
    data = dumps(envelope("lineup.v1.message", {"text": "PLACEHOLDER"}))
    result = accepted(data.replace(b"PLACEHOLDER", rb"\ud83d\ude00"))
    assert isinstance(result, MessageEnvelope)
    assert result.payload.text == "\U0001f600"


@pytest.mark.parametrize("depth", [5_000, 50_000, 100_000])
def test_deep_nesting_is_refused_without_recursion_error(depth: int) -> None:
    nested = b"[" * depth + b"]" * depth
    candidates = [nested, b'{"a":' * depth + b"1" + b"}" * depth]
    for kind in ("lineup.v1.ui.patch", "lineup.v1.future.kind"):
        data = dumps(envelope(kind, {"instance_id": "i", "state": {"deep": "X"}}))
        candidates.append(data.replace(b'"X"', nested))
    for data in candidates:
        too_large = len(data) > MAX_ENVELOPE_BYTES
        rejected(data, ErrorCode.ENVELOPE_TOO_LARGE if too_large else ErrorCode.MALFORMED_ENVELOPE)


def test_moderate_nesting_in_an_unknown_kind_is_opaque() -> None:
    nested = b"[" * 128 + b"]" * 128
    data = dumps(envelope("lineup.v1.future.kind", {"deep": "X"})).replace(b'"X"', nested)
    assert isinstance(decode(data), Unsupported)


def test_too_deep_free_form_object_names_its_path() -> None:
    state: Any = 1
    for _ in range(MAX_JSON_DEPTH):
        state = {"k": state}
    accepted(envelope("lineup.v1.ui.patch", {"instance_id": "i", "state": state}))
    rejected(
        envelope("lineup.v1.ui.patch", {"instance_id": "i", "state": {"k": state}}),
        ErrorCode.MALFORMED_ENVELOPE,
        "$.payload",
    )


@pytest.mark.parametrize("version", [0, 2, 3, -1, 10**30])
def test_other_v_is_unsupported_version(version: int) -> None:
    rejected(envelope("lineup.v1.message", v=version), ErrorCode.UNSUPPORTED_VERSION, "$.v")
    rejected(envelope("lineup.v1.future", v=version), ErrorCode.UNSUPPORTED_VERSION, "$.v")


@pytest.mark.parametrize("kind", ["lineup.v2.message", "lineup.v2.anything.new", "lineup.v10.x"])
def test_other_major_version_in_type_is_unsupported_version(kind: str) -> None:
    rejected(envelope("lineup.v1.message", type=kind), ErrorCode.UNSUPPORTED_VERSION, "$.type")


@pytest.mark.parametrize("version", ["1", 1.0, True, None, [1]])
def test_v_of_the_wrong_json_type_is_malformed(version: Any) -> None:
    rejected(envelope("lineup.v1.message", v=version), ErrorCode.MALFORMED_ENVELOPE, "$.v")


@pytest.mark.parametrize("kind", ["message", "chat.message", "lineup.message", "lineup.v1", "x"])
def test_non_lineup_type_is_unsupported_type(kind: str) -> None:
    rejected(envelope("lineup.v1.message", type=kind), ErrorCode.UNSUPPORTED_TYPE, "$.type")


@pytest.mark.parametrize("kind", [None, 1, ["lineup.v1.message"], {"kind": "message"}])
def test_type_of_the_wrong_json_type_is_malformed(kind: Any) -> None:
    rejected(envelope("lineup.v1.message", type=kind), ErrorCode.MALFORMED_ENVELOPE, "$.type")


def test_missing_type_is_malformed() -> None:
    rejected(envelope("lineup.v1.message", type=DROP), ErrorCode.MALFORMED_ENVELOPE)


# --- unknown lineup.v1 kinds -----------------------------------------------------------------


def test_unknown_v1_kind_is_unsupported_with_validated_header() -> None:
    data = envelope(
        "lineup.v1.message",
        type="lineup.v1.whiteboard.stroke",
        payload={"points": [[0, 1], [2, 3]], "script": "alert(1)"},
        target={"instance_id": "wb.01"},
    )
    result = decode(dumps(data))
    assert isinstance(result, Unsupported)
    assert result.type == "lineup.v1.whiteboard.stroke"
    assert result.id == HEADER["id"]
    assert result.conversation_id == HEADER["conversation_id"]
    assert result.sender == Sender(kind="agent", id="agent_hermes_main")
    assert result.target is not None
    assert result.target.instance_id == "wb.01"
    assert result.payload_bytes == len(dumps(data["payload"]))
    # Nothing of the payload is kept.
    assert "alert" not in repr(result)
    assert not hasattr(result, "payload")


def test_unknown_kind_from_a_canonical_encoder_is_unsupported() -> None:
    canonical = encode(accepted(envelope("lineup.v1.message")))
    result = decode(canonical.replace(b"lineup.v1.message", b"lineup.v1.message.v2ext"))
    assert isinstance(result, Unsupported)
    without_v = canonical.replace(b',"v":1', b"").replace(b"lineup.v1.message", b"lineup.v1.new")
    assert isinstance(decode(without_v), Unsupported)


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"id": "bad id"}, "$.id"),
        ({"conversation_id": ""}, "$.conversation_id"),
        ({"sender": {"kind": "robot", "id": "a"}}, "$.sender.kind"),
        ({"created_at": "yesterday"}, "$.created_at"),
        ({"created_at": "2026-08-02T12:00:00"}, "$.created_at"),
        ({"target": {}}, "$.target"),
        ({"payload": [1, 2]}, "$.payload"),
        ({"payload": "text"}, "$.payload"),
        ({"payload": DROP}, "$"),
        ({"extra": 1}, "$"),
        ({"type": "lineup.v1.Bad-Kind"}, "$.type"),
        ({"type": "lineup.v1." + "x" * 200}, "$.type"),
        ({"type": "lineup.v1.new\n"}, "$.type"),
    ],
)
def test_unknown_kind_with_a_bad_header_is_malformed(change: dict[str, Any], path: str) -> None:
    data = envelope("lineup.v1.future.kind", {"anything": True})
    for key, value in change.items():
        if value is DROP:
            del data[key]
        else:
            data[key] = value
    rejected(data, ErrorCode.MALFORMED_ENVELOPE, path)


# --- what rejections carry ----------------------------------------------------------------


@pytest.mark.parametrize(
    "change",
    [
        {"sender": {"kind": "CANARY_7f3a", "id": "a"}},
        {"type": "lineup.v1.message", "payload": {"text": "x", "format": "CANARY_7f3a"}},
        {"payload": {"text": "x", "CANARY_7f3a": 1}},
        {"payload": {"text": "x", "CANARY_7f3a\n - at `$.forged`": 1}},
        {"id": "CANARY_7f3a!"},
        {"v": "CANARY_7f3a"},
    ],
)
def test_rejections_never_quote_the_input(change: dict[str, Any]) -> None:
    result = decode(dumps(envelope("lineup.v1.message", **change)))
    assert isinstance(result, Rejection)
    assert "CANARY" not in result.message
    assert "CANARY" not in (result.path or "")
    assert result.path != "$.forged"


def test_rejection_message_is_one_short_line() -> None:
    result = rejected(b"{" + b'"a":1,' * 30_000, ErrorCode.MALFORMED_ENVELOPE)
    assert "\n" not in result.message
    assert 0 < len(result.message) <= 500


def test_rejection_converts_to_the_wire_error_body() -> None:
    result = rejected(envelope("lineup.v1.message", id="!"), ErrorCode.MALFORMED_ENVELOPE, "$.id")
    body = result.as_body()
    assert msgspec.json.decode(msgspec.json.encode(body)) == {
        "code": "malformed_envelope",
        "message": result.message,
        "path": "$.id",
    }


def test_decode_returns_a_known_type_for_every_example(kind: str) -> None:
    _, example_payload = KINDS[kind]
    result = decode(dumps(envelope(kind, example_payload)))
    assert isinstance(result, Envelope)
