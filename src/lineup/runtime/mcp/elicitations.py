"""An MCP server's form (``elicitation/create``, form mode) as pure rules (issue 24).

A server running one of our calls may ask the person for a few values. The Runtime
shows its request as a trusted form card and answers it once. Like an interaction,
the row starts ``pending`` and whatever the store applies first wins: the person's
accept, decline or cancel, the expiry, the call ending (``end``: the call was
dismissed, timed out or its server disabled) or a restart (``end`` too: the server's
request died with the old connection). Everything later is refused and changes
nothing.

What the server may ask is MCP's restricted ``requestedSchema`` (spec 2025-11-25,
"Elicitation"): a flat object whose properties are primitives only: strings (with
``minLength``/``maxLength``/``format`` ``email``, ``uri``, ``date``, ``date-time``),
numbers and integers (``minimum``/``maximum``), booleans, single-select enums
(``enum`` with optional ``enumNames``, or ``oneOf`` of ``const`` + ``title``) and
multi-select arrays of such enums (``items.enum`` or ``items.anyOf``,
``minItems``/``maxItems``). ``parse_schema`` refuses anything else (the Runtime then
declines at once, showing nothing); ``check_answer`` holds the person's answer to the
parsed schema (the shell mirrors it; the Runtime decides).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from enum import StrEnum
from typing import Any, Literal

from lineup.protocol import ErrorCode

__all__ = [
    "DEFAULT_EXPIRY",
    "FINAL",
    "MAX_MESSAGE_CHARS",
    "TRANSITIONS",
    "Decision",
    "Event",
    "Field",
    "Form",
    "State",
    "check_answer",
    "decide",
    "expiry",
    "parse_schema",
]

DEFAULT_EXPIRY = timedelta(minutes=10)
"""How long a form waits for the person, unless the call's own deadline is sooner."""
MAX_MESSAGE_CHARS = 4000
MAX_PROPERTIES = 50
MAX_OPTIONS = 100
MAX_TEXT_CHARS = 1000
MAX_STRING_CHARS = 10_000
"""Bounds on what a server may ask and what an answer may hold (a form is small)."""


class State(StrEnum):
    PENDING = "pending"
    ACCEPTED = "accepted"
    DECLINED = "declined"
    CANCELLED = "cancelled"
    EXPIRED = "expired"


class Event(StrEnum):
    ACCEPT = "accept"  # the person sent the form
    DECLINE = "decline"  # the person refused
    CANCEL = "cancel"  # the person closed it without choosing
    EXPIRE = "expire"  # nobody answered in time
    END = "end"  # the call ended, the server's request was withdrawn, or a restart


TRANSITIONS: Mapping[tuple[State, Event], State] = {
    (State.PENDING, Event.ACCEPT): State.ACCEPTED,
    (State.PENDING, Event.DECLINE): State.DECLINED,
    (State.PENDING, Event.CANCEL): State.CANCELLED,
    (State.PENDING, Event.EXPIRE): State.EXPIRED,
    (State.PENDING, Event.END): State.CANCELLED,
}
"""The only moves; every other pair is refused and changes nothing."""

FINAL = frozenset(State) - {State.PENDING}

ACTION: Mapping[State, Literal["accept", "decline", "cancel"]] = {
    State.ACCEPTED: "accept",
    State.DECLINED: "decline",
    State.CANCELLED: "cancel",
    State.EXPIRED: "cancel",
}
"""What the server is answered for each final state (an expired form: ``cancel``,
the person never chose)."""


@dataclass(frozen=True, slots=True)
class Decision:
    """``to``: the new state when the event wins, else ``None`` with ``refusal``.
    ``effective``: the event applied (a person's answer at or after ``expires_at``
    applies ``expire``: the form had run out, the timer had not fired yet)."""

    to: State | None
    effective: Event
    refusal: ErrorCode | None = None


def decide(state: State, event: Event, *, now: datetime, expires_at: datetime) -> Decision:
    effective = event
    if state is State.PENDING and now >= expires_at and event is not Event.END:
        effective = Event.EXPIRE
    elif event is Event.EXPIRE and now < expires_at:
        return Decision(None, event, None)  # a timer that fired early: not a move
    to = TRANSITIONS.get((state, effective))
    if to is None:
        code = ErrorCode.INTERACTION_EXPIRED if state is State.EXPIRED else None
        return Decision(None, effective, code or ErrorCode.CALL_ALREADY_FINAL)
    refusal = ErrorCode.INTERACTION_EXPIRED if effective is not event else None
    return Decision(to, effective, refusal)


