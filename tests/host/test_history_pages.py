"""History on the host channel, over real sockets: a tab that pages back from its
snapshot (or forward from the oldest row) is given every row the Runtime shows, once,
in the conversation's order, with each app sub-session's group placed where it opened,
whatever is mixed in (loose and grouped questions, rejected envelopes, hidden rows).
Bad history frames are refused with a stable code."""

from __future__ import annotations

import json
from typing import Any

from websockets.asyncio.client import ClientConnection

from lineup.runtime.apps.sessions_view import read_groups
from tests.host.test_subsessions import choice, open_started
from tests.support.browser_interactions import chat_id, tool_call
from tests.support.host_channel import hello, next_frame, tab
from tests.support.timeline import arrived, record_of, say
from tests.support.webhost import Client


async def build(client: Client) -> int:
    """A conversation of about three pages: messages, loose and grouped questions,
    two app sub-sessions opened in the middle (one closed), a rejected envelope.
    Returns how many rows the store holds when it is done."""
    conversation = await chat_id(client)
    n = 0
    for round_ in range(3):
        for _ in range(50):
            await say(client, f"message {n}")
            n += 1
        instance_id, app_session_id = await open_started(client)
        await tool_call(client, "interact.choice", choice(f"loose {round_}"), f"loose-{round_}")
        await tool_call(
            client,
            "interact.choice",
            choice(f"grouped {round_}"),
            f"grouped-{round_}",
            app_session_context={"app_session_id": app_session_id},
        )
        if round_ == 1:
            assert (await client.runtime.apps.request_close(instance_id, actor="user")).accepted
    bad = client.pair.agent.envelope(conversation, kind="lineup.v1.message", payload={"text": 5})
    await client.pair.agent.post(conversation, bad)  # the AppServer may take it or not
    last = ""
    for _ in range(5):
        last = await say(client, f"message {n}")
        n += 1
    await arrived(client, last)  # the stream is in order: everything before it is in
    rows = await client.runtime.store.timeline(conversation, limit=100_000)
    return len(rows)


def placed(frame: dict[str, Any]) -> list[tuple[int, int | None, int]]:
    """A snapshot's or page's rows and groups as (seq-order key, key)."""
    rows = [(r["seq"], r["key"]) for r in frame["items"]]
    rows += [(g["seq"], g["key"]) for g in frame["app_sessions"]]
    return [(s is None, s or 0, k) for s, k in rows]  # type: ignore[misc]


def keys(rows: list[tuple[int, int | None, int]]) -> list[int]:
    return [k for *_, k in sorted(rows)]


async def page(ws: ClientConnection, conversation: str, **where: int) -> dict[str, Any]:
    await ws.send(json.dumps({"op": "history", "conversation_id": conversation, **where}))
    return await next_frame(ws, "history", conversation_id=conversation)


async def test_paging_back_from_the_snapshot_shows_every_row_once_in_order(
    client: Client,
) -> None:
    total = await build(client)
    assert total > 150  # three pages and more
    conversation = await chat_id(client)
    expected = (await record_of(client.runtime, conversation)).keys
    async with tab(client) as ws:
        snapshot = await hello(ws)
        assert conversation not in snapshot["complete"]
        bound = snapshot["oldest"][conversation]
        # The snapshot places rows (and groups) from its oldest row on, nothing older.
        first = (bound["seq"] is None, bound["seq"] or 0, bound["key"])
        shown = [r for r in placed(snapshot) if r >= first]
        pages = 1
        older = True
        while older:
            got = await page(ws, conversation, before=bound["key"])
            assert got["direction"] == "older"
            shown += placed(got)
            older = got["older"]
            bound = got["first"]
            pages += 1
        assert pages >= 4
    assert keys(shown) == expected
    assert len(set(keys(shown))) == len(expected)
    # The groups took the place where each opened: between the rounds of messages.
    groups = [g.anchor_id for g in await read_groups(client.runtime.store, conversation)]
    assert [expected.index(g) for g in groups] == sorted(expected.index(g) for g in groups)
    assert 0 < expected.index(groups[0]) < expected.index(groups[-1]) < len(expected) - 5


async def test_paging_forward_from_the_oldest_row_meets_the_newest(client: Client) -> None:
    await build(client)
    conversation = await chat_id(client)
    expected = (await record_of(client.runtime, conversation)).keys
    oldest = min(r.id for r in await client.runtime.store.timeline(conversation, limit=100_000))
    async with tab(client) as ws:
        await hello(ws)
        shown: list[tuple[int, int | None, int]] = []
        bound = {"key": oldest}
        newer = True
        while newer:
            got = await page(ws, conversation, after=bound["key"])
            assert got["direction"] == "newer" and got["older"]
            shown += placed(got)
            newer = got["newer"]
            bound = got["last"]
    assert keys(shown) == [k for k in expected if k != oldest]


async def test_bad_history_frames_are_refused_with_a_code_and_the_tab_goes_on(
    client: Client,
) -> None:
    conversation = await chat_id(client)
    await say(client, "one")
    await client.wait_for_items(conversation, 1)
    async with tab(client) as ws:
        await hello(ws)
        for where, code in (
            ({"before": 1, "after": 1}, "invalid_request"),
            ({"before": 10**9}, "not_found"),
            ({"after": 10**9}, "not_found"),
        ):
            await ws.send(json.dumps({"op": "history", "conversation_id": conversation, **where}))
            error = await next_frame(ws, "error")
            assert error["code"] == code, (where, error)
        await ws.send(json.dumps({"op": "history", "conversation_id": conversation, "before": 0}))
        assert (await next_frame(ws, "error"))["code"] == "invalid_request"
        assert (await hello(ws))["op"] == "snapshot"  # the channel still serves the tab


async def test_a_page_with_no_key_is_the_newest_page_as_the_snapshot_has_it(
    client: Client,
) -> None:
    await build(client)
    conversation = await chat_id(client)
    async with tab(client) as ws:
        snapshot = await hello(ws)
        newest = await page(ws, conversation)
        assert newest["direction"] == "newest"
        assert newest["older"] and not newest["newer"]
        assert newest["first"] == snapshot["oldest"][conversation]
        assert [r["key"] for r in newest["items"]] == [r["key"] for r in snapshot["items"]]
