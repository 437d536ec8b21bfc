"""``AppKernel``: the Runtime's MiniApp instances, persisted (spec 002 §6-§7).

Apps, the person and agent tools only *request*; the kernel runs each request as one
writer transaction of ``instance_store.apply_lifecycle`` (the pure rules decide, the
new value, its audit rows and its outbox rows are stored together). After the commit
the unit of work sends what it queued and emits ``AppsChanged``, from which the
kernel adopts the value it serves (``adopt``) and hosts learn the effects. A refused
request changes nothing but an audit row, and is answered with its code.

The Runtime calls ``recover`` when it opens its store: instances caught ``starting``
or ``stopping`` by a stop or a crash become ``suspended`` (never shown as done), and
the focus stack is repaired.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from lineup.protocol.fields import APP_SCOPE_PATTERN

from ..events import AppsChanged, RuntimeEvent
from ..store import RuntimeStore
from ..txn import RuntimeTxn
from . import instance_store, tool_call_store
from .focus import MAX_LIVE, Instances
from .instance_store import Action, LifecycleResult, Op
from .lifecycle import MiniAppInstanceRecord
from .tool_call_store import CallOutcome

__all__ = ["AppKernel", "AppLifecycleRefused", "Receipt"]

_SCOPE = re.compile(APP_SCOPE_PATTERN)


@dataclass(frozen=True, slots=True)
class Receipt:
    """The answer to a lifecycle request: ``accepted``, or refused with ``code``
    (``app_instance_not_found``, ``lifecycle_denied``). ``record``: the instance as
    it is now (``None`` when there is no such instance)."""

    instance_id: str
    accepted: bool
    code: str | None
    record: MiniAppInstanceRecord | None


class AppLifecycleRefused(Exception):
    """``open_instance`` was refused: ``code`` says why."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


