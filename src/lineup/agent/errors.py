"""Errors the agent SDK raises."""

from __future__ import annotations

from lineup.protocol import ErrorBody


class AgentError(Exception):
    """Base of the SDK's errors."""


class SendRejected(AgentError):
    """The AppServer refused an envelope; ``code`` is a stable ``ErrorCode`` value."""

    def __init__(self, error: ErrorBody) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.code = str(error.code)
        self.message = error.message
        self.path = error.path


class AuthenticationFailed(AgentError):
    """The API key was refused; retrying will not help."""


class AgentClosed(AgentError):
    """The agent stopped before the operation finished."""
