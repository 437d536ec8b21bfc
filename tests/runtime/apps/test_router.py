"""The Tool Router (``lineup.runtime.apps.router``) on a real store and an injected
clock: every rejection code of spec 002 §8 it produces, launch / foreground / direct /
operation routing, output validation, timeouts, delivery on ack; and one call end to
end against a real AppServer."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup import wire
from lineup.formats.manifest import load_manifest
from lineup.protocol import ErrorCode
from lineup.runtime import Received, RuntimeStore, classify
from lineup.runtime.apps import registry
from lineup.runtime.apps.focus import MAX_LIVE
from lineup.runtime.apps.instance_store import Action, Op
from lineup.runtime.apps.lifecycle import State as AppState
from lineup.runtime.apps.router import ToolRouter
from lineup.runtime.apps.tool_call_store import StoredToolCall
from lineup.runtime.apps.tool_calls import State
from lineup.runtime.events import AppsChanged
from tests.conftest import Pair
from tests.runtime.test_runtime import EventLog, logged_in, running
from tests.support.app_kernel import KernelHarness, Queued, queued
from tests.support.appserver import AppServerProcess
from tests.support.interactions import T0, Conversation, envelope, result_id, results
from tests.support.receiving import Applied, apply_received

MANIFEST = Path(__file__).parents[2] / "formats" / "manifests" / "valid" / "test-app.json"
APP_ID = "dev.lineup.test-app"
SCOPE = "test-app"
C1 = Conversation("conv-1", "agent-1")
C2 = Conversation("conv-2", "agent-1")
SCOPES = frozenset({"chat", SCOPE})


@dataclass
class RouterHarness(KernelHarness):
    """A kernel harness whose ``tool.call``s go through the Tool Router as the
    Runtime's apply loop sends them (``receive.apply_batch``)."""

    router: ToolRouter | None = None
    revision: str = registry.INITIAL_REVISION
    applied: list[Applied] = field(default_factory=list)

    async def open(self) -> RuntimeStore:
        store = await super().open()
        self.router = ToolRouter(store, clock=self.clock)
        return store

    @property
    def r(self) -> ToolRouter:
        assert self.router is not None
        return self.router

    async def install(self, *, enable: bool = True) -> registry.Installed:
        manifest = load_manifest(MANIFEST.read_bytes())
        installed: registry.Installed = await self.db.db.write(
            lambda conn, now: registry.install(conn, manifest, now, enable=enable), self.now()
        )
        self.revision = installed.inventory.revision
        return installed

    async def set_enabled(self, enabled: bool) -> None:
        def txn(conn: sqlite3.Connection, now: str) -> str:
            registry.set_enabled(conn, APP_ID, enabled, now)
            return registry.refresh_inventory(conn, now)[0].revision

        self.revision = await self.db.db.write(txn, self.now())

    def tool_call(
        self,
        call_id: str,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        revision: str | None = None,
        target: dict[str, Any] | None = None,
        app_session_id: str | None = None,
        sender_id: str | None = None,
    ) -> Received:
        payload: dict[str, Any] = {
            "call_id": call_id,
            "tool": tool,
            "inventory_revision": revision or self.revision,
            "arguments": arguments or {},
        }
        if app_session_id is not None:
            payload["app_session_context"] = {"app_session_id": app_session_id}
        body = envelope(C1.id, "lineup.v1.tool.call", payload, sender_id=sender_id or C1.agent_id)
        if target is not None:
            decoded = msgspec.json.decode(body)
            decoded["target"] = target
            body = msgspec.json.encode(decoded)
        frame = wire.EnvelopeFrame(
            conversation_id=C1.id, seq=self.next_seq(C1.id), envelope=msgspec.Raw(body)
        )
        return classify(frame, SCOPES)

    async def call(self, call_id: str, tool: str, *args: Any, **kwargs: Any) -> Applied:
        applied = await apply_received(self.db, [self.tool_call(call_id, tool, *args, **kwargs)])
        self.applied.append(applied)
        return applied

    async def stored_call(self, call_id: str) -> StoredToolCall | None:
        from lineup.runtime.apps import tool_call_store

        return await self.db.db.read(tool_call_store.get, C1.id, call_id)

    def results(self) -> list[Queued]:
        return [q for q in queued(self.path) if q.type == "lineup.v1.tool.result"]

    def results_for(self, call_id: str) -> list[dict[str, Any]]:
        return [q.payload for q in self.results() if q.payload["call_id"] == call_id]


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[RouterHarness]:
    harness = RouterHarness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(C1)
    yield harness
    await harness.close()


