"""Identifier grammars and limits: good values pass, bad ones name their path."""

from __future__ import annotations

import base64
import hashlib
import re
import string
from typing import Any

import pytest

from lineup.protocol import ErrorCode
from lineup.protocol import fields as f

from .examples import INTEGRITY, accepted, envelope, payload, rejected

MALFORMED = ErrorCode.MALFORMED_ENVELOPE

GOOD_IDS = ["a", "0", "A-z_0.9:x", "msg_ui_01", "weather.dashboard.01", "x" * 128]
BAD_IDS = ["", "x" * 129, "a b", "a/b", "é", "a\n", "\na", "a\x00", "\u0661", "a\u200b"]

GOOD_EVENTS = ["refresh", "A", "close", "a" * 64, "x.y:z-1_2", "Draw2"]
BAD_EVENTS = ["", "1abc", "_a", ".a", "a" * 65, "a b", "a\n", "ré", "a/b"]

GOOD_APP_IDS = [
    "com.lineup.weather",
    "com.lineup.task-dashboard",
    "a.b",
    "com.example.v2",
    "org.x_y.0z",
    "a" * 63 + ".b",
]
BAD_APP_IDS = [
    "weather",
    "Com.lineup.x",
    "com..x",
    ".com.x",
    "com.x.",
    "com.-x",
    "1com.x",
    "com.x\n",
    "a" * 64 + ".b",
    "com.x y",
    "com/x.y",
]

GOOD_SEMVER = [
    "0.0.0",
    "1.2.3",
    "10.20.30",
    "1.0.0-alpha",
    "1.0.0-alpha.1",
    "1.0.0-0.3.7",
    "1.0.0-x.7.z.92",
    "1.0.0-x-y-z.--",
    "1.0.0+20130313144700",
    "1.0.0-beta+exp.sha.5114f85",
]
BAD_SEMVER = [
    "1",
    "1.2",
    "01.2.3",
    "1.02.3",
    "1.2.03",
    "1.2.3-",
    "1.2.3-01",
    "1.2.3+",
    "v1.2.3",
    "1.2.3\n",
    "\u0661.2.3",
    "1.2.3 ",
    "1.2.3-a..b",
    "1.2.3." + "1" * 130,
    "1.2.3-" + "a" * 123,
]

GOOD_INTEGRITY = [INTEGRITY, "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU="]
BAD_INTEGRITY = [
    "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFV=",  # non-canonical last char
    "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU",
    "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU==",
    "sha256-47DEQpj8HBSa-_TImW-5JCeuQeRkm5NMpJWZG3hSuFU=",  # base64url alphabet
    "sha384-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    "SHA256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
    "sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=\n",
    "sha256-BASE64_DIGEST",
    "",
]


def _inline_app(integrity: Any) -> dict[str, Any]:
    return {"id": "com.lineup.dev", "version": "0.1.0", "integrity": integrity, "html": "<p></p>"}


def _open(app: dict[str, Any]) -> dict[str, Any]:
    return envelope("lineup.v1.ui.open", payload("lineup.v1.ui.open", app=app))


def _inventory_app(**changes: Any) -> dict[str, Any]:
    application = {"id": "com.lineup.dev", "version": "1.0.0", "surfaces": []}
    application.update(changes)
    return envelope(
        "lineup.v1.client.inventory",
        payload("lineup.v1.client.inventory", applications=[application]),
    )


# --- ids -------------------------------------------------------------------------------------


@pytest.mark.parametrize("value", GOOD_IDS)
def test_good_ids_are_accepted_everywhere(value: str) -> None:
    accepted(envelope("lineup.v1.message", id=value, conversation_id=value))
    accepted(envelope("lineup.v1.message", sender={"kind": "agent", "id": value}))
    accepted(envelope("lineup.v1.ui.close", payload("lineup.v1.ui.close", instance_id=value)))
    accepted(envelope("lineup.v1.tool.result", payload("lineup.v1.tool.result", call_id=value)))


