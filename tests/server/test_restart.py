"""Kill the AppServer process mid-stream: every acknowledged envelope survives."""

from __future__ import annotations

import asyncio
import contextlib

from websockets.exceptions import ConnectionClosed

from lineup import wire
from tests.conftest import make_pair
from tests.support.appserver import AppServerProcess
from tests.support.clients import agent_api, login


async def test_sigkill_loses_no_acknowledged_envelope_and_resends_are_harmless(
    own_appserver: AppServerProcess,
) -> None:
    pair = await make_pair(own_appserver)
    conversation = pair.conversation_id
    envelopes = [pair.agent.envelope(conversation, text=f"k{i}") for i in range(20_000)]
    acked: dict[str, int] = {}

    async with pair.agent.stream() as stream:

        async def send_all() -> None:
            # Writes and reads run side by side, as in a real client: the server
            # stops reading at its in-flight limit until acks are taken.
            with contextlib.suppress(ConnectionClosed):
                for envelope in envelopes:
                    await stream.send(envelope)

        sender = asyncio.create_task(send_all())
        try:
            while len(acked) < 300:
                frame = await asyncio.wait_for(stream.next(), 15)
                if isinstance(frame, wire.Acks):
                    acked.update((ack.id, ack.seq) for ack in frame.acks)
            own_appserver.kill()  # mid-flight: thousands sent, hundreds acknowledged
            while True:
                frame = await asyncio.wait_for(stream.next(), 15)
                if isinstance(frame, wire.Acks):
                    acked.update((ack.id, ack.seq) for ack in frame.acks)
        except ConnectionClosed:
            pass
        await sender
    assert 300 <= len(acked) < len(envelopes)

    own_appserver.start()
    await pair.user.aclose()
    await pair.agent.aclose()
    user = await login(own_appserver.url, pair.user_name)
    agent = agent_api(own_appserver.url, pair.agent.id, pair.agent_key)
    stored = await user.read_all(conversation)
    stored_seq = {s["envelope"]["id"]: s["seq"] for s in stored}
    for envelope_id, seq in acked.items():
        assert stored_seq.get(envelope_id) == seq, "an acknowledged envelope was lost or moved"
    assert [s["seq"] for s in stored] == list(range(1, len(stored) + 1))

    # The agent does not know what got in after its last ack: it resends everything.
    async with agent.stream() as stream:

        async def resend_all() -> None:
            for envelope in envelopes:
                await stream.send(envelope)

        resender = asyncio.create_task(resend_all())
        answers = [await asyncio.wait_for(stream.ack(), 15) for _ in envelopes]
        await resender
    for answer in answers:
        if answer.id in stored_seq:
            assert answer.duplicate and answer.seq == stored_seq[answer.id]
    final = await user.read_all(conversation)
    assert [s["envelope"]["id"] for s in final] == [e["id"] for e in envelopes]
    assert [s["seq"] for s in final] == list(range(1, len(envelopes) + 1))
    await user.aclose()
    await agent.aclose()


async def test_graceful_restart_keeps_users_tokens_and_history(
    own_appserver: AppServerProcess,
) -> None:
    pair = await make_pair(own_appserver)
    await pair.user.send_text(pair.conversation_id, "before restart")
    own_appserver.stop()
    own_appserver.start()
    # The same token still works: tokens are stored, not held in memory.
    stored = await pair.user.read_all(pair.conversation_id)
    assert [s["envelope"]["payload"]["text"] for s in stored] == ["before restart"]
    assert await pair.agent.send_text(pair.conversation_id, "after restart") == 2
    await pair.user.aclose()
    await pair.agent.aclose()
