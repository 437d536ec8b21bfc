"""The life of one call of an MCP server's tool, as a pure state machine (issue 24).

An agent's ``tool.call`` of a tool an MCP server publishes (``mcp-<server>.<tool>``)
passes the Tool Router's checks (sender, inventory revision, advertised, arguments)
and ``arrive``s. The person's policy for that server decides where it starts:
``executing`` at once (the policy allows it: ``allow``, or ``read_only`` for a tool
the server marks read-only; or the person allowed this tool for this session), else
``awaiting_consent``: the consent dialog asks.

    awaiting_consent --allow--> executing --complete--> completed
           |--deny----> rejected(capability_denied)  |--fail------> failed(code)
           |--expire--> failed(tool_timeout)         |--expire----> failed(tool_timeout)
           |--dismiss-> dismissed(call_dismissed)    |--dismiss---> dismissed(call_dismissed)
           \\--disable-> cancelled(app_disabled)      |--disable---> cancelled(app_disabled)
                                                     \\--interrupt-> failed(interrupted)

``executing`` is stored *before* the call is forwarded (the effect ``Forward`` runs
after the commit), so a restart that finds a call ``executing`` cannot know whether
the server ran it: it ends ``failed(interrupted)`` and is never sent again. A call
still ``awaiting_consent`` across a restart keeps waiting: the person may still answer.

Every move into a final state writes the call's single ``tool.result`` (the effect
``QueueResult``) in the same transaction; moves that leave a forwarded call
(``expire``, ``dismiss``, ``disable``) also ``CancelOnServer``
(``notifications/cancelled``). The deadline wins, as for every call: anything that
reaches a live call at or after its ``expires_at`` finds it timed out. Every pair not
in ``TRANSITIONS`` is refused with ``call_already_final`` (a final call) or
``lifecycle_denied`` and changes nothing; a server's late result for a call that
already ended is such a refusal, so the agent still has exactly one result.

``decide`` takes plain values (``CallFacts``, the policy's verdict, the clock), never
a row or a connection; the store (``mcp.call_store``) carries out what it returns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Literal

from lineup.protocol import ErrorCode

__all__ = [
    "FINAL",
    "OPEN",
    "POLICIES",
    "TRANSITIONS",
    "CallFacts",
    "Decision",
    "Event",
    "Policy",
    "State",
    "decide",
    "starts_executing",
]

Policy = Literal["ask", "read_only", "allow"]
"""What the person lets a server's tools do without asking: ``ask`` (always ask),
``read_only`` (run the tools the server marks read-only, ask for the rest), ``allow``
(run every tool)."""
POLICIES: tuple[Policy, ...] = ("ask", "read_only", "allow")


class State(StrEnum):
    AWAITING_CONSENT = "awaiting_consent"
    EXECUTING = "executing"  # stored, then forwarded to the server after the commit
    COMPLETED = "completed"
    FAILED = "failed"
    REJECTED = "rejected"
    DISMISSED = "dismissed"
    CANCELLED = "cancelled"


class Event(StrEnum):
    ALLOW = "allow"  # the person, in the consent dialog
    DENY = "deny"  # the person, in the consent dialog
    COMPLETE = "complete"  # the server answered (a result, ``isError`` or not)
    FAIL = "fail"  # the server could not be reached or broke the protocol: a code
    EXPIRE = "expire"  # the deadline timer
    DISMISS = "dismiss"  # the agent's interaction.dismiss naming the call
    DISABLE = "disable"  # the person disabled or removed the server
    INTERRUPT = "interrupt"  # a restart found the call executing


OPEN = frozenset({State.AWAITING_CONSENT, State.EXECUTING})
FINAL = frozenset(State) - OPEN

_S, _E = State, Event
TRANSITIONS: Mapping[tuple[State, Event], State] = {
    (_S.AWAITING_CONSENT, _E.ALLOW): _S.EXECUTING,
    (_S.AWAITING_CONSENT, _E.DENY): _S.REJECTED,
    (_S.AWAITING_CONSENT, _E.EXPIRE): _S.FAILED,
    (_S.AWAITING_CONSENT, _E.DISMISS): _S.DISMISSED,
    (_S.AWAITING_CONSENT, _E.DISABLE): _S.CANCELLED,
    (_S.EXECUTING, _E.COMPLETE): _S.COMPLETED,
    (_S.EXECUTING, _E.FAIL): _S.FAILED,
    (_S.EXECUTING, _E.EXPIRE): _S.FAILED,
    (_S.EXECUTING, _E.DISMISS): _S.DISMISSED,
    (_S.EXECUTING, _E.DISABLE): _S.CANCELLED,
    (_S.EXECUTING, _E.INTERRUPT): _S.FAILED,
}
"""Every move of a stored call; any other pair is refused and changes nothing."""

_CODES: Mapping[Event, str] = {
    _E.DENY: ErrorCode.CAPABILITY_DENIED,
    _E.EXPIRE: ErrorCode.TOOL_TIMEOUT,
    _E.DISMISS: ErrorCode.CALL_DISMISSED,
    _E.DISABLE: ErrorCode.APP_DISABLED,
    _E.INTERRUPT: ErrorCode.INTERRUPTED,
}
"""The code each ending move gives the call (``fail`` brings its own)."""

_STOPS = frozenset({_E.EXPIRE, _E.DISMISS, _E.DISABLE})
"""Moves that end a forwarded call the server may still be running."""


@dataclass(frozen=True, slots=True)
class CallFacts:
    """What the rules need of a stored call."""

    state: State
    expires_at: datetime


@dataclass(frozen=True, slots=True)
class Decision:
    """``to``: the new state, or ``None`` when nothing moves (then ``refusal`` says why,
    or it is ``None`` for a timer that fired early). ``code``: the call's code in ``to``.
    ``forward``: send the call to the server after the commit. ``cancel_on_server``:
    tell the server to stop it. ``queue_result``: write the call's one ``tool.result``."""

    to: State | None
    event: Event
    refusal: str | None = None
    code: str | None = None
    forward: bool = False
    cancel_on_server: bool = False
    queue_result: bool = False


def starts_executing(policy: Policy, *, read_only: bool, remembered: bool) -> bool:
    """Whether an arriving call runs without asking: the server's policy allows it, or
    the person allowed this tool for this session."""
    return remembered or policy == "allow" or (policy == "read_only" and read_only)


def decide(call: CallFacts, event: Event, *, now: datetime, code: str | None = None) -> Decision:
    """Decide ``event`` for the stored ``call``. ``code``: the failure's code for
    ``fail`` (the connection layer's stable code)."""
    if (call.state, event) not in TRANSITIONS:
        final = call.state in FINAL
        refusal = ErrorCode.CALL_ALREADY_FINAL if final else ErrorCode.LIFECYCLE_DENIED
        return Decision(None, event, str(refusal))
    if event is Event.EXPIRE and now < call.expires_at:
        return Decision(None, event)  # a timer that fired early: not a move
    if event is not Event.EXPIRE and now >= call.expires_at:
        event = Event.EXPIRE  # the deadline wins: the timer had not fired yet
    to = TRANSITIONS[(call.state, event)]
    if to is State.EXECUTING:
        return Decision(to, event, forward=True)
    ending = code if event is Event.FAIL else _CODES.get(event)
    return Decision(
        to,
        event,
        code=None if to is State.COMPLETED else str(ending or ErrorCode.PROVIDER_FAILED),
        cancel_on_server=call.state is State.EXECUTING and event in _STOPS,
        queue_result=True,
    )