def rejected_code(h: RouterHarness, call_id: str) -> str:
    (result,) = h.results_for(call_id)
    assert result["status"] == "rejected"
    return str(result["error"]["code"])


async def launched(h: RouterHarness, call_id: str = "launch") -> str:
    """Launch the test app through its launch tool and report it started."""
    await h.call(call_id, "test-app.open")
    call = await h.stored_call(call_id)
    assert call is not None
    assert call.instance_id is not None
    receipt = await h.r.app_started(call.instance_id)
    assert receipt.accepted
    return call.instance_id


# --- rejections ---------------------------------------------------------------------------


async def test_a_stale_revision_is_inventory_revision_mismatch(h: RouterHarness) -> None:
    await h.install()
    assert h.revision == "inv-2"
    await h.call("c1", "test-app.echo", {"text": "hi"}, revision="inv-1")
    assert rejected_code(h, "c1") == ErrorCode.INVENTORY_REVISION_MISMATCH
    assert "inv-2" in h.results_for("c1")[0]["error"]["message"]


@pytest.mark.parametrize("tool", ["test-app.nope", "other-app.echo"])
async def test_an_unknown_tool_is_tool_not_advertised(h: RouterHarness, tool: str) -> None:
    await h.install()
    await h.call("c1", tool)
    assert rejected_code(h, "c1") == ErrorCode.TOOL_NOT_ADVERTISED


async def test_a_disabled_app_s_tool_is_app_disabled(h: RouterHarness) -> None:
    # Under the current revision a disabled app's tool is not advertised; the agent
    # is told why (see tests/runtime/apps/test_inventory_policy.py for the whole rule).
    await h.install()
    await h.set_enabled(False)
    assert h.revision == "inv-3"
    await h.call("c1", "test-app.echo", {"text": "hi"})
    assert rejected_code(h, "c1") == ErrorCode.APP_DISABLED
    assert await h.stored_call("c1") is None


async def test_bad_arguments_are_tool_input_invalid_with_the_path(h: RouterHarness) -> None:
    await h.install()
    await h.call("c1", "test-app.echo", {"text": 5})
    assert rejected_code(h, "c1") == ErrorCode.TOOL_INPUT_INVALID
    assert h.results_for("c1")[0]["error"]["message"].startswith("$.payload.arguments.text")


async def test_a_direct_tool_without_an_instance_is_app_instance_not_found(
    h: RouterHarness,
) -> None:
    await h.install()
    await h.call("c1", "test-app.echo", {"text": "hi"})
    await h.call("c2", "test-app.slow", {"steps": 2})
    assert rejected_code(h, "c1") == ErrorCode.APP_INSTANCE_NOT_FOUND
    assert rejected_code(h, "c2") == ErrorCode.APP_INSTANCE_NOT_FOUND


async def test_a_target_of_another_scope_is_app_scope_mismatch(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h)
    await h.call("c1", "test-app.echo", {"text": "hi"}, target={"app_scope": "chat"})
    await h.call(
        "c2", "test-app.echo", {"text": "hi"}, target={"instance_id": "chat.0123456789abcdef"}
    )
    assert rejected_code(h, "c1") == ErrorCode.APP_SCOPE_MISMATCH
    assert rejected_code(h, "c2") == ErrorCode.APP_INSTANCE_NOT_FOUND
    await h.call("c3", "test-app.echo", {"text": "hi"}, target={"instance_id": instance_id})
    call = await h.stored_call("c3")
    assert call is not None
    assert call.instance_id == instance_id


async def test_a_foreign_sender_is_refused(h: RouterHarness) -> None:
    await h.install()
    await h.call("c1", "test-app.open", sender_id="agent-2")
    assert rejected_code(h, "c1") == ErrorCode.SENDER_MISMATCH


async def test_a_refusal_stores_no_call_and_spends_the_call_id(h: RouterHarness) -> None:
    await h.install()
    await h.call("c1", "test-app.echo", {"text": 5})
    assert h.dump("tool_calls")["tool_calls"] == []
    assert [row[1] for row in h.dump("refused_calls")["refused_calls"]] == ["c1"]
    await h.call("c1", "test-app.open")  # a valid call under a spent id: nothing
    assert h.dump("tool_calls")["tool_calls"] == []
    assert len(h.results_for("c1")) == 1
    assert h.k.instances().records == {}


