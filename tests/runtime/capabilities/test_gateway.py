"""The capability gateway on a real store and the injected clock: what an agent's
``app.call`` and an app's request become, the consent rules per risk, claims,
expiry, at-most-once after a restart, exactly one ``app.result`` per call, and an
audit that never holds arguments or reasons."""

from __future__ import annotations

import asyncio
import signal
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup import wire
from lineup.runtime import classify
from lineup.runtime.capabilities import catalog
from lineup.runtime.capabilities.calls import State
from lineup.runtime.capabilities.gateway import (
    CallKey,
    CapabilitiesChanged,
    CapabilityGateway,
    CapabilityRefused,
)
from lineup.runtime.events import AppsChanged, ToolCallsChanged
from lineup.runtime.runtime import STORE_FILE
from tests.runtime.apps.test_router import C1, SCOPES
from tests.runtime.test_runtime import ROOT
from tests.support.app_kernel import APP, KernelHarness, queued
from tests.support.interactions import T0, StoreHarness, envelope
from tests.support.receiving import apply_received

ALL = sorted(catalog.CATALOG)
CANARY = "canary-7f3a-do-not-log"


class Harness(StoreHarness):
    gateway: CapabilityGateway | None = None
    events: list[CapabilitiesChanged]

    async def start(self) -> CapabilityGateway:
        self.events = []
        self.db.listen(emit=self._event)  # what every committed unit of work tells hosts
        self.gateway = CapabilityGateway(self.db, clock=self.clock)
        await self.gateway.recover()
        return self.gateway

    def _event(self, event: object) -> None:
        if isinstance(event, CapabilitiesChanged):
            self.events.append(event)

    @property
    def g(self) -> CapabilityGateway:
        assert self.gateway is not None
        return self.gateway

    async def call(
        self,
        call_id: str,
        capability: str,
        arguments: dict[str, Any],
        *,
        expires_in: timedelta = timedelta(minutes=5),
        reason: str = f"because {CANARY}",
    ) -> CallKey:
        payload = {
            "call_id": call_id,
            "capability": capability,
            "reason": reason,
            "expires_at": (self.clock() + expires_in).isoformat(),
            "arguments": arguments,
        }
        body = envelope(C1.id, "lineup.v1.app.call", payload, sender_id=C1.agent_id)
        frame = wire.EnvelopeFrame(
            conversation_id=C1.id, seq=self.next_seq(C1.id), envelope=msgspec.Raw(body)
        )
        await apply_received(self.db, [classify(frame, SCOPES)], remembered=self.g.remembered())
        return CallKey(C1.id, call_id, "agent")

    async def state(self, key: CallKey) -> tuple[State, str | None]:
        call = await self.g.get(key)
        assert call is not None
        return call.state, call.code

    def results(self, call_id: str) -> list[dict[str, Any]]:
        return [
            q.payload
            for q in queued(self.path)
            if q.type == "lineup.v1.app.result" and q.payload["call_id"] == call_id
        ]


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    harness = Harness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(C1)
    gateway = await harness.start()
    await gateway.provide(ALL)
    yield harness
    await harness.close()


URL = {"url": f"https://example.com/docs?{CANARY}"}


async def test_refused_on_arrival_each_with_one_result(h: Harness) -> None:
    await h.g.set_revoked("clipboard.write")
    cases = [
        ("c1", "camera.take_photo", {}, "unsupported", "capability_not_declared"),
        ("c2", "clipboard.write", {"text": "x"}, "unsupported", "revoked"),
        (
            "c3",
            "app.open_url",
            {"url": "ftp://example.com/"},
            "rejected",
            "capability_input_invalid",
        ),
        ("c4", "app.open_url", {"url": 5}, "rejected", "capability_input_invalid"),
    ]
    for call_id, name, arguments, status, code in cases:
        await h.call(call_id, name, arguments)
        [result] = h.results(call_id)
        assert (result["status"], result["error"]["code"]) == (status, code), call_id
    await h.call("c5", "app.open_url", URL, expires_in=timedelta(seconds=-1))
    assert [r["status"] for r in h.results("c5")] == ["expired"]


