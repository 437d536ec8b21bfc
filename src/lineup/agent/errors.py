"""Errors the agent SDK raises (shared with every AppServer client), and the typed
outcomes of the standard interactions (``ask_choice`` and friends)."""

from __future__ import annotations

from lineup.client.errors import AuthenticationFailed, SendRejected
from lineup.client.errors import ClientClosed as AgentClosed
from lineup.client.errors import ClientError as AgentError
from lineup.protocol.payloads import ToolResult

__all__ = [
    "AgentClosed",
    "AgentError",
    "AuthenticationFailed",
    "Dismissed",
    "Expired",
    "InteractionError",
    "InteractionFailed",
    "InteractionRejected",
    "SendRejected",
    "interaction_error",
]


class InteractionError(AgentError):
    """An interaction ended without an answer the agent can use.

    ``call_id`` names the call, ``code`` is the stable error code the Runtime gave
    (``interaction_expired``, ``tool_input_invalid``, ...), ``status`` the
    ``tool.result`` status, and ``result`` the ``tool.result`` payload itself when
    there is one.
    """

    def __init__(
        self,
        call_id: str,
        code: str,
        message: str = "",
        *,
        status: str | None = None,
        result: ToolResult | None = None,
    ) -> None:
        super().__init__(f"{code}: {message}" if message else code)
        self.call_id = call_id
        self.code = code
        self.message = message
        self.status = status
        self.result = result


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
    kind = _BY_STATUS.get(result.status, InteractionError)
    code = result.error.code if result.error is not None else result.status
    message = result.error.message if result.error is not None else ""
    return kind(result.call_id, code, message, status=result.status, result=result)
