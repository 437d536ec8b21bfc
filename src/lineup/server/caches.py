"""Small in-process caches for facts the AppServer reads on every request.

Both are bounded. Credentials expire after a short TTL, so a revocation made by
another process takes effect within ``ttl``; this process's own logouts drop their
entry at once. Membership never changes once a conversation exists, so it is kept
until evicted.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable

from .storage import Principal


class CredentialCache:
    def __init__(
        self,
        ttl: float = 2.0,
        max_entries: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.ttl = ttl
        self._max = max_entries
        self._clock = clock
        self._entries: OrderedDict[str, tuple[Principal, float]] = OrderedDict()

    def get(self, secret_hash: str) -> Principal | None:
        entry = self._entries.get(secret_hash)
        if entry is None:
            return None
        principal, until = entry
        if self._clock() >= until:
            del self._entries[secret_hash]
            return None
        return principal

    def put(self, secret_hash: str, principal: Principal) -> None:
        self._entries[secret_hash] = (principal, self._clock() + self.ttl)
        self._entries.move_to_end(secret_hash)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)

    def drop(self, secret_hash: str) -> None:
        self._entries.pop(secret_hash, None)


class MembershipCache:
    """conversation id → (user id, agent id)."""

    def __init__(self, max_entries: int = 100_000) -> None:
        self._max = max_entries
        self._entries: OrderedDict[str, tuple[str, str]] = OrderedDict()

    def is_member(self, conversation_id: str, principal: Principal) -> bool | None:
        """``True``/``False`` when known, ``None`` when not cached."""
        members = self._entries.get(conversation_id)
        if members is None:
            return None
        return members[0 if principal.kind == "user" else 1] == principal.id

    def put(self, conversation_id: str, user_id: str, agent_id: str) -> None:
        self._entries[conversation_id] = (user_id, agent_id)
        self._entries.move_to_end(conversation_id)
        while len(self._entries) > self._max:
            self._entries.popitem(last=False)
