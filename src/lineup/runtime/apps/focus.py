"""The running MiniApp instances and the focus stack, as one pure value (spec 002 §6,
§7.2-7.3).

``Instances`` holds every instance record, the focus stack and which instance holds
focus. It never changes: each operation returns an ``Outcome`` with the next value,
the effects the Runtime must carry out (in order, in the same transaction that stores
the value: rows, outbox entries, surface and tool actions) and, when the request was
refused, the refusal code and the unchanged value. Every state change goes through
``lifecycle.decide``.

The rules:

- The stack holds exactly the live instances (not ``stopped``/``failed``), bottom
  first. At most one instance holds focus; it is the top of the stack and is
  ``foreground``, or still ``starting`` (it will come to the front once started), or
  ``stopping`` (its close is under way; focus moves on when the stop finishes). No
  other instance is ``foreground``.
- Foregrounding moves an instance to the top and sends the old holder to the
  background. Backgrounding the holder sends it to the bottom of the stack and
  focus to nobody (the chat): whoever asked wanted the chat, not another app. An
  instance opened in the background starts at the bottom.
- When the holder is taken away instead (suspend, close, failure, or a restart
  that caught it starting or stopping), focus returns to the highest ``background``
  instance in the stack, which comes to the front; with none, nothing holds focus.
  Suspended, starting and stopping instances are skipped: they are not ready.
- An accepted close runs in the order of spec 002 §7.2: stop delivering new ordinary
  tools, cancel the instance's unfinished tools (``app_closed``), close its surfaces,
  ``stopping``; then, once the stop has finished (``closed``), ``stopped``, end its
  app sub-session and restore focus. Interact interactions are not touched: ending
  the sub-session lists them, and they stay answerable. A failure takes the same
  steps without ``stopping``, and its tools end with ``app_failed``.
- ``recover`` after a restart turns ``starting`` and ``stopping`` into ``suspended``
  (never passed off as done), repairs the stack and focus from whatever was stored,
  and keeps only the newest ``max_final`` stopped or failed records. ``open`` refuses
  more than ``max_live`` live instances, so what a restart restores is bounded.
- Each instance gets an ordinal when it opens, for people to tell two instances of
  one app apart ("Task Dashboard 2"): the lowest no live instance of its scope holds
  (a continued instance takes back its parent's when that is free). It never changes
  while the instance lives, so live instances of a scope never share one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from types import MappingProxyType
from typing import Literal

from lineup.protocol import ErrorCode
from lineup.runtime.apps.lifecycle import (
    FINAL,
    LIVE,
    Event,
    MiniAppInstanceRecord,
    State,
    decide,
)

__all__ = [
    "MAX_FINAL_KEPT",
    "MAX_LIVE",
    "CancelBoundTools",
    "CloseSurfaces",
    "Effect",
    "EndAppSession",
    "FocusChanged",
    "InstanceDropped",
    "InstanceOpened",
    "InstanceStateChanged",
    "Instances",
    "OpenAppSession",
    "Outcome",
    "StopToolDelivery",
    "recover",
]

MAX_LIVE = 16
"""Live instances at most; ``open`` refuses the next one with ``lifecycle_denied``."""
MAX_FINAL_KEPT = 64
"""Stopped or failed records ``recover`` keeps, newest first (by ``stopped_at``)."""

HOLDS_FOCUS = frozenset({State.STARTING, State.FOREGROUND, State.STOPPING})


# Effects: what the Runtime does for an accepted operation, in the order given.


@dataclass(frozen=True, slots=True)
class InstanceOpened:
    record: MiniAppInstanceRecord


@dataclass(frozen=True, slots=True)
class OpenAppSession:
    """Create the instance's app sub-session and send ``app_session.opened``."""

    instance_id: str


@dataclass(frozen=True, slots=True)
class InstanceStateChanged:
    instance_id: str
    old: State
    new: State


@dataclass(frozen=True, slots=True)
class FocusChanged:
    old: str | None
    new: str | None


@dataclass(frozen=True, slots=True)
class StopToolDelivery:
    """Route no new ordinary tool to this instance."""

    instance_id: str


