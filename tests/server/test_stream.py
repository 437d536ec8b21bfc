"""The WebSocket stream: backlog from a cursor, live pushes, resume, pipelined sends."""

from __future__ import annotations

import asyncio

from lineup import wire
from tests.conftest import Pair
from tests.support.clients import Stream


async def collect(stream: Stream, count: int) -> list[wire.EnvelopeFrame]:
    frames: list[wire.EnvelopeFrame] = []
    while len(frames) < count:
        frame = await asyncio.wait_for(stream.next(), timeout=15)
        if isinstance(frame, wire.EnvelopeFrame):
            frames.append(frame)
    return frames


def texts(frames: list[wire.EnvelopeFrame]) -> list[str]:
    import msgspec

    return [msgspec.json.decode(bytes(f.envelope))["payload"]["text"] for f in frames]


async def test_subscribe_replays_the_backlog_then_says_synced(pair: Pair) -> None:
    for i in range(3):
        await pair.user.send_text(pair.conversation_id, f"old{i}")
    async with pair.agent.stream() as stream:
        await stream.subscribe({pair.conversation_id: 1})
        frames = await collect(stream, 2)
        synced = await stream.until(wire.Synced)
    assert [f.seq for f in frames] == [2, 3]
    assert texts(frames) == ["old1", "old2"]
    assert synced.cursors == {pair.conversation_id: 3}


async def test_live_envelopes_arrive_in_order(pair: Pair) -> None:
    async with pair.agent.stream() as stream:
        await stream.subscribe({pair.conversation_id: 0})
        await stream.until(wire.Synced)
        for i in range(10):
            await pair.user.send_text(pair.conversation_id, f"live{i}")
        frames = await collect(stream, 10)
    assert [f.seq for f in frames] == list(range(1, 11))
    assert texts(frames) == [f"live{i}" for i in range(10)]


async def test_resume_after_a_dropped_connection_misses_nothing_and_repeats_nothing(
    pair: Pair,
) -> None:
    async with pair.agent.stream() as stream:
        await stream.subscribe({pair.conversation_id: 0})
        await stream.until(wire.Synced)
        for i in range(5):
            await pair.user.send_text(pair.conversation_id, f"a{i}")
        first = await collect(stream, 3)  # the connection drops after three
    cursor = first[-1].seq
    for i in range(5):
        await pair.user.send_text(pair.conversation_id, f"b{i}")
    async with pair.agent.stream() as stream:
        await stream.subscribe({pair.conversation_id: cursor})
        rest = await collect(stream, 7)
        synced = await stream.until(wire.Synced)
    seqs = [f.seq for f in first + rest]
    assert seqs == list(range(1, 11))
    assert texts(first + rest) == [f"a{i}" for i in range(5)] + [f"b{i}" for i in range(5)]
    assert synced.cursors[pair.conversation_id] == 10


async def test_pipelined_sends_are_acknowledged_in_order(pair: Pair) -> None:
    async with pair.agent.stream() as stream:
        envelopes = [pair.agent.envelope(pair.conversation_id, text=f"p{i}") for i in range(200)]
        for envelope in envelopes:
            await stream.send(envelope)
        acks = [await asyncio.wait_for(stream.ack(), 15) for _ in envelopes]
    assert [a.id for a in acks] == [e["id"] for e in envelopes]
    assert [a.seq for a in acks] == list(range(1, 201))
    stored = await pair.user.read_all(pair.conversation_id)
    assert [s["envelope"]["payload"]["text"] for s in stored] == [f"p{i}" for i in range(200)]


async def test_bad_frames_and_envelopes_get_errors_and_the_connection_lives_on(pair: Pair) -> None:
    async with pair.agent.stream() as stream:
        await stream.ws.send("not json")
        error = await stream.until(wire.ErrorFrame)
        assert error.error.code == "invalid_request"
        await stream.send_frame({"op": "fly"})
        assert (await stream.until(wire.ErrorFrame)).error.code == "invalid_request"
        bad = pair.agent.envelope(pair.conversation_id, envelope_id="bad-1", kind="lineup.v1.nope")
        await stream.send(bad)
        nack = await stream.until(wire.Nack)
        assert (nack.id, nack.error.code) == ("bad-1", "unsupported_type")
        await stream.send_frame({"op": "ping"})
        assert isinstance(await stream.until(wire.Pong), wire.Pong)
        good = pair.agent.envelope(pair.conversation_id, text="still here")
        await stream.send(good)
        ack = await stream.ack()
        assert (ack.id, ack.seq) == (good["id"], 1)


async def test_duplicate_and_conflicting_sends_over_the_stream(pair: Pair) -> None:
    async with pair.agent.stream() as stream:
        body = pair.agent.envelope(pair.conversation_id, text="x", envelope_id="dup-1")
        await stream.send(body)
        await stream.send(body)
        await stream.send(dict(body, payload={"text": "y"}))
        first = await stream.ack()
        second = await stream.ack()
        third = await stream.until(wire.Nack)
    assert (first.seq, first.duplicate) == (1, False)
    assert (second.seq, second.duplicate) == (1, True)
    assert third.error.code == "conflict"
    assert len(await pair.user.read_all(pair.conversation_id)) == 1


async def test_follow_all_announces_new_conversations(pair: Pair, appserver) -> None:  # type: ignore[no-untyped-def]
    async with pair.agent.stream() as stream:
        await stream.subscribe(all=True)
        synced = await stream.until(wire.Synced)
        assert synced.cursors == {pair.conversation_id: 0}
        second = await pair.user.open_conversation(pair.agent.id)
        announced = await asyncio.wait_for(stream.until(wire.ConversationFrame), 15)
        assert announced.conversation.id == second
        await pair.user.send_text(second, "in the new one")
        frame = (await collect(stream, 1))[0]
    assert (frame.conversation_id, frame.seq) == (second, 1)


async def test_order_is_total_and_gap_free_under_20_concurrent_senders(pair: Pair) -> None:
    """20 senders (10 WebSocket, 10 HTTP) write into one conversation at once."""
    per_sender = 25

    async def ws_sender(n: int) -> list[str]:
        ids = []
        async with pair.agent.stream() as stream:
            for i in range(per_sender):
                body = pair.agent.envelope(pair.conversation_id, text=f"ws{n}-{i}")
                ids.append(body["id"])
                await stream.send(body)
            for _ in range(per_sender):
                await asyncio.wait_for(stream.ack(), 30)
        return ids

    async def http_sender(n: int) -> list[str]:
        ids = []
        for i in range(per_sender):
            body = pair.user.envelope(pair.conversation_id, text=f"http{n}-{i}")
            ids.append(body["id"])
            response = await pair.user.post(pair.conversation_id, body)
            assert response.status_code == 201
        return ids

    async with pair.user.stream() as watcher:
        await watcher.subscribe({pair.conversation_id: 0})
        await watcher.until(wire.Synced)
        sent = await asyncio.gather(
            *[ws_sender(n) for n in range(10)], *[http_sender(n) for n in range(10)]
        )
        live = await collect(watcher, 20 * per_sender)
    stored = await pair.user.read_all(pair.conversation_id)
    assert [s["seq"] for s in stored] == list(range(1, 20 * per_sender + 1))
    assert [f.seq for f in live] == [s["seq"] for s in stored]
    stored_ids = [s["envelope"]["id"] for s in stored]
    for ids in sent:
        positions = [stored_ids.index(i) for i in ids]
        assert positions == sorted(positions), "a sender's envelopes were reordered"
