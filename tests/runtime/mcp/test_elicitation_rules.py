"""The pure rules of an MCP server's form: which schemas MCP allows, how an answer is
held to one, and which moves win."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from lineup.protocol import ErrorCode
from lineup.runtime.mcp.elicitations import (
    DEFAULT_EXPIRY,
    Event,
    State,
    check_answer,
    decide,
    expiry,
    parse_schema,
)

NOW = datetime(2026, 12, 2, 12, tzinfo=UTC)
LATER = NOW + timedelta(minutes=5)

EVERYTHING_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"title": "String", "type": "string", "description": "Your full name"},
        "check": {"title": "Boolean", "type": "boolean"},
        "email": {"type": "string", "format": "email"},
        "homepage": {"type": "string", "format": "uri"},
        "birthdate": {"type": "string", "format": "date"},
        "integer": {"type": "integer", "minimum": 1, "maximum": 100, "default": 42},
        "number": {"type": "number", "minimum": 0, "maximum": 1000, "default": 3.14},
        "plain": {"type": "string", "enum": ["Monica", "Rachel"], "default": "Monica"},
        "multi": {
            "type": "array",
            "minItems": 1,
            "maxItems": 2,
            "items": {"type": "string", "enum": ["Guitar", "Piano", "Drums"]},
        },
        "hero": {
            "type": "string",
            "oneOf": [{"const": "h1", "title": "Superman"}, {"const": "h2", "title": "Flash"}],
        },
        "fish": {"type": "array", "items": {"anyOf": [{"const": "f1", "title": "Tuna"}]}},
        "pet": {"type": "string", "enum": ["p1", "p2"], "enumNames": ["Cats", "Dogs"]},
        "short": {"type": "string", "minLength": 2, "maxLength": 4},
    },
    "required": ["name"],
}


def test_every_primitive_mcp_allows_parses() -> None:
    form = parse_schema(EVERYTHING_SCHEMA)
    assert form is not None
    kinds = {f.name: f.kind for f in form.fields}
    assert kinds["plain"] == kinds["hero"] == kinds["pet"] == "enum"
    assert kinds["multi"] == kinds["fish"] == "multi"
    assert kinds["integer"] == "integer" and kinds["check"] == "boolean"
    pet = next(f for f in form.fields if f.name == "pet")
    assert pet.options == (("p1", "Cats"), ("p2", "Dogs"))
    assert [f.name for f in form.fields if f.required] == ["name"]


@pytest.mark.parametrize(
    "schema",
    [
        None,
        {"type": "array"},
        {"type": "object", "properties": {"a": {"type": "object", "properties": {}}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": {"type": "string"}}}},
        {"type": "object", "properties": {"a": {"type": "string", "format": "ipv4"}}},
        {"type": "object", "properties": {"a": {"type": "null"}}},
        {"type": "object", "properties": {"a": {"type": "string", "enum": [1, 2]}}},
        {"type": "object", "properties": {"a": {"type": "string", "enum": ["x", "x"]}}},
        {"type": "object", "properties": {"a": {"type": "string", "enum": ["x"], "default": "y"}}},
        {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["b"]},
        {"type": "object", "properties": {"a": {"type": "string", "minLength": -1}}},
        {"type": "object", "properties": {"a": {"type": "integer", "minimum": "1"}}},
        {"type": "object", "properties": {f"p{i}": {"type": "boolean"} for i in range(51)}},
    ],
)
def test_what_mcp_does_not_allow_is_refused(schema: Any) -> None:
    assert parse_schema(schema) is None


def test_an_answer_is_held_to_the_schema() -> None:
    form = parse_schema(EVERYTHING_SCHEMA)
    assert form is not None
    good = {
        "name": "Ada",
        "check": True,
        "email": "ada@example.com",
        "homepage": "https://example.com",
        "birthdate": "1815-12-10",
        "integer": 7.0,
        "number": 0,
        "plain": "Rachel",
        "multi": ["Piano"],
        "hero": "h2",
        "pet": "p2",
        "short": "abc",
    }
    checked = check_answer(form, good)
    assert checked == {**good, "integer": 7}
    assert isinstance(checked["integer"], int)
    assert check_answer(form, {"name": "Ada"}) == {"name": "Ada"}
    bad: list[dict[str, Any]] = [
        {},
        {"name": 3},
        {"name": "Ada", "unknown": 1},
        {"name": "Ada", "check": "yes"},
        {"name": "Ada", "email": "not-an-email"},
        {"name": "Ada", "homepage": "no scheme"},
        {"name": "Ada", "birthdate": "10/12/1815"},
        {"name": "Ada", "integer": 101},
        {"name": "Ada", "integer": 1.5},
        {"name": "Ada", "integer": True},
        {"name": "Ada", "number": -1},
        {"name": "Ada", "plain": "Joey"},
        {"name": "Ada", "multi": []},
        {"name": "Ada", "multi": ["Piano", "Drums", "Guitar"]},
        {"name": "Ada", "multi": ["Piano", "Piano"]},
        {"name": "Ada", "hero": "Superman"},
        {"name": "Ada", "short": "a"},
        {"name": "Ada", "short": "abcde"},
    ]
    for content in bad:
        assert check_answer(form, content) == ErrorCode.ELICITATION_ANSWER_INVALID, content
    assert check_answer(form, ["name"]) == ErrorCode.ELICITATION_ANSWER_INVALID


def test_the_first_move_wins_and_late_ones_are_refused() -> None:
    for event, to in [
        (Event.ACCEPT, State.ACCEPTED),
        (Event.DECLINE, State.DECLINED),
        (Event.CANCEL, State.CANCELLED),
        (Event.END, State.CANCELLED),
    ]:
        assert decide(State.PENDING, event, now=NOW, expires_at=LATER).to is to
    for final in (State.ACCEPTED, State.DECLINED, State.CANCELLED):
        late = decide(final, Event.ACCEPT, now=NOW, expires_at=LATER)
        assert (late.to, late.refusal) == (None, ErrorCode.CALL_ALREADY_FINAL)
    expired = decide(State.EXPIRED, Event.ACCEPT, now=NOW, expires_at=LATER)
    assert expired.refusal == ErrorCode.INTERACTION_EXPIRED


def test_time_running_out_wins_over_an_answer_but_not_too_early() -> None:
    late = decide(State.PENDING, Event.ACCEPT, now=LATER, expires_at=LATER)
    assert (late.to, late.effective, late.refusal) == (
        State.EXPIRED,
        Event.EXPIRE,
        ErrorCode.INTERACTION_EXPIRED,
    )
    early = decide(State.PENDING, Event.EXPIRE, now=NOW, expires_at=LATER)
    assert early.to is None
    ended = decide(State.PENDING, Event.END, now=LATER, expires_at=LATER)
    assert ended.to is State.CANCELLED  # a restart after the expiry still says why


def test_expiry_is_ten_minutes_never_past_the_call() -> None:
    assert expiry(NOW, None) == NOW + DEFAULT_EXPIRY
    assert expiry(NOW, NOW + timedelta(hours=1)) == NOW + DEFAULT_EXPIRY
    assert expiry(NOW, LATER) == LATER
