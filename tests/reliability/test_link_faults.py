"""Link faults (issue 11 part 2): a real AppServer process, a real ``Runtime`` and a real
agent (the SDK's ``Agent``), each talking to the AppServer through a faulty link of its
own (``tests/support/faulty_link.py``) that cuts connections every few KB, drops
frames mid-way, delays, stalls and loses replies so that sends are repeated.

The invariants of docs/reliability.md hold all the same: no user or agent message is
lost or duplicated, each conversation keeps its order, and every interaction ends with
exactly one ``tool.result``, which the agent receives once. The AppServer's log is read
over plain HTTP, straight from the AppServer (not through a link).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup.agent import Agent, Conversation, MemoryCursorStore
from lineup.protocol import MessageEnvelope
from lineup.runtime import Runtime, RuntimeEvent, TimelineChanged
from tests.agent.test_agent import running as agent_running
from tests.conftest import Pair
from tests.runtime.test_runtime import FAST, EventLog, content, outbox_empty, running
from tests.support.appserver import AppServerProcess
from tests.support.faulty_link import FaultPlan, FaultyLink

SEED = 20260311
MESSAGES = 100
ROUNDS = 6
WITHIN = 60.0

CHAT_FAULTS = FaultPlan(
    cut_after=(2_000, 8_000),  # every few KB, mid-chunk: the bytes in flight are lost
    drop=0.01,
    delay=0.2,
    delay_ms=(1.0, 15.0),
    stall=0.02,
    stall_ms=(20.0, 150.0),
    lose_reply=0.05,
    lose_reply_min_bytes=40,  # frames are compressed (permessage-deflate): sends are small
)
BACKGROUND_FAULTS = FaultPlan(cut_after=(2_000, 8_000), delay=0.2, delay_ms=(1.0, 10.0))


@asynccontextmanager
async def linked_runtime(
    appserver: AppServerProcess, pair: Pair, data_dir: Path, seed: int
) -> AsyncIterator[tuple[Runtime, FaultyLink]]:
    """A Runtime logged in to the AppServer through a link of its own (healthy for now)."""
    async with FaultyLink(appserver.port, seed=seed) as link:
        runtime = Runtime(data_dir, backoff=FAST, catalog_interval=None)
        await runtime.open()
        try:
            await runtime.login(link.url, pair.user_name, "correct horse battery")
            yield runtime, link
        finally:
            await runtime.close()


@asynccontextmanager
async def linked_agent(
    appserver: AppServerProcess, pair: Pair, seed: int
) -> AsyncIterator[tuple[Agent, FaultyLink]]:
    async with FaultyLink(appserver.port, seed=seed) as link:
        yield Agent(link.url, pair.agent_key, cursor_store=MemoryCursorStore(), backoff=FAST), link


async def stored_log(pair: Pair) -> list[dict[str, Any]]:
    """The conversation's log, read straight from the AppServer: each envelope id once,
    sequence numbers 1..n with no gap."""
    stored = await pair.agent.read_all(pair.conversation_id)
    ids = [s["envelope"]["id"] for s in stored]
    assert len(ids) == len(set(ids)), "an envelope id is stored twice"
    assert [s["seq"] for s in stored] == list(range(1, len(stored) + 1))
    return stored


def texts(stored: list[dict[str, Any]], sender: str) -> list[str]:
    return [
        s["envelope"]["payload"]["text"]
        for s in stored
        if s["envelope"]["sender"]["kind"] == sender
        and s["envelope"]["type"] == "lineup.v1.message"
    ]


def report(name: str, *links: tuple[str, FaultyLink]) -> int:
    """Print what each link injected; return the faults in all."""
    total = 0
    for label, link in links:
        print(f"\n[{name}] {label}: {link.counts.as_dict()}")
        total += link.counts.faults
    return total


@dataclass
class AgentReplies:
    """Agent messages the Runtime shows, by envelope id, as they arrive."""

    seen: dict[str, TimelineChanged] = field(default_factory=dict)

    def __call__(self, event: RuntimeEvent) -> None:
        if not isinstance(event, TimelineChanged):
            return
        if event.item.sender_kind == "agent" and event.item.type == "lineup.v1.message":
            self.seen[event.item.envelope_id] = event

    def at_least(self, count: int) -> Callable[[], bool]:
        return lambda: len(self.seen) >= count


@pytest.mark.parametrize("seed", [SEED, SEED + 10, SEED + 20])
async def test_chat_both_ways_loses_and_repeats_nothing_over_faulty_links(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path, seed: int
) -> None:
    heard: list[str] = []

    async with (
        linked_runtime(appserver, pair, tmp_path, seed) as (runtime, runtime_link),
        linked_agent(appserver, pair, seed + 1) as (agent, agent_link),
    ):

        @agent.on_message
        async def reply(conversation: Conversation, message: MessageEnvelope) -> None:
            heard.append(message.payload.text)
            # A reply id derived from the message: a replayed handler would repeat it harmlessly.
            await conversation.send_markdown(
                f"re: {message.payload.text}", envelope_id=f"re_{message.id}"
            )

        log = EventLog(runtime)
        replies = AgentReplies()
        runtime.subscribe(replies)
        async with running(runtime), agent_running(agent):
            runtime_link.plan = CHAT_FAULTS
            agent_link.plan = CHAT_FAULTS
            for n in range(MESSAGES):
                await runtime.send_message(pair.conversation_id, f"m{n:03}")
            for share in (5, 4, 3, 2):  # and cut both links while the traffic flows
                await log.until(replies.at_least(MESSAGES // share), within=WITHIN)
                runtime_link.cut_all()
                agent_link.cut_all()
            await log.until(replies.at_least(MESSAGES), within=WITHIN)
            await log.until_async(outbox_empty(runtime), within=WITHIN)
            runtime_link.heal()
            agent_link.heal()
        timeline = content(await runtime.store.timeline(pair.conversation_id, limit=1000))

    faults = report("chat", ("runtime link", runtime_link), ("agent link", agent_link))
    expected = [f"m{n:03}" for n in range(MESSAGES)]
    # The agent's handler saw each user message once, in order.
    assert heard == expected
    # The Runtime shows each message and each reply once, each side in order, each reply
    # after its message (replies interleave with later messages: the agent answers while
    # the person types), in the AppServer's order.
    rows = [msgspec.json.decode(t.body)["payload"]["text"] for t in timeline]
    assert [r for r in rows if not r.startswith("re: ")] == expected
    assert [r for r in rows if r.startswith("re: ")] == [f"re: {text}" for text in expected]
    assert all(rows.index(f"re: {text}") > rows.index(text) for text in expected)
    seqs = [t.seq or 0 for t in timeline]
    assert 0 not in seqs and seqs == sorted(set(seqs))
    assert {t.state for t in timeline} <= {"sent", "received"}
    # The AppServer stored each once, in order, gap-free.
    stored = await stored_log(pair)
    assert texts(stored, "user") == expected
    assert texts(stored, "agent") == [f"re: {text}" for text in expected]
    # The links really misbehaved.
    assert runtime_link.counts.cuts >= 5 and agent_link.counts.cuts >= 5
    assert faults >= 40


async def test_interactions_over_faulty_links_end_once_and_reach_the_agent_once(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    answers: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
    returned: list[tuple[str, str]] = []
    options = [("stg", "Staging"), ("prod", "Production"), ("dev", "Development")]

    async with (
        linked_runtime(appserver, pair, tmp_path, SEED + 2) as (runtime, runtime_link),
        linked_agent(appserver, pair, SEED + 3) as (agent, agent_link),
    ):

        @agent.on_message
        async def deploy(conversation: Conversation, message: MessageEnvelope) -> None:
            where = await conversation.ask_choice(f"Deploy {message.payload.text} where?", options)
            returned.append((message.payload.text, where))
            await answers.put((message.payload.text, where))

        log = EventLog(runtime)
        async with running(runtime), agent_running(agent):
            runtime_link.plan = BACKGROUND_FAULTS
            agent_link.plan = BACKGROUND_FAULTS
            for n in range(ROUNDS):
                build = f"build-{n}"
                await runtime.send_message(pair.conversation_id, build)
                await log.until(lambda: pending_question(log) is not None, within=WITHIN)
                question = pending_question(log)
                assert question is not None
                choice = options[n % len(options)][0]
                if n % 3 == 0:
                    # The result reaches the AppServer, its ack is lost: the Runtime resends.
                    runtime_link.arm_lose_reply()
                elif n % 3 == 1:
                    agent_link.stall_all(150)
                answered = await runtime.answer(
                    question.id, pair.conversation_id, {"selected": [choice]}
                )
                assert answered.state == "answered"
                if n % 3 == 1:
                    runtime_link.cut_all()  # the result is queued, maybe on its way
                elif n % 3 == 2:
                    runtime_link.cut_all()
                    agent_link.cut_all()  # the agent hears the result after a reconnect
                got = await asyncio.wait_for(answers.get(), WITHIN)
                assert got == (build, choice), (got, options)
            await log.until_async(outbox_empty(runtime), within=WITHIN)
            runtime_link.heal()
            agent_link.heal()
        records = await runtime.store.pending_interactions()

    faults = report("interactions", ("runtime link", runtime_link), ("agent link", agent_link))
    expected = [(f"build-{n}", options[n % len(options)][0]) for n in range(ROUNDS)]
    assert returned == expected  # each ask_choice returned once, with the answer
    assert answers.empty()
    assert records == []
    stored = await stored_log(pair)
    calls = [
        s["envelope"]["payload"]["call_id"]
        for s in stored
        if s["envelope"]["type"] == "lineup.v1.tool.call"
    ]
    results = [
        s["envelope"]["payload"] for s in stored if s["envelope"]["type"] == "lineup.v1.tool.result"
    ]
    assert len(calls) == len(set(calls)) == ROUNDS
    # Exactly one result per call, in call order, each the answer given.
    assert [r["call_id"] for r in results] == calls
    assert [r["status"] for r in results] == ["completed"] * ROUNDS
    assert [r["result"]["selected"] for r in results] == [[where] for _, where in expected]
    assert texts(stored, "user") == [f"build-{n}" for n in range(ROUNDS)]
    assert runtime_link.counts.lost_replies >= ROUNDS // 3
    assert runtime_link.counts.cuts >= ROUNDS // 3 * 2
    assert faults >= 2 * ROUNDS


def pending_question(log: EventLog) -> Any:
    """The newest interaction the Runtime shows as pending, if any."""
    latest: dict[str, Any] = {}
    for event in log.events:
        if isinstance(event, TimelineChanged) and event.item.interaction is not None:
            latest[event.item.interaction.id] = event.item.interaction
    pending = [record for record in latest.values() if record.state == "pending"]
    return pending[-1] if pending else None
