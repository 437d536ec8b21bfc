"""Calling host capabilities: a ``lineup.v1.app.call`` and its single
``lineup.v1.app.result``.

The agent asks for a capability the user's Runtime declares in its inventory (open a
URL, save an artifact, ...); the Runtime decides, most often by asking the person, and
answers exactly once with an ``app.result`` under the same call id, which the
conversation's ``Inbox`` hands to the waiting call. An ``app.call`` the Runtime cannot
apply is answered with a ``lineup.v1.error`` naming its envelope instead.

Call ids come from the same handler scope as the interactions' (``ids.py``), so a
handler replayed after a restart makes the same call again, which the AppServer
already holds, and gets the recorded result.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lineup.protocol import AppCallEnvelope, ErrorCode, Rejection, decode, encode, payloads
from lineup.protocol.payloads import AppResult, CapabilityDescriptor, ClientInventory

from .arguments import CapabilityExpiresIn, capability_expiry, check_id
from .errors import CapabilityError, CapabilityUnsupported, SendRejected
from .ids import app_call_envelope_id, next_capability_call_id
from .inbox import Inbox

if TYPE_CHECKING:
    from .conversation import Conversation

NOT_DECLARED = ErrorCode.CAPABILITY_NOT_DECLARED.value
"""The code of a call refused before sending: the latest inventory does not declare
the capability (the code the Runtime gives for the same reason)."""


class Capabilities:
    """The capability calls of one conversation: sent through it, answered via its inbox."""

    def __init__(self, conversation: Conversation, inbox: Inbox) -> None:
        self._conversation = conversation
        self._inbox = inbox

    async def declared(self) -> list[CapabilityDescriptor]:
        """The capabilities of the latest inventory; empty while none is known."""
        inventory = await self._inbox.known_inventory()
        return list(inventory.capabilities) if inventory is not None else []

    async def call(
        self,
        name: str,
        arguments: Mapping[str, Any] | None,
        *,
        reason: str,
        expires_in: CapabilityExpiresIn,
        call_id: str | None,
    ) -> AppResult:
        """Send one ``app.call`` (checked first: ``ValueError``, nothing sent) and return
        its single result, whatever its status; ``CapabilityUnsupported`` without
        sending when the latest known inventory does not declare ``name``, and
        ``CapabilityError`` when the Runtime refuses the envelope."""
        lifetime = capability_expiry(expires_in)
        if arguments is not None and not isinstance(arguments, Mapping):
            raise TypeError("`arguments` is a mapping (a JSON object)")
        conversation = self._conversation
        if call_id is None:
            call_id = next_capability_call_id(conversation.id)
        else:
            check_id(call_id, "call_id")
        results = self._inbox.app_results
        known = results.known(call_id)
        if known is not None:
            return known  # called before (a replay, or the same call id again)
        payload = payloads.AppCall(
            call_id=call_id,
            capability=name,
            reason=reason,
            expires_at=conversation._clock() + lifetime,
            arguments=dict(arguments or {}),
        )
        envelope_id = app_call_envelope_id(conversation.id, call_id)
        envelope = conversation._make(AppCallEnvelope, "appcall", payload, envelope_id)
        _check(envelope)
        inventory = await self._inbox.known_inventory()
        known = results.known(call_id)  # it may have arrived meanwhile
        if known is not None:
            return known
        if inventory is not None and not _declares(inventory, name):
            return await self._recorded_or_unsupported(call_id, name, inventory)
        return await self._send(envelope, call_id)

    async def _send(self, envelope: AppCallEnvelope, call_id: str) -> AppResult:
        results = self._inbox.app_results
        waiter = results.waiter(call_id)
        refused = self._inbox.refusal(envelope.id)
        try:
            try:
                await self._conversation._send_call(
                    envelope, lambda: waiter.done() or refused.done()
                )
            except SendRejected:
                if not waiter.done():
                    results.drop_waiter(call_id)
                raise
            either: set[asyncio.Future[Any]] = {waiter, refused}
            await asyncio.wait(either, return_when=asyncio.FIRST_COMPLETED)
            if waiter.done():
                return waiter.result()
            error = refused.result()
            raise CapabilityError(call_id, error.code, error.message)
        finally:
            self._inbox.drop_refusal(envelope.id)

    async def _recorded_or_unsupported(
        self, call_id: str, name: str, inventory: ClientInventory
    ) -> AppResult:
        """The capability is not declared (any more): but an earlier run of this handler
        may have made the call while it was, and then its result stands."""
        results = self._inbox.app_results
        ours = not results.awaited(call_id)
        waiter = results.waiter(call_id)
        if not waiter.done():
            await self._inbox.scan_history(waiter.done)
        if waiter.done():
            return waiter.result()
        if ours:
            results.drop_waiter(call_id)
        raise CapabilityUnsupported(
            call_id,
            NOT_DECLARED,
            f"the inventory {inventory.revision} does not declare `{name}`",
            status="unsupported",
        )


def _declares(inventory: ClientInventory, name: str) -> bool:
    return any(capability.name == name for capability in inventory.capabilities)


def _check(envelope: AppCallEnvelope) -> None:
    """Check the call with the protocol's own decoder: ``ValueError``, nothing sent."""
    checked = decode(encode(envelope))
    if isinstance(checked, Rejection):
        where = f" (at {checked.path})" if checked.path else ""
        raise ValueError(f"invalid `app.call`: {checked.message}{where}")
