"""Hypothesis drives a real on-disk ``RuntimeStore`` through every way an interaction
can start and end (calls, answers, dismisses and their replays, the clock, expiry,
failures, races, restarts) against a small model written independently of
``lineup.runtime.interactions``. After every step: one ``tool.result`` per call at
most, final interactions never change, statuses match states, ``expires_at`` never
moves.
"""

from __future__ import annotations

import asyncio
import itertools
import sqlite3
from collections.abc import Coroutine
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import msgspec
from hypothesis import HealthCheck, event, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    consumes,
    invariant,
    precondition,
    rule,
)

from lineup.protocol import interactions as ix
from lineup.runtime.interaction_store import Outcome
from tests.support.interactions import (
    ARGS_BY_TOOL,
    INVALID_ANSWER,
    VALID_ANSWER,
    Conversation,
    StoreHarness,
    at,
    result_id,
)
from tests.support.receiving import apply_received
from tests.support.store_machine import StoreMachine

A = Conversation("conv-a", "agent-a")
B = Conversation("conv-b", "agent-b")
CONVERSATIONS = {c.id: c for c in (A, B)}

STATUS = {
    "accepted": "accepted",
    "answered": "completed",
    "dismissed": "dismissed",
    "expired": "expired",
    "failed": "failed",
    "rejected": "rejected",
}
"""The result each final state sends (``rejected``: a refused call), written out here."""
ERROR_CODE = {
    "dismissed": "interaction_dismissed",
    "expired": "interaction_expired",
    "failed": "runtime_failed",
}
ANSWERABLE = (ix.CHOICE, ix.CONFIRM, ix.INPUT)
DELAYS = (None, 60_000, 60_000, 61_000, 120_000, 3_600_000, 86_400_000)
STEPS_MS = (1, 999, 59_999, 60_000, 60_000, 60_001, 900_000, 3_600_000, 86_400_000, 86_400_001)

"""One fresh directory per example, on tmpfs when there is one: the store runs its
own code and settings (WAL, ``synchronous=FULL``) unchanged; only the fsyncs cost
nothing, which halves the wall time of 500 runs. Durability itself is proved against
real processes in test_interaction_faults.py."""


@dataclass
class Call:
    """The model of one tool call."""

    conversation: Conversation
    call_id: str
    tool: str
    state: str  # pending, accepted, answered, dismissed, expired, failed, rejected
    interaction_id: str | None = None
    expires_at: datetime | None = None
    answer: dict[str, Any] | None = None

    @property
    def final(self) -> bool:
        return self.state != "pending"


@dataclass(frozen=True)
class Event:
    kind: str  # answer, dismiss, fail, expire
    valid: bool = True


def wins(call: Call, event: Event, now: datetime) -> tuple[str | None, str | None]:
    """(new state, refusal code) for ``event`` on ``call`` at ``now``: the rules of
    docs/protocol.md ("Exactly one result"), independently of the code under test."""
    if call.interaction_id is None:
        return None, "interaction_not_found"
    if call.state == "pending":
        assert call.expires_at is not None
        if now >= call.expires_at:
            return "expired", None if event.kind == "expire" else "interaction_expired"
        if event.kind == "expire":
            return None, None
        if event.kind == "answer" and not event.valid:
            return None, "answer_invalid"
        return {"answer": "answered", "dismiss": "dismissed", "fail": "failed"}[event.kind], None
    return None, "interaction_expired" if call.state == "expired" else "call_already_final"


