"""Every file a capability call keeps has one timeline row of its own, written with the
file in the same transaction, whoever asked for it: the agent's loose in the
conversation, an app instance's inside that instance's sub-session group. The row
stays where the file was kept, holds the file's metadata (never its bytes), is shown
once by the host's views and pages, and survives a restart; files kept before the
row existed get theirs from the migration."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from datetime import timedelta
from importlib import resources
from pathlib import Path

import msgspec
import pytest

from lineup.db import migration_files
from lineup.host.views import group_of, group_view, in_group, item_view
from lineup.runtime import RuntimeStore, TimelineChanged, migrations
from lineup.runtime.apps import sessions_view
from lineup.runtime.capabilities import catalog
from lineup.runtime.capabilities.calls import State
from lineup.runtime.capabilities.gateway import CallKey, CapabilityGateway
from lineup.runtime.records import ARTIFACT_ROW, TimelineItem, artifact_row_id
from lineup.runtime.runtime import STORE_FILE
from tests.runtime.apps.test_router import C1
from tests.runtime.capabilities.test_gateway import Harness
from tests.support.app_kernel import APP, KernelHarness
from tests.support.interactions import T0

SAVE = {"name": "notes été.txt", "media_type": "text/plain", "text": "saved words\n"}


async def rows(store: RuntimeStore, conversation_id: str) -> list[TimelineItem]:
    """The conversation's rows in its order, hidden ones included."""
    page = await store.page(conversation_id, limit=1000)
    assert page is not None
    return page.items


def files(items: list[TimelineItem]) -> list[TimelineItem]:
    return [i for i in items if i.type == ARTIFACT_ROW]


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[Harness]:
    harness = Harness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(C1)
    gateway = await harness.start()
    await gateway.provide(sorted(catalog.CATALOG))
    yield harness
    await harness.close()


async def test_an_agent_s_file_is_one_loose_row_right_after_the_newest_row(h: Harness) -> None:
    heard: list[TimelineItem] = []
    h.db.listen(emit=lambda e: heard.append(e.item) if isinstance(e, TimelineChanged) else None)
    key = await h.call("s1", "artifact.save", SAVE)
    [call_row] = [i for i in await rows(h.db, C1.id) if i.type == "lineup.v1.app.call"]
    done = await h.g.decide(key, allow=True)
    assert done.state is State.COMPLETED
    result = msgspec.json.decode(done.result or b"")

    [row] = files(await rows(h.db, C1.id))
    assert row.envelope_id == artifact_row_id(result["artifact_id"])
    assert (row.sender_kind, row.state) == ("runtime", "received")
    assert row.seq == call_row.seq and row.id > call_row.id  # right after the app.call
    assert row.artifact is not None and row.artifact.app_session_id is None
    assert result["artifact_id"].encode() in row.body and b"saved words" not in row.body
    assert [i.envelope_id for i in heard if i.type == ARTIFACT_ROW] == [row.envelope_id]

    view = item_view(row)
    assert view is not None and view.kind == "artifact" and group_of(row) is None
    assert view.data == {
        "artifact_id": result["artifact_id"],
        "name": "notes été.txt",
        "media_type": "text/plain",
        "size": len(b"saved words\n"),
        "url": f"/artifacts/{result['artifact_id']}",
    }
    # The agent's app.result is not a row of the IM: the file's own row is.
    shown = [item_view(i) for i in await rows(h.db, C1.id)]
    assert [v.kind for v in shown if v is not None] == ["artifact"]

    # A row that arrives later comes after it; a restart keeps the one row where it was.
    await h.call("s2", "clipboard.write", {"text": "x"})
    await h.restart()
    await h.start()
    items = await rows(h.db, C1.id)
    assert [(i.type, i.seq) for i in items if i.seq is not None] == [
        ("lineup.v1.app.call", 1),
        (ARTIFACT_ROW, 1),
        ("lineup.v1.app.call", 2),
    ]
    assert [i.id for i in files(items)] == [row.id]


