"""``Elicitor``: answers MCP servers' forms (``elicitation/create``) with the person.

The connection layer calls ``elicit`` (``connection.Elicit``) while a server runs one
of our calls. It stores the form and its card (``elicitation_store.create``), waits
for whatever ends it first (the person's answer through a host, the expiry, the call
ending, the server withdrawing its request) and answers the server from the final
row: ``accept`` with the checked content, ``decline``, or ``cancel`` (cancelled and
expired alike). A request outside any call of ours, or with a schema MCP does not
allow, is declined at once and nothing is shown.

Only ids, server keys, states and codes are logged; never the message, schema or answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from lineup.protocol import ErrorCode

from ..store import RuntimeStore
from . import elicitation_store
from .call_store import McpCallsChanged
from .calls import FINAL as CALL_FINAL
from .elicitation_store import ElicitationRecord, Outcome
from .elicitations import Event, State
from .results import ElicitAnswer

__all__ = ["ElicitationRefused", "Elicitor"]

log = logging.getLogger("lineup.runtime.mcp")

ACTIONS = {"accept": Event.ACCEPT, "decline": Event.DECLINE, "cancel": Event.CANCEL}


class ElicitationRefused(Exception):
    """A person's answer that did not count: ``code`` (``elicitation_not_found``,
    ``elicitation_answer_invalid``, ``call_already_final``, ``interaction_expired``)."""

    def __init__(self, code: str, record: ElicitationRecord | None) -> None:
        super().__init__(code)
        self.code = code
        self.record = record


class Elicitor:
    def __init__(self, store: RuntimeStore, *, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock
        self._waiting: dict[str, asyncio.Event] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def _now(self) -> str:
        return self._clock().astimezone(UTC).isoformat(timespec="milliseconds")

    async def elicit(
        self, server_key: str, message: str, requested_schema: dict[str, Any]
    ) -> ElicitAnswer:
        """Ask the person; the server's answer once the form is final."""
        made = await self._store.db.write(
            elicitation_store.create, server_key, message, requested_schema, self._now()
        )
        if not isinstance(made, ElicitationRecord):
            log.info("mcp elicitation declined", extra={"server": server_key, "code": str(made)})
            return ElicitAnswer(action="decline")
        ended = asyncio.Event()
        self._waiting[made.id] = ended
        record: ElicitationRecord | None = made
        try:
            while record is not None and record.state is State.PENDING:
                left = (datetime.fromisoformat(record.expires_at) - self._clock()).total_seconds()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(ended.wait(), max(0.0, left))
                ended.clear()
                record = await self._store.db.read(elicitation_store.get, made.id)
                if record is not None and record.state is State.PENDING:
                    await self._store.db.write(elicitation_store.due, self._now())
                    record = await self._store.db.read(elicitation_store.get, made.id)
        except asyncio.CancelledError:
            # The server withdrew its request (or its connection is going): the card
            # says it was cancelled. Best effort: the store may be closing.
            with contextlib.suppress(Exception):
                await asyncio.shield(
                    self._store.db.write(elicitation_store.end, made.id, self._now())
                )
            raise
        finally:
            self._waiting.pop(made.id, None)
        if record is None:  # never expected: rows are not deleted
            return ElicitAnswer(action="cancel")
        log.info("mcp elicitation ended", extra={"server": server_key, "state": record.state})
        action = elicitation_store.action_of(record)
        if action == "accept":
            return ElicitAnswer(action="accept", content=record.content or {})
        return ElicitAnswer(action=action)

    def _wake(self, outcomes: list[Outcome]) -> None:
        for outcome in outcomes:
            if outcome.record is not None and outcome.record.id in self._waiting:
                self._waiting[outcome.record.id].set()

    async def answer(
        self,
        elicitation_id: str,
        conversation_id: str,
        action: str,
        content: dict[str, Any] | None = None,
    ) -> ElicitationRecord:
        """The person's ``accept`` (with ``content``), ``decline`` or ``cancel``. Only
        the first counts; anything else raises ``ElicitationRefused`` and changes
        nothing."""
        event = ACTIONS.get(action)
        if event is None:
            raise ElicitationRefused(ErrorCode.ELICITATION_ANSWER_INVALID, None)
        outcome: Outcome = await self._store.db.write(
            elicitation_store.answer, elicitation_id, conversation_id, event, content, self._now()
        )
        self._wake([outcome])
        if not outcome.won or outcome.record is None:
            code = outcome.code or ErrorCode.CALL_ALREADY_FINAL
            log.info("elicitation answer refused", extra={"code": code})
            raise ElicitationRefused(code, outcome.record)
        return outcome.record

    async def get(self, elicitation_id: str) -> ElicitationRecord | None:
        return await self._store.db.read(elicitation_store.get, elicitation_id)

    async def recover(self) -> None:
        """At open: forms a stop caught pending end ``cancelled``."""
        await self._store.db.write(elicitation_store.recover, self._now())

    async def due(self) -> None:
        self._wake(await self._store.db.write(elicitation_store.due, self._now()))

    async def next_deadline(self) -> datetime | None:
        return await self._store.db.read(elicitation_store.next_expiry)

    def on_event(self, event: object) -> None:
        """After a commit: calls that ended take their open forms with them."""
        if not isinstance(event, McpCallsChanged):
            return
        ended = [c.key for c in event.calls if c.state in CALL_FINAL]
        if ended:
            task = asyncio.ensure_future(self._end_for_calls(ended))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _end_for_calls(self, keys: list[tuple[str, str]]) -> None:
        try:
            outcomes = await self._store.db.write(
                elicitation_store.end_for_calls, keys, self._now()
            )
        except Exception as exc:  # the store closing: the next start's recover() ends them
            log.warning("mcp elicitations not ended", extra={"error": type(exc).__name__})
            return
        self._wake(outcomes)
