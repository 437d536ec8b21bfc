"""The Runtime against a real AppServer process: outbox, sync, inbox, audit, crashes."""

from __future__ import annotations

import asyncio
import contextlib
import signal
import subprocess
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import msgspec
import pytest

from lineup.client import Backoff
from lineup.runtime import (
    ConnectionChanged,
    Runtime,
    RuntimeEvent,
    TimelineChanged,
    TimelineItem,
)
from tests.conftest import Pair, make_pair
from tests.support.appserver import AppServerProcess

FAST = Backoff(base=0.05, cap=0.3)
ROOT = Path(__file__).resolve().parents[2]
COUNT = 2000


@asynccontextmanager
async def running(runtime: Runtime) -> AsyncIterator[Runtime]:
    task = asyncio.create_task(runtime.run())
    try:
        await asyncio.wait_for(runtime.ready.wait(), 15)
        yield runtime
    finally:
        await runtime.stop()
        await asyncio.wait_for(task, 15)


async def logged_in(server: AppServerProcess, pair: Pair, data_dir: Path) -> Runtime:
    runtime = Runtime(data_dir, backoff=FAST)
    await runtime.open()
    await runtime.login(server.url, pair.user_name, "correct horse battery")
    return runtime


class EventLog:
    """Every event the Runtime emitted, and a way to wait for a condition on them."""

    def __init__(self, runtime: Runtime) -> None:
        self.events: list[RuntimeEvent] = []
        self._changed = asyncio.Event()
        runtime.subscribe(self._add)

    def _add(self, event: RuntimeEvent) -> None:
        self.events.append(event)
        self._changed.set()

    async def until(self, condition: Callable[[], object], within: float = 20) -> None:
        async with asyncio.timeout(within):
            while True:
                self._changed.clear()  # before looking, so no event slips between
                if condition():
                    return
                await self._changed.wait()

    async def until_async(
        self, condition: Callable[[], Awaitable[object]], within: float = 20
    ) -> None:
        """Like ``until``, for a condition on the store; it is also looked at every
        50 ms, since some of what the store records (an acknowledged result marked
        delivered) emits no event."""
        async with asyncio.timeout(within):
            while True:
                self._changed.clear()
                if await condition():
                    return
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._changed.wait(), 0.05)

    def failures(self, envelope_id: str) -> list[str | None]:
        return [
            e.item.error_code
            for e in self.events
            if isinstance(e, TimelineChanged)
            and e.item.envelope_id == envelope_id
            and e.item.state == "failed"
        ]

    def states(self) -> list[str]:
        return [str(e.state) for e in self.events if isinstance(e, ConnectionChanged)]


def content(timeline: list[TimelineItem]) -> list[TimelineItem]:
    """The rows a person sees as conversation: not the Runtime's own (inventory, results)."""
    return [t for t in timeline if t.sender_kind != "runtime"]


async def agent_texts(pair: Pair, sender: str = "user") -> list[str]:
    stored = await pair.agent.read_all(pair.conversation_id)
    return [
        s["envelope"]["payload"]["text"]
        for s in stored
        if s["envelope"]["sender"]["kind"] == sender and s["envelope"]["type"].endswith("message")
    ]