class InteractionMachine(StoreMachine):
    calls = Bundle("calls")
    controls = Bundle("controls")

    def __init__(self) -> None:
        super().__init__()
        self.h = StoreHarness(self.dir / "runtime.sqlite3")
        self.model: dict[tuple[str, str], Call] = {}
        self.receipts: dict[tuple[str, str], tuple[str, str]] = {}
        """(conversation, control id) -> (call id, receipt)."""
        self.not_found_receipts = 0
        self.frozen: dict[str, tuple[Any, ...]] = {}
        self.names = itertools.count(1)
        self.run(self.h.open())
        self.run(self.h.setup(A, B))

    @property
    def now(self) -> datetime:
        return self.h.clock.now

    # --- applying the model ----------------------------------------------------------

    def apply(self, call: Call, event: Event) -> str | None:
        """Move the model; return the refusal code the action must get."""
        to, code = wins(call, event, self.now)
        if to is not None:
            call.state = to
            if to == "answered":
                call.answer = VALID_ANSWER[call.tool]
        return code

    def check_outcome(self, outcome: Outcome, call: Call, code: str | None, moved: bool) -> None:
        assert outcome.code == code, (outcome, call, code)
        assert outcome.won is (moved and code is None), (outcome, call)
        assert (outcome.outbox is not None) is moved, (outcome, call)
        if moved:
            assert outcome.outbox is not None
            assert outcome.outbox.envelope_id == result_id(call.conversation.id, call.call_id)

    # --- rules -----------------------------------------------------------------------

    @rule(
        target=calls,
        conversation=st.sampled_from([A, B]),
        tool=st.sampled_from(ix.TOOL_IDS),
        delay=st.sampled_from(DELAYS),
        flaw=st.sampled_from([None] * 12 + ["stale", "bad_args", "sender", "tool", "expiry"]),
    )
    def create(
        self, conversation: Conversation, tool: str, delay: int | None, flaw: str | None
    ) -> tuple[str, str]:
        call_id = f"call-{next(self.names)}"
        arguments = dict(ARGS_BY_TOOL[tool])
        if flaw == "expiry":  # out of range, or on a notice, which takes none
            delay = 59_999 if tool != ix.NOTICE else delay or 60_000
        elif tool == ix.NOTICE:
            delay = None
        if delay is not None:
            arguments["expires_in_ms"] = delay
        kwargs: dict[str, Any] = {"arguments": arguments}
        if flaw == "stale":
            kwargs["revision"] = "inv-0000"
        elif flaw == "bad_args":
            arguments["nonsense"] = True
        elif flaw == "sender":
            kwargs["sender_id"] = "agent-z"
        elif flaw == "tool":
            tool = "interact.poll"
        refused = flaw is not None
        applied = self.run(self.h.call(conversation, call_id, tool, **kwargs))
        (item,) = applied.items
        call = Call(conversation, call_id, tool, "rejected" if refused else "pending")
        if refused:
            assert item.interaction is None
            assert len(applied.outbox) == 1
        else:
            record = item.interaction
            assert record is not None
            call.interaction_id = record.id
            assert at(record.created_at) == self.now
            if tool == ix.NOTICE:
                call.state = "accepted"
                assert record.state == "accepted" and record.expires_at is None
                assert len(applied.outbox) == 1
            else:
                assert record.state == "pending" and record.expires_at is not None
                call.expires_at = at(record.expires_at)
                assert call.expires_at == self.now + timedelta(milliseconds=delay or 900_000)
                assert call.expires_at > self.now
                assert applied.outbox == []
        self.model[(conversation.id, call_id)] = call
        return conversation.id, call_id

    @rule(key=calls, tool=st.sampled_from(ix.TOOL_IDS))
    def repeat_call(self, key: tuple[str, str], tool: str) -> None:
        """The same call id again, under a new envelope id: nothing is created or sent."""
        call = self.model[key]
        applied = self.run(self.h.call(call.conversation, call.call_id, tool))
        (item,) = applied.items
        assert item.interaction is None
        assert applied.outbox == []

    @rule(key=calls, valid=st.booleans(), elsewhere=st.sampled_from([False, False, False, True]))
    def answer(self, key: tuple[str, str], valid: bool, elsewhere: bool) -> None:
        call = self.model[key]
        interaction_id = call.interaction_id or "int_nobody"
        conversation_id = call.conversation.id
        if elsewhere:  # the id of this conversation's interaction, named from another one
            conversation_id = B.id if conversation_id == A.id else A.id
        answer = (VALID_ANSWER if valid else INVALID_ANSWER).get(call.tool, {"x": 1})
        before = call.state
        if elsewhere:
            code: str | None = "interaction_not_found"
        else:
            code = self.apply(call, Event("answer", valid))
        outcome = self.run(self.h.db.answer(interaction_id, conversation_id, answer))
        self.check_outcome(outcome, call, code, call.state != before)
        event(f"answer: {code or call.state}")

    @rule(target=controls, key=calls, forged=st.sampled_from([False, False, False, True]))
    def dismiss(self, key: tuple[str, str], forged: bool) -> tuple[str, str]:
        call = self.model[key]
        control_id = f"ctl-{next(self.names)}"
        sender = "agent-z" if forged else call.conversation.agent_id
        frame = self.h.dismiss_frame(call.conversation, call.call_id, control_id, sender_id=sender)
        before = call.state
        if forged or call.interaction_id is None:
            receipt = "interaction_not_found"
        else:
            code = self.apply(call, Event("dismiss"))
            receipt = "dismissed" if code is None else code
        applied = self.run(apply_received(self.h.db, [frame]))
        self.receipts[(call.conversation.id, control_id)] = (call.call_id, receipt)
        event(f"dismiss: {receipt}")
        if receipt == "interaction_not_found":
            self.not_found_receipts += 1
            (error,) = applied.outbox
            assert msgspec.json.decode(error.body)["type"] == "lineup.v1.error"
        else:
            moved = call.state != before
            assert [o.envelope_id for o in applied.outbox] == (
                [result_id(call.conversation.id, call.call_id)] if moved else []
            )
        return call.conversation.id, control_id

    @rule(control=controls)
    def replay_dismiss(self, control: tuple[str, str]) -> None:
        """The same control id under a new envelope: the same receipt, nothing new."""
        conversation_id, control_id = control
        call_id, _ = self.receipts[control]
        conversation = CONVERSATIONS[conversation_id]
        frame = self.h.dismiss_frame(conversation, call_id, control_id)
        before = self.h.dump("interactions", "outbox", "interaction_controls")
        applied = self.run(apply_received(self.h.db, [frame]))
        assert applied.outbox == []
        assert self.h.dump("interactions", "outbox", "interaction_controls") == before

    @rule(step=st.sampled_from(STEPS_MS))
    def advance_clock(self, step: int) -> None:
        self.h.clock.advance(milliseconds=step)

    @rule(key=calls, offset=st.sampled_from([-1, 0, 0, 1, 60_000]))
    def advance_to_deadline(self, key: tuple[str, str], offset: int) -> None:
        """To just before, exactly at, or past a call's ``expires_at`` (never back)."""
        expires_at = self.model[key].expires_at
        if expires_at is not None:
            target = expires_at + timedelta(milliseconds=offset)
            self.h.clock.set(max(self.now, target))

    @rule()
    def expire_due(self) -> None:
        due = {
            c.interaction_id
            for c in self.model.values()
            if c.state == "pending" and c.expires_at is not None and c.expires_at <= self.now
        }
        for call in self.model.values():
            if call.interaction_id in due:
                call.state = "expired"
        outcomes = self.run(self.h.db.expire_due())
        event(f"expire_due: {min(len(due), 2)}")
        assert {o.interaction.id for o in outcomes if o.interaction} == due
        assert all(o.won and o.outbox is not None for o in outcomes)
        pending = self.run(self.h.db.pending_interactions())
        assert all(at(p.expires_at or "") > self.now for p in pending)

    @rule(key=calls)
    def fail(self, key: tuple[str, str]) -> None:
        call = self.model[key]
        before = call.state
        code = self.apply(call, Event("fail"))
        outcome = self.run(self.h.db.fail_interaction(call.interaction_id or "int_nobody"))
        self.check_outcome(outcome, call, code, call.state != before)

    @rule(
        key=calls,
        order=st.permutations(["answer", "dismiss", "expire", "fail"]),
        valid=st.booleans(),
    )
    def race(self, key: tuple[str, str], order: list[str], valid: bool) -> None:
        """Everything at once: the writer applies them in the order they were launched."""
        call = self.model[key]
        states = {call.state}
        launched: list[Coroutine[Any, Any, Any]] = []
        for kind in order:
            if kind == "answer":
                answer = (VALID_ANSWER if valid else INVALID_ANSWER).get(call.tool, {})
                launched.append(
                    self.h.db.answer(call.interaction_id or "x", call.conversation.id, answer)
                )
                self.apply(call, Event("answer", valid))
            elif kind == "dismiss":
                control_id = f"ctl-{next(self.names)}"
                frame = self.h.dismiss_frame(call.conversation, call.call_id, control_id)
                launched.append(apply_received(self.h.db, [frame]))
                if call.interaction_id is None:
                    receipt = "interaction_not_found"
                    self.not_found_receipts += 1
                else:
                    code = self.apply(call, Event("dismiss"))
                    receipt = "dismissed" if code is None else code
                self.receipts[(call.conversation.id, control_id)] = (call.call_id, receipt)
            elif kind == "expire":
                launched.append(self.h.db.expire_due())
                self.expire_model()
            else:
                launched.append(self.h.db.fail_interaction(call.interaction_id or "x"))
                self.apply(call, Event("fail"))
            states.add(call.state)
        self.run(_gather(launched))
        event(f"race: {call.state}")
        assert len(states - {"pending"}) <= 1  # at most one final state was ever reached

    def expire_model(self) -> None:
        for call in self.model.values():
            if call.state == "pending" and call.expires_at and call.expires_at <= self.now:
                call.state = "expired"

    @precondition(lambda self: len(self.model) > 0)
    @rule()
    def restart(self) -> None:
        self.run(self.h.restart())

    @rule(key=consumes(calls))
    def forget(self, key: tuple[str, str]) -> None:
        """Let the bundle shrink, so later steps focus on fewer calls (the model keeps it)."""

    # --- invariants ------------------------------------------------------------------

    @invariant()
    def one_result_per_call_and_states_match(self) -> None:
        conn = sqlite3.connect(f"file:{self.h.path}?mode=ro", uri=True)
        try:
            rows = {
                row[0]: row
                for row in conn.execute(
                    "SELECT id, conversation_id, call_id, state, result, final_at, code,"
                    " expires_at, created_at FROM interactions"
                )
            }
            results: dict[tuple[str, str], list[tuple[str, str, dict[str, Any]]]] = {}
            errors = 0
            for table in ("timeline", "outbox"):
                for envelope_id, body in conn.execute(
                    f"SELECT envelope_id, body FROM {table}"  # noqa: S608
                ):
                    envelope = msgspec.json.decode(bytes(body))
                    if envelope["type"] == "lineup.v1.error":
                        errors += 1
                    if envelope["type"] != "lineup.v1.tool.result":
                        continue
                    key = (envelope["conversation_id"], envelope["payload"]["call_id"])
                    results.setdefault(key, []).append((table, envelope_id, envelope["payload"]))
            receipts = {
                (row[0], row[1]): (row[2], row[3])
                for row in conn.execute(
                    "SELECT conversation_id, control_id, call_id, outcome FROM interaction_controls"
                )
            }
        finally:
            conn.close()

        assert set(results) <= set(self.model), "a result for a call nobody made"
        assert {r for r in rows} == {
            c.interaction_id for c in self.model.values() if c.interaction_id
        }
        assert receipts == self.receipts
        assert errors == 2 * self.not_found_receipts  # one error envelope each, shown + queued
        for key, call in self.model.items():
            found = results.get(key, [])
            # At most one result: one timeline row and its outbox row, one envelope id.
            assert sorted(table for table, _, _ in found) == (
                [] if call.state == "pending" else ["outbox", "timeline"]
            ), (call, found)
            assert {envelope_id for _, envelope_id, _ in found} <= {result_id(*key)}
            if found:
                payload = found[0][2]
                assert found[1][2] == payload
                assert payload["status"] == STATUS[call.state]
                if call.state in ERROR_CODE:
                    assert payload["error"]["code"] == ERROR_CODE[call.state]
                    assert "result" not in payload
                elif call.state == "answered":
                    assert payload["result"] == call.answer
                elif call.state == "accepted":
                    assert payload["result"] == {}
            if call.interaction_id is None:
                continue
            row = rows[call.interaction_id]
            assert row[3] == call.state, (call, row)
            expires_at = None if row[7] is None else at(row[7])
            assert expires_at == call.expires_at  # set once; restarts never move it
            if expires_at is not None:
                assert expires_at > at(row[8])
            if call.final:
                snapshot = (row[3], row[4], row[5], row[6])
                assert row[5] is not None
                assert self.frozen.setdefault(call.interaction_id, snapshot) == snapshot
            else:
                assert row[4] is None and row[5] is None


async def _gather(coros: list[Coroutine[Any, Any, Any]]) -> list[Any]:
    return list(await asyncio.gather(*coros))


InteractionMachine.TestCase.settings = settings(
    max_examples=500,
    stateful_step_count=18,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
test_interactions_end_once = InteractionMachine.TestCase
