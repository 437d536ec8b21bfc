"""Envelope and call ids: random ones, and the deterministic ones that let a handler
replayed after a restart ask the *same* call again instead of a new one."""

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
    """One handler invocation: what triggered it and how many interactions it started.

    ``Agent`` sets it around every handler call; ``ask_*`` inside the handler derive
    their call id from (conversation, trigger, handler, n), so a handler replayed after
    a restart asks the *same* call again instead of a new one.
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


def next_call_id(conversation_id: str) -> str:
    """A new call id: derived from the running handler's scope (and counts one more
    interaction in it), or random outside any handler."""
    scope = handler_scope.get()
    if scope is None:
        return new_envelope_id("ask")
    scope.asked += 1
    return "ask-" + _digest(
        "lineup.agent.ask", conversation_id, scope.trigger, scope.handler, str(scope.asked)
    )


def retry_call_id(conversation_id: str, call_id: str) -> str:
    """The call id of the one retry after an ``inventory_revision_mismatch``."""
    return "ask-" + _digest("lineup.agent.retry", conversation_id, call_id)
