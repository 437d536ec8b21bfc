"""The app registry (``lineup.runtime.apps.registry``) on a real store: install
(validated, idempotent, versions kept), enable / disable, the monotonic inventory
revision, and the Runtime republishing the inventory to every conversation when it
changes."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup.formats.manifest import ManifestError
from lineup.protocol import ErrorCode
from lineup.runtime import INVENTORY, Runtime, RuntimeStore, Session
from lineup.runtime.apps.kernel import AppLifecycleRefused
from lineup.runtime.apps.lifecycle import State as AppState
from lineup.runtime.apps.registry import INITIAL_REVISION, AppRegistry, RegistryError
from lineup.runtime.runtime import STORE_FILE
from tests.support.app_kernel import queued
from tests.support.interactions import FrozenClock

MANIFEST = Path(__file__).parents[2] / "formats" / "manifests" / "valid" / "test-app.json"
APP_ID = "dev.lineup.test-app"


def manifest(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = msgspec.json.decode(MANIFEST.read_bytes())
    data.update(changes)
    return data


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[RuntimeStore]:
    opened = RuntimeStore(tmp_path / STORE_FILE, clock=FrozenClock())
    await opened.open()
    yield opened
    await opened.close()


@pytest.fixture
async def reg(store: RuntimeStore) -> AppRegistry:
    registry = AppRegistry(store, clock=FrozenClock())
    await registry.load()
    return registry


async def test_a_fresh_store_advertises_the_initial_inventory(reg: AppRegistry) -> None:
    assert reg.inventory == INVENTORY
    assert INVENTORY.revision == INITIAL_REVISION == "inv-1"
    assert [t.handling for t in INVENTORY.tools] == ["interactive"] * 4
    assert await reg.apps() == []


async def test_install_stores_kind_and_version_disabled(reg: AppRegistry) -> None:
    installed = await reg.install(MANIFEST.read_bytes())
    assert installed.installed
    entry = installed.entry
    assert (entry.app_id, entry.app_scope, entry.kind, entry.version, entry.enabled) == (
        APP_ID,
        "test-app",
        "bundled",
        "1.0.0",
        False,
    )
    assert not installed.inventory_changed
    assert reg.inventory.revision == "inv-1"
    assert await reg.list_enabled() == []
    stored = await reg.manifest(APP_ID)
    assert stored is not None
    assert stored.kind == "bundled"


async def test_install_validates_with_load_manifest(reg: AppRegistry) -> None:
    with pytest.raises(ManifestError) as refused:
        await reg.install(manifest(version="1.0"))
    assert refused.value.code == "manifest_invalid"
    assert refused.value.path == "$.version"
    assert await reg.apps() == []


async def test_installing_the_same_version_again_is_idempotent(reg: AppRegistry) -> None:
    await reg.install(MANIFEST.read_bytes(), enable=True)
    again = await reg.install(MANIFEST.read_bytes())
    assert not again.installed
    assert not again.inventory_changed
    assert again.entry.enabled
    assert reg.inventory.revision == "inv-2"
    with pytest.raises(RegistryError) as conflict:
        await reg.install(manifest(name="Other Name"))
    assert conflict.value.code == "app_version_conflict"


async def test_a_new_version_replaces_and_keeps_the_old_one(reg: AppRegistry) -> None:
    await reg.install(MANIFEST.read_bytes(), enable=True)
    newer = manifest(version="1.1.0", surfaces=[{"id": "main", "entry": "index.html"}])
    installed = await reg.install(newer)
    assert installed.installed
    assert installed.entry.version == "1.1.0"
    assert installed.entry.versions == ("1.0.0", "1.1.0")
    assert installed.entry.enabled  # kept
    assert installed.inventory_changed
    assert reg.inventory.revision == "inv-3"
    assert [a.version for a in reg.inventory.applications] == ["1.1.0"]
    old = await reg.manifest(APP_ID, "1.0.0")
    assert old is not None
    assert old.version == "1.0.0"


async def test_another_app_cannot_take_the_scope(reg: AppRegistry) -> None:
    await reg.install(MANIFEST.read_bytes())
    with pytest.raises(RegistryError) as refused:
        await reg.install(manifest(id="dev.lineup.other-app"))
    assert refused.value.code == "app_scope_conflict"


async def test_enable_disable_and_list(reg: AppRegistry) -> None:
    await reg.install(MANIFEST.read_bytes())
    assert (await reg.enable(APP_ID)).enabled
    assert [e.app_id for e in await reg.list_enabled()] == [APP_ID]
    assert [a.id for a in reg.inventory.applications] == [APP_ID]
    assert [t.id for t in reg.inventory.tools][4:] == [
        "test-app.echo",
        "test-app.open",
        "test-app.show",
        "test-app.slow",
    ]
    assert not (await reg.disable(APP_ID)).enabled
    assert await reg.list_enabled() == []
    with pytest.raises(RegistryError) as missing:
        await reg.enable("dev.lineup.nothing")
    assert missing.value.code == "app_not_found"


async def test_the_revision_is_monotonic_and_persisted(
    store: RuntimeStore, reg: AppRegistry
) -> None:
    await reg.install(MANIFEST.read_bytes())
    seen = [reg.inventory.revision]
    for step in (reg.enable, reg.disable, reg.enable, reg.enable, reg.disable):
        await step(APP_ID)
        seen.append(reg.inventory.revision)
    assert seen == ["inv-1", "inv-2", "inv-3", "inv-4", "inv-4", "inv-5"]
    # Same content as the fresh store, yet the revision never goes back.
    assert reg.inventory.tools == INVENTORY.tools
    assert reg.inventory.revision != INVENTORY.revision
    reopened = AppRegistry(store)
    assert (await reopened.load()).revision == "inv-5"


# --- the Runtime republishes --------------------------------------------------------------


def inventories(path: Path) -> list[tuple[str, str]]:
    """(conversation, revision) of every ``client.inventory`` queued, oldest first."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT conversation_id, body FROM outbox ORDER BY id").fetchall()
    finally:
        conn.close()
    found = []
    for conversation_id, body in rows:
        decoded = msgspec.json.decode(bytes(body))
        if decoded["type"] == "lineup.v1.client.inventory":
            found.append((conversation_id, decoded["payload"]["revision"]))
    return found