@pytest.mark.parametrize("value", BAD_IDS)
@pytest.mark.parametrize(
    ("build", "path"),
    [
        (lambda v: envelope("lineup.v1.message", id=v), "$.id"),
        (lambda v: envelope("lineup.v1.message", conversation_id=v), "$.conversation_id"),
        (lambda v: envelope("lineup.v1.message", sender={"kind": "agent", "id": v}), "$.sender.id"),
        (
            lambda v: envelope("lineup.v1.message", target={"instance_id": v}),
            "$.target.instance_id",
        ),
        (
            lambda v: envelope("lineup.v1.ui.close", payload("lineup.v1.ui.close", instance_id=v)),
            "$.payload.instance_id",
        ),
        (
            lambda v: envelope("lineup.v1.tool.call", payload("lineup.v1.tool.call", call_id=v)),
            "$.payload.call_id",
        ),
        (
            lambda v: envelope(
                "lineup.v1.client.inventory", payload("lineup.v1.client.inventory", revision=v)
            ),
            "$.payload.revision",
        ),
        (
            lambda v: envelope(
                "lineup.v1.app_session.closed",
                payload("lineup.v1.app_session.closed", pending_interaction_call_ids=["ok", v]),
            ),
            "$.payload.pending_interaction_call_ids[1]",
        ),
    ],
)
def test_bad_ids_are_malformed_at_their_path(value: str, build: Any, path: str) -> None:
    rejected(build(value), MALFORMED, path)


def test_unknown_kind_header_ids_follow_the_same_grammar() -> None:
    rejected(envelope("lineup.v1.future", id="a\n"), MALFORMED, "$.id")


# --- event names -------------------------------------------------------------------------


@pytest.mark.parametrize("value", GOOD_EVENTS)
def test_good_event_names_are_accepted(value: str) -> None:
    accepted(envelope("lineup.v1.ui.event", payload("lineup.v1.ui.event", event=value)))
    accepted(_inventory_app(surfaces=[{"id": "main", "events": [value]}]))


@pytest.mark.parametrize("value", BAD_EVENTS)
def test_bad_event_names_are_malformed(value: str) -> None:
    rejected(
        envelope("lineup.v1.ui.event", payload("lineup.v1.ui.event", event=value)),
        MALFORMED,
        "$.payload.event",
    )
    rejected(
        _inventory_app(surfaces=[{"id": "main", "events": ["ok", value]}]),
        MALFORMED,
        "$.payload.applications[0].surfaces[0].events[1]",
    )


# --- app ids -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", GOOD_APP_IDS)
def test_good_reverse_domain_app_ids_are_accepted(value: str) -> None:
    accepted(_open({"id": value, "version": "1.0.0", "surface": "main"}))
    accepted(_inventory_app(id=value))


@pytest.mark.parametrize("value", BAD_APP_IDS)
def test_bad_app_ids_are_malformed(value: str) -> None:
    rejected(
        _open({"id": value, "version": "1.0.0", "surface": "main"}), MALFORMED, "$.payload.app.id"
    )
    rejected(_inventory_app(id=value), MALFORMED, "$.payload.applications[0].id")


def test_app_id_is_at_most_255_characters() -> None:
    long_id = ".".join(["a" * 63] * 4)
    assert len(long_id) == 255
    accepted(_inventory_app(id=long_id))
    rejected(_inventory_app(id=long_id + "a"), MALFORMED, "$.payload.applications[0].id")


# --- SemVer ----------------------------------------------------------------------------------


@pytest.mark.parametrize("value", GOOD_SEMVER)
def test_good_semver_versions_are_accepted(value: str) -> None:
    accepted(_open({"id": "com.lineup.x", "version": value, "surface": "main"}))
    accepted(_inventory_app(version=value))


