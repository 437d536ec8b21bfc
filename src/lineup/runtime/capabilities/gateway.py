"""The capability gateway: an agent's ``app.call`` or an app's
``capabilities.request`` is decided here and answered exactly once.

The rules are the pure machine in ``calls`` (arrival, consent per risk, claim and
lease, finish and its output checks, expiry, cancel, the close of the requesting app,
recovery after a restart); ``call_store`` runs them in the store's writer, one unit
of work per decision, and registers what follows the commit on it (the agent's
``app.result``, ``CapabilitiesChanged`` for hosts, ``ToolCallsChanged`` for the
requesting app, the expiry timer). This class is the async face the Runtime, its
hosts and the MiniApp API call: it stamps the time, holds the consent remembered for
this Runtime session (memory only) and reads artifacts back.

What the host declares (``declared``) is part of the inventory, so ``provide`` and
``set_revoked`` recompute the inventory in the same transaction.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from typing import Any

from ..apps import registry
from ..store import RuntimeStore
from ..txn import RuntimeTxn
from . import call_store, declared
from .artifacts import Artifact, artifact, artifacts
from .call_store import (
    CallKey,
    CapabilitiesChanged,
    CapabilityCall,
    CapabilityRefused,
    busy_or_final,
    requester_of,
    result_envelope_id,
)
from .calls import EXECUTION_LEASE_S

__all__ = [
    "EXECUTION_LEASE_S",
    "Artifact",
    "CallKey",
    "CapabilitiesChanged",
    "CapabilityCall",
    "CapabilityGateway",
    "CapabilityRefused",
    "busy_or_final",
    "requester_of",
    "result_envelope_id",
]


def _provide_txn(txn: RuntimeTxn, names: list[str], now: str) -> None:
    declared.provide(txn, names, now)
    registry.refresh_inventory(txn, now)


def _set_revoked_txn(txn: RuntimeTxn, name: str, revoked: bool, now: str) -> None:
    declared.set_revoked(txn, name, revoked, now)
    registry.refresh_inventory(txn, now)


class CapabilityGateway:
    """The Runtime's capability gateway (``runtime.capabilities``). What a decision
    queues, tells and wakes follows its commit (the unit of work): this class takes
    no callbacks."""

    def __init__(self, store: RuntimeStore, *, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock
        self._remembered: set[tuple[str, str]] = set()
        """(requester, capability) the person allowed for this session (memory only)."""

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    # --- remembered consent --------------------------------------------------------------------

    def remembered_for(self, requester: str) -> frozenset[str]:
        return frozenset(c for r, c in self._remembered if r == requester)

    def remembered(self) -> frozenset[tuple[str, str]]:
        """Every (requester, capability) allowed for this session."""
        return frozenset(self._remembered)

    def forget(self, requester: str, capability: str) -> bool:
        present = (requester, capability) in self._remembered
        self._remembered.discard((requester, capability))
        return present

    # --- what hosts and the person do -------------------------------------------------------

    async def provide(self, names: Iterable[str]) -> None:
        """An attached host offers these capabilities (declared from now on)."""
        await self._store.db.write(_provide_txn, list(names), self._now())

    async def set_revoked(self, name: str, revoked: bool = True) -> None:
        await self._store.db.write(_set_revoked_txn, name, revoked, self._now())

    async def open_calls(self) -> list[CapabilityCall]:
        return await self._store.db.read(call_store.open_calls)

    async def get(self, key: CallKey) -> CapabilityCall | None:
        return await self._store.db.read(call_store.get, key)

    async def decide(
        self,
        key: CallKey,
        allow: bool,
        *,
        remember: bool = False,
        acknowledged: bool = False,
        confirmation: str | None = None,
    ) -> CapabilityCall:
        consented: call_store.Consented = await self._store.db.write(
            functools.partial(
                call_store.consent,
                remember=remember,
                acknowledged=acknowledged,
                confirmation=confirmation,
            ),
            key,
            allow,
            self._now(),
        )
        if consented.remember:
            self._remembered.add((requester_of(consented.call), consented.call.capability))
        return consented.call

    async def claim(self, key: CallKey) -> CapabilityCall:
        return await self._store.db.write(call_store.claim, key, self._now())

    async def finish(
        self, key: CallKey, *, result: dict[str, Any] | None = None, code: str | None = None
    ) -> CapabilityCall:
        return await self._store.db.write(
            functools.partial(call_store.finish, result=result, code=code), key, self._now()
        )

    async def finish_with_file(
        self, key: CallKey, name: str, media_type: str, body: bytes
    ) -> CapabilityCall:
        return await self._store.db.write(
            call_store.finish_with_file, key, name, media_type, body, self._now()
        )

    async def artifact(self, artifact_id: str) -> tuple[Artifact, bytes] | None:
        return await self._store.db.read(artifact, artifact_id)

    async def artifacts(self, conversation_id: str) -> list[Artifact]:
        return await self._store.db.read(artifacts, conversation_id)

    async def cancel(self, key: CallKey) -> CapabilityCall:
        return await self._store.db.write(call_store.cancel, key, self._now())

    async def cancel_for_app(self, instance_id: str) -> None:
        """Also done by the lifecycle change that closes the instance, in its own
        transaction; this is for a caller outside one."""
        await self._store.db.write(call_store.cancel_for_app, instance_id, self._now())

    async def due(self) -> None:
        await self._store.db.write(call_store.due, self._now())

    async def recover(self) -> None:
        await self._store.db.write(call_store.recover, self._now())

    async def next_deadline(self) -> datetime | None:
        value = await self._store.db.read(call_store.next_expiry)
        return None if value is None else datetime.fromisoformat(value)

    async def request_from_app(
        self,
        key: CallKey,
        instance_id: str,
        permissions: Iterable[str],
        name: str,
        arguments: dict[str, Any],
        reason: str,
        expires_at: datetime,
    ) -> CapabilityCall:
        """A MiniApp's ``capabilities.request`` (the SDK); ``key.requester_kind`` is
        ``app``. The app reads the outcome with ``get``."""
        return await self._store.db.write(
            call_store.request,
            key,
            instance_id,
            frozenset(permissions),
            name,
            arguments,
            reason,
            expires_at,
            self._now(),
            self.remembered(),
        )
