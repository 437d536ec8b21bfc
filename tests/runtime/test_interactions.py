"""Standard interactions in the Runtime's store, with an injected clock, and end to end
against a real AppServer: whatever races, each call gets exactly one ``tool.result``."""

from __future__ import annotations

import asyncio
import itertools
import logging
from collections.abc import AsyncIterator, Awaitable
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup.logs import quiet_libraries
from lineup.protocol import ErrorCode
from lineup.protocol import interactions as ix
from lineup.runtime import InteractionRefused, Runtime
from lineup.runtime import interaction_store as txn
from lineup.runtime.apps import tool_call_store
from lineup.runtime.interactions import RESULT_STATUS, State
from lineup.runtime.records import DismissIntent, InteractionRecord
from tests.conftest import Pair
from tests.runtime.test_runtime import FAST, EventLog, logged_in, running
from tests.support.appserver import AppServerProcess
from tests.support.interactions import (
    CHOICE_ARGS,
    INPUT_ARGS,
    T0,
    Conversation,
    FrozenClock,
    StoreHarness,
    at,
    call,
    record_of,
    result_id,
    result_rows,
    results,
)
from tests.support.receiving import apply_received

A = Conversation("conv-a", "agent-a")
B = Conversation("conv-b", "agent-b")
A2 = Conversation("conv-a2", "agent-a")
"""A second conversation of the same agent."""

SEEN = ("interactions", "outbox", "timeline")


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[StoreHarness]:
    harness = StoreHarness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(A, B, A2)
    yield harness
    await harness.close()


async def start(
    h: StoreHarness, call_id: str, tool: str = ix.CHOICE, conversation: Conversation = A, **kw: Any
) -> InteractionRecord:
    applied = await h.call(conversation, call_id, tool, **kw)
    assert applied.outbox == [] or tool == ix.NOTICE
    (item,) = applied.items
    assert item.interaction is not None, "the call was refused"
    return item.interaction


def one_result(h: StoreHarness, conversation: Conversation, call_id: str) -> dict[str, Any]:
    """The single result of a call: one timeline row and one outbox row, same envelope."""
    rows = [r for r in result_rows(h.path, conversation.id) if r.call_id == call_id]
    assert sorted(r.table for r in rows) == ["outbox", "timeline"], rows
    assert {r.envelope_id for r in rows} == {result_id(conversation.id, call_id)}
    assert rows[0].payload == rows[1].payload
    return rows[0].payload


def error_of(body: bytes) -> tuple[str, str]:
    envelope = msgspec.json.decode(body)
    assert envelope["type"] == "lineup.v1.error"
    return envelope["payload"]["code"], envelope["payload"]["ref_id"]


def no_result(h: StoreHarness, conversation: Conversation, call_id: str) -> None:
    assert [r for r in result_rows(h.path, conversation.id) if r.call_id == call_id] == []


# --- creating ----------------------------------------------------------------------------


async def test_a_call_stores_one_pending_interaction_with_an_absolute_expiry(
    h: StoreHarness,
) -> None:
    record = await start(h, "c1", arguments=CHOICE_ARGS | {"expires_in_ms": 120_000})
    assert record.state == "pending"
    assert at(record.created_at) == T0
    assert at(record.expires_at or "") == T0 + timedelta(minutes=2)
    assert (record.conversation_id, record.call_id, record.agent_id) == ("conv-a", "c1", "agent-a")
    default = await start(h, "c2", ix.CONFIRM)
    assert at(default.expires_at or "") == T0 + timedelta(minutes=15)
    assert await h.db.pending_interactions() == [record, default]
    assert await h.db.next_expiry() == T0 + timedelta(minutes=2)
    no_result(h, A, "c1")
    assert await h.db.outbox() == []


