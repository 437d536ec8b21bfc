"""The person's language reaches agents in the inventory (``client.inventory``
``locale``): it follows the choice and what the newest tab showed, each change is one
new revision published to every conversation in the same unit of work (none when
nothing changed), it survives a restart, and a tab's ``hello`` is what tells it."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path

import msgspec

from lineup import wire
from lineup.runtime import Runtime, Session
from lineup.runtime.runtime import STORE_FILE
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.host_channel import next_frame, tab
from tests.support.interactions import FrozenClock
from tests.support.webhost import serving


def published(path: Path) -> list[tuple[str, str, str | None]]:
    """(conversation, revision, locale) of every ``client.inventory`` queued, oldest
    first."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT conversation_id, body FROM outbox ORDER BY id").fetchall()
    finally:
        conn.close()
    found = []
    for conversation_id, body in rows:
        decoded = msgspec.json.decode(bytes(body))
        if decoded["type"] == "lineup.v1.client.inventory":
            payload = decoded["payload"]
            found.append((conversation_id, payload["revision"], payload.get("locale")))
    return found


async def with_conversations(data_dir: Path) -> Runtime:
    """A Runtime with a session and two conversations that have the inventory."""
    runtime = Runtime(data_dir, clock=FrozenClock())
    await runtime.open()
    await runtime.store.save_session(Session("http://appserver.invalid", "alice", "u1", "tok"))
    runtime.session = await runtime.store.load_session()
    for conversation_id in ("conv-a", "conv-b"):
        await runtime.store.upsert_conversation(conversation_id, "agent-1", "")
        await runtime.store.publish_inventory(conversation_id, runtime.inventory)
    return runtime


async def test_the_inventory_says_the_person_s_language_and_each_change_once(
    tmp_path: Path,
) -> None:
    path = tmp_path / STORE_FILE
    runtime = await with_conversations(tmp_path)
    try:
        assert runtime.inventory.locale is None  # nothing known yet: not said, not guessed
        assert published(path) == [("conv-a", "inv-1", None), ("conv-b", "inv-1", None)]

        await runtime.locale_seen("zh-CN")  # a tab showed Chinese
        assert (runtime.inventory.revision, runtime.inventory.locale) == ("inv-2", "zh-CN")
        await runtime.locale_seen("zh-CN")  # again: no change, no revision
        await runtime.choose_locale("zh-CN")  # chosen, but it is the language already
        assert runtime.inventory.revision == "inv-2"

        await runtime.choose_locale("en")  # the choice wins over what tabs show
        await runtime.locale_seen("zh-CN")
        await runtime.locale_seen("en")
        await runtime.locale_seen("zh-CN")  # tabs change, the chosen language does not
        assert (runtime.inventory.revision, runtime.inventory.locale) == ("inv-3", "en")

        await runtime.choose_locale(None)  # as the browser says: the newest tab's
        assert (runtime.inventory.revision, runtime.inventory.locale) == ("inv-4", "zh-CN")
        assert published(path)[2:] == [
            ("conv-a", "inv-2", "zh-CN"),
            ("conv-b", "inv-2", "zh-CN"),
            ("conv-a", "inv-3", "en"),
            ("conv-b", "inv-3", "en"),
            ("conv-a", "inv-4", "zh-CN"),
            ("conv-b", "inv-4", "zh-CN"),
        ]
    finally:
        await runtime.close()

    again = Runtime(tmp_path, clock=FrozenClock())
    await again.open()
    try:
        assert (again.inventory.revision, again.inventory.locale) == ("inv-4", "zh-CN")
        assert len(published(path)) == 8  # nothing new to say after the restart
        await again.choose_locale("en")
        assert (again.inventory.revision, again.inventory.locale) == ("inv-5", "en")
    finally:
        await again.close()
    assert published(path)[-2:] == [("conv-a", "inv-5", "en"), ("conv-b", "inv-5", "en")]


async def test_a_tab_s_hello_tells_the_agent_the_language(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    async with (
        serving(appserver, pair, tmp_path / "runtime") as client,
        pair.agent.stream() as agent,
    ):
        runtime = client.runtime
        assert runtime.inventory.locale is None
        before = runtime.inventory.revision
        await agent.subscribe(all=True)
        async with tab(client) as ws:
            await ws.send(json.dumps({"op": "hello", "locale": "zh-CN"}))
            await next_frame(ws, "snapshot")
        assert runtime.inventory.locale == "zh-CN"
        assert runtime.inventory.revision != before
        # Queued to the conversation in the same write (the outbox row itself goes once
        # the AppServer has it, so the durable mark is what is read here).
        conn = sqlite3.connect(f"file:{tmp_path / 'runtime' / STORE_FILE}?mode=ro", uri=True)
        try:
            marks = dict(conn.execute("SELECT conversation_id, revision FROM inventory_published"))
        finally:
            conn.close()
        assert marks[pair.conversation_id] == runtime.inventory.revision

        # The agent hears it: the inventory it receives now carries the language.
        async with asyncio.timeout(15):
            while True:
                frame = await agent.next()
                if not isinstance(frame, wire.EnvelopeFrame):
                    continue
                body = msgspec.json.decode(bytes(frame.envelope))
                inventory = body["type"] == "lineup.v1.client.inventory"
                if inventory and body["payload"]["revision"] == runtime.inventory.revision:
                    break
        assert body["payload"]["locale"] == "zh-CN"
