"""In-process fan-out of committed envelopes to live streams and long-polls.

The hub only *wakes* readers; the database stays the source of truth. A stream
delivers an envelope straight from the hub when its sequence number is exactly
the next one it expects, and reads the gap from storage otherwise, so a missed
or overflowed notification costs a query, never a lost or repeated envelope.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Iterable, Sequence

from .storage import ConversationRecord, Principal, StoredEnvelope

MAX_PENDING = 4096
"""Live envelopes buffered per subscription before it falls back to storage reads."""


class Subscription:
    """One reader's interest: some conversations, maybe all of a principal's."""

    def __init__(self, principal: Principal, *, follow_new: bool) -> None:
        self.principal = principal
        self.follow_new = follow_new
        self.pending: deque[StoredEnvelope] = deque()
        self.new_conversations: deque[ConversationRecord] = deque()
        self.lagging: set[str] = set()
        self.conversations: set[str] = set()
        """Where this subscription is registered in the hub (so leaving is cheap)."""
        self.wake = asyncio.Event()

    def offer(self, item: StoredEnvelope) -> None:
        if item.conversation_id in self.lagging:
            pass
        elif len(self.pending) >= MAX_PENDING:
            self.lagging.add(item.conversation_id)
        else:
            self.pending.append(item)
        self.wake.set()

    def offer_conversation(self, record: ConversationRecord) -> None:
        self.new_conversations.append(record)
        self.wake.set()

    def take(self) -> tuple[list[StoredEnvelope], set[str], list[ConversationRecord]]:
        """Everything queued since the last call; clears the wake flag."""
        self.wake.clear()
        items = list(self.pending)
        self.pending.clear()
        lagging, self.lagging = self.lagging, set()
        records = list(self.new_conversations)
        self.new_conversations.clear()
        return items, lagging, records


class Hub:
    def __init__(self) -> None:
        self._by_conversation: dict[str, set[Subscription]] = {}
        self._followers: dict[Principal, set[Subscription]] = {}
        self._waiters: dict[str, set[asyncio.Event]] = {}

    # --- registration ----------------------------------------------------------------

    def attach(self, sub: Subscription, conversation_ids: Iterable[str]) -> None:
        for conversation_id in conversation_ids:
            self._by_conversation.setdefault(conversation_id, set()).add(sub)
            sub.conversations.add(conversation_id)
        if sub.follow_new:
            self._followers.setdefault(sub.principal, set()).add(sub)

    def detach(self, sub: Subscription) -> None:
        for conversation_id in sub.conversations:  # its own, not every conversation's
            subs = self._by_conversation.get(conversation_id)
            if subs is None:
                continue
            subs.discard(sub)
            if not subs:
                del self._by_conversation[conversation_id]
        sub.conversations.clear()
        followers = self._followers.get(sub.principal)
        if followers is not None:
            followers.discard(sub)
            if not followers:
                del self._followers[sub.principal]

    def waiter(self, conversation_id: str) -> asyncio.Event:
        event = asyncio.Event()
        self._waiters.setdefault(conversation_id, set()).add(event)
        return event

    def drop_waiter(self, conversation_id: str, event: asyncio.Event) -> None:
        events = self._waiters.get(conversation_id)
        if events is not None:
            events.discard(event)
            if not events:
                del self._waiters[conversation_id]

    # --- publishing (called on the event loop by storage) ------------------------------

    def publish(self, items: Sequence[StoredEnvelope]) -> None:
        for item in items:
            for sub in self._by_conversation.get(item.conversation_id, ()):
                sub.offer(item)
            for event in self._waiters.get(item.conversation_id, ()):
                event.set()

    def publish_conversation(self, record: ConversationRecord) -> None:
        for principal in (Principal("user", record.user_id), Principal("agent", record.agent_id)):
            for sub in list(self._followers.get(principal, ())):
                self._by_conversation.setdefault(record.id, set()).add(sub)
                sub.conversations.add(record.id)
                sub.offer_conversation(record)

    def resync(self) -> None:
        """Notifications may have been missed (storage lost its notification feed
        for a while): every stream re-reads its conversations from its cursor, and
        every long-poll looks again."""
        for conversation_id, subs in self._by_conversation.items():
            for sub in subs:
                sub.lagging.add(conversation_id)
                sub.wake.set()
        for events in self._waiters.values():
            for event in events:
                event.set()

    @property
    def subscription_count(self) -> int:
        return len({s for subs in self._by_conversation.values() for s in subs})