async def test_a_notice_is_accepted_at_once_and_never_expires(h: StoreHarness) -> None:
    applied = await h.call(A, "n1", ix.NOTICE)
    (item,) = applied.items
    assert item.interaction is not None
    assert item.interaction.state == "accepted"
    assert item.interaction.expires_at is None
    assert [o.envelope_id for o in applied.outbox] == [result_id(A.id, "n1")]
    assert one_result(h, A, "n1") == {"call_id": "n1", "status": "accepted", "result": {}}
    assert await h.db.pending_interactions() == []
    before = h.dump()
    h.clock.advance(days=2)
    assert await h.db.expire_due() == []
    refused = await h.db.answer(item.interaction.id, A.id, {"confirmed": True})
    assert (refused.won, refused.code) == (False, ErrorCode.CALL_ALREADY_FINAL)
    dismissed = await h.dismiss(A, "n1", "ctl-n1")
    assert dismissed.outbox == []
    after = h.dump()
    assert {t: after[t] for t in ("interactions", "outbox")} == {
        t: before[t] for t in ("interactions", "outbox")
    }
    assert [r[3] for r in after["interaction_controls"]] == ["call_already_final"]
    one_result(h, A, "n1")


# --- racing to the end -------------------------------------------------------------------

ACTORS = ("answer", "dismiss", "expire", "fail")


@pytest.mark.parametrize("order", list(itertools.permutations(ACTORS)), ids="-".join)
@pytest.mark.parametrize("instant", ["at_expiry", "just_before"])
async def test_concurrent_enders_make_one_final_state_and_one_result(
    h: StoreHarness, instant: str, order: tuple[str, ...]
) -> None:
    record = await start(h, "race")
    expires_at = at(record.expires_at or "")
    h.clock.set(expires_at if instant == "at_expiry" else expires_at - timedelta(milliseconds=1))
    dismiss = h.dismiss_frame(A, "race", "ctl-race")
    launch: dict[str, Awaitable[Any]] = {}
    for actor in order:  # coroutines start, and reach the writer, in this order
        if actor == "answer":
            launch[actor] = h.db.answer(record.id, A.id, {"selected": ["c"]})
        elif actor == "dismiss":
            launch[actor] = apply_received(h.db, [dismiss])
        elif actor == "expire":
            launch[actor] = h.db.expire_due()
        else:
            launch[actor] = h.db.fail_interaction(record.id)
    done = dict(zip(launch, await asyncio.gather(*launch.values()), strict=True))

    if instant == "at_expiry":
        expected = State.EXPIRED  # at expires_at everyone finds it expired
    else:
        first = next(actor for actor in order if actor != "expire")  # not due yet
        expected = {
            "answer": State.ANSWERED,
            "dismiss": State.DISMISSED,
            "fail": State.FAILED,
        }[first]
    final = await h.db.interaction(record.id)
    assert final is not None and final.state == expected
    assert await h.db.pending_interactions() == []
    payload = one_result(h, A, "race")
    assert payload["status"] == RESULT_STATUS[expected]
    if expected is State.ANSWERED:
        assert payload["result"] == {"selected": ["c"]}
    assert len(await h.db.outbox()) == 1

    answer = done["answer"]
    assert answer.won is (expected is State.ANSWERED)
    if not answer.won:
        late = ErrorCode.INTERACTION_EXPIRED if instant == "at_expiry" else None
        assert answer.code == (late or ErrorCode.CALL_ALREADY_FINAL)
    receipt = h.dump("interaction_controls")["interaction_controls"]
    assert [row[3] for row in receipt] == [
        "dismissed"
        if expected is State.DISMISSED
        else (ErrorCode.INTERACTION_EXPIRED if instant == "at_expiry" else "call_already_final")
    ]
    expired_by_timer = [o for o in done["expire"] if o.won]
    assert len(expired_by_timer) == (1 if instant == "at_expiry" and order[0] == "expire" else 0)
    assert done["fail"].won is (expected is State.FAILED)


@pytest.mark.parametrize("instant", ["at_expiry", "just_before"])
async def test_two_tabs_answer_at_once_and_one_wins(h: StoreHarness, instant: str) -> None:
    record = await start(h, "tabs")
    expires_at = at(record.expires_at or "")
    h.clock.set(expires_at if instant == "at_expiry" else expires_at - timedelta(milliseconds=1))
    first, second = await asyncio.gather(
        h.db.answer(record.id, A.id, {"selected": ["a"]}),
        h.db.answer(record.id, A.id, {"selected": ["b"]}),
    )
    payload = one_result(h, A, "tabs")
    if instant == "at_expiry":
        assert not first.won and not second.won
        assert first.code == second.code == ErrorCode.INTERACTION_EXPIRED
        assert payload["status"] == "expired"
    else:
        assert first.won and first.code is None
        assert not second.won and second.code == ErrorCode.CALL_ALREADY_FINAL
        assert payload == {"call_id": "tabs", "status": "completed", "result": {"selected": ["a"]}}