@pytest.mark.parametrize("value", BAD_SEMVER)
def test_bad_semver_versions_are_malformed(value: str) -> None:
    rejected(
        _open({"id": "com.lineup.x", "version": value, "surface": "main"}),
        MALFORMED,
        "$.payload.app.version",
    )
    rejected(_inventory_app(version=value), MALFORMED, "$.payload.applications[0].version")


# --- integrity -------------------------------------------------------------------------------


@pytest.mark.parametrize("value", GOOD_INTEGRITY)
def test_good_integrity_is_accepted(value: str) -> None:
    accepted(_open(_inline_app(value)))


@pytest.mark.parametrize("value", BAD_INTEGRITY)
def test_bad_integrity_is_malformed(value: str) -> None:
    rejected(_open(_inline_app(value)), MALFORMED, "$.payload.app.integrity")


def test_every_sha256_digest_has_exactly_one_accepted_spelling() -> None:
    alphabet = string.ascii_uppercase + string.ascii_lowercase + string.digits + "+/"
    for data in (b"", b"a", b"<main></main>", bytes(range(256))):
        digest = hashlib.sha256(data).digest()
        canonical = base64.b64encode(digest).decode()
        spellings = [
            canonical[:42] + last + "="
            for last in alphabet
            if base64.b64decode(canonical[:42] + last + "=") == digest
        ]
        assert len(spellings) == 4  # base64 decoders ignore the two padding bits
        accepted_spellings = [s for s in spellings if re.search(f.INTEGRITY_PATTERN, "sha256-" + s)]
        assert accepted_spellings == [canonical]


# --- other grammars --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("interact.notice", True),
        ("task-dashboard.open", True),
        ("a.b.c", True),
        ("notice", False),
        ("Interact.notice", False),
        ("interact.", False),
        ("interact.1open", False),
        ("interact.notice\n", False),
    ],
)
def test_tool_id_grammar(value: str, ok: bool) -> None:
    data = envelope("lineup.v1.tool.call", payload("lineup.v1.tool.call", tool=value))
    if ok:
        accepted(data)
    else:
        rejected(data, MALFORMED, "$.payload.tool")


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("app.open_url", True),
        ("clipboard.write", True),
        ("device.pick_file", True),
        ("open_url", False),
        ("app.open-url", False),
        ("App.open", False),
        ("app.open_url\n", False),
    ],
)
def test_capability_name_grammar(value: str, ok: bool) -> None:
    data = envelope("lineup.v1.app.call", payload("lineup.v1.app.call", capability=value))
    if ok:
        accepted(data)
    else:
        rejected(data, MALFORMED, "$.payload.capability")


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("task-dashboard", True),
        ("whiteboard", True),
        ("a.b_c-d", True),
        ("Task", False),
        ("-task", False),
        ("", False),
        ("a" * 65, False),
    ],
)
def test_app_scope_grammar(value: str, ok: bool) -> None:
    data = envelope("lineup.v1.message", target={"app_scope": value})
    if ok:
        accepted(data)
    else:
        rejected(data, MALFORMED, "$.target.app_scope")


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("app_closed", True),
        ("tool_input_invalid", True),
        ("E1", False),
        ("app-closed", False),
        ("", False),
        ("a" * 65, False),
    ],
)
def test_error_code_text_grammar(value: str, ok: bool) -> None:
    data = envelope("lineup.v1.error", payload("lineup.v1.error", code=value))
    if ok:
        accepted(data)
    else:
        rejected(data, MALFORMED, "$.payload.code")


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("2026-08-02T12:00:00Z", True),
        ("2026-08-02T12:00:00.123456+05:30", True),
        ("2026-08-02T12:00:00-00:00", True),
        ("2026-08-02T12:00:00", False),
        ("2026-02-30T12:00:00Z", False),
        ("2026-08-02", False),
        ("yesterday", False),
        (1_785_000_000, False),
    ],
)
def test_timestamps_need_rfc3339_with_offset(value: Any, ok: bool) -> None:
    data = envelope("lineup.v1.message", created_at=value)
    if ok:
        accepted(data)
    else:
        rejected(data, MALFORMED, "$.created_at")
    call = envelope("lineup.v1.app.call", payload("lineup.v1.app.call", expires_at=value))
    if ok:
        accepted(call)
    else:
        rejected(call, MALFORMED, "$.payload.expires_at")