async def test_a_call_id_already_used_does_nothing(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h, "c1")
    before = h.dump("tool_calls", "outbox", "refused_calls")
    applied = await h.call("c1", "test-app.open")
    assert applied.outbox == []
    assert not [e for e in applied.events if isinstance(e, AppsChanged)]
    assert h.dump("tool_calls", "outbox", "refused_calls") == before
    assert list(h.k.instances().records) == [instance_id]


async def test_an_invalid_result_is_tool_output_invalid_and_the_call_keeps_running(
    h: RouterHarness,
) -> None:
    await h.install()
    instance_id = await launched(h)
    await h.call("c1", "test-app.echo", {"text": "hi"})
    refused = await h.r.app_complete(instance_id, "c1", {"text": 7})
    assert (refused.accepted, refused.code) == (False, ErrorCode.TOOL_OUTPUT_INVALID)
    not_an_object = await h.r.app_complete(instance_id, "c1", ["hi"])
    assert not_an_object.code == ErrorCode.TOOL_OUTPUT_INVALID
    call = await h.stored_call("c1")
    assert call is not None
    assert call.state is State.RUNNING
    assert h.results_for("c1") == []
    accepted = await h.r.app_complete(instance_id, "c1", {"text": "hi"})
    assert accepted.accepted
    assert h.results_for("c1") == [
        {"call_id": "c1", "status": "completed", "result": {"text": "hi"}}
    ]


async def test_a_second_result_is_call_already_final(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h)
    await h.call("c1", "test-app.echo", {"text": "hi"})
    assert (await h.r.app_complete(instance_id, "c1", {"text": "one"})).accepted
    again = await h.r.app_complete(instance_id, "c1", {"text": "two"})
    cancel = await h.r.app_cancel(instance_id, "c1")
    assert again.code == cancel.code == ErrorCode.CALL_ALREADY_FINAL
    assert again.outcome is not None
    assert again.outcome.status == "completed"
    assert len(h.results_for("c1")) == 1


async def test_only_the_bound_instance_may_answer(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h)
    await h.call("c1", "test-app.echo", {"text": "hi"})
    other = await h.r.app_complete("test-app.ffffffffffffffff", "c1", {"text": "x"})
    unknown = await h.r.app_complete(instance_id, "nope", {"text": "x"})
    assert other.code == unknown.code == ErrorCode.CALL_NOT_FOUND
    assert other.outcome is None


# --- routing ------------------------------------------------------------------------------


async def test_launch_opens_an_instance_and_waits_for_it(h: RouterHarness) -> None:
    await h.install()
    applied = await h.call("c1", "test-app.open")
    call = await h.stored_call("c1")
    assert call is not None
    assert call.state is State.WAITING_FOR_APP
    assert call.deadline is not None
    assert (call.deadline - call.received_at).total_seconds() == 30
    assert applied.expiry_changed
    instance_id = call.instance_id
    assert instance_id is not None
    assert instance_id.startswith("test-app.")
    record = h.k.record(instance_id)  # the kernel adopted the value
    assert record is not None
    assert record.state is AppState.STARTING
    assert record.conversation_id == C1.id
    assert h.k.instances().focus == instance_id  # requires_foreground
    assert [q.type for q in queued(h.path)] == ["lineup.v1.app_session.opened"]
    assert [i.envelope_id for i in applied.outbox] == [queued(h.path)[0].envelope_id]
    # Completing before the app started is not a move.
    early = await h.r.app_complete(instance_id, "c1", {"instance_id": instance_id})
    assert early.code == ErrorCode.LIFECYCLE_DENIED
    assert (await h.r.app_started(instance_id)).accepted
    running_call = await h.stored_call("c1")
    assert running_call is not None
    assert running_call.state is State.RUNNING
    done = await h.r.app_complete(instance_id, "c1", {"instance_id": instance_id})
    assert done.accepted
    assert h.k.instances().foreground == instance_id


async def test_a_second_launch_opens_a_second_instance(h: RouterHarness) -> None:
    await h.install()
    first = await launched(h, "c1")
    second = await launched(h, "c2")
    assert first != second
    assert h.k.instances().focus == second


