"""Limits, identifier grammars and the constrained field types built from them.

Each limit is documented in docs/protocol.md; changing one changes the protocol.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

MAX_ENVELOPE_BYTES = 256 * 1024
"""Largest encoded envelope accepted, checked before any parsing."""

MAX_TEXT_CHARS = 64 * 1024
"""Longest message text, in characters."""

MAX_LABEL_CHARS = 1024
"""Longest short human-readable string (labels, reasons, error messages)."""
MAX_TOOL_DESCRIPTION_CHARS = 8 * 1024
"""How much of a tool's description the inventory carries (an MCP server's may be longer)."""

MAX_JSON_DEPTH = 32
"""Deepest nesting of free-form JSON objects (state, data, arguments, schemas)."""

MAX_EVENT_DATA_BYTES = 16 * 1024
"""``ui.event`` data must encode to fewer bytes than this (spec 000 §4.2)."""

MAX_OBJECT_BYTES = 128 * 1024
"""Largest free-form object (state, arguments, results) once encoded."""

MAX_BUNDLE_BYTES = 160 * 1024
"""Largest inline dev-mode bundle (html + css + js, encoded as UTF-8; spec 000 §4.1)."""

MAX_LIST_ITEMS = 256
"""Longest list in a payload (tools, applications, capabilities, choice options...)."""

# Grammars are Python ``re`` patterns anchored with ``^`` and ``\Z``: ``$`` would also
# match before a trailing newline, letting "id\n" through. Classes are ASCII on
# purpose (``\d`` would admit every Unicode digit). The JSON Schemas carry the same
# patterns with ``\Z`` spelled ``$``, which in ECMA-262 means the same thing.
ID_PATTERN = r"^[A-Za-z0-9._:-]{1,128}\Z"
EVENT_NAME_PATTERN = r"^[A-Za-z][A-Za-z0-9._:-]{0,63}\Z"
APP_ID_PATTERN = r"^[a-z][a-z0-9_-]{0,62}(\.[a-z0-9][a-z0-9_-]{0,62})+\Z"
APP_SCOPE_PATTERN = r"^[a-z][a-z0-9._-]{0,63}\Z"
SURFACE_ID_PATTERN = r"^[a-z][a-z0-9_-]{0,63}\Z"
COMPONENT_ID_PATTERN = SURFACE_ID_PATTERN
COMPONENT_VERSION_PATTERN = r"^[0-9]{1,9}\Z"
CAPABILITY_VERSION_PATTERN = r"^[0-9]{1,9}(\.[0-9]{1,9}){0,2}\Z"
TOOL_ID_PATTERN = r"^[a-z][a-z0-9_-]{0,63}(\.[A-Za-z][A-Za-z0-9_-]{0,127})+\Z"
CAPABILITY_NAME_PATTERN = r"^[a-z][a-z0-9_]{0,63}(\.[a-z][a-z0-9_]{0,63})+\Z"
SEMVER_PATTERN = (
    r"^(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-((?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*)"
    r"(?:\.(?:0|[1-9][0-9]*|[0-9]*[a-zA-Z-][0-9a-zA-Z-]*))*))?"
    r"(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?\Z"
)
"""SemVer 2.0.0 (the regex from semver.org, ASCII digits only)."""
INTEGRITY_PATTERN = r"^sha256-[A-Za-z0-9+/]{42}[AEIMQUYcgkosw048]=\Z"
"""SRI SHA-256 digest in canonical base64: 32 bytes leave two zero bits in the last
character, so a digest has exactly one spelling and string equality is digest equality."""
TYPE_PATTERN = r"^lineup\.v1\.[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\Z"
"""Any ``lineup.v1`` type, known or not; unknown ones fall back to ``Unsupported``."""
MAX_TYPE_CHARS = 128
"""Longest envelope ``type``."""
ERROR_CODE_PATTERN = r"^[a-z][a-z0-9_]{0,63}\Z"
LOCALE_PATTERN = r"^[A-Za-z]{2,8}(-[A-Za-z0-9]{1,8})*\Z"
"""A BCP 47 language tag (RFC 5646) in its usual shape: a primary language subtag,
then subtags joined by ``-`` (``zh-CN``, ``en``, ``zh-Hans-CN``). Its fine grammar
(which subtag may follow which) is the reader's business; this keeps the shape."""
MAX_LOCALE_CHARS = 35
"""Longest language tag: the length RFC 5646 §4.4.1 asks every implementation to keep."""