async def test_an_invalid_answer_from_one_tab_does_not_block_the_other(h: StoreHarness) -> None:
    record = await start(h, "tabs")
    bad, good = await asyncio.gather(
        h.db.answer(record.id, A.id, {"selected": ["nope"]}),
        h.db.answer(record.id, A.id, {"selected": ["b"]}),
    )
    assert (bad.won, bad.code) == (False, ErrorCode.ANSWER_INVALID)
    assert good.won
    assert one_result(h, A, "tabs")["result"] == {"selected": ["b"]}


# --- dismiss -----------------------------------------------------------------------------


async def test_a_replayed_dismiss_gets_the_same_receipt_and_writes_nothing(
    h: StoreHarness,
) -> None:
    record = await start(h, "d1")
    applied = await h.dismiss(A, "d1", "ctl-1")
    assert [o.envelope_id for o in applied.outbox] == [result_id(A.id, "d1")]
    carded = [i for i in applied.items if i.interaction is not None]
    assert [i.interaction.state for i in carded if i.interaction] == ["dismissed"]
    assert one_result(h, A, "d1") == {
        "call_id": "d1",
        "status": "dismissed",
        "error": {"code": "interaction_dismissed", "message": "The agent stopped waiting"},
    }
    before = h.dump()

    # The agent replays the control (a new envelope, the same control id).
    replay = await h.dismiss(A, "d1", "ctl-1")
    assert replay.outbox == []
    after = h.dump()
    assert {t: after[t] for t in after if t != "timeline"} == {
        t: before[t] for t in before if t != "timeline"
    }
    new_rows = after["timeline"][len(before["timeline"]) :]
    assert after["timeline"][: len(before["timeline"])] == before["timeline"]
    assert [row[4] for row in new_rows] == ["lineup.v1.interaction.dismiss"]  # only itself
    assert [row[3] for row in after["interaction_controls"]] == ["dismissed"]

    # And the transaction itself answers a replay with the stored receipt.
    outcome = await h.db.db.write(
        txn.dismiss, A.id, DismissIntent("ctl-1", "d1", A.agent_id, "env-x"), T0.isoformat()
    )
    assert (outcome.won, outcome.code, outcome.outbox) == (False, "dismissed", None)
    assert outcome.interaction is not None and outcome.interaction.id == record.id
    assert h.dump(*SEEN) == {t: after[t] for t in SEEN}


async def test_a_replay_repeats_the_first_receipt_even_when_things_changed(
    h: StoreHarness,
) -> None:
    # Dismissing a call that does not exist yet is refused, with one error receipt...
    early = h.dismiss_frame(A, "later", "ctl-early")
    refused = await apply_received(h.db, [early])
    (receipt,) = refused.outbox
    assert error_of(receipt.body) == ("interaction_not_found", early.envelope_id)
    # ...and replaying that control after the call arrived does not dismiss it, and
    # does not send the receipt again.
    record = await start(h, "later")
    replay = await h.dismiss(A, "later", "ctl-early")
    assert replay.outbox == []
    assert [o.envelope_id for o in await h.db.outbox()] == [receipt.envelope_id]
    still = await h.db.interaction(record.id)
    assert still is not None and still.state == "pending"
    controls = h.dump("interaction_controls")["interaction_controls"]
    assert [(row[1], row[3]) for row in controls] == [("ctl-early", "interaction_not_found")]
    no_result(h, A, "later")


async def test_a_dismiss_after_the_answer_is_refused_and_sends_nothing(h: StoreHarness) -> None:
    record = await start(h, "d2")
    assert (await h.db.answer(record.id, A.id, {"selected": ["a"]})).won
    before = h.dump("interactions", "outbox")
    applied = await h.dismiss(A, "d2", "ctl-2")
    assert applied.outbox == []
    assert h.dump("interactions", "outbox") == before
    assert [r[3] for r in h.dump("interaction_controls")["interaction_controls"]] == [
        "call_already_final"
    ]
    assert one_result(h, A, "d2")["status"] == "completed"