async def test_a_replayed_call_id_does_nothing(h: Harness) -> None:
    key = await h.call("c1", "app.open_url", URL)
    await h.call("c1", "app.open_url", {"url": "https://other.example/"})
    call = await h.g.get(key)
    assert call is not None and msgspec.json.decode(call.arguments) == URL  # the first one
    await h.g.decide(key, allow=False)
    await h.call("c1", "app.open_url", URL)
    assert [r["status"] for r in h.results("c1")] == ["rejected"]


async def test_consent_then_claim_then_finish(h: Harness) -> None:
    key = await h.call("c1", "app.open_url", URL)
    assert await h.state(key) == (State.AWAITING_CONSENT, None)
    assert h.results("c1") == []
    approved = await h.g.decide(key, allow=True)
    assert approved.state is State.APPROVED
    assert (await h.g.claim(key)).state is State.EXECUTING
    with pytest.raises(CapabilityRefused) as refused:
        await h.g.claim(key)  # a second tab
    assert refused.value.code == "capability_call_busy"
    with pytest.raises(CapabilityRefused):
        await h.g.decide(key, allow=False)
    done = await h.g.finish(key, result={"opened": True})
    assert done.state is State.COMPLETED
    assert h.results("c1") == [{"call_id": "c1", "status": "completed", "result": {"opened": True}}]
    with pytest.raises(CapabilityRefused) as refused:
        await h.g.finish(key, result={"opened": True})
    assert refused.value.code == "call_already_final"
    assert len(h.results("c1")) == 1


async def test_a_result_that_breaks_the_output_schema_fails(h: Harness) -> None:
    key = await h.call("c1", "clipboard.write", {"text": CANARY})
    await h.g.decide(key, allow=True)
    await h.g.claim(key)
    await h.g.finish(key, result={"written": "yes"})
    assert await h.state(key) == (State.FAILED, "capability_output_invalid")
    key = await h.call("c2", "clipboard.write", {"text": "x"})
    await h.g.decide(key, allow=True)
    await h.g.claim(key)
    await h.g.finish(key, code="clipboard_denied")
    [result] = h.results("c2")
    assert (result["status"], result["error"]["code"]) == ("failed", "clipboard_denied")


async def test_deny(h: Harness) -> None:
    key = await h.call("c1", "app.open_url", URL)
    await h.g.decide(key, allow=False)
    [result] = h.results("c1")
    assert (result["status"], result["error"]["code"]) == ("rejected", "capability_denied")


async def test_display_only_runs_without_a_dialog(h: Harness) -> None:
    key = await h.call("n1", "notification.show", {"title": "Done"})
    call = await h.g.get(key)
    assert call is not None and (call.state, call.decision) == (State.APPROVED, "automatic")


async def test_remembered_consent_is_for_user_confirmation_and_this_session_only(
    h: Harness,
) -> None:
    key = await h.call("c1", "clipboard.write", {"text": "a"})
    await h.g.decide(key, allow=True, remember=True)
    assert h.g.remembered() == {("agent:agent-1", "clipboard.write")}
    again = await h.call("c2", "clipboard.write", {"text": "b"})
    call = await h.g.get(again)
    assert call is not None and (call.state, call.decision) == (State.APPROVED, "remembered")
    other = await h.call("c3", "app.open_url", URL)  # another capability: asks again
    assert (await h.state(other))[0] is State.AWAITING_CONSENT

    pick = await h.call("p1", "device.pick_file", {})
    await h.g.decide(pick, allow=True, remember=True, acknowledged=True)
    assert ("agent:agent-1", "device.pick_file") not in h.g.remembered()  # never remembered

    assert h.g.forget("agent:agent-1", "clipboard.write")
    later = await h.call("c4", "clipboard.write", {"text": "c"})
    assert (await h.state(later))[0] is State.AWAITING_CONSENT

    await h.g.decide(later, allow=True, remember=True)
    await h.close()  # a restart forgets it
    await h.open()
    await h.start()
    assert h.g.remembered() == frozenset()
    fresh = await h.call("c5", "clipboard.write", {"text": "d"})
    assert (await h.state(fresh))[0] is State.AWAITING_CONSENT