async def test_direct_goes_to_the_live_instance(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h)
    await h.call("c1", "test-app.echo", {"text": "hi"})
    call = await h.stored_call("c1")
    assert call is not None
    assert (call.instance_id, call.state) == (instance_id, State.RUNNING)


async def test_direct_on_a_starting_instance_waits_for_it(h: RouterHarness) -> None:
    await h.install()
    await h.call("launch", "test-app.open")
    launch = await h.stored_call("launch")
    assert launch is not None
    assert launch.instance_id is not None
    await h.call("c1", "test-app.echo", {"text": "hi"})
    call = await h.stored_call("c1")
    assert call is not None
    assert (call.instance_id, call.state) == (launch.instance_id, State.WAITING_FOR_APP)
    await h.r.app_started(launch.instance_id)
    for call_id in ("launch", "c1"):
        ready = await h.stored_call(call_id)
        assert ready is not None
        assert ready.state is State.RUNNING


async def test_foreground_opens_an_instance_when_none_runs(h: RouterHarness) -> None:
    await h.install()
    await h.call("c1", "test-app.show")
    call = await h.stored_call("c1")
    assert call is not None
    assert call.state is State.WAITING_FOR_APP
    assert call.instance_id is not None
    assert h.k.instances().focus == call.instance_id


async def test_foreground_brings_the_live_instance_to_the_front(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h)
    assert (await h.k.request_background(instance_id)).accepted
    assert h.k.instances().focus != instance_id
    await h.call("c1", "test-app.show")
    call = await h.stored_call("c1")
    assert call is not None
    assert (call.instance_id, call.state) == (instance_id, State.RUNNING)
    assert h.k.instances().foreground == instance_id
    assert len(h.k.instances().records) == 1


async def test_operation_times_out_on_the_clock(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h)
    assert (await h.r.app_complete(instance_id, "launch", {"instance_id": instance_id})).accepted
    await h.call("c1", "test-app.slow", {"steps": 3})
    assert (await h.r.app_progress(instance_id, "c1")).accepted
    h.clock.advance(seconds=59)
    assert await h.r.due() == []
    assert await h.r.next_deadline() == T0 + timedelta(seconds=60)
    h.clock.advance(seconds=1)
    (outcome,) = await h.r.due()
    assert outcome.call is not None
    assert outcome.call.state is State.FAILED
    assert h.results_for("c1") == [
        {
            "call_id": "c1",
            "status": "failed",
            "error": {"code": "tool_timeout", "message": "The call did not finish in time"},
        }
    ]
    assert h.sent[-1].envelope_id == result_id(C1.id, "c1")
    late = await h.r.app_complete(instance_id, "c1", {"done": True})
    assert late.code == ErrorCode.CALL_ALREADY_FINAL


async def test_fail_and_cancel_write_one_result_each(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h)
    await h.call("c1", "test-app.echo", {"text": "a"})
    await h.call("c2", "test-app.echo", {"text": "b"})
    assert (await h.r.app_fail(instance_id, "c1", "disk_full", "no room")).accepted
    assert (await h.r.app_cancel(instance_id, "c2")).accepted
    assert h.results_for("c1") == [
        {"call_id": "c1", "status": "failed", "error": {"code": "disk_full", "message": "no room"}}
    ]
    assert h.results_for("c2")[0]["error"]["code"] == ErrorCode.APP_CANCELLED
    with pytest.raises(ValueError, match="not an error code"):
        await h.r.app_fail(instance_id, "c1", "Not A Code")


async def test_the_ack_of_the_result_marks_the_call_delivered(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h)
    await h.call("c1", "test-app.echo", {"text": "hi"})
    await h.r.app_complete(instance_id, "c1", {"text": "hi"})
    assert await h.r.delivered(C1.id, "res_unrelated") is None
    outcome = await h.r.delivered(C1.id, result_id(C1.id, "c1"))
    assert outcome is not None
    assert outcome.call is not None
    assert outcome.call.state is State.COMPLETED
    assert await h.r.delivered(C1.id, result_id(C1.id, "c1")) is None  # once
    assert len(h.results_for("c1")) == 1


async def test_closing_the_instance_cancels_its_routed_calls(h: RouterHarness) -> None:
    await h.install()
    instance_id = await launched(h)
    await h.call("c1", "test-app.slow", {"steps": 3})
    assert (await h.k.request_close(instance_id)).accepted
    assert h.results_for("c1")[0]["error"]["code"] == ErrorCode.APP_CLOSED
    await h.call("c2", "test-app.echo", {"text": "hi"})  # a stopping instance takes none
    assert rejected_code(h, "c2") == ErrorCode.APP_INSTANCE_NOT_FOUND