async def test_another_agent_cannot_dismiss(h: StoreHarness) -> None:
    record = await start(h, "d3")
    forged = h.dismiss_frame(A, "d3", "ctl-3", sender_id="agent-b")
    applied = await apply_received(h.db, [forged])
    (receipt,) = applied.outbox  # an error receipt, not a result
    assert error_of(receipt.body) == ("interaction_not_found", forged.envelope_id)
    still = await h.db.interaction(record.id)
    assert still is not None and still.state == "pending"
    no_result(h, A, "d3")


# --- duplicates --------------------------------------------------------------------------


@pytest.mark.parametrize("phase", ["pending", "answered", "refused"])
async def test_a_repeated_call_id_creates_nothing_and_sends_nothing(
    h: StoreHarness, phase: str
) -> None:
    if phase == "refused":
        await h.call(A, "dup", ix.CHOICE, arguments={"prompt": "no options"})
    else:
        record = await start(h, "dup")
        if phase == "answered":
            assert (await h.db.answer(record.id, A.id, {"selected": ["a"]})).won
    before = h.dump()
    # The agent sends the same call id again under a new envelope id (other arguments).
    applied = await h.call(A, "dup", ix.CONFIRM)
    assert applied.outbox == []
    (item,) = applied.items
    assert item.interaction is None  # shown as what it is; nothing was started
    after = h.dump()
    for table in ("interactions", "outbox", "refused_calls", "interaction_controls"):
        assert after[table] == before[table], table
    assert after["timeline"][:-1] == before["timeline"]
    assert after["timeline"][-1][2] == item.envelope_id
    if phase != "pending":
        one_result(h, A, "dup")
    else:
        no_result(h, A, "dup")
    audit = await h.db.audit()
    assert [(a.outcome, a.code) for a in audit if a.subject == "conv-a/dup"][-1] == (
        "duplicate",
        "call_already_final",
    )


async def test_the_same_call_id_in_another_conversation_is_another_call(h: StoreHarness) -> None:
    first = await start(h, "shared", conversation=A)
    second = await start(h, "shared", conversation=B)
    assert first.id != second.id
    assert result_id(A.id, "shared") != result_id(B.id, "shared")


# --- forged and late answers -----------------------------------------------------------


@pytest.mark.parametrize(
    ("case", "code"),
    [
        ("unknown_id", ErrorCode.INTERACTION_NOT_FOUND),
        ("other_conversations_id", ErrorCode.INTERACTION_NOT_FOUND),
        ("own_id_named_from_another_conversation", ErrorCode.INTERACTION_NOT_FOUND),
        ("bad_option", ErrorCode.ANSWER_INVALID),
        ("oversized_input", ErrorCode.ANSWER_INVALID),
        ("input_off_pattern", ErrorCode.ANSWER_INVALID),
        ("not_an_object", ErrorCode.ANSWER_INVALID),
    ],
)
async def test_forged_answers_are_refused_and_change_nothing(
    h: StoreHarness, case: str, code: ErrorCode
) -> None:
    choice = await start(h, "c1")
    text = await start(h, "t1", ix.INPUT, arguments=INPUT_ARGS | {"max_length": 16_384})
    theirs = await start(h, "b1", conversation=B)
    before = h.dump()
    interaction_id, conversation_id, value = {
        "unknown_id": ("int_00000000000000000000000000000000", A.id, {"selected": ["a"]}),
        "other_conversations_id": (theirs.id, A.id, {"selected": ["a"]}),
        "own_id_named_from_another_conversation": (choice.id, B.id, {"selected": ["a"]}),
        "bad_option": (choice.id, A.id, {"selected": ["zzz"]}),
        "oversized_input": (text.id, A.id, {"text": "a" * 16_385}),
        "input_off_pattern": (text.id, A.id, {"text": "Not-Lowercase"}),
        "not_an_object": (choice.id, A.id, "a"),
    }[case]
    outcome = await h.db.answer(interaction_id, conversation_id, value)
    assert (outcome.won, outcome.code, outcome.outbox, outcome.card) == (False, code, None, None)
    assert h.dump() == before
    assert [r.state for r in await h.db.pending_interactions()] == ["pending"] * 3
    audit = (await h.db.audit())[-1]
    assert (audit.actor, audit.action, audit.outcome, audit.code) == (
        "user",
        "answer",
        "refused",
        code,
    )