async def open_runtime(data_dir: Path) -> Runtime:
    runtime = Runtime(data_dir, clock=FrozenClock())
    await runtime.open()
    return runtime


async def test_the_runtime_republishes_when_the_inventory_changes(tmp_path: Path) -> None:
    runtime = await open_runtime(tmp_path)
    await runtime.store.save_session(Session("http://appserver.invalid", "alice", "u1", "tok"))
    runtime.session = await runtime.store.load_session()
    for conversation_id in ("conv-a", "conv-b"):
        await runtime.store.upsert_conversation(conversation_id, "agent-1", "")
        await runtime.store.publish_inventory(conversation_id, runtime.inventory)
    path = tmp_path / STORE_FILE
    assert inventories(path) == [("conv-a", "inv-1"), ("conv-b", "inv-1")]
    await runtime.registry.install(MANIFEST.read_bytes())  # disabled: nothing changes
    assert len(inventories(path)) == 2
    await runtime.registry.enable(APP_ID)
    await runtime.registry.enable(APP_ID)  # no change, no new revision
    await runtime.registry.disable(APP_ID)
    assert runtime.inventory.revision == "inv-3"
    assert inventories(path)[2:] == [
        ("conv-a", "inv-2"),
        ("conv-b", "inv-2"),
        ("conv-a", "inv-3"),
        ("conv-b", "inv-3"),
    ]
    await runtime.registry.enable(APP_ID)
    await runtime.close()
    again = await open_runtime(tmp_path)  # a restart publishes nothing new
    assert again.inventory.revision == "inv-4"
    assert len(inventories(path)) == 8
    assert "test-app" in again._scopes  # calls targeted at the app are accepted
    await again.close()


async def test_disabling_an_app_closes_its_live_instances(tmp_path: Path) -> None:
    runtime = await open_runtime(tmp_path)
    await runtime.store.save_session(Session("http://appserver.invalid", "alice", "u1", "tok"))
    await runtime.store.upsert_conversation("conv-a", "agent-1", "")
    await runtime.registry.install(MANIFEST.read_bytes(), enable=True)
    first = await runtime.apps.open_instance("test-app", conversation_id="conv-a")
    second = await runtime.apps.open_instance("test-app", conversation_id="conv-a")
    await runtime.apps.started(second.instance_id)
    other = await runtime.apps.open_instance("other-app", conversation_id="conv-a")
    path = tmp_path / STORE_FILE

    await runtime.registry.disable(APP_ID)

    value = runtime.apps.instances()  # the kernel adopted what the registry's txn did
    assert value.records[first.instance_id].state is AppState.STOPPED
    assert value.records[second.instance_id].state is AppState.STOPPED
    assert value.records[other.instance_id].state is AppState.STARTING
    assert value.focus == other.instance_id
    closed = [q for q in queued(path) if q.type == "lineup.v1.app_session.closed"]
    assert sorted(q.payload["instance_id"] for q in closed) == sorted(
        [first.instance_id, second.instance_id]
    )
    assert {q.payload["reason"] for q in closed} == {"app_disabled"}
    with pytest.raises(AppLifecycleRefused) as refused:
        await runtime.apps.open_instance("test-app", conversation_id="conv-a")
    assert refused.value.code == ErrorCode.APP_DISABLED
    continued = await runtime.apps.continue_work(first.instance_id)
    assert (continued.accepted, continued.code) == (False, ErrorCode.APP_DISABLED)

    await runtime.registry.enable(APP_ID)  # enabled again: it opens, as a new instance
    again = await runtime.apps.open_instance("test-app", conversation_id="conv-a")
    assert again.instance_id not in (first.instance_id, second.instance_id)
    await runtime.close()