def expiry(now: datetime, call_deadline: datetime | None) -> datetime:
    """``DEFAULT_EXPIRY`` from now, never past the call's own deadline."""
    until = now + DEFAULT_EXPIRY
    return until if call_deadline is None else min(until, call_deadline)


# --- the schema -------------------------------------------------------------------------------

Kind = Literal["string", "number", "integer", "boolean", "enum", "multi"]
FORMATS = frozenset({"email", "uri", "date", "date-time"})


@dataclass(frozen=True, slots=True)
class Field:
    """One property of the form, as the card shows it and the answer is held to."""

    name: str
    kind: Kind
    title: str
    description: str
    required: bool
    default: Any = None
    min_length: int | None = None
    max_length: int | None = None
    format: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    options: tuple[tuple[str, str], ...] = ()
    """Enums: (value, label) pairs in the server's order."""
    min_items: int | None = None
    max_items: int | None = None

    def view(self) -> dict[str, Any]:
        """The field as the card gets it (plain data, shown as text)."""
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "required": self.required}
        for key, value in (
            ("title", self.title),
            ("description", self.description),
            ("default", self.default),
            ("min_length", self.min_length),
            ("max_length", self.max_length),
            ("format", self.format),
            ("minimum", self.minimum),
            ("maximum", self.maximum),
            ("min_items", self.min_items),
            ("max_items", self.max_items),
        ):
            if value is not None and value != "":
                out[key] = value
        if self.options:
            out["options"] = [{"value": v, "label": label} for v, label in self.options]
        return out


@dataclass(frozen=True, slots=True)
class Form:
    fields: tuple[Field, ...]


def _text(value: Any) -> str | None:
    if value is None:
        return ""
    return value[:MAX_TEXT_CHARS] if isinstance(value, str) else None


def _count(value: Any) -> int | Literal[False] | None:
    """A non-negative integer bound, ``None`` when absent, ``False`` when malformed."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return False
    return value


def _number(value: Any) -> float | Literal[False] | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    return value


def _options(prop: Mapping[str, Any]) -> tuple[tuple[str, str], ...] | None:
    """A single-select enum's (value, label) pairs, or ``None`` when malformed."""
    if "enum" in prop:
        values, names = prop["enum"], prop.get("enumNames")
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            return None
        if names is None:
            names = values
        if not isinstance(names, list) or len(names) != len(values):
            return None
        if not all(isinstance(n, str) for n in names):
            return None
        pairs = tuple(zip(values, names, strict=True))
    else:
        choices = prop.get("oneOf", prop.get("anyOf"))
        if not isinstance(choices, list):
            return None
        found = []
        for choice in choices:
            if not isinstance(choice, Mapping) or not isinstance(choice.get("const"), str):
                return None
            title = choice.get("title", choice["const"])
            if not isinstance(title, str):
                return None
            found.append((choice["const"], title))
        pairs = tuple(found)
    values = [v for v, _ in pairs]
    if not pairs or len(pairs) > MAX_OPTIONS or len(set(values)) != len(values):
        return None
    return tuple((v[:MAX_TEXT_CHARS], label[:MAX_TEXT_CHARS]) for v, label in pairs)


