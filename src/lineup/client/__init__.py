"""Client side of the AppServer stream, shared by the agent SDK and the Runtime."""

from .connection import Backoff, Connection
from .errors import AuthenticationFailed, ClientClosed, ClientError, SendRejected

__all__ = [
    "AuthenticationFailed",
    "Backoff",
    "ClientClosed",
    "ClientError",
    "Connection",
    "SendRejected",
]