@dataclass(frozen=True, slots=True)
class CancelBoundTools:
    """End every tool bound to the instance that is still ``received``, ``routing``,
    ``waiting_for_app`` or ``running``, one outbox row each; ``submitted`` results go
    out unchanged. ``app_closed`` after a close, ``app_failed`` after a failure."""

    instance_id: str
    reason: Literal[ErrorCode.APP_CLOSED, ErrorCode.APP_FAILED] = ErrorCode.APP_CLOSED


@dataclass(frozen=True, slots=True)
class CloseSurfaces:
    instance_id: str


@dataclass(frozen=True, slots=True)
class EndAppSession:
    """End the sub-session and send ``app_session.closed`` with the interactions
    still pending; those are not cancelled."""

    instance_id: str
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class InstanceDropped:
    """Delete a stopped or failed record beyond the bound (``recover``)."""

    instance_id: str


Effect = (
    InstanceOpened
    | OpenAppSession
    | InstanceStateChanged
    | FocusChanged
    | StopToolDelivery
    | CancelBoundTools
    | CloseSurfaces
    | EndAppSession
    | InstanceDropped
)


@dataclass(frozen=True, slots=True)
class Outcome:
    value: Instances
    effects: tuple[Effect, ...] = ()
    refusal: ErrorCode | None = None