async def test_an_answer_after_expiry_is_refused_and_only_expires_the_interaction(
    h: StoreHarness,
) -> None:
    record = await start(h, "late")
    other = await start(h, "other", arguments=CHOICE_ARGS | {"expires_in_ms": 3_600_000})
    before = h.dump()
    h.clock.set(at(record.expires_at or "") + timedelta(seconds=5))  # the timer has not run
    outcome = await h.db.answer(record.id, A.id, {"selected": ["a"]})
    assert (outcome.won, outcome.code) == (False, ErrorCode.INTERACTION_EXPIRED)
    assert outcome.outbox is not None and outcome.outbox.envelope_id == result_id(A.id, "late")
    after = h.dump()
    # Exactly one change: this interaction is expired and its one result is queued.
    pairs = zip(before["interactions"], after["interactions"], strict=True)
    assert [old[0] for old, new in pairs if old != new] == [record.id]
    expired = await h.db.interaction(record.id)
    assert expired is not None and expired.state == "expired"
    assert expired.final_at is not None and at(expired.final_at) == h.clock.now
    untouched = await h.db.interaction(other.id)
    assert untouched is not None and untouched.state == "pending"
    assert after["timeline"][: len(before["timeline"])] == before["timeline"]
    assert len(after["timeline"]) == len(before["timeline"]) + 1
    assert len(after["outbox"]) == len(before["outbox"]) + 1
    assert one_result(h, A, "late") == {
        "call_id": "late",
        "status": "expired",
        "error": {"code": "interaction_expired", "message": "Nobody answered in time"},
    }
    # The timer finds nothing more to do for it.
    assert await h.db.expire_due() == []


async def test_expiry_fires_at_expires_at_and_not_a_millisecond_before(h: StoreHarness) -> None:
    first = await start(h, "e1", arguments=CHOICE_ARGS | {"expires_in_ms": 60_000})
    second = await start(h, "e2", arguments=CHOICE_ARGS | {"expires_in_ms": 120_000})
    h.clock.set(at(first.expires_at or "") - timedelta(milliseconds=1))
    assert await h.db.expire_due() == []
    h.clock.set(at(first.expires_at or ""))
    (outcome,) = await h.db.expire_due()
    assert outcome.won and outcome.interaction is not None
    assert outcome.interaction.call_id == "e1"
    h.clock.advance(days=1)
    (outcome,) = await h.db.expire_due()
    assert outcome.interaction is not None and outcome.interaction.id == second.id
    assert one_result(h, A, "e1")["status"] == one_result(h, A, "e2")["status"] == "expired"
    assert await h.db.next_expiry() is None


async def test_a_runtime_failure_ends_an_interaction_once(h: StoreHarness) -> None:
    record = await start(h, "f1")
    failed = await h.db.fail_interaction(record.id)
    assert failed.won
    again = await h.db.fail_interaction(record.id)
    assert (again.won, again.code, again.outbox) == (False, ErrorCode.CALL_ALREADY_FINAL, None)
    missing = await h.db.fail_interaction("int_missing")
    assert missing.code == ErrorCode.INTERACTION_NOT_FOUND
    assert one_result(h, A, "f1")["error"]["code"] == "runtime_failed"


# --- refused calls ---------------------------------------------------------------------


async def open_sessions(h: StoreHarness) -> None:
    await h.db.open_app_session("as-a", A.id, A.agent_id, "deploy", "inst-1")
    await h.db.open_app_session("as-a2", A2.id, A2.agent_id, "deploy", "inst-2")
    await h.db.open_app_session("as-other-agent", A.id, "agent-z", "deploy", "inst-3")


