"""The AppManifest: what a MiniApp is, what it shows and which tools it offers.

A manifest is one JSON document (docs/miniapps.md describes every field and rule).
``load_manifest`` is the only way in: it bounds the size before parsing, decodes into
frozen structs that refuse unknown fields (like ``lineup.protocol.payloads``), checks
the cross-field rules, compiles each tool's schemas once (``schemas.compile_tool``)
and finally checks ``min_host_version`` against the host. Anything wrong raises one
``ManifestError(code, message, path)`` with a stable code and a JSON path; the message
never quotes the manifest's values, so it can go to logs and to the person installing
the app.

Decoding ``AppManifest`` directly (``msgspec``) runs the same field and cross-field
rules, schema compilation included; only the host-version check needs the loader.
"""

from __future__ import annotations

import importlib.metadata
import re
import unicodedata
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

import msgspec

from lineup.protocol.errors import explain_validation_error
from lineup.protocol.fields import (
    SEMVER_PATTERN,
    AppId,
    AppScope,
    CapabilityName,
    EventName,
    SemVer,
    SurfaceId,
)
from lineup.protocol.payloads import ApplicationRef, SurfaceRef, ToolDescriptor

from .schemas import CompiledTool, SchemaError, SchemaErrorCode, compile_tool
from .semver import compare_semver

__all__ = [
    "HOST_VERSION",
    "MAX_MANIFEST_BYTES",
    "MAX_NAME_CHARS",
    "AppManifest",
    "ManifestError",
    "ManifestErrorCode",
    "Surface",
    "compiled_tools",
    "display_name_problem",
    "encode_manifest",
    "load_manifest",
    "to_inventory_application",
    "tool_descriptors",
]

# --- limits and grammars (docs/miniapps.md) ---------------------------------------------

MAX_MANIFEST_BYTES = 256 * 1024
"""Largest manifest document, checked before parsing (the size of an inventory envelope)."""

MAX_NAME_CHARS = 64
MAX_SURFACES = 32
MAX_EVENTS = 64
MAX_TOOLS = 64
MAX_PERMISSIONS = 64
MAX_PATH_CHARS = 255

_DIRECTORIES = r"(?:[A-Za-z0-9_][A-Za-z0-9._-]{0,127}/){0,15}"
_FILE = r"[A-Za-z0-9_][A-Za-z0-9._-]{0,122}"
ENTRY_PATTERN = rf"^{_DIRECTORIES}{_FILE}\.html\Z"
"""A surface entry: a relative POSIX path inside the app's bundle to an ``.html`` file.
Up to 16 segments of ASCII letters, digits, ``_``, ``-`` and ``.``, none starting with
``.`` or ``-``: so no ``..``, no absolute path, no backslash, no URL and no hidden file."""
ICON_PATTERN = rf"^{_DIRECTORIES}{_FILE}\.(?:png|svg|webp)\Z"
"""An icon: a bundle path like an entry's, to a ``.png``, ``.svg`` or ``.webp`` file."""

EntryPath = Annotated[str, msgspec.Meta(pattern=ENTRY_PATTERN, max_length=MAX_PATH_CHARS)]
IconPath = Annotated[str, msgspec.Meta(pattern=ICON_PATTERN, max_length=MAX_PATH_CHARS)]
DisplayName = Annotated[str, msgspec.Meta(min_length=1, max_length=MAX_NAME_CHARS)]

# Characters a display name may not hold: they break a line, hide text or reorder it.
_BIDI_CONTROLS = frozenset(
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
)
_FORBIDDEN_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})


def _installed_version() -> str:
    try:
        version = importlib.metadata.version("lineup")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - always installed
        return "0.0.0"
    return version if re.match(SEMVER_PATTERN, version) else "0.0.0"


HOST_VERSION = _installed_version()
"""This host's version (the ``lineup`` package's), compared with ``min_host_version``."""


# --- errors -----------------------------------------------------------------------------


RESERVED_SCOPE_PREFIX = "mcp-"
"""App scopes of the MCP servers a Runtime hosts (``mcp-<server>``): no manifest may
claim one, so an app's tools never pass for a server's."""