class AppKernel:
    def __init__(
        self,
        store: RuntimeStore,
        *,
        clock: Callable[[], datetime] | None = None,
        max_live: int = MAX_LIVE,
    ) -> None:
        self._store = store
        self._clock = clock or (lambda: datetime.now(UTC))
        self._max_live = max_live
        self._value = Instances()
        store.listen(emit=self._adopt)

    def _adopt(self, event: RuntimeEvent) -> None:
        """A lifecycle change was committed: serve its value from now on. The writer
        runs these in commit order, so the last one adopted is the newest."""
        if isinstance(event, AppsChanged):
            self._value = event.instances

    # --- reading ---------------------------------------------------------------------------

    def instances(self) -> Instances:
        """The value last stored (empty before ``recover``)."""
        return self._value

    def record(self, instance_id: str) -> MiniAppInstanceRecord | None:
        return self._value.records.get(instance_id)

    async def app_session_id(self, instance_id: str) -> str | None:
        """The instance's sub-session (``None`` without a conversation)."""
        return await self._store.db.read(instance_store.app_session_of, instance_id)

    # --- lifecycle ---------------------------------------------------------------------------

    async def recover(self) -> LifecycleResult:
        """After the store opened: repair what a stop or a crash left behind."""
        return await self.apply(Op(Action.RECOVER))

    async def open_instance(
        self,
        app_scope: str,
        *,
        conversation_id: str | None = None,
        foreground: bool = True,
        parent_instance_id: str | None = None,
        actor: str = "runtime",
    ) -> MiniAppInstanceRecord:
        """Start a new instance of ``app_scope`` (``starting``; in front unless
        ``foreground`` is false) and, in a conversation, its app sub-session. Raises
        ``AppLifecycleRefused`` (``lifecycle_denied``: too many live instances, or
        no such conversation)."""
        if not _SCOPE.match(app_scope):
            raise ValueError(f"not an app scope: {app_scope!r}")
        instance_id = f"{app_scope}.{uuid.uuid4().hex[:16]}"
        result = await self.apply(
            Op(
                Action.OPEN,
                instance_id,
                app_scope=app_scope,
                conversation_id=conversation_id,
                parent_instance_id=parent_instance_id,
                foreground=foreground,
                actor=actor,
                max_live=self._max_live,
            )
        )
        if result.refusal is not None:
            raise AppLifecycleRefused(result.refusal)
        return result.value.records[instance_id]

    async def continue_work(self, instance_id: str, *, actor: str = "user") -> Receipt:
        """ "Continue" on the work of ``instance_id`` (spec 002 §7.3): when it is still
        live, it comes to the front; when it ended, a new instance of the same app
        opens in front, in the same conversation, with a new sub-session that names
        the old one (``continues_app_session_id``). The old sub-session stays closed
        history and its questions are not copied or revived. Continuing the same
        ended work again (a second click, another tab) while that new instance is
        live brings it to the front instead of opening one more. The receipt's
        ``record`` is the instance that now holds the work; refused with
        ``app_instance_not_found`` (no such work), ``app_disabled`` or
        ``lifecycle_denied``."""
        result = await self._store.db.write(self._continue_txn, instance_id, actor, self._now())
        record = None
        if result.refusal is None:
            record = result.value.records.get(result.op.instance_id)
        return Receipt(
            instance_id,
            result.accepted,
            None if result.refusal is None else str(result.refusal),
            record,
        )

    def _continue_txn(
        self, txn: RuntimeTxn, instance_id: str, actor: str, now: str
    ) -> LifecycleResult:
        value = instance_store.load(txn)
        record = value.records.get(instance_id)
        front = Op(Action.REQUEST_FOREGROUND, instance_id, actor=actor)
        if record is not None and record in value.live():
            return instance_store.apply_lifecycle(txn, front, now)
        # Already continued, and that instance still runs: it holds the work.
        for live in value.live():
            if live.parent_instance_id == instance_id:
                again = Op(Action.REQUEST_FOREGROUND, live.instance_id, actor=actor)
                return instance_store.apply_lifecycle(txn, again, now)
        row = txn.execute(
            "SELECT app_scope, conversation_id FROM app_sessions WHERE instance_id = ?",
            (instance_id,),
        ).fetchone()
        if row is None:  # no sub-session: an instance of no conversation, or nothing
            return instance_store.apply_lifecycle(txn, front, now)
        opened = Op(
            Action.OPEN,
            f"{row[0]}.{uuid.uuid4().hex[:16]}",
            app_scope=row[0],
            conversation_id=row[1],
            parent_instance_id=instance_id,
            foreground=True,
            actor=actor,
            max_live=self._max_live,
        )
        return instance_store.apply_lifecycle(txn, opened, now)

    async def started(self, instance_id: str) -> Receipt:
        """The app reports it finished starting."""
        return await self._request(Op(Action.STARTED, instance_id, actor="app"))

    async def request_foreground(self, instance_id: str, *, actor: str = "user") -> Receipt:
        return await self._request(Op(Action.REQUEST_FOREGROUND, instance_id, actor=actor))

    async def request_background(self, instance_id: str, *, actor: str = "user") -> Receipt:
        return await self._request(Op(Action.REQUEST_BACKGROUND, instance_id, actor=actor))

    async def request_close(self, instance_id: str, *, actor: str = "user") -> Receipt:
        """Accept a close and begin it: tools stop, unfinished ones are cancelled
        (``app_closed``), surfaces close, the instance is ``stopping``."""
        return await self._request(Op(Action.REQUEST_CLOSE, instance_id, actor=actor))

    async def closed(self, instance_id: str, *, reason: str | None = None) -> Receipt:
        """The stop finished: ``stopped``, the sub-session ends, focus moves on."""
        return await self._request(Op(Action.CLOSED, instance_id, reason=reason))

    async def fail(self, instance_id: str, *, error: str) -> Receipt:
        """The instance failed: its unfinished tools end ``app_failed``."""
        return await self._request(Op(Action.FAIL, instance_id, reason=error))

    async def suspend(self, instance_id: str) -> Receipt:
        return await self._request(Op(Action.SUSPEND, instance_id))

    async def resume(self, instance_id: str) -> Receipt:
        return await self._request(Op(Action.RESUME, instance_id))

    async def _request(self, op: Op) -> Receipt:
        result = await self.apply(op)
        return Receipt(
            op.instance_id,
            result.accepted,
            None if result.refusal is None else str(result.refusal),
            result.value.records.get(op.instance_id),
        )

    async def apply(self, op: Op) -> LifecycleResult:
        """Run one operation in one writer transaction."""
        return await self._store.db.write(instance_store.apply_lifecycle, op, self._now())

    # --- tool calls ---------------------------------------------------------------------------

    async def tool_calls_due(self) -> list[CallOutcome]:
        """Time out every overdue ordinary tool call (one result row each)."""
        return await self._store.db.write(tool_call_store.due, self._now())

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")
