"""Fuzzing the host channel: Hypothesis-made frames over a real WebSocket to a real
Runtime and Web Host (on a real AppServer).

Valid frames of every op with mutated fields, wrong types, unknown ops and fields,
huge strings, nested values, non-JSON text, non-objects and binary frames. After
each frame a ``hello`` must still get its snapshot (the frame did not take the tab
or the host down); every refusal is an ``error`` frame or a receipt with a stable
code; a refused frame changes nothing stored.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from websockets.asyncio.client import ClientConnection
from websockets.exceptions import ConnectionClosed

from lineup.host import channel
from tests.support.host_channel import hello, next_frame, tab
from tests.support.webhost import Client, client

__all__ = ["client"]

EXAMPLES = 600

CHANNEL_CODES = {"invalid_request", "too_large", "not_found", "not_failed"}
"""Every code an ``error`` frame may carry."""

STABLE_CODE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

BROADCASTS = {
    "item",
    "connection",
    "apps",
    "app_sessions",
    "app_push",
    "capabilities",
    "app_centre",
    "app_fallback",
}
"""Frames any tab may be sent at any time: not an answer to the frame under test."""

# --- frames ---------------------------------------------------------------------------

ids = st.from_regex(r"[A-Za-z0-9._:-]{1,24}", fullmatch=True)
mount_ids = st.from_regex(r"[0-9a-f]{24}", fullmatch=True)
request_ids = st.from_regex(r"[A-Za-z0-9_-]{1,16}", fullmatch=True)
event_names = st.from_regex(r"[A-Za-z][A-Za-z0-9._:-]{0,16}", fullmatch=True)
codes = st.from_regex(r"[a-z][a-z0-9_]{0,16}", fullmatch=True)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=16),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)
objects = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
requester_kinds = st.sampled_from(["agent", "app"])
capability_names = st.sampled_from(
    ["device.clipboard_write", "device.pick_file", "device.notify", "storage.save_file", "x.y"]
)


def shapes(conversation: st.SearchStrategy[str]) -> dict[str, st.SearchStrategy[dict[str, Any]]]:
    """A well-formed frame of every op the shell may send (ids mostly unknown)."""

    def op(name: str, **fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
        return st.fixed_dictionaries({"op": st.just(name), **fields})

    return {
        "hello": op("hello"),
        "send": op("send", conversation_id=conversation, text=st.text(min_size=1, max_size=40)),
        "retry": op("retry", conversation_id=conversation, envelope_id=ids),
        "history": op("history", conversation_id=conversation, before=st.integers(1, 2**40)),
        "seen": op("seen", conversation_id=conversation, envelope_ids=st.lists(ids, min_size=1)),
        "answer": op("answer", conversation_id=conversation, interaction_id=ids, answer=objects),
        "draft": op("draft", interaction_id=ids, text=st.text(max_size=40)),
        "app": op(
            "app",
            action=st.sampled_from(["foreground", "background", "close", "continue"]),
            instance_id=ids,
        ),
        "mount": op("mount", instance_id=ids),
        "unmount": op("unmount", mount_id=mount_ids),
        "app_call": op(
            "app_call",
            mount_id=mount_ids,
            id=request_ids,
            method=st.text(max_size=20),
            params=objects,
        ),
        "mount_ui": op("mount_ui", conversation_id=conversation, instance_id=ids),
        "ui_event": op("ui_event", mount_id=mount_ids, event=event_names, data=objects),
        "app_event": op("app_event", mount_id=mount_ids, event=event_names, data=objects),
        "consent": op(
            "consent",
            conversation_id=conversation,
            call_id=ids,
            requester_kind=requester_kinds,
            allow=st.booleans(),
            remember=st.booleans(),
            acknowledged=st.booleans(),
            confirmation=st.none() | st.text(max_size=20),
        ),
        "claim": op(
            "claim", conversation_id=conversation, call_id=ids, requester_kind=requester_kinds
        ),
        "capability_done": op(
            "capability_done",
            conversation_id=conversation,
            call_id=ids,
            requester_kind=requester_kinds,
            ok=st.booleans(),
            result=st.none() | objects,
            code=st.none() | codes,
        ),
        "grants": op("grants"),
        "forget": op(
            "forget", requester=st.text(min_size=1, max_size=30), capability=capability_names
        ),
        "capability_policy": op(
            "capability_policy", capability=capability_names, revoked=st.booleans()
        ),
        "apps": op("apps"),
        "apps_action": op(
            "apps_action",
            action=st.sampled_from(["enable", "disable", "remove", "install", "update"]),
            app_id=st.none() | st.from_regex(r"[a-z]{1,8}\.[a-z]{1,8}", fullmatch=True),
            version=st.none() | st.sampled_from(["1.0.0", "0.0.1", "2.0.0-rc.1"]),
        ),
    }


@st.composite
def mutated(draw: st.DrawFn, frames: st.SearchStrategy[dict[str, Any]]) -> dict[str, Any]:
    """A well-formed frame with one thing wrong (or, sometimes, nothing)."""
    frame = dict(draw(frames))
    keys = sorted(frame)
    how = draw(
        st.sampled_from(["none", "none", "none", "drop", "unknown", "retype", "huge", "nest", "op"])
    )
    event(f"mutation: {how}")
    if how == "drop" and len(keys) > 1:
        del frame[draw(st.sampled_from([k for k in keys if k != "op"]))]
    elif how == "unknown":
        frame[draw(st.text(min_size=1, max_size=12).filter(lambda k: k not in frame))] = draw(
            json_values
        )
    elif how == "retype":
        frame[draw(st.sampled_from(keys))] = draw(json_values)
    elif how == "huge":
        # Past every field's bound; and past the channel's 256 KiB (still under the
        # WebSocket's 512 KiB: see test_a_frame_past_the_websocket_limit...).
        key = draw(st.sampled_from(keys))
        if draw(st.booleans()):
            size = draw(st.sampled_from([129, 4_097, 70_000]))
            frame[key] = draw(st.sampled_from("xé\u2028\x00")) * size
        else:
            frame[key] = "x" * (channel.MAX_FRAME_BYTES + 1)
    elif how == "nest":
        depth = draw(st.integers(1, 200))
        nested: Any = draw(json_values)
        for _ in range(depth):
            nested = {"a": nested} if draw(st.booleans()) else [nested]
        frame[draw(st.sampled_from(keys))] = nested
    elif how == "op":
        frame["op"] = draw(st.text(max_size=20) | json_values)
    return frame


@dataclass(frozen=True)
class Raw:
    """What goes on the wire: a text frame or a binary one."""

    data: str | bytes
    op: str = field(default="?")


def raw_frames(conversation_id: str) -> st.SearchStrategy[Raw]:
    conversation = st.one_of(st.just(conversation_id), ids)
    frames = st.one_of(list(shapes(conversation).values()))

    def encoded(frame: dict[str, Any]) -> Raw:
        op = frame.get("op")
        return Raw(json.dumps(frame, ensure_ascii=False), op if isinstance(op, str) else "?")

    well_formed_or_nearly = mutated(frames).map(encoded)
    garbage = st.one_of(
        json_values.map(lambda value: Raw(json.dumps(value))),  # not an object
        st.text(max_size=200).map(Raw),  # mostly not JSON
        st.binary(max_size=200).map(Raw),  # a binary frame
        st.sampled_from(['{"op": "hello"', "{}", "null", '{"op": null}', "\ufeff{}"]).map(Raw),
    )
    # Three in four reach the decoder as objects with an op; the rest do not.
    return st.sampled_from([True, True, True, False]).flatmap(
        lambda framed: well_formed_or_nearly if framed else garbage
    )


# --- the exchange ---------------------------------------------------------------------


def _row_counts(conn: sqlite3.Connection) -> dict[str, int]:
    tables = [
        name
        for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        if not name.startswith("sqlite_") and "audit" not in name
    ]
    return {
        name: conn.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0]  # noqa: S608
        for name in tables
    }


async def drained(client: Client) -> None:
    """Wait (on Runtime events, not time) until an accepted ``send`` left the outbox, so
    that what is stored changes only by the frame under test."""
    changed = asyncio.Event()
    unsubscribe = client.runtime.subscribe(lambda _event: changed.set())
    try:
        async with asyncio.timeout(15):
            while True:
                changed.clear()  # before looking, so no event slips between
                if not await client.runtime.store.outbox():
                    return
                await changed.wait()
    finally:
        unsubscribe()


async def stored(client: Client) -> dict[str, int]:
    """Rows per table of the Runtime's store (audit rows aside: a refused app
    decision is audited by design), plus the timeline and the outbox."""
    counts = await client.runtime.store.db.read(_row_counts)
    timeline = await client.runtime.store.timeline(client.pair.conversation_id, limit=10_000)
    counts["(timeline)"] = len(timeline)
    counts["(outbox)"] = len(await client.runtime.store.outbox())
    return counts


_barriers = itertools.count(1)


async def exchange(ws: ClientConnection, raw: Raw) -> list[dict[str, Any]]:
    """Send ``raw``, then a ``hello``, then a barrier (an ``app`` request naming an
    instance no frame under test can name); return the frames answering ``raw``.
    The channel answers in order, so they come first, then the ``hello``'s snapshot:
    the host took ``raw`` and still serves the tab. An ``apps_action`` is answered
    when its work is done: wait for its receipt too."""
    barrier = f"barrier-{next(_barriers)}"
    await ws.send(raw.data)
    await ws.send(json.dumps({"op": "hello"}))
    await ws.send(json.dumps({"op": "app", "action": "background", "instance_id": barrier}))
    answers: list[dict[str, Any]] = []
    async with asyncio.timeout(15):
        while True:
            frame = json.loads(await ws.recv())
            assert isinstance(frame, dict), frame
            if frame["op"] == "app_receipt" and frame["instance_id"] == barrier:
                break
            if frame["op"] not in BROADCASTS:
                answers.append(frame)
        assert answers, "no snapshot: the hello after the frame went unanswered"
        assert answers.pop()["op"] == "snapshot", answers
        if raw.op == "apps_action" and not answers:
            while not answers:
                frame = json.loads(await ws.recv())
                if frame["op"] not in BROADCASTS:
                    answers.append(frame)
    return answers


def refusal(answer: dict[str, Any]) -> str | None:
    """The stable code of a refusal, or ``None`` for an answer that accepts."""
    op = answer["op"]
    if op == "error":
        assert set(answer) == {"op", "code", "message"}, answer
        assert answer["code"] in CHANNEL_CODES, answer
        assert isinstance(answer["message"], str), answer
        return str(answer["code"])
    if op == "app_reply":
        if answer["ok"]:
            return None
        code = answer["error"]["code"]
        assert STABLE_CODE.match(code), answer
        return str(code)
    if "outcome" in answer:
        outcome = answer["outcome"]
        assert STABLE_CODE.match(outcome), answer
        return None if outcome in ("accepted", "ok") else str(outcome)
    assert op in ("snapshot", "history", "grants", "capability_run"), answer
    return None


async def test_no_frame_takes_the_channel_down_and_every_refusal_has_a_stable_code(
    client: Client,
) -> None:
    loop = asyncio.get_running_loop()
    refused: dict[str, int] = {}
    accepted: dict[str, int] = {}

    async with tab(client) as ws:

        async def one(raw: Raw) -> None:
            await drained(client)
            before = await stored(client)
            answers = await exchange(ws, raw)
            codes = [code for a in answers if (code := refusal(a)) is not None]
            assert len(answers) <= 1 or raw.op in ("consent", "claim", "capability_done"), answers
            if codes:
                for code in codes:
                    refused[code] = refused.get(code, 0) + 1
                assert await stored(client) == before, f"refused ({codes}) yet stored: {raw!r:.300}"
            else:
                accepted[raw.op] = accepted.get(raw.op, 0) + 1

        def on_loop(coroutine_of: Callable[[Raw], Any]) -> Callable[[Raw], None]:
            def run(raw: Raw) -> None:
                asyncio.run_coroutine_threadsafe(coroutine_of(raw), loop).result(timeout=60)

            return run

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(raw=raw_frames(client.pair.conversation_id))
        def fuzz(raw: Raw) -> None:
            on_loop(one)(raw)

        await asyncio.to_thread(fuzz)

    # The fuzzing ran through every kind of refusal, and the host still serves a tab.
    assert {"invalid_request", "too_large"} <= set(refused), refused
    assert accepted, "nothing was ever accepted: the frames never reached the Runtime"
    async with tab(client) as again:
        assert (await exchange(again, Raw('{"op": "grants"}', "grants")))[0]["op"] == "grants"


async def test_a_frame_past_the_websocket_limit_closes_that_tab_only(client: Client) -> None:
    """Past 512 KiB the WebSocket layer closes with 1009 (message too big) before the
    channel reads the frame; the host goes on serving."""
    async with tab(client) as ws:
        before = await stored(client)
        await ws.send("x" * (512 * 1024 + 1))
        with pytest.raises(ConnectionClosed) as closed:
            await next_frame(ws, "snapshot")
        # 1009 when the close frame gets through; uvicorn may drop the TCP link first.
        assert closed.value.rcvd is None or closed.value.rcvd.code == 1009, closed.value
    assert await stored(client) == before
    async with tab(client) as again:
        assert (await hello(again))["conversations"]


def deeply_nested_answer(depth: int) -> str:
    nested = '{"a":' * depth + "1" + "}" * depth
    return '{"op":"answer","conversation_id":"c","interaction_id":"i","answer":' + nested + "}"


async def test_a_deeply_nested_frame_does_not_take_the_host_down(client: Client) -> None:
    async with tab(client) as ws:
        await ws.send(deeply_nested_answer(5_000))
        with contextlib.suppress(ConnectionClosed):
            await ws.send(json.dumps({"op": "hello"}))
            await next_frame(ws, "snapshot")
    async with tab(client) as again:
        snapshot = await hello(again)
        assert snapshot["conversations"], snapshot


async def test_a_deeply_nested_frame_is_refused_with_a_code(client: Client) -> None:
    async with tab(client) as ws:
        before = await stored(client)
        answers = await exchange(ws, Raw(deeply_nested_answer(5_000), "answer"))
        assert [refusal(a) for a in answers] == ["invalid_request"]
        assert await stored(client) == before
