"""Errors raised by AppServer clients (the agent SDK, the Runtime)."""

from __future__ import annotations

from lineup.protocol import ErrorBody


class ClientError(Exception):
    """Base of the client errors."""


class SendRejected(ClientError):
    """The AppServer refused an envelope; ``code`` is a stable ``ErrorCode`` value."""

    def __init__(self, error: ErrorBody) -> None:
        super().__init__(f"{error.code}: {error.message}")
        self.code = str(error.code)
        self.message = error.message
        self.path = error.path


class AuthenticationFailed(ClientError):
    """The API key was refused; retrying will not help."""


class ClientClosed(ClientError):
    """The client stopped before the operation finished."""