def _field(name: str, prop: Any, required: bool) -> Field | None:
    if not isinstance(prop, Mapping):
        return None
    title, description = _text(prop.get("title")), _text(prop.get("description"))
    if title is None or description is None:
        return None
    kind = prop.get("type")
    default = prop.get("default")
    base: dict[str, Any] = {
        "name": name,
        "title": title,
        "description": description,
        "required": required,
    }
    if kind == "string" and ("enum" in prop or "oneOf" in prop):
        options = _options(prop)
        if options is None:
            return None
        if default is not None and default not in {v for v, _ in options}:
            return None
        return Field(kind="enum", default=default, options=options, **base)
    if kind == "string":
        low, high = _count(prop.get("minLength")), _count(prop.get("maxLength"))
        form = prop.get("format")
        if low is False or high is False or (form is not None and form not in FORMATS):
            return None
        if default is not None and not isinstance(default, str):
            return None
        return Field(
            kind="string", default=default, min_length=low, max_length=high, format=form, **base
        )
    if kind in ("number", "integer"):
        least, most = _number(prop.get("minimum")), _number(prop.get("maximum"))
        if least is False or most is False:
            return None
        if default is not None and _number(default) is False:
            return None
        return Field(kind=kind, default=default, minimum=least, maximum=most, **base)
    if kind == "boolean":
        if default is not None and not isinstance(default, bool):
            return None
        return Field(kind="boolean", default=default, **base)
    if kind == "array":
        items = prop.get("items")
        if not isinstance(items, Mapping):
            return None
        options = _options(items)
        low, high = _count(prop.get("minItems")), _count(prop.get("maxItems"))
        if options is None or low is False or high is False:
            return None
        if default is not None and (
            not isinstance(default, list) or not set(default) <= {v for v, _ in options}
        ):
            return None
        return Field(
            kind="multi", default=default, options=options, min_items=low, max_items=high, **base
        )
    return None


def parse_schema(schema: Any) -> Form | None:
    """The form a ``requestedSchema`` asks for, or ``None`` when it is not one MCP
    allows (nested objects, arrays of anything but enums, unknown types or formats,
    too many properties): such a request is declined and never shown."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object":
        return None
    props = schema.get("properties", {})
    required = schema.get("required", [])
    if not isinstance(props, Mapping) or not isinstance(required, list):
        return None
    if len(props) > MAX_PROPERTIES or not all(isinstance(r, str) for r in required):
        return None
    if not set(required) <= set(props):
        return None
    fields = []
    for name, prop in props.items():
        if not isinstance(name, str) or not name or len(name) > 200:
            return None
        found = _field(name, prop, name in required)
        if found is None:
            return None
        fields.append(found)
    return Form(tuple(fields))


# --- the answer -------------------------------------------------------------------------------

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


def _format_ok(form: str | None, text: str) -> bool:
    if form == "email":
        return bool(_EMAIL.match(text))
    if form == "uri":
        return bool(_URI.match(text))
    try:
        if form == "date":
            date.fromisoformat(text)
        elif form == "date-time":
            datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


def _value_ok(field: Field, value: Any) -> bool:
    if field.kind == "string":
        if not isinstance(value, str) or len(value) > MAX_STRING_CHARS:
            return False
        n = len(value)
        if field.min_length is not None and n < field.min_length:
            return False
        if field.max_length is not None and n > field.max_length:
            return False
        return _format_ok(field.format, value)
    if field.kind in ("number", "integer"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        if field.kind == "integer" and not (isinstance(value, int) or value.is_integer()):
            return False
        if field.minimum is not None and value < field.minimum:
            return False
        return field.maximum is None or value <= field.maximum
    if field.kind == "boolean":
        return isinstance(value, bool)
    allowed = {v for v, _ in field.options}
    if field.kind == "enum":
        return isinstance(value, str) and value in allowed
    if not isinstance(value, list) or len(set(map(str, value))) != len(value):
        return False
    if not all(isinstance(v, str) and v in allowed for v in value):
        return False
    if field.min_items is not None and len(value) < field.min_items:
        return False
    return field.max_items is None or len(value) <= field.max_items


def check_answer(form: Form, content: Any) -> dict[str, Any] | ErrorCode:
    """The accepted content, as the server gets it, or ``elicitation_answer_invalid``:
    an unknown property, a missing required one, or a value the schema refuses."""
    if not isinstance(content, Mapping):
        return ErrorCode.ELICITATION_ANSWER_INVALID
    fields = {f.name: f for f in form.fields}
    if not set(content) <= set(fields):
        return ErrorCode.ELICITATION_ANSWER_INVALID
    out: dict[str, Any] = {}
    for name, field in fields.items():
        if name not in content or content[name] is None:
            if field.required:
                return ErrorCode.ELICITATION_ANSWER_INVALID
            continue
        value = content[name]
        if not _value_ok(field, value):
            return ErrorCode.ELICITATION_ANSWER_INVALID
        if field.kind == "integer":
            value = int(value)
        out[name] = value
    return out