@pytest.mark.parametrize(
    ("kwargs", "code", "message_has"),
    [
        ({"app_session_id": "as-missing"}, "app_session_not_found", ""),
        ({"app_session_id": "as-a2"}, "app_session_not_found", ""),  # another conversation's
        ({"app_session_id": "as-other-agent"}, "app_session_not_found", ""),
        ({"revision": "inv-stale"}, "inventory_revision_mismatch", "inv-"),
        ({"tool": "interact.poll"}, "tool_not_advertised", ""),
        ({"tool": "demo.deploy"}, "tool_not_advertised", ""),
        (
            {"arguments": CHOICE_ARGS | {"expires_in_ms": 59_999}},
            "tool_input_invalid",
            "expires_in_ms",
        ),
        (
            {"arguments": {"prompt": "p", "options": []}},
            "tool_input_invalid",
            "(at $.payload.arguments.options)",
        ),
        ({"sender_id": "agent-b"}, "sender_mismatch", ""),
        ({"sender_id": "agent-b", "revision": "inv-stale"}, "sender_mismatch", "sender_mismatch"),
    ],
)
async def test_a_refused_call_creates_nothing_and_gets_one_rejected_result(
    h: StoreHarness, kwargs: dict[str, Any], code: str, message_has: str
) -> None:
    await open_sessions(h)
    tool = kwargs.pop("tool", ix.CHOICE)
    applied = await h.call(A, "bad", tool, **kwargs)
    (item,) = applied.items
    assert item.interaction is None
    assert [o.envelope_id for o in applied.outbox] == [result_id(A.id, "bad")]
    assert h.dump("interactions")["interactions"] == []
    refusals = h.dump("refused_calls")["refused_calls"]
    assert [(r[0], r[1], r[3]) for r in refusals] == [(A.id, "bad", code)]
    payload = one_result(h, A, "bad")
    assert payload["status"] == "rejected"
    assert payload["error"]["code"] == code
    assert message_has in payload["error"]["message"]
    assert "result" not in payload


async def test_a_call_naming_another_runtime_s_newer_inventory_is_left_to_it(
    h: StoreHarness,
) -> None:
    """The person's other Runtime (the desktop window beside the demo) published
    ``inv-7``; this one is at ``inv-1``: that call is the other's to answer, so this one
    creates nothing and answers nothing (a stale revision is refused, as above)."""
    applied = await h.call(A, "theirs", ix.CHOICE, revision="inv-7")
    (item,) = applied.items
    assert item.interaction is None
    assert applied.outbox == []
    assert h.dump("interactions")["interactions"] == []
    assert h.dump("refused_calls")["refused_calls"] == []


@pytest.mark.parametrize("closed", [False, True])
async def test_an_app_session_of_this_conversation_and_agent_is_valid_context(
    h: StoreHarness, closed: bool
) -> None:
    await open_sessions(h)
    if closed:
        assert await h.db.close_app_session("as-a")
        assert not await h.db.close_app_session("as-a")  # closed once; not revived below
    record = await start(h, "ctx", app_session_id="as-a")
    assert (record.state, record.app_session_id) == ("pending", "as-a")
    sessions = h.dump("app_sessions")["app_sessions"]
    assert {row[0]: row[5] for row in sessions}["as-a"] == ("closed" if closed else "open")


# --- against a real AppServer ----------------------------------------------------------


