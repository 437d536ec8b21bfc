"""MCP servers as the Runtime keeps them: the person's decisions and the tools each
server last listed, persisted (``mcp_servers``), and the tools they add to the inventory.

A server is named by its key in the config file (``mcp.config``). ``sync`` records the
configured servers at start: a new one is enabled, under the ``ask`` policy; one the
config no longer names is kept but not ``configured`` (its tools leave the inventory);
one the person removed stays removed until the config gives it another definition. The
connection layer reports what a running server lists (``record_tools``); the snapshot
is what the inventory advertises, so the inventory does not change while a server
restarts, and a call to a server that is down ends with a stable code instead.

Each tool of an enabled, configured server is advertised as ``mcp-<key>.<name>`` under
the app scope ``mcp-<key>`` (``handling`` ``direct``: no instance needed), with the
server's input schema (compiled by our validators; a tool whose schema does not compile
is left out) and an output schema wrapping the MCP result: ``content``,
``structuredContent`` (the server's output schema when it gives one) and ``isError``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import msgspec

from lineup.formats.manifest import RESERVED_SCOPE_PREFIX
from lineup.formats.schemas import MCP_DIALECTS, CompiledTool, compile_tool
from lineup.protocol.fields import MAX_TOOL_DESCRIPTION_CHARS, TOOL_ID_PATTERN
from lineup.protocol.payloads import ToolDescriptor, ToolTarget

from ..tables import audit
from ..txn import RuntimeTxn, Sql
from .calls import POLICIES, Policy

__all__ = [
    "CALL_TIMEOUT_MS",
    "SCOPE_PREFIX",
    "McpServerEntry",
    "McpToolSnapshot",
    "McpToolTarget",
    "advertised",
    "descriptors",
    "entries",
    "entry",
    "find",
    "is_mcp_tool",
    "record_tools",
    "remove",
    "scope_of",
    "set_enabled",
    "set_policy",
    "sync",
    "target_of",
]

SCOPE_PREFIX = RESERVED_SCOPE_PREFIX
"""App scopes of MCP servers: ``mcp-<key>`` (no manifest may claim one)."""
CALL_TIMEOUT_MS = 600_000
"""How long an agent waits for an MCP tool's result, the person's consent included."""

_TOOL_ID = re.compile(TOOL_ID_PATTERN)
_DESCRIPTION = MAX_TOOL_DESCRIPTION_CHARS


class McpToolSnapshot(msgspec.Struct, frozen=True, omit_defaults=True):
    """One tool as a server listed it (what the inventory and the dialog need)."""

    name: str
    input_schema: dict[str, Any]
    title: str | None = None
    description: str | None = None
    output_schema: dict[str, Any] | None = None
    read_only: bool = False
    destructive: bool | None = None
    ui_resource_uri: str | None = None
    visibility: tuple[str, ...] = ("model", "app")


@dataclass(frozen=True, slots=True)
class McpServerEntry:
    key: str
    name: str
    config_digest: str
    configured: bool
    enabled: bool
    removed: bool
    policy: Policy
    server_name: str | None
    server_version: str | None
    title: str | None
    tools: tuple[McpToolSnapshot, ...]
    listed_at: str | None

    @property
    def scope(self) -> str:
        return scope_of(self.key)

    @property
    def advertised(self) -> bool:
        """Its tools are in the inventory."""
        return self.enabled and self.configured and not self.removed

    @property
    def has_ui(self) -> bool:
        return any(t.ui_resource_uri for t in self.tools)


@dataclass(frozen=True, slots=True)
class McpToolTarget:
    """A tool of a registered server, as the Tool Router needs it."""

    entry: McpServerEntry
    tool: McpToolSnapshot
    descriptor: ToolDescriptor
    compiled: CompiledTool


def scope_of(key: str) -> str:
    return SCOPE_PREFIX + key


def is_mcp_tool(tool_id: str) -> bool:
    return tool_id.startswith(SCOPE_PREFIX)


_COLUMNS = (
    "key, name, config_digest, configured, enabled, removed, policy, server_name,"
    " server_version, title, tools, listed_at"
)
_snapshots = msgspec.json.Decoder(tuple[McpToolSnapshot, ...])


def _entry(row: Sequence[Any]) -> McpServerEntry:
    tools = () if row[10] is None else _snapshots.decode(bytes(row[10]))
    policy: Policy = row[6] if row[6] in POLICIES else "ask"
    return McpServerEntry(
        row[0], row[1], row[2], bool(row[3]), bool(row[4]), bool(row[5]), policy,
        row[7], row[8], row[9], tools, row[11],
    )  # fmt: skip


def entries(conn: Sql) -> list[McpServerEntry]:
    """Every server the Runtime knows, by key (removed and unconfigured ones too)."""
    rows = conn.execute(f"SELECT {_COLUMNS} FROM mcp_servers ORDER BY key").fetchall()  # noqa: S608
    return [_entry(r) for r in rows]


def entry(conn: Sql, key: str) -> McpServerEntry | None:
    row = conn.execute(f"SELECT {_COLUMNS} FROM mcp_servers WHERE key = ?", (key,)).fetchone()  # noqa: S608
    return None if row is None else _entry(row)


def sync(txn: RuntimeTxn, configured: Mapping[str, tuple[str, str]], now: str) -> bool:
    """Record the servers the config names (key -> (name, definition digest)). Returns
    whether anything the inventory shows changed."""
    changed = False
    known = {e.key: e for e in entries(txn)}
    for key, (name, digest) in configured.items():
        held = known.get(key)
        if held is None:
            txn.execute(
                "INSERT INTO mcp_servers (key, name, config_digest, updated_at)"
                " VALUES (?, ?, ?, ?)",
                (key, name, digest, now),
            )
            audit(txn, now, "runtime", "mcp.configured", key, "new")
            changed = True
        elif held.config_digest != digest or not held.configured or held.name != name:
            # A new definition brings a removed server back (the person wrote it anew).
            txn.execute(
                "UPDATE mcp_servers SET name = ?, config_digest = ?, configured = 1,"
                " removed = CASE WHEN config_digest = ? THEN removed ELSE 0 END,"
                " updated_at = ? WHERE key = ?",
                (name, digest, digest, now, key),
            )
            changed = True
    for key, held in known.items():
        if key not in configured and held.configured:
            txn.execute(
                "UPDATE mcp_servers SET configured = 0, updated_at = ? WHERE key = ?", (now, key)
            )
            changed = True
    return changed


def record_tools(
    txn: RuntimeTxn,
    key: str,
    tools: Sequence[McpToolSnapshot],
    now: str,
    *,
    server_name: str | None,
    server_version: str | None,
    title: str | None,
) -> bool:
    """Keep what a running server lists. Returns whether the snapshot changed."""
    held = entry(txn, key)
    if held is None:
        return False
    body = msgspec.json.encode(tuple(tools))
    old = None if held.listed_at is None else msgspec.json.encode(held.tools)
    same = old == body and (held.server_name, held.server_version, held.title) == (
        server_name,
        server_version,
        title,
    )
    if same:
        return False
    txn.execute(
        "UPDATE mcp_servers SET tools = ?, server_name = ?, server_version = ?, title = ?,"
        " listed_at = ?, updated_at = ? WHERE key = ?",
        (body, server_name, server_version, title, now, now, key),
    )
    audit(txn, now, "runtime", "mcp.tools", key, f"tools:{len(tools)}")
    return True


def set_enabled(txn: RuntimeTxn, key: str, enabled: bool, now: str) -> McpServerEntry | None:
    txn.execute(
        "UPDATE mcp_servers SET enabled = ?, updated_at = ? WHERE key = ?",
        (int(enabled), now, key),
    )
    audit(txn, now, "user", "mcp.enable" if enabled else "mcp.disable", key, "")
    return entry(txn, key)


def remove(txn: RuntimeTxn, key: str, now: str) -> McpServerEntry | None:
    txn.execute(
        "UPDATE mcp_servers SET removed = 1, enabled = 1, updated_at = ? WHERE key = ?",
        (now, key),
    )
    audit(txn, now, "user", "mcp.remove", key, "")
    return entry(txn, key)


def set_policy(txn: RuntimeTxn, key: str, policy: Policy, now: str) -> McpServerEntry | None:
    txn.execute(
        "UPDATE mcp_servers SET policy = ?, updated_at = ? WHERE key = ?", (policy, now, key)
    )
    audit(txn, now, "user", "mcp.policy", key, policy)
    return entry(txn, key)


# --- the inventory ---------------------------------------------------------------------------


def _output_schema(tool: McpToolSnapshot) -> dict[str, Any]:
    """MCP's result, with the server's own output schema for ``structuredContent`` (its
    dialect becomes the whole schema's: one ``$schema``, at the root)."""
    structured: dict[str, Any] = dict(tool.output_schema or {"type": "object"})
    dialect = structured.pop("$schema", None)
    return {
        **({"$schema": dialect} if dialect is not None else {}),
        "type": "object",
        "properties": {
            "content": {"type": "array", "items": {"type": "object"}},
            "structuredContent": structured,
            "isError": {"type": "boolean"},
        },
        "required": ["content", "isError"],
    }


def _descriptor(entry: McpServerEntry, tool: McpToolSnapshot) -> ToolDescriptor | None:
    tool_id = f"{entry.scope}.{tool.name}"
    if _TOOL_ID.match(tool_id) is None:
        return None
    try:
        return ToolDescriptor(
            id=tool_id,
            handling="direct",
            input_schema=tool.input_schema,
            output_schema=_output_schema(tool),
            target=ToolTarget(
                app_scope=entry.scope, requires_foreground=False, restore_previous_focus=False
            ),
            timeout_ms=CALL_TIMEOUT_MS,
            title=tool.title,
            description=None if tool.description is None else tool.description[:_DESCRIPTION],
        )
    except (ValueError, msgspec.ValidationError):
        return None


@lru_cache(maxsize=512)
def _compiled(body: bytes) -> CompiledTool | None:
    descriptor = msgspec.json.decode(body, type=ToolDescriptor)
    try:
        return compile_tool(descriptor, dialects=MCP_DIALECTS)
    except Exception:  # a schema our validators refuse: the tool is left out
        return None


def _targets(entry: McpServerEntry) -> list[McpToolTarget]:
    found = []
    for tool in entry.tools:
        if "model" not in tool.visibility:
            continue  # a tool only its app's view may call (MCP Apps ``visibility``)
        descriptor = _descriptor(entry, tool)
        if descriptor is None:
            continue
        compiled = _compiled(msgspec.json.encode(descriptor))
        if compiled is not None:
            found.append(McpToolTarget(entry, tool, descriptor, compiled))
    return found


def descriptors(conn: Sql) -> list[ToolDescriptor]:
    """The tools every advertised server adds to the inventory, by id."""
    tools = [t.descriptor for e in entries(conn) if e.advertised for t in _targets(e)]
    return sorted(tools, key=lambda d: d.id)


def find(conn: Sql, tool_id: str) -> McpToolTarget | None:
    """The server tool ``tool_id`` names, advertised or not."""
    scope, _, name = tool_id.partition(".")
    held = entry(conn, scope.removeprefix(SCOPE_PREFIX))
    return None if held is None else target_of(held, name)


def target_of(held: McpServerEntry, name: str) -> McpToolTarget | None:
    """The tool ``name`` of the server ``held`` (compiled once: no store read)."""
    return next((t for t in _targets(held) if t.tool.name == name), None)


def advertised(conn: Sql, tool_id: str) -> McpToolTarget | None:
    found = find(conn, tool_id)
    return found if found is not None and found.entry.advertised else None