async def test_a_refused_open_rejects_the_call(h: RouterHarness) -> None:
    await h.install()
    for n in range(MAX_LIVE):  # the kernel's limit of live instances
        op = Op(Action.OPEN, f"test-app.{n:016x}", app_scope=SCOPE, conversation_id=C1.id)
        if (await h.k.apply(op)).refusal is not None:
            break
    await h.call("c1", "test-app.open")
    assert rejected_code(h, "c1") == ErrorCode.LIFECYCLE_DENIED
    assert h.dump("tool_calls")["tool_calls"] == []


# --- how a call finds its instance: never a sibling -----------------------------------------


def message_of(h: RouterHarness, call_id: str) -> str:
    (result,) = h.results_for(call_id)
    return str(result["error"]["message"])


async def calls_of(h: RouterHarness, instance_id: str) -> list[str]:
    rows = h.dump("tool_calls")["tool_calls"]
    return [r[1] for r in rows if instance_id in r]


async def two_open(h: RouterHarness) -> tuple[str, str]:
    await h.install()
    return await launched(h, "open-a"), await launched(h, "open-b")


async def test_a_call_bound_to_a_closed_instance_is_refused_while_a_sibling_is_live(
    h: RouterHarness,
) -> None:
    a, b = await two_open(h)
    a_session = await h.k.app_session_id(a)
    assert (await h.k.request_close(a)).accepted
    assert (await h.k.closed(a)).accepted
    assert h.k.instances().focus == b  # the sibling is in front, and takes nothing
    b_before = h.k.record(b)
    b_calls = await calls_of(h, b)

    await h.call("by-target", "test-app.echo", {"text": "x"}, target={"instance_id": a})
    await h.call("by-session", "test-app.slow", {"steps": 1}, app_session_id=a_session)
    await h.call("shown", "test-app.show", target={"instance_id": a})
    for call_id in ("by-target", "by-session", "shown"):
        assert rejected_code(h, call_id) == ErrorCode.APP_INSTANCE_NOT_FOUND
        assert message_of(h, call_id) == "the instance is closed"
        assert await h.stored_call(call_id) is None
    assert await calls_of(h, b) == b_calls
    assert h.k.record(b) == b_before
    assert h.k.instances().focus == b
    assert len(h.k.instances().live()) == 1  # "shown" opened nothing either
    spent = {row[1] for row in h.dump("refused_calls")["refused_calls"]}
    assert spent == {"by-target", "by-session", "shown"}


async def test_a_bound_call_says_what_became_of_its_instance(h: RouterHarness) -> None:
    a, b = await two_open(h)
    assert (await h.k.request_close(a)).accepted  # stopping: its close is under way
    await h.call("stopping", "test-app.echo", {"text": "x"}, target={"instance_id": a})
    assert rejected_code(h, "stopping") == ErrorCode.APP_INSTANCE_NOT_FOUND
    assert "stopping" in message_of(h, "stopping")
    assert (await h.k.fail(b, error="renderer_crashed")).accepted
    await h.call("failed", "test-app.echo", {"text": "x"}, target={"instance_id": b})
    assert message_of(h, "failed") == "the instance failed"
    gone = "test-app.0000000000000000"
    await h.call("unknown", "test-app.echo", {"text": "x"}, target={"instance_id": gone})
    assert rejected_code(h, "unknown") == ErrorCode.APP_INSTANCE_NOT_FOUND
    assert message_of(h, "unknown").startswith("no such instance")


async def test_a_call_bound_to_another_conversation_s_instance_is_refused(
    h: RouterHarness,
) -> None:
    await h.install()
    await h.db.upsert_conversation(C2.id, C2.agent_id, "")
    theirs = "test-app.00000000000000c2"
    op = Op(Action.OPEN, theirs, app_scope=SCOPE, conversation_id=C2.id)
    assert (await h.k.apply(op)).refusal is None
    assert (await h.r.app_started(theirs)).accepted
    await h.call("c1", "test-app.echo", {"text": "x"}, target={"instance_id": theirs})
    assert rejected_code(h, "c1") == ErrorCode.APP_INSTANCE_NOT_FOUND
    assert message_of(h, "c1") == "the instance is not of this conversation"
    # Nor does an unbound call of this conversation find it.
    await h.call("c2", "test-app.echo", {"text": "x"})
    assert rejected_code(h, "c2") == ErrorCode.APP_INSTANCE_NOT_FOUND
    assert await calls_of(h, theirs) == []