# --- limits --------------------------------------------------------------------------------


def test_message_text_limit_is_in_characters() -> None:
    accepted(envelope("lineup.v1.message", {"text": "é" * f.MAX_TEXT_CHARS}))
    rejected(
        envelope("lineup.v1.message", {"text": "x" * (f.MAX_TEXT_CHARS + 1)}),
        MALFORMED,
        "$.payload.text",
    )


def test_label_limit() -> None:
    accepted(envelope("lineup.v1.status", {"state": "idle", "text": "x" * f.MAX_LABEL_CHARS}))
    rejected(
        envelope("lineup.v1.status", {"state": "idle", "text": "x" * (f.MAX_LABEL_CHARS + 1)}),
        MALFORMED,
        "$.payload.text",
    )


def test_app_call_reason_must_not_be_empty() -> None:
    call = envelope("lineup.v1.app.call", payload("lineup.v1.app.call", reason=""))
    rejected(call, MALFORMED, "$.payload.reason")


def test_list_limit() -> None:
    ids = [f"c{i}" for i in range(f.MAX_LIST_ITEMS)]
    closed = "lineup.v1.app_session.closed"
    accepted(envelope(closed, payload(closed, pending_interaction_call_ids=ids)))
    rejected(
        envelope(closed, payload(closed, pending_interaction_call_ids=[*ids, "one_more"])),
        MALFORMED,
        "$.payload.pending_interaction_call_ids",
    )


def test_free_form_object_size_limit() -> None:
    # {"k":"..."} is 8 bytes of framing around the string.
    room = f.MAX_OBJECT_BYTES - 1 - len(b'{"k":""}')
    patch = "lineup.v1.ui.patch"
    accepted(envelope(patch, payload(patch, state={"k": "x" * room})))
    rejected(envelope(patch, payload(patch, state={"k": "x" * (room + 1)})), MALFORMED, "$.payload")


def test_ui_event_data_must_encode_below_16_kib() -> None:
    room = f.MAX_EVENT_DATA_BYTES - 1 - len(b'{"k":""}')
    event = "lineup.v1.ui.event"
    accepted(envelope(event, payload(event, data={"k": "x" * room})))
    rejected(envelope(event, payload(event, data={"k": "x" * (room + 1)})), MALFORMED, "$.payload")
    rejected(
        envelope(event, payload(event, data={"k": "x" * f.MAX_EVENT_DATA_BYTES})),
        MALFORMED,
        "$.payload",
    )


def test_inline_bundle_limit_counts_utf8_bytes() -> None:
    app = _inline_app(INTEGRITY)
    app["html"] = "x" * f.MAX_BUNDLE_BYTES
    accepted(_open(app))
    app["html"] = "é" * (f.MAX_BUNDLE_BYTES // 2 + 1)
    rejected(_open(app), MALFORMED, "$.payload.app")


def test_depth_helper_is_iterative() -> None:
    deep: Any = []
    for _ in range(100_000):
        deep = [deep]
    assert f.json_depth_exceeds(deep)
    assert not f.json_depth_exceeds({"a": [{"b": 1}]}, limit=3)
    assert f.json_depth_exceeds({"a": [{"b": []}]}, limit=3)


@pytest.mark.parametrize(
    "name",
    [n for n in dir(f) if n.endswith("_PATTERN")],
)
def test_patterns_are_anchored_and_ascii(name: str) -> None:
    pattern = getattr(f, name)
    assert pattern.startswith("^")
    assert pattern.endswith(r"\Z")
    for shorthand in (r"\d", r"\w", r"\s"):
        assert shorthand not in pattern
