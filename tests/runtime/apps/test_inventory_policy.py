"""Revoked things, the capability policy, ``app.list``, ``tool.progress`` and
``restore_previous_focus`` (issue 5, items 2 and 5), on a real store and the
injected clock."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from lineup.formats.manifest import load_manifest
from lineup.protocol import ErrorCode
from lineup.protocol.payloads import CapabilityDescriptor
from lineup.runtime import Runtime
from lineup.runtime.apps import registry, tool_call_store
from lineup.runtime.apps.tool_calls import State
from lineup.runtime.records import Session
from tests.runtime.apps.test_router import (
    APP_ID,
    C1,
    MANIFEST,
    SCOPE,
    RouterHarness,
    launched,
    rejected_code,
)
from tests.support.app_kernel import queued
from tests.support.interactions import T0, FrozenClock

SAVE = "artifact.save"


def manifest_with_permissions() -> dict[str, Any]:
    """The test app, declaring ``artifact.save`` and ``device.pick_file``; its ``slow``
    tool needs ``artifact.save``."""
    data: dict[str, Any] = json.loads(MANIFEST.read_text())
    data["version"] = "1.1.0"
    data["permissions"] = [SAVE, "device.pick_file"]
    for tool in data["tools"]:
        if tool["id"] == "test-app.slow":
            tool["permissions"] = [SAVE]
    return data


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[RouterHarness]:
    harness = RouterHarness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(C1)
    yield harness
    await harness.close()


async def install_with_permissions(h: RouterHarness) -> registry.Installed:
    manifest = load_manifest(manifest_with_permissions())
    installed: registry.Installed = await h.db.db.write(
        lambda conn, now: registry.install(conn, manifest, now, enable=True), h.now()
    )
    h.revision = installed.inventory.revision
    return installed


async def policy(h: RouterHarness, name: str, *, grant: bool = True, **kw: Any) -> Any:
    def txn(conn: sqlite3.Connection, now: str) -> Any:
        if grant:
            registry.grant_capability(conn, APP_ID, name, now, **kw)
        else:
            registry.revoke_capability(conn, APP_ID, name, now)
        return registry.refresh_inventory(conn, now)[0]

    inventory = await h.db.db.write(txn, h.now())
    h.revision = inventory.revision
    return inventory


def tool_ids(inventory: Any) -> set[str]:
    return {t.id for t in inventory.tools}


# --- 1. revoked things: a deterministic result, never a fallback --------------------------


async def test_a_disabled_app_old_revision_mismatch_current_app_disabled(
    h: RouterHarness,
) -> None:
    await h.install()
    instance_id = await launched(h)
    advertised = h.revision
    await h.set_enabled(False)
    assert h.revision != advertised
    # The revision is checked before anything else, even bad arguments.
    await h.call("old", "test-app.echo", {"text": 5}, revision=advertised)
    await h.call("now", "test-app.echo", {"text": "hi"}, target={"instance_id": instance_id})
    assert rejected_code(h, "old") == ErrorCode.INVENTORY_REVISION_MISMATCH
    assert rejected_code(h, "now") == ErrorCode.APP_DISABLED
    assert h.dump("tool_calls")["tool_calls"] != []  # only the launch call was stored
    assert await h.stored_call("now") is None
    assert await h.stored_call("old") is None


async def test_the_result_does_not_depend_on_what_else_is_wrong(h: RouterHarness) -> None:
    await h.install()
    await h.set_enabled(False)
    for n, args in enumerate([{"text": "hi"}, {"text": 5}, {}]):
        await h.call(f"c{n}", "test-app.echo", args)
        assert rejected_code(h, f"c{n}") == ErrorCode.APP_DISABLED


# --- 2. the capability policy -------------------------------------------------------------


async def test_capabilities_are_denied_until_granted(h: RouterHarness) -> None:
    installed = await install_with_permissions(h)
    assert installed.inventory.capabilities == []
    assert "test-app.slow" not in tool_ids(installed.inventory)
    assert "test-app.echo" in tool_ids(installed.inventory)
    before = h.revision

    granted = await policy(h, SAVE)
    assert granted.revision != before
    assert granted.capabilities == [
        CapabilityDescriptor(name=SAVE, version="1.0", risk="user_confirmation")
    ]
    assert "test-app.slow" in tool_ids(granted)
    # A grant of something the manifest does not declare advertises nothing.
    same = await policy(h, "app.open_url")
    assert same.revision == granted.revision
    assert same.capabilities == granted.capabilities


async def test_a_tool_needing_an_ungranted_capability_is_capability_denied(
    h: RouterHarness,
) -> None:
    await install_with_permissions(h)
    instance_id = await launched(h)
    await h.call("denied", "test-app.slow", {"steps": 1})
    assert rejected_code(h, "denied") == ErrorCode.CAPABILITY_DENIED

    await policy(h, SAVE)
    await h.call("allowed", "test-app.slow", {"steps": 1})
    call = await h.stored_call("allowed")
    assert call is not None
    assert call.instance_id == instance_id
    granted_revision = h.revision

    await policy(h, SAVE, grant=False)
    await h.call("stale", "test-app.slow", {"steps": 1}, revision=granted_revision)
    await h.call("revoked", "test-app.slow", {"steps": 1})
    assert rejected_code(h, "stale") == ErrorCode.INVENTORY_REVISION_MISMATCH
    assert rejected_code(h, "revoked") == ErrorCode.CAPABILITY_DENIED


async def test_the_policy_is_persisted_and_validated(h: RouterHarness) -> None:
    await install_with_permissions(h)
    await policy(h, SAVE, risk="restricted", version="2.1")
    await h.restart()
    inventory = await h.db.db.read(registry.build_inventory, h.revision)
    assert inventory.capabilities == [
        CapabilityDescriptor(name=SAVE, version="2.1", risk="restricted")
    ]
    with pytest.raises(ValueError, match="risk"):
        await policy(h, SAVE, risk="fine")
    with pytest.raises(ValueError, match="capability name"):
        await policy(h, "Not A Name")
    with pytest.raises(registry.RegistryError) as refused:
        await h.db.db.write(
            lambda conn, now: registry.grant_capability(conn, "dev.lineup.nope", SAVE, now),
            h.now(),
        )
    assert refused.value.code == "app_not_found"


async def test_app_list_is_the_capability_projection_queued_on_change(h: RouterHarness) -> None:
    await install_with_permissions(h)

    def publish(conn: sqlite3.Connection, now: str) -> Any:
        inventory = registry.build_inventory(conn, registry.revision(conn))
        return registry.publish_app_list(conn, C1.id, inventory, now)

    def app_lists() -> list[Any]:
        return [q.payload for q in queued(h.path) if q.type == "lineup.v1.app.list"]

    assert await h.db.db.write(publish, h.now()) is None  # nothing to say yet
    await policy(h, SAVE)  # the change queues it, in its own transaction
    assert len(app_lists()) == 1
    assert await h.db.db.write(publish, h.now()) is None  # the same projection
    await policy(h, SAVE, grant=False)
    assert len(app_lists()) == 2  # now empty
    assert await h.db.db.write(publish, h.now()) is None
    lists = app_lists()
    assert lists == [
        {"capabilities": [{"name": SAVE, "version": "1.0", "risk": "user_confirmation"}]},
        {},  # empty: the default is omitted on the wire
    ]


async def test_the_runtime_publishes_inventory_and_app_list_on_a_grant(tmp_path: Path) -> None:
    clock = FrozenClock()
    runtime = Runtime(tmp_path, clock=clock)
    await runtime.open()
    try:
        await runtime.store.save_session(Session("http://appserver.invalid", "alice", "u1", "t"))
        runtime.session = await runtime.store.load_session()
        await runtime.store.upsert_conversation(C1.id, C1.agent_id, "")
        await runtime.registry.install(manifest_with_permissions(), enable=True)
        inventory = await runtime.grant_capability(APP_ID, SAVE)
        assert runtime.inventory == inventory
        assert "test-app.slow" in tool_ids(inventory)
        await runtime.revoke_capability(APP_ID, SAVE)
        kinds = await runtime.store.db.read(_queued_kinds)
    finally:
        await runtime.close()
    assert kinds == [
        ("client.inventory", "inv-2"),
        ("client.inventory", "inv-3"),
        ("app.list", None),
        ("client.inventory", "inv-4"),
        ("app.list", None),
    ]


def _queued_kinds(conn: sqlite3.Connection) -> list[tuple[str, str | None]]:
    """Every envelope the Runtime queued, inventories included: (kind, revision)."""
    rows = conn.execute(
        "SELECT body FROM timeline WHERE sender_kind = 'runtime' ORDER BY id"
    ).fetchall()
    found = [json.loads(bytes(row[0])) for row in rows]
    return [(e["type"].removeprefix("lineup.v1."), e["payload"].get("revision")) for e in found]


# --- 3. tool.progress ---------------------------------------------------------------------


def progress(h: RouterHarness) -> list[dict[str, Any]]:
    return [q.payload for q in queued(h.path) if q.type == "lineup.v1.tool.progress"]


async def running_slow(h: RouterHarness) -> str:
    await h.install()
    instance_id = await launched(h)
    await h.call("op", "test-app.slow", {"steps": 4})
    call = await h.stored_call("op")
    assert call is not None
    assert call.state is State.RUNNING
    return instance_id


async def test_progress_is_queued_at_most_once_per_250_ms_coalescing(h: RouterHarness) -> None:
    instance_id = await running_slow(h)
    assert (await h.r.app_progress(instance_id, "op", current=1, total=4)).accepted
    h.clock.advance(milliseconds=100)
    assert (await h.r.app_progress(instance_id, "op", current=2, total=4)).accepted
    h.clock.advance(milliseconds=100)
    assert (await h.r.app_progress(instance_id, "op", current=3, total=4, label="x")).accepted
    assert progress(h) == [{"call_id": "op", "current": 1, "total": 4}]
    assert await h.r.next_deadline() == T0 + timedelta(milliseconds=250)

    h.clock.advance(milliseconds=49)
    await h.r.due()
    assert len(progress(h)) == 1
    h.clock.advance(milliseconds=1)
    await h.r.due()
    assert progress(h)[1:] == [{"call_id": "op", "current": 3, "total": 4, "label": "x"}]
    await h.r.due()
    assert len(progress(h)) == 2  # flushed once
    envelope = next(q for q in queued(h.path) if q.type == "lineup.v1.tool.progress")
    assert envelope.envelope_id.startswith("prg_")


async def test_a_held_progress_report_wakes_the_timer_for_the_end_of_its_window(
    h: RouterHarness,
) -> None:
    """Found by the bridge fuzz: holding a report did not tell the Runtime's timer,
    which slept on to the next call deadline (a minute at most) before sending it."""
    instance_id = await running_slow(h)
    woken: list[bool] = []
    h.db.listen(deadline_added=lambda: woken.append(True))
    assert (await h.r.app_progress(instance_id, "op", current=1)).accepted  # sent at once
    woken.clear()
    h.clock.advance(milliseconds=10)
    assert (await h.r.app_progress(instance_id, "op", current=2)).accepted  # held
    assert woken == [True]
    assert await h.r.next_deadline() == T0 + timedelta(milliseconds=250)


async def test_held_progress_is_dropped_when_the_call_settles(h: RouterHarness) -> None:
    instance_id = await running_slow(h)
    await h.r.app_progress(instance_id, "op", current=1)
    h.clock.advance(milliseconds=10)
    await h.r.app_progress(instance_id, "op", current=2)
    assert (await h.r.app_complete(instance_id, "op", {"done": True})).accepted
    h.clock.advance(seconds=1)
    await h.r.due()
    assert [p["current"] for p in progress(h)] == [1]
    row = h.dump("tool_calls")["tool_calls"]
    assert row  # the pending report column is cleared
    pending = await h.db.db.read(
        lambda conn: conn.execute(
            "SELECT COUNT(*) FROM tool_calls WHERE progress_pending IS NOT NULL"
        ).fetchone()[0]
    )
    assert pending == 0


async def test_a_bad_or_foreign_progress_report_queues_nothing(h: RouterHarness) -> None:
    instance_id = await running_slow(h)
    with pytest.raises(ValueError, match="progress"):
        await h.r.app_progress(instance_id, "op", current=5, total=4)
    assert not (await h.r.app_progress(f"{SCOPE}.0123456789abcdef", "op", current=1)).accepted
    assert not (await h.r.app_progress(instance_id, "nope", current=1)).accepted
    assert progress(h) == []


# --- 3. restore_previous_focus ------------------------------------------------------------


async def with_a_focused_instance(h: RouterHarness) -> str:
    await h.install()
    first = await h.k.open_instance(SCOPE, conversation_id=C1.id)
    assert (await h.r.app_started(first.instance_id)).accepted
    assert h.k.instances().focus == first.instance_id
    return first.instance_id


async def launch_in_front(h: RouterHarness, call_id: str) -> str:
    await h.call(call_id, "test-app.open")  # launch, requires_foreground, restore: true
    call = await h.stored_call(call_id)
    assert call is not None
    assert call.instance_id is not None
    assert (await h.r.app_started(call.instance_id)).accepted
    assert h.k.instances().focus == call.instance_id
    return call.instance_id


async def test_focus_returns_when_the_call_is_submitted(h: RouterHarness) -> None:
    first = await with_a_focused_instance(h)
    second = await launch_in_front(h, "open")
    assert (await h.r.app_complete(second, "open", {"instance_id": second})).accepted
    stored = await h.stored()
    assert stored.focus == first
    assert h.k.instances().focus == first
    call = await h.stored_call("open")
    assert call is not None
    assert call.state is State.SUBMITTED
    assert stored.records[second].state.value == "background"


async def test_focus_returns_on_a_timeout_on_the_injected_clock(h: RouterHarness) -> None:
    first = await with_a_focused_instance(h)
    await launch_in_front(h, "open")
    h.clock.advance(seconds=30)
    outcomes = await h.r.due()
    assert [o.call.state for o in outcomes if o.call] == [State.FAILED]
    assert (await h.stored()).focus == first


async def test_focus_stays_when_the_tool_does_not_ask(h: RouterHarness) -> None:
    first = await with_a_focused_instance(h)
    second = await launch_in_front(h, "open")
    assert (await h.k.request_foreground(first)).accepted
    # test-app.show brings `second` to the front but has restore_previous_focus = false.
    await h.call("show", "test-app.show", target={"instance_id": second})
    assert h.k.instances().focus == second
    assert (await h.r.app_complete(second, "show", {})).accepted
    assert (await h.stored()).focus == second


async def test_focus_does_not_return_to_an_instance_that_is_gone(h: RouterHarness) -> None:
    first = await with_a_focused_instance(h)
    second = await launch_in_front(h, "open")
    assert (await h.k.request_close(first)).accepted
    assert (await h.k.closed(first)).accepted
    await h.r.app_complete(second, "open", {"instance_id": second})
    assert (await h.stored()).focus == second
    mark = await h.db.db.read(
        lambda conn: conn.execute("SELECT restore_focus_to FROM tool_calls").fetchall()
    )
    assert all(row[0] is None for row in mark)


async def test_focus_moves_back_only_when_the_instance_still_holds_it(h: RouterHarness) -> None:
    await with_a_focused_instance(h)
    second = await launch_in_front(h, "open")
    third = await h.k.open_instance(SCOPE, conversation_id=C1.id)  # the person opened it
    assert h.k.instances().focus == third.instance_id
    assert (await h.r.app_complete(second, "open", {"instance_id": second})).accepted
    assert (await h.stored()).focus == third.instance_id
    call = await h.db.db.read(tool_call_store.get, C1.id, "open")
    assert call is not None
    assert call.state is State.SUBMITTED
