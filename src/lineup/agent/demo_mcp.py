"""The demo agent's ``/mcp``: the tools of the person's MCP servers, as their client's
inventory advertises them (``mcp-<server>.<tool>``), listed and called like any tool.

``/mcp`` lists them; ``/mcp TOOL {json}`` calls one (``TOOL`` is its id, or its bare name
when only one server has a tool of that name) and says what it answered: its text, its
structured content, or that the tool reported an error. The Runtime asks the person
first when the server's policy says so; the call's one result comes back either way.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from lineup.protocol import ErrorCode
from lineup.protocol.payloads import ToolDescriptor

from .conversation import Conversation
from .errors import ToolCallError

__all__ = ["mcp_command"]

PREFIX = "mcp-"
MAX_SHOWN = 1500
"""Characters of a tool's answer quoted back (the rest is cut with an ellipsis)."""

Say = Callable[..., str]


def _tools(conversation: Conversation) -> list[ToolDescriptor]:
    inventory = conversation.inventory
    tools = [] if inventory is None else inventory.tools
    return [t for t in tools if t.id.startswith(PREFIX)]


def _find(tools: list[ToolDescriptor], name: str) -> ToolDescriptor | list[ToolDescriptor]:
    """The tool ``name`` names (its id, or a bare name only one server has); else every
    candidate (none, or several)."""
    exact = [t for t in tools if t.id == name]
    if exact:
        return exact[0]
    bare = [t for t in tools if t.id.split(".", 1)[1] == name]
    return bare[0] if len(bare) == 1 else bare


def _cut(text: str) -> str:
    return text if len(text) <= MAX_SHOWN else text[:MAX_SHOWN] + "…"


def _answer(say: Say, tool: str, result: dict[str, Any]) -> str:
    parts = [p for p in result.get("content", []) if isinstance(p, dict)]
    texts = [str(p.get("text", "")) for p in parts if p.get("type") == "text"]
    others = sum(1 for p in parts if p.get("type") != "text")
    lines = []
    if texts:
        lines.append(_cut("\n".join(t for t in texts if t)))
    structured = result.get("structuredContent")
    if structured is not None:
        shown = _cut(json.dumps(structured, ensure_ascii=False, indent=2))
        lines.append(f"```json\n{shown}\n```")
    if others:
        lines.append(say("mcp.other_parts", count=others))
    body = "\n\n".join(lines) or say("mcp.empty")
    key = "mcp.error_result" if result.get("isError") else "mcp.result"
    return say(key, tool=tool) + "\n\n" + body


async def mcp_command(conversation: Conversation, say: Say, rest: str) -> str:
    if conversation.inventory is None:
        await conversation.latest_inventory()
    tools = _tools(conversation)
    if not rest:
        if not tools:
            return say("mcp.none")
        lines = [say("mcp.list", count=len(tools))]
        for tool in tools:
            about = (tool.title or tool.description or "").strip().splitlines()
            lines.append(f"- `{tool.id}`" + (f": {about[0][:120]}" if about else ""))
        lines.append("")
        lines.append(say("mcp.how"))
        return "\n".join(lines)
    name, _, raw = rest.partition(" ")
    found = _find(tools, name)
    if isinstance(found, list):
        if not found:
            return say("mcp.unknown", tool=name)
        return say("mcp.which", tool=name, ids=", ".join(f"`{t.id}`" for t in found))
    raw = raw.strip()
    try:
        arguments = json.loads(raw) if raw else {}
    except json.JSONDecodeError as exc:
        return say("mcp.bad_json", where=exc.colno)
    if not isinstance(arguments, dict):
        return say("mcp.not_object")
    try:
        result = await conversation.call_tool(found.id, arguments)
    except ToolCallError as exc:
        return _failure(say, found.id, exc)
    return _answer(say, found.id, result)


def _failure(say: Say, tool: str, exc: ToolCallError) -> str:
    """Why the call gave no answer, in the person's words."""
    if exc.code == ErrorCode.CAPABILITY_DENIED:
        return say("mcp.denied", tool=tool)
    if exc.code == ErrorCode.TOOL_INPUT_INVALID:
        return say("mcp.bad_arguments", tool=tool, problem=exc.message[:300])
    if exc.code in (ErrorCode.MCP_SERVER_UNAVAILABLE, ErrorCode.APP_DISABLED):
        return say("mcp.unavailable", tool=tool)
    if exc.code == ErrorCode.INTERRUPTED:
        return say("mcp.interrupted", tool=tool)
    return say("mcp.failed", tool=tool, code=exc.code)