Id = Annotated[str, msgspec.Meta(pattern=ID_PATTERN)]
InstanceId = Annotated[str, msgspec.Meta(pattern=ID_PATTERN)]
EventName = Annotated[str, msgspec.Meta(pattern=EVENT_NAME_PATTERN)]
AppId = Annotated[
    str, msgspec.Meta(pattern=APP_ID_PATTERN, max_length=255, description="reverse-domain app id")
]
AppScope = Annotated[str, msgspec.Meta(pattern=APP_SCOPE_PATTERN)]
ToolId = Annotated[str, msgspec.Meta(pattern=TOOL_ID_PATTERN, max_length=255)]
CapabilityName = Annotated[str, msgspec.Meta(pattern=CAPABILITY_NAME_PATTERN, max_length=255)]
SemVer = Annotated[
    str, msgspec.Meta(pattern=SEMVER_PATTERN, max_length=128, description="exact SemVer 2.0.0")
]
Integrity = Annotated[str, msgspec.Meta(pattern=INTEGRITY_PATTERN)]
ErrorCodeText = Annotated[str, msgspec.Meta(pattern=ERROR_CODE_PATTERN)]
Locale = Annotated[
    str,
    msgspec.Meta(
        pattern=LOCALE_PATTERN, max_length=MAX_LOCALE_CHARS, description="BCP 47 language tag"
    ),
]
SurfaceId = Annotated[str, msgspec.Meta(pattern=SURFACE_ID_PATTERN)]
ComponentId = Annotated[str, msgspec.Meta(pattern=COMPONENT_ID_PATTERN)]
ComponentVersion = Annotated[str, msgspec.Meta(pattern=COMPONENT_VERSION_PATTERN)]
CapabilityVersion = Annotated[str, msgspec.Meta(pattern=CAPABILITY_VERSION_PATTERN)]
TypeName = Annotated[str, msgspec.Meta(pattern=TYPE_PATTERN, max_length=MAX_TYPE_CHARS)]
Revision = Annotated[str, msgspec.Meta(pattern=ID_PATTERN)]
Text = Annotated[str, msgspec.Meta(max_length=MAX_TEXT_CHARS)]
Label = Annotated[str, msgspec.Meta(max_length=MAX_LABEL_CHARS)]
ShortText = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_LABEL_CHARS)]
Timestamp = Annotated[datetime, msgspec.Meta(tz=True, description="RFC 3339 with offset")]
JsonObject = dict[str, Any]

_encode = msgspec.json.encode


def version_one() -> Literal[1]:
    """Default factory for version fields that must always be written.

    msgspec's ``omit_defaults`` leaves out fields equal to a plain default but keeps
    values made by a factory, so ``v`` and a tool's ``version`` stay on the wire
    while a missing one still reads as 1.
    """
    return 1


def json_depth_exceeds(value: object, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when ``value`` nests containers deeper than ``limit``.

    Iterative, so hostile input cannot exhaust the interpreter stack.
    """
    stack: list[tuple[object, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def check_object(value: JsonObject, field: str, max_bytes: int = MAX_OBJECT_BYTES) -> None:
    """Raise ``ValueError`` when a free-form object is too deep or too large.

    Called from ``__post_init__``, where msgspec turns the error into a validation
    failure at the right path.
    """
    if json_depth_exceeds(value):
        raise ValueError(f"`{field}` nests deeper than {MAX_JSON_DEPTH} levels")
    size = len(_encode(value))
    if size >= max_bytes:
        raise ValueError(f"`{field}` encodes to {size} bytes; the limit is below {max_bytes}")