class ManifestErrorCode(StrEnum):
    """Stable reasons a manifest is refused. Never renamed or reused."""

    TOO_LARGE = "manifest_too_large"
    INVALID = "manifest_invalid"
    DUPLICATE = "manifest_duplicate"
    TOOL_INTERACTIVE = "manifest_tool_interactive"
    TOOL_NAMESPACE = "manifest_tool_namespace"
    TOOL_SCOPE_MISMATCH = "manifest_tool_scope_mismatch"
    TOOL_NEEDS_SURFACE = "manifest_tool_needs_surface"
    PERMISSION_UNDECLARED = "manifest_permission_undeclared"
    SCHEMA_INVALID = "manifest_schema_invalid"
    SCHEMA_REMOTE_REF = "manifest_schema_remote_ref"
    SCHEMA_TOO_LARGE = "manifest_schema_too_large"
    HOST_TOO_OLD = "manifest_host_too_old"


_SCHEMA_CODES = {
    SchemaErrorCode.INVALID: ManifestErrorCode.SCHEMA_INVALID,
    SchemaErrorCode.REMOTE_REF: ManifestErrorCode.SCHEMA_REMOTE_REF,
    SchemaErrorCode.TOO_LARGE: ManifestErrorCode.SCHEMA_TOO_LARGE,
}


class ManifestError(Exception):
    """Why a manifest was refused: a stable ``code``, a one-line ``message`` that
    quotes none of the manifest's values, and the JSON ``path`` of the field at fault
    (``$`` for the document as a whole)."""

    def __init__(self, code: ManifestErrorCode, message: str, path: str = "$") -> None:
        super().__init__(f"{code} at {path}: {message}")
        self.code = code
        self.message = message
        self.path = path


# --- the manifest -----------------------------------------------------------------------


