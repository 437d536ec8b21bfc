"""Every stable error code LineUp puts on the wire, and the one error shape.

Codes are part of the protocol: clients branch on them, so a code is never renamed
or reused. Messages are for people and may change.
"""

from __future__ import annotations

import re
from enum import StrEnum

import msgspec

__all__ = ["ErrorBody", "ErrorCode", "ErrorResponse", "Rejection", "explain_validation_error"]


class ErrorCode(StrEnum):
    # Envelope decoding (lineup.protocol).
    ENVELOPE_TOO_LARGE = "envelope_too_large"
    MALFORMED_ENVELOPE = "malformed_envelope"
    UNSUPPORTED_TYPE = "unsupported_type"
    UNSUPPORTED_VERSION = "unsupported_version"

    # Tool contract and runtime decisions (spec 002 §8).
    INVENTORY_REVISION_MISMATCH = "inventory_revision_mismatch"
    TOOL_NOT_ADVERTISED = "tool_not_advertised"
    TOOL_INPUT_INVALID = "tool_input_invalid"
    TOOL_OUTPUT_INVALID = "tool_output_invalid"
    APP_DISABLED = "app_disabled"
    APP_INSTANCE_NOT_FOUND = "app_instance_not_found"
    APP_INSTANCE_AMBIGUOUS = "app_instance_ambiguous"
    APP_SCOPE_MISMATCH = "app_scope_mismatch"
    LIFECYCLE_DENIED = "lifecycle_denied"
    CAPABILITY_DENIED = "capability_denied"
    CALL_ALREADY_FINAL = "call_already_final"

    # MiniApp tool calls (spec 002 §7.2-7.3): results and refusals.
    APP_CLOSED = "app_closed"
    APP_FAILED = "app_failed"
    APP_CANCELLED = "app_cancelled"
    TOOL_TIMEOUT = "tool_timeout"
    CALL_NOT_FOUND = "call_not_found"

    # Surfaces (spec 000 §4, spec 002 §9.1): what the Runtime answers an agent's ui.*.
    SURFACE_UNAVAILABLE = "surface_unavailable"
    SURFACE_INVALID = "surface_invalid"
    SURFACE_RELOADING = "surface_reloading"

    # Standard interactions (spec 002 §7.3): the Runtime's answers to the agent and
    # to the person.
    APP_SESSION_NOT_FOUND = "app_session_not_found"
    INTERACTION_NOT_FOUND = "interaction_not_found"
    INTERACTION_EXPIRED = "interaction_expired"
    INTERACTION_DISMISSED = "interaction_dismissed"
    ANSWER_INVALID = "answer_invalid"
    RUNTIME_FAILED = "runtime_failed"

    # Capability calls (spec 000 §5.3): the gateway's codes in an agent's
    # ``app.result`` and an app's ``capabilities.get``, and its refusals of a move on a
    # call (the host channel's ``capability_receipt``, the picked-file upload).
    CAPABILITY_NOT_DECLARED = "capability_not_declared"
    REVOKED = "revoked"
    CAPABILITY_INPUT_INVALID = "capability_input_invalid"
    CAPABILITY_OUTPUT_INVALID = "capability_output_invalid"
    EXPIRED = "expired"
    INTERRUPTED = "interrupted"
    CANCELLED = "cancelled"
    CAPABILITY_CALL_NOT_FOUND = "capability_call_not_found"
    CAPABILITY_CALL_BUSY = "capability_call_busy"
    CONFIRMATION_REQUIRED = "confirmation_required"

    # Capability providers: why a host could not carry out an approved call
    # (``app.result`` status ``failed``).
    PROVIDER_FAILED = "provider_failed"
    ARTIFACT_TOO_LARGE = "artifact_too_large"
    CANCELLED_BY_USER = "cancelled_by_user"
    POPUP_BLOCKED = "popup_blocked"
    CLIPBOARD_DENIED = "clipboard_denied"

    # MiniApp SDK requests (spec 002 §7): the Runtime's refusals (``app_reply``).
    REQUEST_INVALID = "request_invalid"
    METHOD_UNKNOWN = "method_unknown"
    STATE_TOO_LARGE = "state_too_large"
    INBOX_NOT_FOUND = "inbox_not_found"

    # Surface events (spec 000 §4.2): the Runtime's refusal (``ui_event_receipt``).
    EVENT_NOT_DECLARED = "event_not_declared"

    # App registry: refusals of the App centre's actions (``apps_receipt``).
    APP_NOT_FOUND = "app_not_found"
    APP_UNSIGNED = "app_unsigned"
    APP_VERSION_CONFLICT = "app_version_conflict"
    APP_KIND_CONFLICT = "app_kind_conflict"
    APP_SCOPE_CONFLICT = "app_scope_conflict"
    APP_UNAVAILABLE = "app_unavailable"
    APP_NOT_REMOVABLE = "app_not_removable"

    # MCP servers the Runtime hosts (issue 24): their config, what a call to one of
    # their tools or resources ended with, and the Runtime's decisions about the calls.
    MCP_CONFIG_INVALID = "mcp_config_invalid"
    MCP_SERVER_UNAVAILABLE = "mcp_server_unavailable"
    MCP_TIMEOUT = "mcp_timeout"
    MCP_RESULT_TOO_LARGE = "mcp_result_too_large"
    MCP_RESOURCE_TOO_LARGE = "mcp_resource_too_large"
    MCP_PROTOCOL_ERROR = "mcp_protocol_error"
    MCP_TOOL_UNKNOWN = "mcp_tool_unknown"
    MCP_POLICY_INVALID = "mcp_policy_invalid"
    ELICITATION_NOT_FOUND = "elicitation_not_found"
    ELICITATION_ANSWER_INVALID = "elicitation_answer_invalid"
    CALL_DISMISSED = "call_dismissed"

    # AppServer requests.
    INVALID_REQUEST = "invalid_request"
    UNAUTHORIZED = "unauthorized"
    FORBIDDEN = "forbidden"
    NOT_FOUND = "not_found"
    METHOD_NOT_ALLOWED = "method_not_allowed"
    CONFLICT = "conflict"
    SENDER_MISMATCH = "sender_mismatch"
    DIRECTION_NOT_ALLOWED = "direction_not_allowed"
    RATE_LIMITED = "rate_limited"
    UNAVAILABLE = "unavailable"
    INTERNAL_ERROR = "internal_error"

    # Web Host: its own refusals on the host channel (``error`` frames, receipts).
    MOUNT_NOT_FOUND = "mount_not_found"
    TOO_LARGE = "too_large"
    NOT_FAILED = "not_failed"