async def test_system_permission_needs_its_second_step(h: Harness) -> None:
    key = await h.call("p1", "device.pick_file", {"accept": ["image/*"]})
    with pytest.raises(CapabilityRefused) as refused:
        await h.g.decide(key, allow=True)
    assert refused.value.code == "confirmation_required"
    assert await h.state(key) == (State.AWAITING_CONSENT, None)
    assert (await h.g.decide(key, allow=True, acknowledged=True)).state is State.APPROVED
    await h.g.claim(key)
    done = await h.g.finish_with_file(key, f"{CANARY}.png", "image/png", b"\x89PNG" + b"0" * 60)
    assert done.result is not None
    meta = msgspec.json.decode(done.result)
    assert (meta["media_type"], meta["size"]) == ("image/png", 64)
    stored = await h.g.artifact(meta["artifact_id"])
    assert stored is not None and stored[1] == b"\x89PNG" + b"0" * 60


@pytest.fixture
def restricted() -> Iterator[str]:
    """A restricted capability in the catalog for one test (none ships yet)."""
    base = catalog.CATALOG["notification.show"]
    name = "test.restricted_action"
    catalog.CATALOG[name] = catalog.Capability(
        catalog.CapabilityDescriptor(
            name=name,
            version="1.0",
            risk="restricted",
            input_schema=base.descriptor.input_schema,
            output_schema=base.descriptor.output_schema,
        ),
        base.schemas,
        "shell",
    )
    yield name
    del catalog.CATALOG[name]


async def test_restricted_needs_the_typed_phrase(h: Harness, restricted: str) -> None:
    await h.g.provide([restricted])
    key = await h.call("r1", restricted, {"title": "x"})
    call = await h.g.get(key)
    assert call is not None and call.phrase
    for typed in (None, "", "wrong", call.phrase + "x"):
        with pytest.raises(CapabilityRefused) as refused:
            await h.g.decide(key, allow=True, remember=True, confirmation=typed)
        assert refused.value.code == "confirmation_required"
    approved = await h.g.decide(key, allow=True, remember=True, confirmation=call.phrase)
    assert approved.state is State.APPROVED
    assert h.g.remembered() == frozenset()  # never remembered


async def test_artifact_save_runs_in_the_runtime(h: Harness) -> None:
    key = await h.call(
        "s1", "artifact.save", {"name": "notes.txt", "media_type": "text/plain", "text": CANARY}
    )
    done = await h.g.decide(key, allow=True)
    assert done.state is State.COMPLETED
    [result] = h.results("s1")
    artifact_id = result["result"]["artifact_id"]
    stored = await h.g.artifact(artifact_id)
    assert stored is not None and stored[1] == CANARY.encode()
    assert [a.id for a in await h.g.artifacts(C1.id)] == [artifact_id]
    bad = {"name": "a.bin", "media_type": "application/octet-stream", "base64": "!!not base64"}
    key = await h.call("s2", "artifact.save", bad)
    await h.g.decide(key, allow=True)
    assert await h.state(key) == (State.FAILED, "capability_input_invalid")