class _Struct(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """Frozen, keyword-only, refuses unknown fields, leaves defaults out when encoding."""


class Surface(_Struct, frozen=True):
    """A UI surface of the app: its id, the HTML entry inside the bundle, and the
    user events (``ui.event``) it may send."""

    id: SurfaceId
    entry: EntryPath
    events: Annotated[list[EventName], msgspec.Meta(max_length=MAX_EVENTS)] = msgspec.field(
        default_factory=list
    )


class AppManifest(_Struct, frozen=True):
    """A MiniApp's manifest, fully validated (field grammars, limits, cross-field
    rules and tool schemas). Build one with ``load_manifest``."""

    id: AppId
    version: SemVer
    kind: Literal["system", "bundled", "installed"]
    name: DisplayName
    app_scope: AppScope
    min_host_version: SemVer
    icon: IconPath | None = None
    surfaces: Annotated[list[Surface], msgspec.Meta(max_length=MAX_SURFACES)] = msgspec.field(
        default_factory=list
    )
    tools: Annotated[list[ToolDescriptor], msgspec.Meta(max_length=MAX_TOOLS)] = msgspec.field(
        default_factory=list
    )
    permissions: Annotated[list[CapabilityName], msgspec.Meta(max_length=MAX_PERMISSIONS)] = (
        msgspec.field(default_factory=list)
    )

    def __post_init__(self) -> None:
        # ManifestError is not a ValueError, so msgspec lets it through unchanged
        # (code and path intact) instead of folding it into a ValidationError.
        _check_name(self.name)
        if self.app_scope.startswith(RESERVED_SCOPE_PREFIX):
            raise ManifestError(
                ManifestErrorCode.INVALID,
                f"app scopes starting `{RESERVED_SCOPE_PREFIX}` are the MCP servers' own",
                "$.app_scope",
            )
        _check_surfaces(self.surfaces)
        declared = _unique(self.permissions, "$.permissions", "capability")
        _check_tools(self, declared)


def display_name_problem(name: str) -> str | None:
    """What is wrong with ``name`` as a display name people read (``None``: nothing).
    A signed release's ``name`` follows the same rule as the manifest's."""
    if name != name.strip():
        return "`name` may not start or end with white space"
    for char in name:
        if unicodedata.category(char) in _FORBIDDEN_CATEGORIES or char in _BIDI_CONTROLS:
            return "`name` may not hold control, line-separator or bidirectional-control characters"
    return None


def _check_name(name: str) -> None:
    problem = display_name_problem(name)
    if problem is not None:
        raise ManifestError(ManifestErrorCode.INVALID, problem, "$.name")


def _check_surfaces(surfaces: list[Surface]) -> None:
    _unique([surface.id for surface in surfaces], "$.surfaces", "surface id", suffix=".id")
    for index, surface in enumerate(surfaces):
        _unique(surface.events, f"$.surfaces[{index}].events", "event")


def _unique(items: list[str], path: str, what: str, suffix: str = "") -> frozenset[str]:
    seen: set[str] = set()
    for index, item in enumerate(items):
        if item in seen:
            raise ManifestError(
                ManifestErrorCode.DUPLICATE,
                f"this {what} is already listed earlier",
                f"{path}[{index}]{suffix}",
            )
        seen.add(item)
    return frozenset(seen)


def _check_tools(manifest: AppManifest, declared: frozenset[str]) -> None:
    seen: set[str] = set()
    prefix = f"{manifest.app_scope}."
    for index, tool in enumerate(manifest.tools):
        at = f"$.tools[{index}]"
        if tool.handling == "interactive" or tool.target is None:
            raise ManifestError(
                ManifestErrorCode.TOOL_INTERACTIVE,
                "a manifest may not declare interactive tools; only the Runtime owns them",
                f"{at}.handling",
            )
        if not tool.id.startswith(prefix):
            raise ManifestError(
                ManifestErrorCode.TOOL_NAMESPACE,
                "a tool id must be `<app_scope>.<name>`, in the manifest's own `app_scope`",
                f"{at}.id",
            )
        if tool.id in seen:
            raise ManifestError(
                ManifestErrorCode.DUPLICATE, "this tool id is already declared earlier", f"{at}.id"
            )
        seen.add(tool.id)
        if tool.target.app_scope != manifest.app_scope:
            raise ManifestError(
                ManifestErrorCode.TOOL_SCOPE_MISMATCH,
                "`target.app_scope` must be the manifest's `app_scope`",
                f"{at}.target.app_scope",
            )
        if not manifest.surfaces and (
            tool.handling == "foreground" or tool.target.requires_foreground
        ):
            where = (
                f"{at}.handling"
                if tool.handling == "foreground"
                else (f"{at}.target.requires_foreground")
            )
            raise ManifestError(
                ManifestErrorCode.TOOL_NEEDS_SURFACE,
                "a tool that needs the app in the foreground needs a surface to show",
                where,
            )
        permissions = tool.permissions or []
        _unique(permissions, f"{at}.permissions", "capability")
        for position, permission in enumerate(permissions):
            if permission not in declared:
                raise ManifestError(
                    ManifestErrorCode.PERMISSION_UNDECLARED,
                    "a tool may only use capabilities listed in the manifest's `permissions`",
                    f"{at}.permissions[{position}]",
                )
        try:
            compile_tool(tool)
        except SchemaError as exc:
            raise ManifestError(_SCHEMA_CODES[exc.code], exc.message, at + exc.path[1:]) from None


# --- loading ----------------------------------------------------------------------------

_decoder = msgspec.json.Decoder(AppManifest)
_encoder = msgspec.json.Encoder(order="sorted")
_TOOL_PATH = re.compile(r"^\$\.tools\[([0-9]+)\]")
_SCHEMA_LIMIT = re.compile(r"^`(input_schema|output_schema)` (nests deeper|encodes to)")
_MAX_MESSAGE_CHARS = 300


_GRAMMARS = {
    "id": "a reverse-domain app id",
    "version": "an exact SemVer 2.0.0 version",
    "min_host_version": "an exact SemVer 2.0.0 version",
    "app_scope": "an app scope",
    "icon": "a bundle path to a .png, .svg or .webp file",
    "entry": "a bundle path to an .html file",
    "events": "an event name",
    "permissions": "a capability name",
}


def load_manifest(
    data: bytes | bytearray | memoryview | str | Mapping[str, Any],
    *,
    host_version: str = HOST_VERSION,
) -> AppManifest:
    """Parse and validate one manifest, or raise ``ManifestError``.

    Checks, in order: size (before parsing), JSON syntax, shape and field grammars,
    cross-field rules (in document order), each tool's schemas, and last
    ``min_host_version`` against ``host_version`` (this host's version by default).
    """
    if not re.match(SEMVER_PATTERN, host_version):
        raise ValueError("host_version must be an exact SemVer version")
    raw = _as_bytes(data)
    try:
        manifest = _decoder.decode(raw)
    except msgspec.ValidationError as exc:
        raise _from_validation_error(raw, exc) from None
    except msgspec.DecodeError as exc:
        raise ManifestError(ManifestErrorCode.INVALID, _first_line(str(exc))) from None
    except RecursionError:
        raise ManifestError(ManifestErrorCode.INVALID, "JSON nests too deeply") from None
    if compare_semver(manifest.min_host_version, host_version) > 0:
        raise ManifestError(
            ManifestErrorCode.HOST_TOO_OLD,
            f"the app needs a newer host than this one ({host_version})",
            "$.min_host_version",
        )
    return manifest


def _as_bytes(data: bytes | bytearray | memoryview | str | Mapping[str, Any]) -> bytes:
    if isinstance(data, str):
        if len(data) > MAX_MANIFEST_BYTES:
            raise _too_large()
        raw = data.encode("utf-8", "surrogatepass")
    elif isinstance(data, bytes | bytearray | memoryview):
        raw = bytes(data)
    elif isinstance(data, Mapping):
        try:
            raw = _encoder.encode(dict(data))
        except (TypeError, ValueError, OverflowError, msgspec.EncodeError):
            raise ManifestError(
                ManifestErrorCode.INVALID, "the manifest holds values that are not JSON"
            ) from None
        except RecursionError:
            raise ManifestError(ManifestErrorCode.INVALID, "JSON nests too deeply") from None
    else:
        raise TypeError("a manifest is bytes, str or a mapping")
    if len(raw) > MAX_MANIFEST_BYTES:
        raise _too_large()
    return raw


def _too_large() -> ManifestError:
    return ManifestError(
        ManifestErrorCode.TOO_LARGE, f"the manifest is larger than {MAX_MANIFEST_BYTES} bytes"
    )


def _from_validation_error(raw: bytes, exc: msgspec.ValidationError) -> ManifestError:
    """Turn msgspec's error into a precise, non-echoing ``ManifestError``."""
    text, path = explain_validation_error(exc)
    if text.startswith("Expected `str` matching regex"):
        text = f"must be {_grammar(path)}"
    tool = _TOOL_PATH.match(path)
    if tool:
        refined = _refine_tool_error(raw, int(tool.group(1)), path, text)
        if refined is not None:
            return refined
    return ManifestError(ManifestErrorCode.INVALID, _first_line(text), path)


def _grammar(path: str) -> str:
    field = re.sub(r"\[[0-9]+\]$", "", path).rsplit(".", 1)[-1]
    if path.startswith("$.tools[") and field == "id":
        return "a tool id"
    if path.startswith("$.surfaces[") and field == "id":
        return "a surface id"
    return _GRAMMARS.get(field, "in this field's grammar (see docs/miniapps.md)")


def _refine_tool_error(raw: bytes, index: int, path: str, text: str) -> ManifestError | None:
    """Tool errors that deserve their own code or a closer path.

    Only reached for invalid input, so it may parse the document a second time.
    """
    at = f"$.tools[{index}]"
    try:
        document = msgspec.json.decode(raw)
        tool = document["tools"][index]
    except (msgspec.DecodeError, RecursionError, LookupError, TypeError):
        return None
    if not isinstance(tool, dict):
        return None
    if tool.get("handling") == "interactive":
        return ManifestError(
            ManifestErrorCode.TOOL_INTERACTIVE,
            "a manifest may not declare interactive tools; only the Runtime owns them",
            f"{at}.handling",
        )
    if path != at:
        return None
    if "needs a `target`" in text:
        return ManifestError(ManifestErrorCode.INVALID, _first_line(text), f"{at}.target")
    limit = _SCHEMA_LIMIT.match(text)
    if limit:
        return ManifestError(
            ManifestErrorCode.SCHEMA_TOO_LARGE, _first_line(text), f"{at}.{limit.group(1)}"
        )
    return None


def _first_line(text: str) -> str:
    lines = text.splitlines()
    return lines[0][:_MAX_MESSAGE_CHARS] if lines and lines[0] else "invalid manifest"


# --- projections ------------------------------------------------------------------------


def encode_manifest(manifest: AppManifest) -> bytes:
    """Canonical bytes: sorted keys, defaults left out (a tool's ``version`` is kept)."""
    return _encoder.encode(manifest)


def to_inventory_application(manifest: AppManifest) -> ApplicationRef:
    """The app as ``client.inventory`` lists it: id, exact version, surfaces and their
    events. Entries, icon, name and permissions stay inside the Runtime."""
    return ApplicationRef(
        id=manifest.id,
        version=manifest.version,
        surfaces=[SurfaceRef(id=s.id, events=list(s.events)) for s in manifest.surfaces],
    )


def tool_descriptors(manifest: AppManifest) -> list[ToolDescriptor]:
    """The app's tools as ``client.inventory`` lists them (before policy filtering)."""
    return list(manifest.tools)


def compiled_tools(manifest: AppManifest) -> dict[str, CompiledTool]:
    """Tool id to ``CompiledTool``; compiled when the manifest was loaded, so this is a
    cache lookup per tool."""
    return {tool.id: compile_tool(tool) for tool in manifest.tools}
