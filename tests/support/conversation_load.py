"""Many conversations at once (issue 11, part 3): N users, each in a conversation with
one agent (the real agent SDK, replying to every message), each sending M messages
over its own WebSocket with random disconnects. A user reconnects from its cursor and
resends what was not acknowledged, under the same envelope ids. At the end, from the
AppServer's log and what every user received: every message and every reply stored
once, in order, gap-free; every user got every reply once, in order. Also the round
trip (a user's send to the agent's reply on the user's stream), p50 and p99.

Used by ``tests/reliability/test_conversation_load.py`` (a CI-sized run) and
``benchmarks/conversation_load.py`` (200 users x 100 messages each way).
"""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import msgspec

from lineup import wire
from lineup.agent import Agent, Conversation, MemoryCursorStore
from lineup.client import Backoff
from lineup.protocol import MessageEnvelope
from tests.support.appserver import AppServerProcess
from tests.support.clients import agent_api, envelope, login

WINDOW = 16
"""Sends a user keeps in flight."""


class LoadBroken(AssertionError):
    pass


@dataclass
class LoadReport:
    users: int
    messages: int
    disconnects: int = 0
    resent: int = 0
    round_trips_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def percentile(self, q: float) -> float:
        ordered = sorted(self.round_trips_ms)
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0

    def table(self) -> str:
        rows = [
            ("conversations", f"{self.users}"),
            ("messages each way per conversation", f"{self.messages}"),
            ("envelopes checked", f"{2 * self.users * self.messages:,}"),
            ("random disconnects", f"{self.disconnects:,}"),
            ("sends repeated after a disconnect", f"{self.resent:,}"),
            ("round trip p50, ms", f"{statistics.median(self.round_trips_ms):.1f}"),
            ("round trip p99, ms", f"{self.percentile(0.99):.1f}"),
            ("seconds", f"{self.seconds:.1f}"),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value:>10}" for name, value in rows)


async def _user(
    server: AppServerProcess,
    name: str,
    agent_id: str,
    messages: int,
    rng: random.Random,
    report: LoadReport,
    disconnect_after: tuple[int, int],
) -> None:
    api = await login(server.url, name)
    conversation_id = await api.open_conversation(agent_id)
    bodies = [
        envelope(conversation_id, "user", api.id, text=f"m{i}", envelope_id=f"{name}-m{i}")
        for i in range(messages)
    ]
    acked: set[int] = set()
    sent_at: dict[int, float] = {}
    replies: list[str] = []
    cursor = 0
    try:
        while len(replies) < messages or len(acked) < messages:
            budget = rng.randint(*disconnect_after)  # frames until this link is cut
            async with api.stream() as stream:
                await stream.subscribe({conversation_id: cursor})
                in_flight: list[int] = []
                for i in range(messages):  # resend what was never acknowledged
                    if i not in acked and i in sent_at:
                        await stream.send(bodies[i])
                        in_flight.append(i)
                        report.resent += 1
                next_new = max(sent_at, default=-1) + 1
                while len(replies) < messages or len(acked) < messages:
                    while len(in_flight) < WINDOW and next_new < messages:
                        sent_at.setdefault(next_new, time.monotonic())
                        await stream.send(bodies[next_new])
                        in_flight.append(next_new)
                        next_new += 1
                    frame = await asyncio.wait_for(stream.next(), 30)
                    if isinstance(frame, wire.Acks):
                        for ack in frame.acks:
                            number = int(ack.id.rsplit("-m", 1)[1])
                            acked.add(number)
                            if number in in_flight:
                                in_flight.remove(number)
                    elif isinstance(frame, wire.EnvelopeFrame):
                        if frame.seq != cursor + 1:
                            raise LoadBroken(f"{name}: seq {frame.seq} after {cursor}")
                        cursor = frame.seq
                        body: dict[str, Any] = msgspec.json.decode(bytes(frame.envelope))
                        if body["sender"]["kind"] == "agent":
                            text = body["payload"]["text"]
                            number = int(text.removeprefix("re:m"))
                            if number != len(replies):
                                raise LoadBroken(f"{name}: reply {number} out of order")
                            replies.append(text)
                            report.round_trips_ms.append(
                                (time.monotonic() - sent_at[number]) * 1000
                            )
                    budget -= 1
                    if budget <= 0 and len(replies) < messages:
                        report.disconnects += 1
                        stream.ws.transport.abort()  # a cut link: no close handshake
                        break  # reconnect from the cursor
    finally:
        await api.aclose()


async def run_load(
    server: AppServerProcess,
    *,
    users: int,
    messages: int,
    seed: int,
    disconnect_after: tuple[int, int] = (20, 120),
) -> LoadReport:
    started = time.monotonic()
    rng = random.Random(seed)
    report = LoadReport(users, messages)
    prefix = f"load{seed}x"
    names = [f"{prefix}{n}" for n in range(users)]
    for name in names:
        await asyncio.to_thread(server.add_user, name)
    agent_id = f"{prefix}agent"
    key = await asyncio.to_thread(server.add_agent, agent_id)
    agent = Agent(
        server.url, key, cursor_store=MemoryCursorStore(), backoff=Backoff(base=0.05, cap=0.3)
    )

    @agent.on_message
    async def reply(conversation: Conversation, message: MessageEnvelope) -> None:
        if message.sender.kind == "user":
            await conversation.send_markdown(f"re:{message.payload.text}")

    agent_task = asyncio.create_task(agent.run())
    try:
        await asyncio.wait_for(agent.ready.wait(), 30)
        await asyncio.gather(
            *(
                _user(
                    server,
                    name,
                    agent_id,
                    messages,
                    random.Random(rng.random()),
                    report,
                    disconnect_after,
                )
                for name in names
            )
        )
        reader = agent_api(server.url, agent_id, key)
        for conversation in agent.conversations.values():
            stored = await reader.read_all(conversation.id)
            _check(stored, messages)
        await reader.aclose()
        if len(agent.conversations) != users:
            raise LoadBroken(f"{len(agent.conversations)} conversations, not {users}")
    finally:
        await agent.stop()
        await asyncio.wait_for(agent_task, 30)
    report.seconds = time.monotonic() - started
    return report


def _check(stored: list[dict[str, Any]], messages: int) -> None:
    if [s["seq"] for s in stored] != list(range(1, len(stored) + 1)):
        raise LoadBroken("gaps or repeats in a conversation's log")
    texts = [s["envelope"]["payload"].get("text", "") for s in stored]
    mine = [t for t in texts if t.startswith("m")]
    theirs = [t for t in texts if t.startswith("re:")]
    if mine != [f"m{i}" for i in range(messages)]:
        raise LoadBroken("user messages lost, repeated or reordered")
    if theirs != [f"re:m{i}" for i in range(messages)]:
        raise LoadBroken("agent replies lost, repeated or reordered")


__all__ = ["LoadBroken", "LoadReport", "run_load"]