class ErrorBody(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The body of every error: a stable code, a human message, where it happened."""

    code: ErrorCode
    message: str
    path: str | None = None


class ErrorResponse(msgspec.Struct, frozen=True):
    """The one JSON error shape: ``{"error": {"code", "message", "path"?}}``."""

    error: ErrorBody


class Rejection(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """Why the decoder refused some bytes. Carries no part of the input."""

    code: ErrorCode
    message: str
    path: str | None = None

    def as_body(self) -> ErrorBody:
        return ErrorBody(code=self.code, message=self.message, path=self.path)


_PATH = re.compile(r" - at `(\$[^`]*)`\Z")

# msgspec messages that quote the input; the quoted part is cut so that an error
# never carries a piece of what was sent (it ends up in logs and error bodies).
_ECHOING_MESSAGES = (
    ("Invalid enum value", "Invalid enum value"),
    ("Invalid value", "Invalid value"),
    ("Object contains unknown field", "Object contains an unknown field"),
)


def explain_validation_error(exc: msgspec.ValidationError) -> tuple[str, str]:
    """``(message, path)`` of a msgspec validation error: the JSON path it names (``$``
    when none) and the message without it, cut where msgspec would quote the input."""
    text = str(exc)
    path = "$"
    match = _PATH.search(text)
    if match:
        text, path = text[: match.start()], match.group(1)
    for prefix, replacement in _ECHOING_MESSAGES:
        if text.startswith(prefix):
            return replacement, path
    return text, path
