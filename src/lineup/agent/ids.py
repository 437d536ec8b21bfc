"""Envelope and call ids: random ones, and the deterministic ones that let a handler
replayed after a restart make the *same* call again instead of a new one.

Interactions (``tool.call``) and capability calls (``app.call``) are separate call id
namespaces on the wire; their envelope ids are derived under different names, so the
same call id used for both is still two envelopes."""

from __future__ import annotations

import hashlib
import uuid
from contextvars import ContextVar
from dataclasses import dataclass


def new_envelope_id(prefix: str = "env") -> str:
    """Client-made, globally unique: a resend after a timeout is deduplicated."""
    return f"{prefix}_{uuid.uuid4().hex}"


@dataclass(slots=True)
class HandlerScope:
    """One handler invocation: what triggered it and how many calls it made.

    ``Agent`` sets it around every handler call; ``ask_*`` and ``call_capability``
    inside the handler derive their call id from (conversation, trigger, handler, n),
    n counting both kinds, so a handler replayed after a restart makes the *same*
    calls again instead of new ones.
    """

    trigger: str
    handler: str
    asked: int = 0


handler_scope: ContextVar[HandlerScope | None] = ContextVar("lineup_handler_scope", default=None)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x1f".join(parts).encode("utf-8")).hexdigest()[:32]


def call_envelope_id(conversation_id: str, call_id: str) -> str:
    """The ``tool.call`` envelope id for a call id: the same call is the same envelope."""
    return "call-" + _digest("lineup.agent.tool.call", conversation_id, call_id)


def app_call_envelope_id(conversation_id: str, call_id: str) -> str:
    """The ``app.call`` envelope id for a capability call id."""
    return "appcall-" + _digest("lineup.agent.app.call", conversation_id, call_id)


def next_call_id(conversation_id: str) -> str:
    """A new interaction call id: derived from the running handler's scope (and counts
    one more call in it), or random outside any handler."""
    return _next_id(conversation_id, "ask", "lineup.agent.ask")


def next_capability_call_id(conversation_id: str) -> str:
    """A new capability call id, derived like ``next_call_id``'s."""
    return _next_id(conversation_id, "cap", "lineup.agent.app.call")


def _next_id(conversation_id: str, prefix: str, namespace: str) -> str:
    scope = handler_scope.get()
    if scope is None:
        return new_envelope_id(prefix)
    scope.asked += 1
    return f"{prefix}-" + _digest(
        namespace, conversation_id, scope.trigger, scope.handler, str(scope.asked)
    )


def retry_call_id(conversation_id: str, call_id: str) -> str:
    """The call id of the one retry after an ``inventory_revision_mismatch``."""
    return "ask-" + _digest("lineup.agent.retry", conversation_id, call_id)
