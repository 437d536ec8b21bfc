"""One valid envelope per kind, as plain JSON-ready dicts, and helpers to vary them."""

from __future__ import annotations

import copy
import json
from typing import Any

from lineup.protocol import KIND_BY_TYPE, Envelope, ErrorCode, Rejection, decode

INTEGRITY = "sha256-md6EbvKGq91hb8M5qzj1zfj+/CW3kfJDab9Q4i18MNg="

AGENT_SENDER = {"kind": "agent", "id": "agent_hermes_main"}
RUNTIME_SENDER = {"kind": "runtime", "id": "user_01"}
USER_SENDER = {"kind": "user", "id": "user_01"}

HEADER: dict[str, Any] = {
    "v": 1,
    "id": "env_0001",
    "conversation_id": "conv_01",
    "sender": AGENT_SENDER,
    "created_at": "2026-08-02T12:00:00Z",
}

INTERACTIVE_TOOL: dict[str, Any] = {
    "id": "interact.choice",
    "version": 1,
    "handling": "interactive",
    "input_schema": {"type": "object", "required": ["question", "options"]},
    "output_schema": {"type": "object"},
}

LAUNCH_TOOL: dict[str, Any] = {
    "id": "task-dashboard.open",
    "version": 1,
    "handling": "launch",
    "input_schema": {"type": "object"},
    "output_schema": {"type": "object"},
    "target": {
        "app_scope": "task-dashboard",
        "requires_foreground": True,
        "restore_previous_focus": True,
    },
    "timeout_ms": 30000,
}

CAPABILITY: dict[str, Any] = {
    "name": "app.open_url",
    "version": "1.0",
    "risk": "user_confirmation",
    "input_schema": {"type": "object", "required": ["url"]},
}

# (sender, payload) for every kind; every sender here is allowed for its kind.
KINDS: dict[str, tuple[dict[str, str], dict[str, Any]]] = {
    "lineup.v1.message": (
        AGENT_SENDER,
        {"text": "Here is the **plan**.", "format": "markdown", "reply_to": "env_0000"},
    ),
    "lineup.v1.status": (AGENT_SENDER, {"state": "working", "text": "Reading the repository"}),
    "lineup.v1.progress": (
        AGENT_SENDER,
        {
            "progress_id": "index-1",
            "state": "running",
            "current": 3,
            "total": 10,
            "label": "Indexing",
        },
    ),
    "lineup.v1.error": (
        AGENT_SENDER,
        {"code": "rate_limited", "message": "Too many requests", "ref_id": "env_0000"},
    ),
    "lineup.v1.tool.call": (
        AGENT_SENDER,
        {
            "call_id": "call_01",
            "tool": "interact.choice",
            "inventory_revision": "catalog-42",
            "arguments": {"question": "Deploy now?", "options": ["yes", "no"]},
            "app_session_context": {"app_session_id": "as_01"},
        },
    ),
    "lineup.v1.tool.progress": (
        RUNTIME_SENDER,
        {"call_id": "call_02", "current": 1, "total": 4, "label": "Importing tasks"},
    ),
    "lineup.v1.tool.result": (
        RUNTIME_SENDER,
        {"call_id": "call_01", "status": "completed", "result": {"choice": "yes"}},
    ),
    "lineup.v1.interaction.dismiss": (
        AGENT_SENDER,
        {"control_id": "ctl_01", "call_id": "call_01", "reason": "no longer needed"},
    ),
    "lineup.v1.app_session.opened": (
        RUNTIME_SENDER,
        {
            "agent_id": "agent_hermes_main",
            "app_session_id": "as_01",
            "app_scope": "task-dashboard",
            "instance_id": "task-dashboard.01",
        },
    ),
    "lineup.v1.app_session.closed": (
        RUNTIME_SENDER,
        {
            "agent_id": "agent_hermes_main",
            "app_session_id": "as_01",
            "app_scope": "task-dashboard",
            "instance_id": "task-dashboard.01",
            "reason": "closed by the user",
            "pending_interaction_call_ids": ["call_07"],
        },
    ),
    "lineup.v1.client.inventory": (
        RUNTIME_SENDER,
        {
            "revision": "catalog-42",
            "standard_components": [{"id": "choice", "version": "1"}],
            "applications": [
                {
                    "id": "com.lineup.task-dashboard",
                    "version": "1.2.0",
                    "surfaces": [{"id": "main", "events": ["select", "close"]}],
                }
            ],
            "capabilities": [CAPABILITY],
            "tools": [INTERACTIVE_TOOL, LAUNCH_TOOL],
        },
    ),
    "lineup.v1.app.list": (RUNTIME_SENDER, {"capabilities": [CAPABILITY]}),
    "lineup.v1.app.call": (
        AGENT_SENDER,
        {
            "call_id": "call_open_docs_01",
            "capability": "app.open_url",
            "reason": "Open the deployment docs for you to check",
            "expires_at": "2026-08-02T12:10:00Z",
            "arguments": {"url": "https://example.com/docs"},
        },
    ),
    "lineup.v1.app.result": (
        RUNTIME_SENDER,
        {"call_id": "call_open_docs_01", "status": "completed", "result": {"opened": True}},
    ),
    "lineup.v1.ui.open": (
        AGENT_SENDER,
        {
            "instance_id": "weather.dashboard.01",
            "app": {"id": "com.lineup.weather", "version": "1.0.0", "surface": "dashboard"},
            "state": {"city": "Beijing", "temperature": 22},
        },
    ),
    "lineup.v1.ui.patch": (
        AGENT_SENDER,
        {"instance_id": "weather.dashboard.01", "state": {"city": "Shanghai", "temperature": 28}},
    ),
    "lineup.v1.ui.close": (
        AGENT_SENDER,
        {"instance_id": "weather.dashboard.01", "reason": "completed"},
    ),
    "lineup.v1.ui.event": (
        RUNTIME_SENDER,
        {"instance_id": "weather.dashboard.01", "event": "refresh", "data": {"unit": "c"}},
    ),
}

