"""Errors the agent SDK raises (shared with every AppServer client), and the typed
outcomes of the standard interactions (``ask_choice`` and friends) and of capability
calls (``call_capability``)."""

from __future__ import annotations

from typing import TypeVar

from lineup.client.errors import AuthenticationFailed, SendRejected
from lineup.client.errors import ClientClosed as AgentClosed
from lineup.client.errors import ClientError as AgentError
from lineup.protocol.payloads import AppResult, ToolResult

E = TypeVar("E", bound="CallError")

__all__ = [
    "AgentClosed",
    "AgentError",
    "AuthenticationFailed",
    "CallError",
    "CapabilityCancelled",
    "CapabilityError",
    "CapabilityExpired",
    "CapabilityFailed",
    "CapabilityRejected",
    "CapabilityUnsupported",
    "Dismissed",
    "Expired",
    "InteractionError",
    "InteractionFailed",
    "InteractionRejected",
    "SendRejected",
    "capability_error",
    "interaction_error",
    "tool_call_error",
]


class CallError(AgentError):
    """A call (an interaction, an app's tool, a capability) ended without a result the
    agent can use: ``call_id`` names it, ``code`` is the stable error code, ``status``
    the result's status, and ``result`` the result payload itself when there is one."""

    def __init__(
        self,
        call_id: str,
        code: str,
        message: str = "",
        *,
        status: str | None = None,
        result: ToolResult | AppResult | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.call_id = call_id
        self.code = code
        self.message = message
        self.status = status
        self.result = result


def _error_of(kind: type[E], result: ToolResult | AppResult) -> E:
    """``kind`` for a terminal result that is not a success (a result without an
    ``error`` gets its status as its code)."""
    code = result.error.code if result.error is not None else result.status
    message = result.error.message if result.error is not None else ""
    return kind(result.call_id, code, message, status=result.status, result=result)


class InteractionError(CallError):
    """An interaction ended without an answer the agent can use (``code``:
    ``interaction_expired``, ``tool_input_invalid``, ...; ``result``: the
    ``tool.result``)."""


class Expired(InteractionError):
    """Nobody answered before the interaction expired (``interaction_expired``)."""


class Dismissed(InteractionError):
    """The agent stopped waiting (``interaction.dismiss``) before an answer came."""


class InteractionRejected(InteractionError):
    """The Runtime refused the call: ``code`` says why (``tool_input_invalid``,
    ``inventory_revision_mismatch``, ``tool_not_advertised``, ``app_session_not_found``)."""


class InteractionFailed(InteractionError):
    """The Runtime could not complete the interaction (``runtime_failed``), or its
    result does not fit the question (``tool_output_invalid``)."""


_BY_STATUS: dict[str, type[InteractionError]] = {
    "expired": Expired,
    "dismissed": Dismissed,
    "rejected": InteractionRejected,
    "failed": InteractionFailed,
}


def interaction_error(result: ToolResult) -> InteractionError:
    """The typed error for a terminal result that is not an answer."""
    return _error_of(_BY_STATUS.get(result.status, InteractionError), result)


class ToolCallError(CallError):
    """An app's tool call ended without a result (``call_tool``): ``status`` is the
    ``tool.result`` status (``rejected``, ``failed``, ``cancelled``), ``code`` the
    stable code (``tool_not_advertised``, ``app_closed``, ``tool_timeout``, or the
    app's own), ``result`` the ``tool.result`` payload."""


def tool_call_error(result: ToolResult) -> ToolCallError:
    return _error_of(ToolCallError, result)


class CapabilityError(CallError):
    """A capability call ended without a result the agent can use (``code``:
    ``capability_denied``, ``capability_not_declared``, ...). ``status`` is the
    ``app.result`` status, ``None`` when the Runtime refused the ``app.call`` envelope
    itself with a ``lineup.v1.error``; ``result`` the ``app.result``."""


class CapabilityRejected(CapabilityError):
    """The person or the policy refused the call (``capability_denied``), or its
    arguments do not fit the capability (``capability_input_invalid``)."""


class CapabilityExpired(CapabilityError):
    """Nobody decided before the call's ``expires_at``."""


class CapabilityUnsupported(CapabilityError):
    """No host offers the capability (``capability_not_declared``, ``revoked``); also
    raised before sending when the latest inventory does not declare it."""


class CapabilityFailed(CapabilityError):
    """The call was allowed but did not complete (the provider failed, or the Runtime
    restarted while it ran: ``interrupted``)."""


class CapabilityCancelled(CapabilityError):
    """The call was cancelled before it completed."""


_CAPABILITY_BY_STATUS: dict[str, type[CapabilityError]] = {
    "rejected": CapabilityRejected,
    "expired": CapabilityExpired,
    "unsupported": CapabilityUnsupported,
    "failed": CapabilityFailed,
    "cancelled": CapabilityCancelled,
}


def capability_error(result: AppResult) -> CapabilityError:
    """The typed error for an ``app.result`` that is not ``completed`` (a result
    without an ``error`` gets its status as its code)."""
    return _error_of(_CAPABILITY_BY_STATUS.get(result.status, CapabilityError), result)