async def test_expiry_ends_waiting_and_unclaimed_calls(h: Harness) -> None:
    waiting = await h.call("e1", "app.open_url", URL, expires_in=timedelta(seconds=30))
    unclaimed = await h.call(
        "e2", "notification.show", {"title": "t"}, expires_in=timedelta(seconds=30)
    )
    assert await h.g.next_deadline() == T0 + timedelta(seconds=30)
    h.clock.advance(seconds=31)
    with pytest.raises(CapabilityRefused):
        await h.g.claim(waiting)
    await h.g.due()
    assert await h.state(waiting) == (State.EXPIRED, "expired")
    assert await h.state(unclaimed) == (State.EXPIRED, "expired")
    assert [r["status"] for r in h.results("e1") + h.results("e2")] == ["expired", "expired"]
    ended = {c.key.call_id for e in h.events for c in e.calls if c.state is State.EXPIRED}
    assert ended == {"e1", "e2"}  # hosts hear it: their dialogs close


async def test_a_decision_after_expiry_is_expiry(h: Harness) -> None:
    key = await h.call("e1", "app.open_url", URL, expires_in=timedelta(seconds=5))
    h.clock.advance(seconds=6)
    ended = await h.g.decide(key, allow=True)
    assert ended.state is State.EXPIRED


async def test_a_restart_never_runs_an_approved_call_again(h: Harness) -> None:
    approved = await h.call("a1", "app.open_url", URL)
    await h.g.decide(approved, allow=True)
    running = await h.call("a2", "clipboard.write", {"text": "x"})
    await h.g.decide(running, allow=True)
    await h.g.claim(running)
    waiting = await h.call("a3", "app.open_url", URL)
    await h.close()
    await h.open()
    await h.start()
    assert await h.state(approved) == (State.FAILED, "interrupted")
    assert await h.state(running) == (State.FAILED, "interrupted")
    assert (await h.state(waiting))[0] is State.AWAITING_CONSENT  # still asks the person
    for call_id in ("a1", "a2"):
        [result] = h.results(call_id)
        assert (result["status"], result["error"]["code"]) == ("failed", "interrupted")


async def test_an_app_may_ask_only_for_its_manifest_s_permissions(h: Harness) -> None:
    key = CallKey(C1.id, "cap_1", "app")
    call = await h.g.request_from_app(
        key, "notes.abc", ["clipboard.write"], "app.open_url", URL, "why", T0 + timedelta(minutes=1)
    )
    assert (call.state, call.code) == (State.REJECTED, "capability_denied")
    ok = await h.g.request_from_app(
        CallKey(C1.id, "cap_2", "app"),
        "notes.abc",
        ["clipboard.write"],
        "clipboard.write",
        {"text": "x"},
        "why",
        T0 + timedelta(minutes=1),
    )
    assert ok.state is State.AWAITING_CONSENT
    assert [q for q in queued(h.path) if q.type == "lineup.v1.app.result"] == []  # to the app


async def test_the_audit_never_holds_reasons_or_arguments(
    h: Harness, caplog: pytest.LogCaptureFixture
) -> None:
    key = await h.call("c1", "app.open_url", URL)
    await h.g.decide(key, allow=True)
    await h.g.claim(key)
    await h.g.finish(key, result={"opened": True})
    saved = await h.call(
        "s1", "artifact.save", {"name": f"{CANARY}.txt", "media_type": "text/plain", "text": CANARY}
    )
    await h.g.decide(saved, allow=True)
    conn = sqlite3.connect(h.path)
    try:
        rows = conn.execute("SELECT * FROM audit").fetchall()
    finally:
        conn.close()
    assert any("app.open_url" in str(r) for r in rows)
    assert CANARY not in repr(rows)
    assert CANARY not in caplog.text


