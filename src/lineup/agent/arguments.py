"""Interaction and capability call arguments as the SDK takes them, checked and turned
into wire arguments with the protocol's own types before anything is sent."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from datetime import timedelta
from typing import Any, TypeAlias

import msgspec

from lineup.protocol import interactions as ix
from lineup.protocol.errors import Rejection
from lineup.protocol.fields import ID_PATTERN

ExpiresIn: TypeAlias = timedelta | float | None
"""How long the person has to answer: a ``timedelta`` or seconds, 1 minute to 24 hours;
``None`` leaves it to the Runtime (15 minutes)."""

CapabilityExpiresIn: TypeAlias = timedelta | float
"""How long a capability call may wait for the person's decision: a ``timedelta`` or
seconds, 1 second to 24 hours."""

DEFAULT_CAPABILITY_EXPIRY = timedelta(minutes=5)
MIN_CAPABILITY_EXPIRY_MS = 1000
MAX_CAPABILITY_EXPIRY_MS = 24 * 60 * 60 * 1000

OptionSpec: TypeAlias = str | tuple[str, str] | tuple[str, str, str] | ix.ChoiceOption
Options: TypeAlias = Sequence[OptionSpec] | Mapping[str, str]
"""Choice options: plain strings, ``(id, label)`` or ``(id, label, description)``
tuples, ``ChoiceOption`` structs, or a mapping of id to label."""

_ID = re.compile(ID_PATTERN)


def expires_in_ms(expires_in: ExpiresIn) -> int | None:
    """``expires_in`` (a ``timedelta`` or seconds) in milliseconds, checked: 1 min to 24 h."""
    if expires_in is None:
        return None
    milliseconds = _milliseconds(expires_in)
    if not ix.MIN_EXPIRES_IN_MS <= milliseconds <= ix.MAX_EXPIRES_IN_MS:
        raise ValueError("`expires_in` must be between 1 minute and 24 hours")
    return milliseconds


def capability_expiry(expires_in: CapabilityExpiresIn) -> timedelta:
    """A capability call's ``expires_in`` as a ``timedelta``, checked: 1 s to 24 h."""
    milliseconds = _milliseconds(expires_in)
    if not MIN_CAPABILITY_EXPIRY_MS <= milliseconds <= MAX_CAPABILITY_EXPIRY_MS:
        raise ValueError("`expires_in` must be between 1 second and 24 hours")
    return timedelta(milliseconds=milliseconds)


def _milliseconds(expires_in: timedelta | float) -> int:
    """A ``timedelta`` or seconds in whole milliseconds; -1 for what is not finite."""
    if isinstance(expires_in, bool) or not isinstance(expires_in, timedelta | int | float):
        raise TypeError("`expires_in` is a timedelta or a number of seconds")
    seconds = expires_in.total_seconds() if isinstance(expires_in, timedelta) else float(expires_in)
    return round(seconds * 1000) if math.isfinite(seconds) else -1


def wire_options(options: Options) -> tuple[list[dict[str, Any]], dict[str, str]]:
    """Wire options, and the key ``ask_choice`` returns for each wire id."""
    if isinstance(options, str):
        raise TypeError("`options` is a list of options, not one string")
    if isinstance(options, Mapping):
        items: list[OptionSpec] = [(str(k), str(v)) for k, v in options.items()]
    else:
        items = list(options)
    wire: list[dict[str, Any]] = []
    keys: dict[str, str] = {}
    labels: set[str] = set()
    for position, item in enumerate(items, start=1):
        if isinstance(item, str):
            if item in labels:
                raise ValueError("options given as strings must be unique")
            labels.add(item)
            option: dict[str, Any] = {"id": str(position), "label": item}
            key = item
        elif isinstance(item, ix.ChoiceOption):
            option = msgspec.to_builtins(item)
            key = item.id
        elif isinstance(item, tuple) and len(item) in (2, 3):
            option = {"id": item[0], "label": item[1]}
            if len(item) == 3:
                option["description"] = item[2]
            key = item[0]
        else:
            raise TypeError(
                "an option is a string, an (id, label[, description]) tuple or a ChoiceOption"
            )
        wire.append(option)
        keys[str(option["id"])] = key
    return wire, keys


def checked_arguments(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Check arguments with the protocol's own types; ``ValueError`` before any send."""
    given = {name: value for name, value in arguments.items() if value is not None}
    parsed = ix.parse_arguments(tool, given)
    if isinstance(parsed, Rejection):
        where = f" (at {parsed.path})" if parsed.path else ""
        raise ValueError(f"invalid `{tool}` arguments: {parsed.message}{where}")
    built: dict[str, Any] = msgspec.to_builtins(parsed.arguments)
    return built


def check_id(value: str, name: str) -> None:
    if not isinstance(value, str) or not _ID.match(value):
        raise ValueError(f"`{name}` must match [A-Za-z0-9._:-]{{1,128}}")
