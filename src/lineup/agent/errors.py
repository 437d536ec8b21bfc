"""Errors the agent SDK raises (shared with every AppServer client)."""

from lineup.client.errors import AuthenticationFailed, SendRejected
from lineup.client.errors import ClientClosed as AgentClosed
from lineup.client.errors import ClientError as AgentError

__all__ = ["AgentClosed", "AgentError", "AuthenticationFailed", "SendRejected"]