@pytest.mark.parametrize(("step", "state"), [("decide", "approved"), ("claim", "executing")])
async def test_sigkill_between_consent_and_result_never_runs_twice(
    tmp_path: Path, step: str, state: str
) -> None:
    h = Harness(tmp_path / STORE_FILE)
    await h.open()
    await h.setup(C1)
    await (await h.start()).provide(ALL)
    await h.call("k1", "clipboard.write", {"text": CANARY})
    await h.close()

    child = subprocess.Popen(  # noqa: ASYNC220 - starts a child and returns at once
        [
            sys.executable,
            "-m",
            "tests.support.capability_child",
            str(tmp_path),
            step,
            C1.id,
            "k1",
            T0.isoformat(),
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(child.stdout.readline), 30)
        assert msgspec.json.decode(line) == {"step": step, "state": state}
        assert await asyncio.to_thread(child.wait, 30) == -signal.SIGKILL
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        if child.stdout is not None:
            child.stdout.close()

    await h.open()
    gateway = await h.start()
    key = CallKey(C1.id, "k1", "agent")
    assert await h.state(key) == (State.FAILED, "interrupted")
    with pytest.raises(CapabilityRefused):
        await gateway.claim(key)  # nobody runs it now
    [result] = h.results("k1")
    assert (result["status"], result["error"]["code"]) == ("failed", "interrupted")
    await h.close()
    await h.open()
    await h.start()  # a second restart changes nothing
    assert len(h.results("k1")) == 1


async def test_a_closed_app_s_waiting_calls_end_cancelled(h: Harness) -> None:
    asked = await h.g.request_from_app(
        CallKey(C1.id, "cap_1", "app"),
        "notes.abc",
        ["clipboard.write"],
        "clipboard.write",
        {"text": "x"},
        "why",
        T0 + timedelta(minutes=1),
    )
    other = await h.g.request_from_app(
        CallKey(C1.id, "cap_2", "app"),
        "notes.def",
        ["clipboard.write"],
        "clipboard.write",
        {"text": "y"},
        "why",
        T0 + timedelta(minutes=1),
    )
    await h.g.cancel_for_app("notes.abc")
    assert await h.state(asked.key) == (State.CANCELLED, "app_closed")
    assert (await h.state(other.key))[0] is State.AWAITING_CONSENT


async def test_closing_an_instance_cancels_its_calls_in_the_same_transaction(
    tmp_path: Path,
) -> None:
    """The lifecycle change that closes (or fails) an instance ends its capability
    calls still waiting or approved, ``cancelled(app_closed)``, in its own transaction:
    hosts hear them with the close, and the instance's SDK is told; a call already
    running finishes as it will."""
    h = KernelHarness(tmp_path / STORE_FILE)
    await h.open()
    await h.setup(C1)
    heard: list[object] = []
    h.db.listen(emit=heard.append)
    gateway = CapabilityGateway(h.db, clock=h.clock)
    await gateway.provide(ALL)
    record = await h.k.open_instance(APP, conversation_id=C1.id)
    instance = record.instance_id
    assert (await h.k.started(instance)).accepted

    async def ask(call_id: str, name: str, arguments: dict[str, Any]) -> CallKey:
        key = CallKey(C1.id, call_id, "app")
        await gateway.request_from_app(
            key, instance, [name], name, arguments, "why", T0 + timedelta(minutes=1)
        )
        return key

    waiting = await ask("cap_1", "clipboard.write", {"text": "x"})
    approved = await ask("cap_2", "notification.show", {"title": "t"})
    running = await ask("cap_3", "app.open_url", URL)
    await gateway.decide(running, allow=True)
    await gateway.claim(running)
    heard.clear()

    receipt = await h.k.request_close(instance)
    assert receipt.accepted
    for key in (waiting, approved):
        call = await gateway.get(key)
        assert call is not None and (call.state, call.code) == (State.CANCELLED, "app_closed")
    call = await gateway.get(running)
    assert call is not None and call.state is State.EXECUTING
    [changed] = [e for e in heard if isinstance(e, CapabilitiesChanged)]
    assert {c.key.call_id for c in changed.calls} == {"cap_1", "cap_2"}
    told = [e for e in heard if isinstance(e, ToolCallsChanged) and e.topic == "capabilities"]
    assert told == [ToolCallsChanged(frozenset({instance}), "capabilities")]
    assert any(isinstance(e, AppsChanged) for e in heard)  # the close, in the same commit
    await h.close()
