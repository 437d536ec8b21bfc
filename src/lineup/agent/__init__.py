"""The agent SDK: connect an agent process to a LineUp AppServer."""

from lineup.client import Backoff

from .agent import Agent
from .conversation import Conversation, new_envelope_id
from .cursor import CursorStore, FileCursorStore, MemoryCursorStore, default_cursor_path
from .errors import AgentClosed, AgentError, AuthenticationFailed, SendRejected

__all__ = [
    "Agent",
    "AgentClosed",
    "AgentError",
    "AuthenticationFailed",
    "Backoff",
    "Conversation",
    "CursorStore",
    "FileCursorStore",
    "MemoryCursorStore",
    "SendRejected",
    "default_cursor_path",
    "new_envelope_id",
]