async def test_send_goes_sending_then_sent_and_replies_arrive_in_the_inbox(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    log = EventLog(runtime)
    async with running(runtime):
        item = await runtime.send_message(pair.conversation_id, "hello agent")
        assert item.state == "sending"
        assert item.seq is None
        await log.until(
            lambda: any(
                isinstance(e, TimelineChanged) and e.item.state == "sent" for e in log.events
            )
        )
        await pair.agent.send_text(pair.conversation_id, "hello human")
        await log.until(
            lambda: any(
                isinstance(e, TimelineChanged) and e.item.sender_kind == "agent" for e in log.events
            )
        )
    timeline = content(await runtime.store.timeline(pair.conversation_id))
    assert [(t.sender_kind, t.state) for t in timeline] == [("user", "sent"), ("agent", "received")]
    assert timeline[0].seq is not None and timeline[1].seq == timeline[0].seq + 1
    inbox = await runtime.store.inbox("chat")
    assert [msgspec.json.decode(i.body)["payload"]["text"] for i in inbox] == ["hello human"]
    assert await runtime.store.inbox_ack("chat", inbox[0].id)
    assert not await runtime.store.inbox_ack("chat", inbox[0].id)
    assert await runtime.store.inbox("chat") == []
    assert await agent_texts(pair) == ["hello agent"]
    await runtime.close()


async def test_messages_queued_offline_leave_in_order_when_the_runtime_runs(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    await runtime.open_conversation(pair.agent.id, conversation_id=pair.conversation_id)
    for n in range(5):
        await runtime.send_message(pair.conversation_id, f"offline {n}")
    assert [o.envelope_id[:4] for o in await runtime.store.outbox()] == ["inv_"] + ["msg_"] * 5
    log = EventLog(runtime)
    async with running(runtime):
        await log.until_async(outbox_empty(runtime))
    assert await agent_texts(pair) == [f"offline {n}" for n in range(5)]
    assert [t.state for t in await runtime.store.timeline(pair.conversation_id)] == ["sent"] * 6
    await runtime.close()


async def test_drain_waits_for_every_ack_and_gives_up_while_not_in_sync(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    await runtime.open_conversation(pair.agent.id, conversation_id=pair.conversation_id)
    await runtime.send_message(pair.conversation_id, "queued before the sync")
    assert not await runtime.drain(within=5)  # not in sync: nothing to wait for
    assert len(await runtime.store.outbox()) == 2  # the inventory and the message
    async with running(runtime):
        for n in range(20):
            await runtime.send_message(pair.conversation_id, f"before the stop {n}")
        assert await runtime.drain(within=30)
        assert await runtime.store.outbox() == []
    texts = await agent_texts(pair)
    assert texts == ["queued before the sync"] + [f"before the stop {n}" for n in range(20)]
    await runtime.close()


async def test_a_sigkilled_runtime_sends_each_queued_message_once_in_order(
    appserver: AppServerProcess, tmp_path: Path
) -> None:
    pair = await make_pair(appserver)
    setup = await logged_in(appserver, pair, tmp_path)
    await setup.open_conversation(pair.agent.id, conversation_id=pair.conversation_id)
    await setup.close()
    child = subprocess.Popen(  # noqa: ASYNC220 - starts a child and returns at once
        [
            sys.executable,
            "-m",
            "tests.support.runtime_child",
            str(tmp_path),
            pair.conversation_id,
            str(COUNT),
            "20",
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "queued"
    # It kills itself once 20 are acknowledged: others are in flight or unsent.
    assert await asyncio.to_thread(child.wait, 30) == -signal.SIGKILL
    child.stdout.close()

    runtime = Runtime(tmp_path, backoff=FAST)
    await runtime.open()
    # Whatever reached the AppServer, the Runtime died before recording most acks:
    # those are resent, and the AppServer's idempotency must make that harmless.
    assert len(await runtime.store.outbox()) >= COUNT - 1000
    log = EventLog(runtime)
    async with running(runtime):
        await log.until_async(outbox_empty(runtime))
    assert await agent_texts(pair) == [f"q{n}" for n in range(COUNT)]
    timeline = content(await runtime.store.timeline(pair.conversation_id, limit=COUNT + 10))
    seqs = [t.seq for t in timeline]
    assert len(seqs) == COUNT
    assert seqs == sorted(seqs) and len(set(seqs)) == COUNT
    assert {t.state for t in timeline} == {"sent"}
    await runtime.close()
    await pair.user.aclose()
    await pair.agent.aclose()


async def test_reconnects_after_an_appserver_kill_and_delivers_what_was_queued(
    own_appserver: AppServerProcess, tmp_path: Path
) -> None:
    pair = await make_pair(own_appserver)
    runtime = await logged_in(own_appserver, pair, tmp_path)
    log = EventLog(runtime)
    async with running(runtime):
        own_appserver.kill()
        await log.until(lambda: runtime.state == "reconnecting")
        await runtime.send_message(pair.conversation_id, "while the server is down")
        own_appserver.start()
        await log.until(lambda: runtime.state == "connected")
        await log.until_async(outbox_empty(runtime))
    assert await agent_texts(pair) == ["while the server is down"]
    assert log.states() == ["connected", "reconnecting", "connected", "offline"]
    await runtime.close()
    await pair.user.aclose()
    await pair.agent.aclose()


async def test_starts_while_the_appserver_is_down_and_sends_once_it_is_up(
    own_appserver: AppServerProcess, tmp_path: Path
) -> None:
    """Found by the crash harness: a Runtime (re)started while the AppServer was down
    used to end its sync loop at once (the conversation list could not be fetched)."""
    pair = await make_pair(own_appserver)
    runtime = await logged_in(own_appserver, pair, tmp_path)
    await runtime.open_conversation(pair.agent.id, conversation_id=pair.conversation_id)
    await runtime.send_message(pair.conversation_id, "queued before the start")
    own_appserver.kill()
    log = EventLog(runtime)
    task = asyncio.create_task(runtime.run())
    await log.until(lambda: runtime.state == "reconnecting")
    assert not task.done()
    own_appserver.start()
    await log.until(lambda: runtime.state == "connected")
    await log.until_async(outbox_empty(runtime))
    await runtime.stop()
    await asyncio.wait_for(task, 15)
    assert await agent_texts(pair) == ["queued before the start"]
    await runtime.close()
    await pair.user.aclose()
    await pair.agent.aclose()


async def test_refused_sends_fail_visibly_and_can_be_retried(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    # A conversation the AppServer does not know: every send is refused (not_found).
    await runtime.store.upsert_conversation("ghost-conversation", pair.agent.id, "")
    log = EventLog(runtime)
    async with running(runtime):
        item = await runtime.send_message("ghost-conversation", "into the void")
        await log.until(lambda: log.failures(item.envelope_id) == ["not_found"])
        again = await runtime.retry("ghost-conversation", item.envelope_id)
        assert again is not None
        assert again.state == "sending"
        await log.until(lambda: log.failures(item.envelope_id) == ["not_found", "not_found"])
    assert await runtime.store.outbox() == []
    audit = await runtime.store.audit()
    assert [
        (a.action, a.outcome, a.code)
        for a in audit
        if a.outcome in ("refused", "retried") and a.subject.endswith(item.envelope_id)
    ] == [
        ("send", "refused", "not_found"),
        ("send", "retried", None),
        ("send", "refused", "not_found"),
    ]
    await runtime.close()


def outbox_empty(runtime: Runtime) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        return not await runtime.store.outbox()

    return check


async def test_envelopes_for_unknown_app_scopes_are_recorded_and_skipped(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    log = EventLog(runtime)
    async with running(runtime):
        await pair.agent.post(
            pair.conversation_id,
            pair.agent.envelope(pair.conversation_id, text="for an app we lack")
            | {"target": {"app_scope": "no-such-app"}},
        )
        await pair.agent.send_text(pair.conversation_id, "for the IM")

        async def delivered() -> bool:
            return len(await runtime.store.inbox("chat")) == 1

        await log.until_async(delivered)
    stored = await pair.agent.read_all(pair.conversation_id)
    seq_of = {s["envelope"]["payload"].get("text"): s["seq"] for s in stored}
    assert await runtime.store.rejections() == [
        (
            pair.conversation_id,
            seq_of["for an app we lack"],
            "app_scope_mismatch",
            pytest.approx(300, abs=200),
        )
    ]
    timeline = content(await runtime.store.timeline(pair.conversation_id))
    assert [t.seq for t in timeline] == [seq_of["for the IM"]]
    assert (await runtime.store.conversations())[0].cursor == max(seq_of.values())
    await runtime.close()


async def test_audit_and_store_hold_no_message_text_outside_the_timeline(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    async with running(runtime):
        await runtime.send_message(pair.conversation_id, "secret-MARKER-41")
    audit = await runtime.store.audit()
    assert audit, "sending leaves an audit trail"
    for row in audit:
        assert "MARKER" not in " ".join(str(v) for v in (row.actor, row.subject, row.code))
    assert oct((tmp_path / "runtime.sqlite3").stat().st_mode & 0o777) == "0o600"
    await runtime.close()


async def test_history_and_session_survive_a_restart(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path)
    log = EventLog(runtime)
    async with running(runtime):
        await pair.agent.send_text(pair.conversation_id, "remember this")
        await log.until(lambda: any(isinstance(e, TimelineChanged) for e in log.events))
    await runtime.close()

    again = Runtime(tmp_path, backoff=FAST)
    await again.open()
    assert again.session is not None  # no new login needed
    assert [t.state for t in content(await again.store.timeline(pair.conversation_id))] == [
        "received"
    ]
    log = EventLog(again)
    async with running(again):
        await pair.agent.send_text(pair.conversation_id, "and this")

        async def both() -> bool:
            return len(content(await again.store.timeline(pair.conversation_id))) == 2

        await log.until_async(both)
    seqs = [t.seq for t in content(await again.store.timeline(pair.conversation_id))]
    assert len(seqs) == 2 and seqs == sorted(seqs)
    await again.close()