async def test_an_app_s_file_is_one_row_inside_its_sub_session_group(tmp_path: Path) -> None:
    h = KernelHarness(tmp_path / STORE_FILE)
    await h.open()
    await h.setup(C1)
    gateway = CapabilityGateway(h.db, clock=h.clock)
    await gateway.provide(sorted(catalog.CATALOG))
    record = await h.k.open_instance(APP, conversation_id=C1.id)
    assert (await h.k.started(record.instance_id)).accepted
    session = (await h.db.db.read(sessions_view.groups, C1.id))[0].id

    key = CallKey(C1.id, "cap_1", "app")
    expires = T0 + timedelta(minutes=1)
    await gateway.request_from_app(
        key, record.instance_id, ["artifact.save"], "artifact.save", SAVE, "why", expires
    )
    done = await gateway.decide(key, allow=True)
    assert done.state is State.COMPLETED
    artifact_id = msgspec.json.decode(done.result or b"")["artifact_id"]

    async def check() -> None:
        [row] = files(await rows(h.db, C1.id))
        assert row.envelope_id == artifact_row_id(artifact_id)
        assert row.artifact is not None and group_of(row) == session
        # In the group, with a count; never a loose row of a page.
        [group] = await h.db.db.read(sessions_view.groups, C1.id)
        assert ([f.id for f in group.files], group.file_count) == ([row.id], 1)
        view = group_view(group)
        assert [i.kind for i in view.items] == ["artifact"] and view.files == 1
        assert view.items[0].data["app_session_id"] == session
        assert in_group(row)  # so the host's pages never show it loose

    await check()
    await h.restart()
    await check()
    await h.close()


async def test_files_kept_before_the_migration_get_their_rows(tmp_path: Path) -> None:
    """A store at schema 12 with an agent's file and an app's: the migration gives each
    its row after the newest row of its time, the app's in its instance's group."""
    path = tmp_path / STORE_FILE
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE schema_version (version INTEGER NOT NULL)")
    for version, sql in migration_files(resources.files(migrations))[:12]:
        conn.executescript(sql)
        conn.execute("INSERT INTO schema_version (version) VALUES (?)", (version,))
    conn.executescript(
        """
        INSERT INTO conversations (id, agent_id, title, created_at)
            VALUES ('conv-1', 'agent-1', '', '2026-03-01T12:00:00');
        INSERT INTO timeline (conversation_id, envelope_id, seq, type, sender_kind, body,
                              state, created_at)
            VALUES ('conv-1', 'e1', 1, 'lineup.v1.message', 'agent', X'7B7D', 'received',
                    '2026-03-01T12:00:01'),
                   ('conv-1', 'e2', 2, 'lineup.v1.message', 'agent', X'7B7D', 'received',
                    '2026-03-01T12:00:05');
        INSERT INTO app_sessions (id, conversation_id, agent_id, app_scope, instance_id,
                                  state, opened_at)
            VALUES ('as_1', 'conv-1', 'agent-1', 'test-app', 'test-app.1', 'closed',
                    '2026-03-01T12:00:00');
        INSERT INTO capability_calls (conversation_id, call_id, requester_kind, requester_id,
            capability, risk, reason, arguments, state, created_at, expires_at, updated_at)
            VALUES ('conv-1', 'cap_1', 'app', 'test-app.1', 'artifact.save',
                    'user_confirmation', 'r', X'7B7D', 'completed', 't', 't', 't'),
                   ('conv-1', 'a1', 'agent', 'agent-1', 'artifact.save',
                    'user_confirmation', 'r', X'7B7D', 'completed', 't', 't', 't');
        INSERT INTO artifacts (id, conversation_id, name, media_type, size, sha256, body,
                               call_id, created_at)
            VALUES ('art_app', 'conv-1', 'board.png', 'image/png', 3, 'x', X'010203',
                    'cap_1', '2026-03-01T12:00:02'),
                   ('art_agent', 'conv-1', 'a.txt', 'text/plain', 1, 'y', X'61', 'a1',
                    '2026-03-01T12:00:06');
        """
    )
    conn.close()

    store = RuntimeStore(path)
    await store.open()
    try:
        items = await rows(store, "conv-1")
    finally:
        await store.close()
    assert [(i.envelope_id, i.seq) for i in items] == [
        ("e1", 1),
        (artifact_row_id("art_app"), 1),
        ("e2", 2),
        (artifact_row_id("art_agent"), 2),
    ]
    app_row, agent_row = files(items)
    assert app_row.artifact is not None and agent_row.artifact is not None
    assert (app_row.artifact.name, app_row.artifact.size) == ("board.png", 3)
    assert app_row.artifact.app_session_id == "as_1" and group_of(app_row) == "as_1"
    assert agent_row.artifact.app_session_id is None