assert set(KINDS) == set(KIND_BY_TYPE), "every kind needs an example"


def envelope(kind: str, payload: dict[str, Any] | None = None, **header: Any) -> dict[str, Any]:
    """A valid envelope of ``kind`` (a fresh deep copy); keyword arguments replace header
    fields, and a header value of ``DROP`` removes that field. A kind without an
    example (an unknown one) gets an agent sender and an empty payload."""
    sender, example = KINDS.get(kind, (AGENT_SENDER, {}))
    result: dict[str, Any] = copy.deepcopy(HEADER)
    result["sender"] = dict(sender)
    result["type"] = kind
    result["payload"] = copy.deepcopy(example if payload is None else payload)
    for key, value in header.items():
        if value is DROP:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def payload(kind: str, **changes: Any) -> dict[str, Any]:
    """The example payload of ``kind`` with fields replaced (``DROP`` removes one)."""
    result = copy.deepcopy(KINDS[kind][1])
    for key, value in changes.items():
        if value is DROP:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class _Drop:
    def __repr__(self) -> str:
        return "DROP"


DROP: Any = _Drop()


def accepted(value: dict[str, Any] | bytes) -> Envelope:
    """Decode and insist on a typed envelope."""
    result = decode(value if isinstance(value, bytes) else dumps(value))
    assert isinstance(result, Envelope), result
    return result


def rejected(
    value: dict[str, Any] | bytes | str, code: ErrorCode, path: str | None = None
) -> Rejection:
    """Decode and insist on a rejection with ``code`` (and ``path`` when given)."""
    result = decode(value if isinstance(value, bytes | str) else dumps(value))
    assert isinstance(result, Rejection), result
    assert result.code is code, result
    if path is not None:
        assert result.path == path, result
    return result