async def test_an_unbound_call_with_two_instances_open_is_ambiguous(h: RouterHarness) -> None:
    a, b = await two_open(h)
    before = h.dump("tool_calls", "app_instances", "app_focus")
    for call_id, tool, arguments in (
        ("echo", "test-app.echo", {"text": "x"}),
        ("slow", "test-app.slow", {"steps": 1}),
        ("show", "test-app.show", {}),  # foreground: says which, rather than open a third
    ):
        await h.call(call_id, tool, arguments)
        assert rejected_code(h, call_id) == ErrorCode.APP_INSTANCE_AMBIGUOUS
        assert message_of(h, call_id).startswith("2 instances of the app are open here")
    assert h.dump("tool_calls", "app_instances", "app_focus") == before
    assert sorted(r.instance_id for r in h.k.instances().live()) == sorted([a, b])
    # Named, each goes where it says, whichever holds focus.
    assert h.k.instances().focus == b
    await h.call("to-a", "test-app.echo", {"text": "x"}, target={"instance_id": a})
    call = await h.stored_call("to-a")
    assert call is not None
    assert (call.instance_id, call.state) == (a, State.RUNNING)


async def test_an_unbound_call_goes_to_the_one_open_instance(h: RouterHarness) -> None:
    a, b = await two_open(h)
    assert (await h.k.request_close(b)).accepted
    assert (await h.k.closed(b)).accepted
    assert (await h.k.request_background(a)).accepted  # out of focus: still the one
    assert h.k.instances().focus is None
    await h.call("c1", "test-app.echo", {"text": "hi"})
    call = await h.stored_call("c1")
    assert call is not None
    assert (call.instance_id, call.state) == (a, State.RUNNING)


async def test_foreground_bound_brings_that_instance_forward(h: RouterHarness) -> None:
    a, b = await two_open(h)
    assert h.k.instances().focus == b
    await h.call("show-a", "test-app.show", target={"instance_id": a})
    call = await h.stored_call("show-a")
    assert call is not None
    assert call.instance_id == a
    assert h.k.instances().foreground == a
    assert len(h.k.instances().live()) == 2


async def test_every_result_names_the_instance_that_ran_the_call(h: RouterHarness) -> None:
    a, b = await two_open(h)
    await h.call("echo", "test-app.echo", {"text": "hi"}, target={"instance_id": a})
    assert (await h.r.app_complete(a, "echo", {"text": "hi"})).accepted
    assert (await h.r.app_complete(b, "open-b", {"instance_id": b})).accepted
    await h.call("refused", "test-app.echo", {"text": "x"})  # ambiguous: it ran nowhere
    targets = {
        q.payload["call_id"]: q.target for q in h.results() if q.type == "lineup.v1.tool.result"
    }
    assert targets == {
        "echo": {"instance_id": a},
        "open-b": {"instance_id": b},
        "refused": None,
    }


# --- end to end ---------------------------------------------------------------------------