async def test_choice_answered_once_reaches_the_agent_once(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    log = EventLog(runtime)
    async with running(runtime):
        await call(pair, ix.CHOICE, CHOICE_ARGS, "c1")
        await log.until(lambda: record_of(log, "c1") is not None)
        record = record_of(log, "c1")
        assert record is not None and record.state == "pending"
        answered = await runtime.answer(record.id, pair.conversation_id, {"selected": ["b"]})
        assert answered.state == "answered"
        with pytest.raises(InteractionRefused) as refused:
            await runtime.answer(record.id, pair.conversation_id, {"selected": ["a"]})
        assert refused.value.code == "call_already_final"
        await log.until_async(lambda: results_count(pair, 1))
    assert await results(pair) == [
        {"call_id": "c1", "status": "completed", "result": {"selected": ["b"]}}
    ]
    await runtime.close()


async def results_count(pair: Pair, count: int) -> bool:
    return len(await results(pair)) >= count


async def test_dismiss_refusal_and_expiry_reach_the_agent_once_each(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    clock = FrozenClock()
    setup = await logged_in(appserver, pair, tmp_path)
    await setup.close()
    runtime = Runtime(tmp_path, backoff=FAST, clock=clock)
    await runtime.open()
    log = EventLog(runtime)
    async with running(runtime):
        await call(pair, ix.CONFIRM, {"prompt": "Deploy?"}, "to-dismiss")
        await call(pair, ix.INPUT, {"prompt": "Name?", "expires_in_ms": 60_000}, "to-expire")
        await call(pair, ix.CONFIRM, {"prompt": "Old?"}, "stale", revision="inv-stale")
        await call(pair, ix.NOTICE, {"text": "FYI"}, "notice")
        await log.until(lambda: record_of(log, "to-expire") is not None)
        dismiss = pair.agent.envelope(
            pair.conversation_id,
            kind="lineup.v1.interaction.dismiss",
            payload={"control_id": "ctl-1", "call_id": "to-dismiss"},
        )
        assert (await pair.agent.post(pair.conversation_id, dismiss)).status_code == 201
        await log.until(lambda: getattr(record_of(log, "to-dismiss"), "state", "") == "dismissed")
        expiring = record_of(log, "to-expire")
        assert expiring is not None
        clock.set(at(expiring.expires_at or ""))
        assert await runtime.expire_due() == 1
        with pytest.raises(InteractionRefused) as late:
            await runtime.answer(expiring.id, pair.conversation_id, {"text": "bob"})
        assert late.value.code == "interaction_expired"
        await log.until_async(lambda: results_count(pair, 4))
    by_call = {r["call_id"]: r for r in await results(pair)}
    assert len(await results(pair)) == 4
    assert by_call["to-dismiss"]["status"] == "dismissed"
    assert by_call["to-expire"]["status"] == "expired"
    assert by_call["stale"]["status"] == "rejected"
    assert by_call["stale"]["error"]["code"] == "inventory_revision_mismatch"
    assert by_call["notice"] == {"call_id": "notice", "status": "accepted", "result": {}}
    # The results went out under their deterministic ids, once each.
    stored = await pair.agent.read_all(pair.conversation_id)
    ids = [s["envelope"]["id"] for s in stored if s["envelope"]["type"] == "lineup.v1.tool.result"]
    assert sorted(ids) == sorted(result_id(pair.conversation_id, c) for c in by_call)
    await runtime.close()


async def test_answers_and_prompts_never_reach_the_audit_or_the_logs(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    quiet_libraries()  # as `lineup` configures logging: our loggers at DEBUG, the rest held
    runtime = await logged_in(appserver, pair, tmp_path)
    log = EventLog(runtime)
    async with running(runtime):
        await call(pair, ix.INPUT, {"prompt": "prompt-MARKER-17"}, "secret-input")
        await log.until(lambda: record_of(log, "secret-input") is not None)
        record = record_of(log, "secret-input")
        assert record is not None
        with pytest.raises(InteractionRefused):
            await runtime.answer(record.id, pair.conversation_id, {"text": "x" * 3000})
        runtime.set_draft(record.id, "draft-MARKER-17")
        await runtime.answer(record.id, pair.conversation_id, {"text": "answer-MARKER-17"})
        await log.until_async(lambda: results_count(pair, 1))
    assert await results(pair) == [
        {"call_id": "secret-input", "status": "completed", "result": {"text": "answer-MARKER-17"}}
    ]
    assert runtime.drafts() == {}  # an answered interaction keeps no draft
    audit = await runtime.store.audit()
    assert {(a.action, a.outcome) for a in audit} >= {("answer", "refused"), ("answer", "answered")}
    for row in audit:
        assert "MARKER" not in repr(row)
    messages = {(r.name, r.getMessage()) for r in caplog.records}
    assert ("lineup.runtime", "interaction ended") in messages
    assert ("lineup.runtime", "answer refused") in messages
    for entry in caplog.records:
        assert "MARKER" not in entry.getMessage()
        assert "MARKER" not in repr(entry.__dict__), entry.name
    await runtime.close()


async def test_a_call_id_spent_on_an_app_tool_call_cannot_start_an_interaction(
    h: StoreHarness,
) -> None:
    inserted = await h.db.db.write(
        tool_call_store.insert,
        A.id,
        "shared",
        "env-app-call",
        "test-app.echo",
        "2026-01-01T00:00:00.000+00:00",
    )
    assert not inserted.duplicate
    before = h.dump()
    applied = await h.call(A, "shared", ix.CONFIRM)
    assert applied.outbox == []
    (item,) = applied.items
    assert item.interaction is None
    after = h.dump()
    for table in ("interactions", "outbox", "refused_calls", "tool_calls"):
        assert after[table] == before[table], table