@dataclass(frozen=True, slots=True)
class Instances:
    """Every instance record by id (in opening order), the focus stack (bottom
    first) and the instance holding focus. Build one from stored rows and pass it
    through ``recover`` before use."""

    records: Mapping[str, MiniAppInstanceRecord] = field(default_factory=dict)
    stack: tuple[str, ...] = ()
    focus: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "records", MappingProxyType(dict(self.records)))
        object.__setattr__(self, "stack", tuple(self.stack))

    @property
    def foreground(self) -> str | None:
        """The ``foreground`` instance, if any (it is also the focus)."""
        record = None if self.focus is None else self.records.get(self.focus)
        return self.focus if record is not None and record.state is State.FOREGROUND else None

    def live(self) -> tuple[MiniAppInstanceRecord, ...]:
        return tuple(r for r in self.records.values() if r.state in LIVE)

    def free_ordinal(self, app_scope: str, parent_instance_id: str | None = None) -> int:
        """The ordinal a new instance of ``app_scope`` gets: the lowest that no live
        instance of that scope holds (in any conversation: the dock lists them all
        together), or, for "Continue", the ended instance's own when it is free again,
        so continued work keeps its name."""
        taken = {r.ordinal for r in self.live() if r.app_scope == app_scope}
        parent = None if parent_instance_id is None else self.records.get(parent_instance_id)
        if parent is not None and parent.app_scope == app_scope and parent.ordinal not in taken:
            return parent.ordinal
        ordinal = 1
        while ordinal in taken:
            ordinal += 1
        return ordinal

    def open(
        self,
        instance_id: str,
        app_scope: str,
        *,
        now: datetime,
        conversation_id: str | None = None,
        parent_instance_id: str | None = None,
        foreground: bool = True,
        max_live: int = MAX_LIVE,
        name: str = "",
    ) -> Outcome:
        """Start a new instance, taking focus unless ``foreground`` is false. ``name``:
        its app's display name; its ordinal is ``free_ordinal``'s."""
        if instance_id in self.records or len(self.live()) >= max_live:
            return Outcome(self, refusal=ErrorCode.LIFECYCLE_DENIED)
        tx = _Tx(self)
        record = MiniAppInstanceRecord(
            instance_id=instance_id,
            app_scope=app_scope,
            conversation_id=conversation_id,
            state=State.STARTING,
            parent_instance_id=parent_instance_id,
            started_at=now,
            name=name,
            ordinal=self.free_ordinal(app_scope, parent_instance_id),
        )
        tx.records[instance_id] = record
        tx.effects += [InstanceOpened(record), OpenAppSession(instance_id)]
        tx.stack.insert(0, instance_id)
        if foreground:
            tx.take_focus(instance_id)
        return tx.done()

    def started(self, instance_id: str) -> Outcome:
        if refused := self._refuse(instance_id, Event.STARTED):
            return refused
        tx = _Tx(self)
        if self.focus == instance_id:
            tx.move(instance_id, Event.STARTED, Event.REQUEST_FOREGROUND)
        else:
            tx.move(instance_id, Event.STARTED)
        return tx.done()

    def request_foreground(self, instance_id: str) -> Outcome:
        if refused := self._refuse(instance_id, Event.REQUEST_FOREGROUND):
            return refused
        tx = _Tx(self)
        tx.take_focus(instance_id)
        return tx.done()

    def request_background(self, instance_id: str) -> Outcome:
        if refused := self._refuse(instance_id, Event.REQUEST_BACKGROUND):
            return refused
        tx = _Tx(self)
        tx.move(instance_id, Event.REQUEST_BACKGROUND)
        if self.focus == instance_id:
            # The person (or agent) asked for the chat, not for another app: focus
            # goes to nobody. Only a close or a failure hands it down the stack.
            tx.stack.remove(instance_id)
            tx.stack.insert(0, instance_id)
            tx.focus = None
            tx.effects.append(FocusChanged(instance_id, None))
        return tx.done()

    def request_close(self, instance_id: str) -> Outcome:
        """Accept a close and begin it: the first half of the close order. The
        Runtime stops the instance, then reports ``closed``."""
        if refused := self._refuse(instance_id, Event.REQUEST_CLOSE):
            return refused
        tx = _Tx(self)
        if self.records[instance_id].state is not State.STOPPING:
            tx.effects += [
                StopToolDelivery(instance_id),
                CancelBoundTools(instance_id, ErrorCode.APP_CLOSED),
                CloseSurfaces(instance_id),
            ]
            tx.move(instance_id, Event.REQUEST_CLOSE)
        return tx.done()

    def closed(self, instance_id: str, *, now: datetime, reason: str | None = None) -> Outcome:
        """The stop finished: the second half of the close order."""
        if refused := self._refuse(instance_id, Event.CLOSED):
            return refused
        tx = _Tx(self)
        tx.end(instance_id, Event.CLOSED, now=now, reason=reason)
        return tx.done()

    def close(self, instance_id: str, *, now: datetime, reason: str | None = None) -> Outcome:
        """``request_close`` then ``closed``, for a stop that needs no waiting."""
        first = self.request_close(instance_id)
        if first.refusal is not None:
            return first
        second = first.value.closed(instance_id, now=now, reason=reason)
        return Outcome(second.value, first.effects + second.effects)

    def fail(self, instance_id: str, *, now: datetime, error: str) -> Outcome:
        if refused := self._refuse(instance_id, Event.FAIL):
            return refused
        tx = _Tx(self)
        if self.records[instance_id].state is not State.STOPPING:
            tx.effects += [
                StopToolDelivery(instance_id),
                CancelBoundTools(instance_id, ErrorCode.APP_FAILED),
                CloseSurfaces(instance_id),
            ]
        tx.end(instance_id, Event.FAIL, now=now, reason=error, error=error)
        return tx.done()

    def suspend(self, instance_id: str) -> Outcome:
        if refused := self._refuse(instance_id, Event.SUSPEND):
            return refused
        tx = _Tx(self)
        tx.move(instance_id, Event.SUSPEND)
        if self.focus == instance_id:
            tx.restore_focus(instance_id)
        return tx.done()

    def resume(self, instance_id: str) -> Outcome:
        if refused := self._refuse(instance_id, Event.RESUME):
            return refused
        tx = _Tx(self)
        tx.move(instance_id, Event.RESUME)
        return tx.done()

    def recover(self, *, max_final: int = MAX_FINAL_KEPT) -> Outcome:
        return recover(self, max_final=max_final)

    def _refuse(self, instance_id: str, event: Event) -> Outcome | None:
        record = self.records.get(instance_id)
        decision = decide(None if record is None else record.state, event)
        return None if decision.refusal is None else Outcome(self, refusal=decision.refusal)


