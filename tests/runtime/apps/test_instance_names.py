"""Names people see, in a real Runtime store: an instance keeps its app's display name
and an ordinal from when it opened; the second live instance of an app is 2, and stays
2 when the first closes; the next one takes the lowest free number; "Continue" takes
its ended instance's back when it is free; the names and numbers survive a restart and
stay with the sub-session's group after the instance is gone; and the migration numbers
instances that were live before it."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import AsyncIterator
from importlib import resources
from pathlib import Path

import pytest

from lineup.db import migrate_sqlite
from lineup.formats.bundle import load_bundle_dir
from lineup.formats.manifest import encode_manifest
from lineup.miniapps import bundle_dir, install_bundled
from lineup.runtime import Runtime, Session, migrations
from lineup.runtime.apps.instance_store import Action, Op
from tests.support.interactions import FrozenClock

CONVERSATION = "conv-a"
DASHBOARD = "task-dashboard"


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    made = await _open(tmp_path)
    yield made
    await made.close()


async def _open(path: Path) -> Runtime:
    runtime = Runtime(path, clock=FrozenClock(), catalog_interval=None)
    await runtime.open()
    return runtime


async def _prepared(path: Path) -> Runtime:
    runtime = await _open(path)
    await runtime.store.save_session(Session("http://appserver.invalid", "alice", "user-1", "t"))
    await runtime.store.upsert_conversation(CONVERSATION, "agent-a", "")
    await install_bundled(runtime)
    return runtime


async def _close(runtime: Runtime, instance_id: str) -> None:
    assert (await runtime.apps.request_close(instance_id)).accepted
    assert (await runtime.apps.closed(instance_id)).accepted


async def test_a_second_instance_is_2_and_keeps_it_while_it_lives(tmp_path: Path) -> None:
    runtime = await _prepared(tmp_path)
    try:
        first = await runtime.apps.open_instance(DASHBOARD, conversation_id=CONVERSATION)
        second = await runtime.apps.open_instance(DASHBOARD, conversation_id=CONVERSATION)
        board = await runtime.apps.open_instance("whiteboard", conversation_id=CONVERSATION)
        assert (first.name, first.ordinal) == ("Task Dashboard", 1)
        assert (second.name, second.ordinal) == ("Task Dashboard", 2)
        assert (board.name, board.ordinal) == ("Whiteboard", 1)  # numbered per app

        await _close(runtime, first.instance_id)
        kept = runtime.apps.record(second.instance_id)
        assert kept is not None and kept.ordinal == 2  # not renamed when the first closes
        third = await runtime.apps.open_instance(DASHBOARD, conversation_id=CONVERSATION)
        assert third.ordinal == 1  # the lowest number no live one holds

        # Continue on the first one's ended work: 1 is taken, so it gets the next free.
        await _close(runtime, second.instance_id)
        receipt = await runtime.apps.continue_work(second.instance_id)
        assert receipt.record is not None
        assert receipt.record.ordinal == 2  # its parent's number, free again
        # A scope no app registered has no name (the shell shows the scope).
        bare = await runtime.apps.open_instance("notes", conversation_id=CONVERSATION)
        assert (bare.name, bare.ordinal) == ("", 1)

        groups = {g.instance_id: g for g in await runtime.app_session_groups(CONVERSATION)}
        assert (groups[first.instance_id].app_name, groups[first.instance_id].ordinal) == (
            "Task Dashboard",
            1,
        )
        assert groups[second.instance_id].ordinal == 2
        assert groups[receipt.record.instance_id].ordinal == 2
        assert groups[bare.instance_id].app_name == ""
        before = runtime.apps.instances()
    finally:
        await runtime.close()

    # A restart keeps every name and number, of live and ended instances alike.
    again = await _open(tmp_path)
    try:
        for instance_id, record in before.records.items():
            now = again.apps.record(instance_id)
            assert now is not None
            assert (now.name, now.ordinal) == (record.name, record.ordinal)
        # The group keeps them after the record itself is dropped (bounded history).
        await again.apps.apply(Op(Action.RECOVER, max_final=0))
        assert again.apps.record(first.instance_id) is None
        (group,) = [
            g
            for g in await again.app_session_groups(CONVERSATION)
            if g.instance_id == first.instance_id
        ]
        assert (group.app_name, group.ordinal) == ("Task Dashboard", 1)
    finally:
        await again.close()


async def test_the_name_is_the_one_the_app_had_when_the_instance_opened(
    runtime: Runtime,
) -> None:
    await runtime.store.save_session(Session("http://appserver.invalid", "alice", "user-1", "t"))
    record = await runtime.apps.open_instance(DASHBOARD)
    assert record.name == ""  # no app had the scope yet
    await install_bundled(runtime)
    assert (await runtime.apps.open_instance(DASHBOARD)).name == "Task Dashboard"
    assert runtime.apps.record(record.instance_id).name == ""  # type: ignore[union-attr]


def test_the_migration_numbers_the_instances_live_before_it(tmp_path: Path) -> None:
    folder = resources.files(migrations)
    older = tmp_path / "older"
    older.mkdir()
    for entry in folder.iterdir():
        if entry.name.endswith(".sql") and entry.name < "0014":
            shutil.copyfile(str(entry), older / entry.name)
    conn = sqlite3.connect(tmp_path / "store.sqlite3", isolation_level=None)
    try:
        assert migrate_sqlite(conn, older) == 13
        conn.execute(
            "INSERT INTO conversations (id, agent_id, title, created_at)"
            " VALUES ('c1', 'a1', '', '2026-08-04T09:00:00')"
        )
        # The Task Dashboard installed, as the registry stores it (canonical bytes).
        manifest = encode_manifest(load_bundle_dir(bundle_dir("task_dashboard")).manifest)
        conn.execute(
            "INSERT INTO app_versions (app_id, version, kind, app_scope, manifest, digest,"
            " installed_at) VALUES ('dev.lineup.task-dashboard', '1.0.0', 'bundled', ?, ?, '',"
            " '2026-08-04T09:00:00')",
            (DASHBOARD, manifest),
        )
        conn.execute(
            "INSERT INTO apps (app_id, app_scope, kind, version, enabled, updated_at) VALUES"
            " ('dev.lineup.task-dashboard', ?, 'bundled', '1.0.0', 1, '2026-08-04T09:00:00')",
            (DASHBOARD,),
        )
        rows = [
            ("d1", DASHBOARD, "stopped"),
            ("d2", DASHBOARD, "background"),
            ("w1", "whiteboard", "foreground"),
            ("d3", DASHBOARD, "suspended"),
        ]
        for instance_id, scope, state in rows:
            conn.execute(
                "INSERT INTO app_instances (instance_id, app_scope, conversation_id, state,"
                " started_at, app_session_id) VALUES (?, ?, 'c1', ?, '2026-08-04T09:00:00', ?)",
                (instance_id, scope, state, f"as_{instance_id}"),
            )
            conn.execute(
                "INSERT INTO app_sessions (id, conversation_id, agent_id, app_scope, instance_id,"
                " state, opened_at) VALUES (?, 'c1', 'a1', ?, ?, 'open', '2026-08-04T09:00:00')",
                (f"as_{instance_id}", scope, instance_id),
            )
        assert migrate_sqlite(conn, folder) >= 13
        found = dict(conn.execute("SELECT instance_id, ordinal FROM app_instances"))
        assert found == {"d1": 1, "d2": 1, "w1": 1, "d3": 2}
        groups = dict(conn.execute("SELECT instance_id, ordinal FROM app_sessions"))
        assert groups == found
        names = dict(conn.execute("SELECT instance_id, app_name FROM app_instances"))
        assert names == {
            "d1": "Task Dashboard",
            "d2": "Task Dashboard",
            "w1": "",
            "d3": "Task Dashboard",
        }
        assert dict(conn.execute("SELECT instance_id, app_name FROM app_sessions")) == names
    finally:
        conn.close()
