"""Several AppServer processes on one PostgreSQL database, no sticky sessions: a client
streaming from one process receives, promptly and in order, what an agent sends to
another; when a process dies mid-stream the client resumes on another from its
cursor and the agent resends on another, with nothing lost or duplicated; a lost
notification feed is caught up from the cursors; ``--workers 2`` serves on one port
and stops gracefully."""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
import httpx
import msgspec
import pytest

from lineup import wire
from lineup.server.storage.postgres import LISTENER_NAME
from tests.server.test_stream import collect
from tests.support.appserver import AppServerProcess
from tests.support.clients import Api, agent_api, envelope, login
from tests.support.postgres import PostgresCluster


@dataclass
class Cluster:
    database: str
    a: AppServerProcess
    b: AppServerProcess
    agent_id: str
    agent_key: str


@pytest.fixture
def cluster(postgres_cluster: PostgresCluster, tmp_path: Path) -> Iterator[Cluster]:
    database = postgres_cluster.create_database()
    a = AppServerProcess(tmp_path / "a", tmp_path / "a.log", database=database)
    b = AppServerProcess(tmp_path / "b", tmp_path / "b.log", database=database)
    a.start()
    b.start()
    a.add_user("alice")
    key = b.add_agent("helper")
    yield Cluster(database, a, b, "helper", key)
    a.stop()
    b.stop()


@pytest.fixture
async def users(cluster: Cluster) -> AsyncIterator[tuple[Api, Api, str]]:
    """Alice logged in on A, the agent on B, and a conversation between them."""
    alice = await login(cluster.a.url, "alice")
    agent = agent_api(cluster.b.url, cluster.agent_id, cluster.agent_key)
    conversation_id = await alice.open_conversation(cluster.agent_id)
    yield alice, agent, conversation_id
    await alice.aclose()
    await agent.aclose()


def text_of(frame: wire.EnvelopeFrame) -> str:
    return str(msgspec.json.decode(bytes(frame.envelope))["payload"]["text"])


async def test_an_envelope_sent_to_one_process_streams_from_the_other(
    users: tuple[Api, Api, str],
) -> None:
    alice, agent, conversation_id = users
    async with alice.stream() as stream:  # on A
        await stream.subscribe({conversation_id: 0}, all=True)
        await stream.until(wire.Synced)
        for i in range(50):
            await agent.send_text(conversation_id, f"m{i}")  # on B
        got = await collect(stream, 50)
        assert [f.seq for f in got] == list(range(1, 51))
        assert [text_of(f) for f in got] == [f"m{i}" for i in range(50)]
        # A conversation the agent opens on B is announced on A's stream.
        opened = await agent.open_conversation(alice.id)
        announced = await asyncio.wait_for(stream.until(wire.ConversationFrame), timeout=15)
        assert announced.conversation.id == opened


async def test_a_process_killed_mid_stream_loses_nothing_and_repeats_nothing(
    cluster: Cluster, users: tuple[Api, Api, str]
) -> None:
    alice, _, conversation_id = users
    agent_on_a = agent_api(cluster.a.url, cluster.agent_id, cluster.agent_key)
    agent_on_b = agent_api(cluster.b.url, cluster.agent_id, cluster.agent_key)
    bodies = [
        envelope(conversation_id, "agent", cluster.agent_id, text=f"n{i}") for i in range(120)
    ]
    received: list[wire.EnvelopeFrame] = []
    async with alice.stream() as stream:  # Alice streams from A
        await stream.subscribe({conversation_id: 0})
        await stream.until(wire.Synced)
        async with agent_on_a.stream() as sends:  # the agent pipelines its sends into A
            for body in bodies[:60]:
                await sends.send(body)
            for _ in range(20):
                await sends.ack()
            received = await collect(stream, 10)
            cluster.a.kill()  # mid-stream, with sends in flight
    cursor = received[-1].seq
    # The agent resends everything it has no acknowledgement for... to B, and the rest.
    for body in bodies[20:]:
        response = await agent_on_b.post(conversation_id, body)
        assert response.status_code in (200, 201), response.text
    alice_on_b = Api(cluster.b.url, alice.secret, alice.id, "user")
    async with alice_on_b.stream() as stream:  # Alice resumes on B from her cursor
        await stream.subscribe({conversation_id: cursor})
        received += await collect(stream, 120 - cursor)
    seqs = [f.seq for f in received]
    assert seqs == list(range(1, 121)), "lost or repeated"
    stored = await agent_on_b.read_all(conversation_id)
    ids = [item["envelope"]["id"] for item in stored]
    assert sorted(ids) == sorted(b["id"] for b in bodies) and len(ids) == 120  # each once
    assert [item["seq"] for item in stored] == list(range(1, 121))  # gap-free
    await agent_on_a.aclose()
    await agent_on_b.aclose()
    await alice_on_b.aclose()


async def test_a_lost_notification_feed_is_caught_up_from_the_cursor(
    cluster: Cluster, users: tuple[Api, Api, str]
) -> None:
    alice, agent, conversation_id = users
    async with alice.stream() as stream:  # on A
        await stream.subscribe({conversation_id: 0})
        await stream.until(wire.Synced)
        connection = await asyncpg.connect(cluster.database)
        try:
            killed = await connection.fetchval(
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity"
                " WHERE application_name = $1 AND datname = current_database()",
                LISTENER_NAME,
            )
        finally:
            await connection.close()
        assert killed == 2  # A's and B's notification feeds
        for i in range(20):  # sent while the feeds are down or coming back
            await agent.send_text(conversation_id, f"gap{i}")
        got = await collect(stream, 20)
    assert [f.seq for f in got] == list(range(1, 21))
    assert [text_of(f) for f in got] == [f"gap{i}" for i in range(20)]
    assert "postgres listener lost" in cluster.a.log_text()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text().split()
        found.extend(int(child) for child in text)
    return found


async def test_workers_share_one_port_and_stop_gracefully(
    postgres_cluster: PostgresCluster, tmp_path: Path
) -> None:
    database = postgres_cluster.create_database()
    server = AppServerProcess(tmp_path / "d", tmp_path / "s.log", database=database, workers=2)
    server.start()
    try:
        assert server.process is not None
        workers = [p for p in _children(server.process.pid) if _is_worker(p)]
        assert len(workers) == 2
        server.add_user("bob")
        key = server.add_agent("robot")
        bob = await login(server.url, "bob")
        robot = agent_api(server.url, "robot", key)
        conversation_id = await bob.open_conversation("robot")
        # Many streams on one port land on both workers; every one hears every send.
        async with contextlib.AsyncExitStack() as stack:
            streams = [await stack.enter_async_context(bob.stream()) for _ in range(8)]
            for stream in streams:
                await stream.subscribe({conversation_id: 0})
                await stream.until(wire.Synced)
            for i in range(10):
                await robot.send_text(conversation_id, f"w{i}")
            for stream in streams:
                assert [f.seq for f in await collect(stream, 10)] == list(range(1, 11))
        async with httpx.AsyncClient() as http:
            ready = await http.get(server.url + "/readyz")
        assert ready.status_code == 200
        await bob.aclose()
        await robot.aclose()
    finally:
        process = server.process
        assert process is not None
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0  # workers drained and stopped
        server.process = None
    assert not any(_is_worker(pid) for pid in workers)


def _is_worker(pid: int) -> bool:
    try:
        command = Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return False
    return b"spawn_main" in command  # not multiprocessing's resource tracker