async def test_a_launch_call_completed_by_the_app_reaches_the_agent_once(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    await runtime.registry.install(MANIFEST.read_bytes(), enable=True)
    revision = runtime.inventory.revision
    assert revision == "inv-2"
    log = EventLog(runtime)
    async with running(runtime):
        body = pair.agent.envelope(
            pair.conversation_id,
            kind="lineup.v1.tool.call",
            payload={
                "call_id": "open-1",
                "tool": "test-app.open",
                "inventory_revision": revision,
                "arguments": {},
            },
        )
        assert (await pair.agent.post(pair.conversation_id, body)).status_code == 201
        await log.until(lambda: runtime.apps.instances().records)
        (instance_id,) = runtime.apps.instances().records
        assert (await runtime.tools.app_started(instance_id)).accepted
        receipt = await runtime.tools.app_complete(
            instance_id, "open-1", {"instance_id": instance_id}
        )
        assert receipt.accepted

        async def delivered() -> bool:
            call = await runtime.store.db.read(
                lambda conn: conn.execute(
                    "SELECT state FROM tool_calls WHERE call_id = 'open-1'"
                ).fetchone()
            )
            return call is not None and call[0] == "completed"

        await log.until_async(delivered)
    assert await results(pair) == [
        {"call_id": "open-1", "status": "completed", "result": {"instance_id": instance_id}}
    ]
    stored = await pair.agent.read_all(pair.conversation_id)
    kinds = [s["envelope"]["type"] for s in stored]
    assert "lineup.v1.app_session.opened" in kinds
    inventories = [
        s["envelope"]["payload"]["revision"]
        for s in stored
        if s["envelope"]["type"] == "lineup.v1.client.inventory"
    ]
    assert inventories[-1] == "inv-2"
    await runtime.close()


async def test_a_launch_naming_a_closed_sub_session_continues_it(h: RouterHarness) -> None:
    await h.install()
    old = await launched(h, "c1")
    old_sid = await h.k.app_session_id(old)
    assert old_sid is not None
    assert (await h.k.request_close(old)).accepted
    assert (await h.k.closed(old)).accepted

    await h.call("c2", "test-app.open", app_session_id=old_sid)
    call = await h.stored_call("c2")
    assert call is not None
    assert call.instance_id not in (None, old)
    record = h.k.record(call.instance_id or "")
    assert record is not None
    assert record.parent_instance_id == old
    opened = [q.payload for q in queued(h.path) if q.type == "lineup.v1.app_session.opened"]
    assert [o.get("continues_app_session_id") for o in opened] == [None, old_sid]
    assert opened[1]["app_session_id"] != old_sid
    # A direct call naming the closed sub-session finds no live instance: no revival.
    await h.call("c3", "test-app.echo", {"text": "hi"}, app_session_id=old_sid)
    assert rejected_code(h, "c3") == ErrorCode.APP_INSTANCE_NOT_FOUND


async def test_an_app_can_neither_answer_fail_nor_cancel_an_interaction(h: RouterHarness) -> None:
    from lineup.runtime import interaction_store

    await h.install()
    instance_id = await launched(h)
    sid = await h.k.app_session_id(instance_id)
    assert sid is not None
    question = {"prompt": "Ship it?", "options": [{"id": "y", "label": "Yes"}]}
    # (the harness classifies with the Runtime's default inventory: inv-1)
    await h.call("q1", "interact.choice", question, app_session_id=sid, revision="inv-1")
    asked = await h.db.db.read(interaction_store.by_call, C1.id, "q1")
    assert asked is not None and asked.state == "pending"
    assert asked.app_session_id == sid

    # The app in front of that very sub-session tries every request it has.
    attempts = [
        await h.r.app_complete(instance_id, "q1", {"selected": ["y"]}),
        await h.r.app_fail(instance_id, "q1", "nope"),
        await h.r.app_cancel(instance_id, "q1"),
        await h.r.app_progress(instance_id, "q1", current=1),
    ]
    assert {(r.accepted, r.code) for r in attempts} == {(False, "call_not_found")}
    after = await h.db.db.read(interaction_store.by_call, C1.id, "q1")
    assert after == asked  # untouched
    assert h.results_for("q1") == []  # nothing went to the agent


async def test_a_call_bound_to_an_instance_another_runtime_opened_is_left_to_it(
    h: RouterHarness,
) -> None:
    """The person's second Runtime (a desktop window beside the demo) opened the
    instance: its ``app_session.opened`` came in on the stream. This Runtime stores
    nothing for the call and answers nothing; a bound call to an instance no Runtime
    announced is still refused here."""
    await h.install()
    elsewhere = "test-app.00000000000e15e1"
    opened = envelope(
        C1.id,
        "lineup.v1.app_session.opened",
        {
            "agent_id": C1.agent_id,
            "app_session_id": "as_elsewhere",
            "app_scope": SCOPE,
            "instance_id": elsewhere,
        },
        sender_id="user-1",
        sender_kind="runtime",
    )
    frame = wire.EnvelopeFrame(
        conversation_id=C1.id, seq=h.next_seq(C1.id), envelope=msgspec.Raw(opened)
    )
    await apply_received(h.db, [classify(frame, SCOPES)])
    await h.call("theirs", "test-app.echo", {"text": "x"}, target={"instance_id": elsewhere})
    assert h.results_for("theirs") == []
    assert await h.stored_call("theirs") is None
    await h.call("nobody", "test-app.echo", {"text": "x"}, target={"instance_id": "test-app.0"})
    assert rejected_code(h, "nobody") == ErrorCode.APP_INSTANCE_NOT_FOUND
