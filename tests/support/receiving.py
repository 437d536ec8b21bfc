"""Feeding a bare ``RuntimeStore`` the way the sync loop does (``receive.apply_batch``),
and what one batch's unit of work reported after its commit."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from weakref import WeakKeyDictionary

from lineup.runtime import OutboxItem, Received, RuntimeStore, TimelineItem, receive
from lineup.runtime.events import RuntimeEvent, TimelineChanged


@dataclass
class Applied:
    """What one batch did, as its unit of work reported it after the commit."""

    items: list[TimelineItem] = field(default_factory=list)
    """Timeline rows shown (new, changed, or whose interaction changed), in order."""
    cursors: dict[str, int] = field(default_factory=dict)
    outbox: list[OutboxItem] = field(default_factory=list)
    """Envelopes the batch queued, handed to the sender."""
    events: list[RuntimeEvent] = field(default_factory=list)
    expiry_changed: bool = False


class _Recorder:
    def __init__(self, store: RuntimeStore) -> None:
        self.current = Applied()
        store.listen(send=self._send, emit=self._emit, deadline_added=self._deadline)

    def _send(self, item: OutboxItem) -> None:
        self.current.outbox.append(item)

    def _emit(self, event: RuntimeEvent) -> None:
        self.current.events.append(event)
        if isinstance(event, TimelineChanged):
            self.current.items.append(event.item)

    def _deadline(self) -> None:
        self.current.expiry_changed = True


_recorders: WeakKeyDictionary[RuntimeStore, _Recorder] = WeakKeyDictionary()


def recorder(store: RuntimeStore) -> _Recorder:
    """The store's recorder of committed effects (attached once)."""
    if store not in _recorders:
        _recorders[store] = _Recorder(store)
    return _recorders[store]


async def apply_received(
    store: RuntimeStore,
    items: Sequence[Received],
    *,
    inline_surfaces: frozenset[str] = frozenset(),
    remembered: frozenset[tuple[str, str]] = frozenset(),
    now: datetime | None = None,
) -> Applied:
    """Apply one batch in one writer transaction; what it sent, showed and woke."""
    seen = recorder(store)
    seen.current = batch = Applied()
    stamp = store.now() if now is None else now.astimezone(UTC).isoformat(timespec="milliseconds")
    context = receive.Context(stamp, frozenset(inline_surfaces), frozenset(remembered))
    batch.cursors = await store.db.write(receive.apply_batch, list(items), context)
    return batch
