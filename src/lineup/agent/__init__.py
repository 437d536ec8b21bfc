"""The agent SDK: connect an agent process to a LineUp AppServer."""

from lineup.client import Backoff
from lineup.protocol.envelope import Envelope, MessageEnvelope
from lineup.protocol.interactions import ChoiceOption
from lineup.protocol.payloads import AppResult, CapabilityDescriptor, ToolResult

from .agent import Agent
from .apps import AppInstance
from .conversation import Conversation
from .cursor import CursorStore, FileCursorStore, MemoryCursorStore, default_cursor_path
from .errors import (
    AgentClosed,
    AgentError,
    AuthenticationFailed,
    CallError,
    CapabilityCancelled,
    CapabilityError,
    CapabilityExpired,
    CapabilityFailed,
    CapabilityRejected,
    CapabilityUnsupported,
    Dismissed,
    Expired,
    InteractionError,
    InteractionFailed,
    InteractionRejected,
    SendRejected,
    ToolCallError,
)
from .ids import new_envelope_id

__all__ = [
    "Agent",
    "AgentClosed",
    "AgentError",
    "AppInstance",
    "AppResult",
    "AuthenticationFailed",
    "Backoff",
    "CallError",
    "CapabilityCancelled",
    "CapabilityDescriptor",
    "CapabilityError",
    "CapabilityExpired",
    "CapabilityFailed",
    "CapabilityRejected",
    "CapabilityUnsupported",
    "ChoiceOption",
    "Conversation",
    "CursorStore",
    "Dismissed",
    "Envelope",
    "Expired",
    "FileCursorStore",
    "InteractionError",
    "InteractionFailed",
    "InteractionRejected",
    "MemoryCursorStore",
    "MessageEnvelope",
    "SendRejected",
    "ToolCallError",
    "ToolResult",
    "default_cursor_path",
    "new_envelope_id",
]
