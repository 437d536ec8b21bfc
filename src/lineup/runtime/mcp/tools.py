"""What an MCP server says it offers, decoded into frozen values, one tool at a time.

A server's ``tools/list`` is decoded here rather than by the SDK's models: those
refuse the whole page when one tool is malformed, and a server that lies about one
tool's schema would then lose all its tools. Here a bad tool is left out, with a
reason (``RejectedTool``), and the others stay. Pure: no I/O.

MCP Apps (SEP-1865) metadata is read from ``_meta.ui``: ``resourceUri`` (and the
deprecated flat ``_meta["ui/resourceUri"]``; the nested one wins) and ``visibility``
(who may call the tool: the model, the app's view, or both, the default).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal

__all__ = [
    "MAX_TOOLS",
    "McpTool",
    "RejectedTool",
    "RejectionReason",
    "ServerInfo",
    "decode_tool",
    "decode_tools",
]

MAX_TOOLS = 512
MAX_TEXT_CHARS = 8192
TOOL_NAME = re.compile(r"[A-Za-z0-9_.-]{1,128}\Z")

Visibility = Literal["model", "app"]


class RejectionReason(StrEnum):
    """Why a listed tool was left out (kept for the person's notice, never sent)."""

    NOT_AN_OBJECT = "not_an_object"
    NAME_INVALID = "name_invalid"
    NAME_DUPLICATE = "name_duplicate"
    INPUT_SCHEMA_INVALID = "input_schema_invalid"
    OUTPUT_SCHEMA_INVALID = "output_schema_invalid"
    TOO_MANY_TOOLS = "too_many_tools"


@dataclass(frozen=True)
class McpTool:
    name: str
    title: str | None
    description: str | None
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    read_only: bool | None
    destructive: bool | None
    idempotent: bool | None
    open_world: bool | None
    ui_resource_uri: str | None
    visibility: tuple[Visibility, ...]


@dataclass(frozen=True)
class RejectedTool:
    """A tool the server listed that we do not offer. ``name`` is cut to 128 chars."""

    name: str
    reason: RejectionReason


@dataclass(frozen=True)
class ServerInfo:
    """What a server told us at initialize, and its tools as last listed."""

    name: str
    title: str | None
    version: str
    protocol_version: str
    instructions: str | None
    tools: tuple[McpTool, ...]
    rejected_tools: tuple[RejectedTool, ...]
    has_ui: bool


def decode_tools(raw: list[Any]) -> tuple[tuple[McpTool, ...], tuple[RejectedTool, ...]]:
    """The usable tools of a listing (in order) and the ones left out."""
    tools: list[McpTool] = []
    rejected: list[RejectedTool] = []
    seen: set[str] = set()
    for item in raw:
        tool = decode_tool(item)
        if isinstance(tool, RejectedTool):
            rejected.append(tool)
        elif tool.name in seen:
            rejected.append(RejectedTool(tool.name, RejectionReason.NAME_DUPLICATE))
        elif len(tools) >= MAX_TOOLS:
            rejected.append(RejectedTool(tool.name, RejectionReason.TOO_MANY_TOOLS))
        else:
            seen.add(tool.name)
            tools.append(tool)
    return tuple(tools), tuple(rejected)


def decode_tool(item: object) -> McpTool | RejectedTool:
    if not isinstance(item, dict):
        return RejectedTool("", RejectionReason.NOT_AN_OBJECT)
    name = item.get("name")
    if not isinstance(name, str) or not TOOL_NAME.match(name):
        shown = name[:128] if isinstance(name, str) else ""
        return RejectedTool(shown, RejectionReason.NAME_INVALID)
    input_schema = item.get("inputSchema")
    if not _object_schema(input_schema):
        return RejectedTool(name, RejectionReason.INPUT_SCHEMA_INVALID)
    output_schema = item.get("outputSchema")
    if output_schema is not None and not _object_schema(output_schema):
        return RejectedTool(name, RejectionReason.OUTPUT_SCHEMA_INVALID)
    annotations = item.get("annotations")
    hints = annotations if isinstance(annotations, dict) else {}
    meta = item.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    ui = meta.get("ui")
    ui = ui if isinstance(ui, dict) else {}
    return McpTool(
        name=name,
        title=_text(item.get("title")) or _text(hints.get("title")),
        description=_text(item.get("description")),
        input_schema=input_schema,  # type: ignore[arg-type]  # checked by _object_schema
        output_schema=output_schema,
        read_only=_hint(hints, "readOnlyHint"),
        destructive=_hint(hints, "destructiveHint"),
        idempotent=_hint(hints, "idempotentHint"),
        open_world=_hint(hints, "openWorldHint"),
        ui_resource_uri=_ui_uri(ui.get("resourceUri")) or _ui_uri(meta.get("ui/resourceUri")),
        visibility=_visibility(ui.get("visibility")),
    )


def _object_schema(schema: object) -> bool:
    """A JSON object whose ``type`` (when given) is ``"object"``: what a tool's input or
    output must be described by (the MCP schema says so)."""
    return isinstance(schema, dict) and schema.get("type", "object") == "object"


def _text(value: object) -> str | None:
    return value[:MAX_TEXT_CHARS] if isinstance(value, str) and value else None


def _hint(hints: Mapping[str, Any], name: str) -> bool | None:
    value = hints.get(name)
    return value if isinstance(value, bool) else None


def _ui_uri(value: object) -> str | None:
    return (
        value
        if isinstance(value, str) and value.startswith("ui://") and len(value) <= 2048
        else None
    )


def _visibility(value: object) -> tuple[Visibility, ...]:
    if not isinstance(value, list):
        return ("model", "app")
    out: list[Visibility] = []
    for item in value:
        if item == "model" and "model" not in out:
            out.append("model")
        elif item == "app" and "app" not in out:
            out.append("app")
    return tuple(out)