def recover(value: Instances, *, max_final: int = MAX_FINAL_KEPT) -> Outcome:
    """The value to run with after a restart, from the one last stored.

    Instances caught ``starting`` or ``stopping`` become ``suspended``; the stack is
    rebuilt from the stored one (unknown, final and repeated ids removed, live
    instances it missed put at the bottom); one ``foreground`` instance at most keeps
    focus (the stored focus, else the highest in the stack); a holder that was
    suspended hands focus on as usual. Only the newest ``max_final`` stopped or
    failed records are kept. Recovering twice changes nothing the second time.
    """
    tx = _Tx(value)
    for instance_id in list(tx.records):
        tx.move(instance_id, Event.RESTART_RECOVERY)
    stack: list[str] = []
    for instance_id in reversed(value.stack):
        record = tx.records.get(instance_id)
        if record is not None and record.state in LIVE and instance_id not in stack:
            stack.insert(0, instance_id)
    missed = [r for r in tx.records.values() if r.state in LIVE and r.instance_id not in stack]
    tx.stack = [r.instance_id for r in sorted(missed, key=lambda r: r.started_at)] + stack
    in_front = [i for i in tx.stack if tx.records[i].state is State.FOREGROUND]
    old = value.focus
    holder = old if old in in_front else (in_front[-1] if in_front else None)
    for instance_id in in_front:
        if instance_id != holder:
            tx.move(instance_id, Event.REQUEST_BACKGROUND)
    if holder is not None:
        tx.to_top(holder)
        tx.focus = holder
        if holder != old:
            tx.effects.append(FocusChanged(old, holder))
    elif old is not None:
        tx.restore_focus(old)
    finals = [r for r in tx.records.values() if r.state in FINAL]
    finals.sort(key=lambda r: (r.stopped_at or r.started_at, r.started_at), reverse=True)
    for record in finals[max(max_final, 0) :]:
        del tx.records[record.instance_id]
        tx.effects.append(InstanceDropped(record.instance_id))
    return tx.done()


class _Tx:
    """A mutable copy of an ``Instances`` value for one operation."""

    def __init__(self, value: Instances) -> None:
        self.records = dict(value.records)
        self.stack = list(value.stack)
        self.focus = value.focus
        self.effects: list[Effect] = []

    def done(self) -> Outcome:
        return Outcome(Instances(self.records, tuple(self.stack), self.focus), tuple(self.effects))

    def move(
        self,
        instance_id: str,
        *events: Event,
        stopped_at: datetime | None = None,
        error: str | None = None,
    ) -> None:
        """Apply ``events`` in turn (each one must be allowed); one effect at most."""
        record = self.records[instance_id]
        state = record.state
        for event in events:
            to = decide(state, event).to
            assert to is not None, f"{state} does not allow {event}"
            state = to
        if state is not record.state:
            self.records[instance_id] = replace(
                record,
                state=state,
                stopped_at=stopped_at or record.stopped_at,
                error=error or record.error,
            )
            self.effects.append(InstanceStateChanged(instance_id, record.state, state))

    def to_top(self, instance_id: str) -> None:
        self.stack.remove(instance_id)
        self.stack.append(instance_id)

    def take_focus(self, instance_id: str) -> None:
        old = self.focus
        if old == instance_id:
            return
        if old is not None and self.records[old].state is State.FOREGROUND:
            self.move(old, Event.REQUEST_BACKGROUND)
        self.to_top(instance_id)
        self.move(instance_id, Event.REQUEST_FOREGROUND)
        self.focus = instance_id
        self.effects.append(FocusChanged(old, instance_id))

    def restore_focus(self, leaving: str) -> None:
        """``leaving`` no longer holds focus: hand it to the highest background one."""
        self.focus = None
        for candidate in reversed(self.stack):  # we stop iterating once we reorder
            if candidate != leaving and self.records[candidate].state is State.BACKGROUND:
                self.to_top(candidate)
                self.move(candidate, Event.REQUEST_FOREGROUND)
                self.focus = candidate
                break
        self.effects.append(FocusChanged(leaving, self.focus))

    def end(
        self,
        instance_id: str,
        event: Event,
        *,
        now: datetime,
        reason: str | None,
        error: str | None = None,
    ) -> None:
        """The instance becomes final: its sub-session ends, then focus moves on."""
        self.move(instance_id, event, stopped_at=now, error=error)
        self.effects.append(EndAppSession(instance_id, reason))
        self.stack.remove(instance_id)
        if self.focus == instance_id:
            self.restore_focus(instance_id)
