"""The Web Host's side of the Runtime's MCP servers (issue 24): their tool calls in the
consent dialog, and the servers in the App centre.

An MCP call awaiting consent reaches the tabs as one more call of the consent dialog
(``CapabilityCallView`` with ``requester_kind`` ``mcp``): the server's name as the
requester, the tool's name and title, the arguments as the agent gave them (shown as
text). The person's answer goes to ``runtime.mcp.consent``; the Runtime decides.
The App centre lists each configured server with its state, version, tools, whether
it has UIs and the person's policy; its actions (enable, disable, remove, policy) go to
``runtime.mcp``. Logs name server keys, actions and codes, never arguments.
"""

from __future__ import annotations

import logging
from typing import Any

import msgspec

from lineup.protocol import ErrorCode
from lineup.runtime import Runtime
from lineup.runtime.mcp.call_store import McpCall, McpCallRefused, McpCallsChanged
from lineup.runtime.mcp.gateway import McpRefused, McpServersChanged
from lineup.runtime.mcp.servers import McpServerEntry

from . import channel

__all__ = [
    "call_view",
    "calls_frame",
    "consent",
    "mcp_action",
    "notice_frame",
    "open_calls",
    "server_views",
]

log = logging.getLogger("lineup.host.mcp")

CAPABILITY = "mcp.tool"
"""What the consent dialog calls an MCP tool call (``capability`` of its view)."""


def _label(entry: McpServerEntry | None, key: str) -> str:
    if entry is None:
        return key
    return entry.title or entry.server_name or entry.name


def call_view(call: McpCall, entry: McpServerEntry | None) -> channel.CapabilityCallView:
    tool = None if entry is None else next((t for t in entry.tools if t.name == call.tool), None)
    title = call.tool if tool is None or not tool.title else tool.title
    return channel.CapabilityCallView(
        conversation_id=call.conversation_id,
        call_id=call.call_id,
        requester_kind="mcp",
        requester=call.server_key,
        requester_label=_label(entry, call.server_key),
        capability=CAPABILITY,
        risk="user_confirmation",
        runs_in="runtime",
        reason=(tool.description or "") if tool is not None else "",
        arguments=msgspec.json.decode(call.arguments),
        state=str(call.state),
        decision=call.decision,
        code=call.code,
        expires_at=call.expires_at,
        tool=call.tool,
        tool_title=title,
        read_only=call.read_only,
    )


async def open_calls(runtime: Runtime) -> list[channel.CapabilityCallView]:
    mcp = runtime.mcp
    return [call_view(c, mcp.entry(c.server_key)) for c in await mcp.open_calls()]


def calls_frame(runtime: Runtime, event: McpCallsChanged) -> bytes:
    """Every tab hears every changed MCP call (a dialog opens and closes everywhere)."""
    views = [call_view(c, runtime.mcp.entry(c.server_key)) for c in event.calls]
    return msgspec.json.encode(channel.CapabilitiesFrame(calls=views))


def notice_frame(runtime: Runtime, event: McpServersChanged) -> bytes | None:
    """What every tab is told when a server stops working (``None``: nothing to say)."""
    if event.key is None or event.state not in ("failed", "restarting"):
        return None
    entry = runtime.mcp.entry(event.key)
    notice = channel.McpNotice(
        key=event.key,
        name=_label(entry, event.key),
        state="failed" if event.state == "failed" else "restarting",
        reason=None if event.reason is None else event.reason[:300],
    )
    return msgspec.json.encode(notice)


async def consent(runtime: Runtime, frame: channel.Consent) -> str:
    """The person's answer: ``accepted`` or the refusal's code."""
    try:
        await runtime.mcp.consent(frame.conversation_id, frame.call_id, frame.allow)
    except McpCallRefused as refused:
        log.info("mcp consent refused", extra={"code": refused.code})
        return refused.code
    return "accepted"


# --- the App centre ------------------------------------------------------------------------


def server_views(runtime: Runtime, entries: list[McpServerEntry]) -> list[channel.McpServerView]:
    """The servers the person may act on (removed or unconfigured ones are not shown)."""
    return [
        channel.McpServerView(
            key=e.key,
            name=e.title or e.server_name or e.name,
            configured_name=e.name,
            version=e.server_version,
            enabled=e.enabled,
            state=runtime.mcp.state_of(e.key) if e.enabled else "disabled",
            policy=e.policy,
            has_ui=e.has_ui,
            reason=runtime.mcp.reason_of(e.key) if e.enabled else None,
            tools=[
                channel.McpToolView(
                    name=t.name,
                    title=t.title,
                    read_only=t.read_only,
                    has_ui=bool(t.ui_resource_uri),
                )
                for t in e.tools
            ],
        )
        for e in entries
        if e.configured and not e.removed
    ]


async def mcp_action(runtime: Runtime, frame: channel.McpAction) -> channel.AppsReceipt:
    """Run the person's action on a server; the receipt says ``ok`` or why not."""
    mcp = runtime.mcp
    try:
        if frame.action == "enable":
            await mcp.set_enabled(frame.key, True)
        elif frame.action == "disable":
            await mcp.set_enabled(frame.key, False)
        elif frame.action == "remove":
            await mcp.remove(frame.key)
        else:
            await mcp.set_policy(frame.key, frame.policy or "")
    except McpRefused as refused:
        log.info("mcp action refused", extra={"action": frame.action, "code": refused.code})
        return _receipt(frame, refused.code, refused.message)
    except Exception as exc:  # a bug answers this action; the tab's channel stays
        log.error("mcp action failed", extra={"action": frame.action, "error": type(exc).__name__})
        return _receipt(frame, ErrorCode.INTERNAL_ERROR, "")
    log.info("mcp action", extra={"action": frame.action})
    return _receipt(frame, "ok", "")


def _receipt(frame: channel.McpAction, outcome: str, message: str) -> channel.AppsReceipt:
    extra: dict[str, Any] = {"message": message} if message else {}
    return channel.AppsReceipt(
        action=f"mcp_{frame.action}", app_id=frame.key, outcome=outcome, **extra
    )
