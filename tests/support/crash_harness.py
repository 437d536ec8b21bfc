"""The crash harness (issue 11, part 1): an AppServer process, a Runtime process (the
person, the test MiniApp and the host: ``crash_runtime_child``) and an agent (the real
agent SDK), chatting both ways with questions, MiniApp tool calls, capability calls
and app opens and closes in between, while the harness SIGKILLs the Runtime or the
AppServer at random moments and restarts it. At the end it checks, from the
AppServer's log, the Runtime's store and the agent's own record:

* every user message and every agent reply is stored once, in order, gap-free;
* the agent received each user message exactly once, in order;
* every question, every tool call and every capability call ended with exactly one
  result, and the agent got exactly that one (a question: the person's first answer);
* the Runtime has nothing left to send, no question pending, no tool or capability
  call open, no app instance ``starting`` or ``stopping``, and focus on a live
  instance (read from the store as the last child left it, before any recovery).

Kills are driven by the Runtime child's progress lines (kill after a random number of
steps), not by timers, so a run is reproducible from its seed up to scheduling.
Used by ``tests/reliability/test_crash_harness.py`` (CI: 25+ kills) and
``scripts/crash_harness`` (the long run: 500+ kills and a summary table).
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lineup.agent import (
    Agent,
    CallError,
    Conversation,
    MemoryCursorStore,
)
from lineup.client import Backoff
from lineup.protocol import MessageEnvelope
from lineup.runtime import Runtime
from lineup.runtime.apps import instance_store
from lineup.runtime.apps.lifecycle import LIVE
from lineup.runtime.apps.lifecycle import State as AppState
from lineup.runtime.runtime import STORE_FILE
from tests.support.appserver import AppServerProcess
from tests.support.clients import agent_api, login

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "correct horse battery"
FAST = Backoff(base=0.05, cap=0.3)
LINE_TIMEOUT = 60.0
TEST_APP = ROOT / "tests" / "formats" / "manifests" / "valid" / "test-app.json"
CAPABILITY = "clipboard.write"


class InvariantBroken(AssertionError):
    pass


@dataclass
class Report:
    seed: int
    messages: int
    asks: int
    app_rounds: int
    kills: Counter[str] = field(default_factory=Counter)
    checked: Counter[str] = field(default_factory=Counter)
    ended: Counter[str] = field(default_factory=Counter)
    """Calls of app rounds that ended otherwise than ``completed``, by step and status."""
    seconds: float = 0.0

    def table(self) -> str:
        rows = [
            ("seed", str(self.seed)),
            ("kills: Runtime", str(self.kills["runtime"])),
            ("kills: AppServer", str(self.kills["appserver"])),
            ("user messages, each once and in order", str(self.checked["user"])),
            ("agent replies, each once and in order", str(self.checked["reply"])),
            ("messages the agent received exactly once", str(self.checked["received"])),
            ("questions with exactly one result", str(self.checked["results"])),
            ("answers the agent got exactly once", str(self.checked["answers"])),
            ("app tool calls with one result, the agent's", str(self.checked["tools"])),
            ("capability calls with one result, the agent's", str(self.checked["capabilities"])),
            ("  ... of them not completed", str(self.ended.total())),
            *((f"    {name}", str(count)) for name, count in sorted(self.ended.items())),
            ("app sub-sessions opened once", str(self.checked["opened"])),
            ("app sub-sessions closed once", str(self.checked["closed"])),
            ("seconds", f"{self.seconds:.1f}"),
        ]
        width = max(len(name) for name, _ in rows)
        return "\n".join(f"{name:<{width}}  {value:>8}" for name, value in rows)


class Child:
    """The Runtime process; its stdout lines are the harness's clock."""

    def __init__(self, data_dir: Path, conversation_id: str, messages: int, app_every: int) -> None:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tests.support.crash_runtime_child",
                str(data_dir),
                conversation_id,
                str(messages),
                str(app_every),
            ],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.done = False

    async def lines(self, count: int) -> int:
        """Read up to ``count`` progress lines (fewer when it says ``done``)."""
        assert self.process.stdout is not None
        read = 0
        while read < count and not self.done:
            line = await asyncio.wait_for(
                asyncio.to_thread(self.process.stdout.readline), LINE_TIMEOUT
            )
            if not line:
                raise InvariantBroken(f"the Runtime child exited ({self.process.poll()})")
            read += 1
            if line.startswith("failed"):
                raise InvariantBroken(f"the Runtime's sync loop died: {line.strip()}")
            self.done = line.strip() == "done"
        return read

    async def kill(self) -> None:
        self.process.kill()
        await asyncio.to_thread(self.process.wait, 10)
        if self.process.stdout is not None:
            self.process.stdout.close()


def _text(envelope: dict[str, Any]) -> str:
    return str(envelope.get("payload", {}).get("text", ""))


Outcome = tuple[int, str, str, str]
"""What the agent got for one call of an app round: (message number, step, call id,
result status)."""


async def app_round(conversation: Conversation, number: int) -> list[Outcome]:
    """Open the test app, call its tool in that instance, ask for a capability: each
    call's outcome as the agent saw it (an error is an outcome too)."""
    got: list[Outcome] = []

    async def attempt(step: str, call_id: str, call: Any) -> dict[str, Any] | None:
        try:
            result: dict[str, Any] = await call
        except CallError as error:
            got.append((number, step, call_id, str(error.status or "error")))
            return None
        got.append((number, step, call_id, "completed"))
        return result

    open_id, echo_id, clip_id = f"open-{number}", f"echo-{number}", f"clip-{number}"
    opened = await attempt(
        "open", open_id, conversation.call_tool("test-app.open", call_id=open_id)
    )
    session = None if opened is None else conversation.app_session_id(opened["instance_id"])
    echo = conversation.call_tool(
        "test-app.echo", {"text": f"e{number}"}, app_session_id=session, call_id=echo_id
    )
    await attempt("echo", echo_id, echo)
    clip = conversation.call_capability(
        CAPABILITY, {"text": f"c{number}"}, reason="crash harness", call_id=clip_id
    )
    await attempt("capability", clip_id, clip)
    return got


async def _setup(server: AppServerProcess, data_dir: Path) -> tuple[str, str]:
    """The users, the agent, the conversation, and a Runtime with the test app
    installed and the capability provided: (conversation id, agent key)."""
    server.add_user("person")
    key = server.add_agent("crash-agent")
    person = await login(server.url, "person")
    conversation_id = await person.open_conversation("crash-agent")
    await person.aclose()
    setup = Runtime(data_dir, catalog_interval=None)
    await setup.open()
    await setup.login(server.url, "person", PASSWORD)
    await setup.registry.install(TEST_APP.read_bytes(), enable=True)
    await setup.capabilities.provide([CAPABILITY])
    await setup.open_conversation("crash-agent", conversation_id=conversation_id)
    await setup.close()
    return conversation_id, key


async def run_harness(
    root: Path, *, messages: int, kills: int, seed: int, ask_every: int = 5, app_every: int = 3
) -> Report:
    """Run the workload with ``kills`` SIGKILLs, then check every invariant."""
    started = time.monotonic()
    rng = random.Random(seed)
    rounds = [i for i in range(messages) if i % app_every == 1 % app_every]
    report = Report(seed, messages, len(range(0, messages, ask_every)), len(rounds))
    server = AppServerProcess(root / "server", root / "appserver.log")
    server.start()
    agent_task: asyncio.Task[None] | None = None
    child: Child | None = None
    agent: Agent | None = None
    try:
        data_dir = root / "runtime"
        conversation_id, key = await _setup(server, data_dir)
        received: list[str] = []
        answers: list[tuple[int, str]] = []
        outcomes: list[Outcome] = []
        agent = Agent(server.url, key, cursor_store=MemoryCursorStore(), backoff=FAST)

        @agent.on_message
        async def handle(conversation: Conversation, message: MessageEnvelope) -> None:
            if message.sender.kind != "user":
                return
            text = message.payload.text
            received.append(text)
            number = int(text[1:])
            if number % ask_every == 0:
                choice = await conversation.ask_choice(f"question {number}", ["first", "second"])
                answers.append((number, str(choice)))
            if number in rounds:
                outcomes.extend(await app_round(conversation, number))
            await conversation.send_markdown(f"a:{text}")

        agent_task = asyncio.create_task(agent.run())
        await asyncio.wait_for(agent.ready.wait(), 30)

        child = Child(data_dir, conversation_id, messages, app_every)
        while report.kills.total() < kills and not child.done:
            await child.lines(rng.randint(1, 6))
            if child.done:
                break
            victim = rng.choice(["runtime", "appserver"])
            if victim == "runtime":
                await child.kill()
                child = Child(data_dir, conversation_id, messages, app_every)
            else:
                await asyncio.to_thread(server.kill)
                await asyncio.to_thread(server.start)
            report.kills[victim] += 1
        while not child.done:
            await child.lines(1_000_000)
        await child.kill()
        child = None
        _check_store(report, data_dir / STORE_FILE)

        # The Runtime sends what it still holds (acks it never recorded, results).
        runtime = Runtime(data_dir, backoff=FAST, catalog_interval=None)
        await runtime.open()
        changed = asyncio.Event()
        runtime.subscribe(lambda _: changed.set())
        run = asyncio.create_task(runtime.run())
        try:
            async with asyncio.timeout(60):
                await runtime.ready.wait()  # in sync: stop() can end the run from here
                while await runtime.store.outbox():  # each ack is a timeline change
                    changed.clear()
                    await changed.wait()
            pending = await runtime.store.pending_interactions()
        finally:
            await runtime.stop()
            await run
            await runtime.close()
        if pending:
            raise InvariantBroken(f"{len(pending)} questions still pending in the Runtime")

        reader = agent_api(server.url, "crash-agent", key)
        stored = await reader.read_all(conversation_id)
        await reader.aclose()
        _check(report, stored, received, answers, messages, ask_every)
        _check_calls(report, stored, outcomes, rounds)
    finally:
        if child is not None:
            await child.kill()
        if agent is not None and agent_task is not None:
            await agent.stop()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(agent_task, 15)
        server.stop()
    report.seconds = time.monotonic() - started
    return report


def _check_store(report: Report, path: Path) -> None:
    """The Runtime's store as the last child left it (before a restart recovers
    anything): no instance half started or half stopped, focus on a live instance,
    no tool or capability call still open."""
    conn = sqlite3.connect(path)
    try:
        instances = instance_store.load(conn)
        calls = conn.execute(
            "SELECT count(*) FROM tool_calls"
            " WHERE state IN ('received', 'routing', 'waiting_for_app', 'running')"
        ).fetchone()[0]
        capabilities = conn.execute(
            "SELECT count(*) FROM capability_calls"
            " WHERE state IN ('awaiting_consent', 'approved', 'executing')"
        ).fetchone()[0]
    finally:
        conn.close()
    between = [
        r.instance_id
        for r in instances.records.values()
        if r.state in (AppState.STARTING, AppState.STOPPING)
    ]
    if between:
        raise InvariantBroken(f"instances left starting or stopping: {between}")
    focus = instances.focus
    if focus is not None and (
        focus not in instances.records or instances.records[focus].state not in LIVE
    ):
        raise InvariantBroken(f"focus on an instance that is not live: {focus}")
    if calls or capabilities:
        raise InvariantBroken(f"{calls} tool calls and {capabilities} capability calls still open")


def _check(
    report: Report,
    stored: list[dict[str, Any]],
    received: list[str],
    answers: list[tuple[int, str]],
    messages: int,
    ask_every: int,
) -> None:
    seqs = [item["seq"] for item in stored]
    if seqs != list(range(1, len(seqs) + 1)):
        raise InvariantBroken("the AppServer log has gaps or repeats")
    envelopes = [item["envelope"] for item in stored]
    ids = [e["id"] for e in envelopes]
    if len(ids) != len(set(ids)):
        raise InvariantBroken("an envelope id is stored twice")
    expected = [f"u{i}" for i in range(messages)]
    user = [_text(e) for e in envelopes if e["type"] == "lineup.v1.message"]
    user = [t for t in user if t.startswith("u")]
    if user != expected:
        raise InvariantBroken(f"user messages lost, repeated or reordered: {user[:10]}...")
    report.checked["user"] = len(user)
    replies = [_text(e) for e in envelopes if e["type"] == "lineup.v1.message"]
    replies = [t for t in replies if t.startswith("a:")]
    if replies != [f"a:{t}" for t in expected]:
        raise InvariantBroken("agent replies lost, repeated or reordered")
    report.checked["reply"] = len(replies)
    if received != expected:
        raise InvariantBroken("the agent did not receive each message exactly once, in order")
    report.checked["received"] = len(received)
    questions = [
        e
        for e in envelopes
        if e["type"] == "lineup.v1.tool.call" and e["payload"]["tool"].startswith("interact.")
    ]
    asked = [i for i in range(messages) if i % ask_every == 0]
    if len(questions) != len(asked) or any(
        len(results_of(envelopes, "tool", c["payload"]["call_id"])) != 1 for c in questions
    ):
        raise InvariantBroken("a question has no result or more than one")
    report.checked["results"] = len(questions)
    if answers != [(i, "second") for i in asked]:
        raise InvariantBroken(f"the agent's answers are wrong or repeated: {answers[:5]}...")
    report.checked["answers"] = len(answers)


def results_of(envelopes: list[dict[str, Any]], kind: str, call_id: str) -> list[str]:
    """The statuses of the ``tool.result`` (``kind`` ``tool``) or ``app.result``
    (``app``) envelopes stored for ``call_id``."""
    return [
        e["payload"]["status"]
        for e in envelopes
        if e["type"] == f"lineup.v1.{kind}.result" and e["payload"]["call_id"] == call_id
    ]


def _check_calls(
    report: Report, stored: list[dict[str, Any]], outcomes: list[Outcome], rounds: list[int]
) -> None:
    """Every app tool call and capability call has exactly one result in the log, the
    agent saw each call end once, with that result's status; each sub-session was
    announced opened once and closed at most once."""
    envelopes = [item["envelope"] for item in stored]
    steps = [(n, step) for n, step, _, _ in outcomes]
    expected = [(n, step) for n in rounds for step in ("open", "echo", "capability")]
    if steps != expected:
        raise InvariantBroken(f"the agent saw app rounds end wrongly: {steps[:9]}...")
    tool_calls = {
        e["payload"]["call_id"]
        for e in envelopes
        if e["type"] == "lineup.v1.tool.call" and e["payload"]["tool"].startswith("test-app.")
    }
    app_calls = {e["payload"]["call_id"] for e in envelopes if e["type"] == "lineup.v1.app.call"}
    mine = {(call_id, step == "capability") for _, step, call_id, _ in outcomes}
    if mine != {(c, False) for c in tool_calls} | {(c, True) for c in app_calls}:
        raise InvariantBroken("the calls in the log are not the calls the agent made")
    for _, step, call_id, status in outcomes:
        statuses = results_of(envelopes, "app" if step == "capability" else "tool", call_id)
        if statuses != [status]:
            raise InvariantBroken(f"{call_id}: results {statuses}, the agent saw {status}")
        report.checked["capabilities" if step == "capability" else "tools"] += 1
        if status != "completed":
            report.ended[f"{step} {status}"] += 1
    for kind in ("opened", "closed"):
        ids = Counter(e["id"] for e in envelopes if e["type"] == f"lineup.v1.app_session.{kind}")
        if any(count != 1 for count in ids.values()):
            raise InvariantBroken(f"a sub-session was announced {kind} more than once")
        report.checked[kind] = len(ids)


def main(argv: list[str] | None = None) -> int:
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description="The long crash harness (issue 11).")
    parser.add_argument("--kills", type=int, default=500)
    parser.add_argument("--messages", type=int, default=None, help="[2 x kills + 50]")
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100_000)
    parser.add_argument("--ask-every", type=int, default=5)
    parser.add_argument("--app-every", type=int, default=3)
    args = parser.parse_args(argv)
    messages = args.messages or 2 * args.kills + 50
    with tempfile.TemporaryDirectory(prefix="lineup-crash-") as root:
        try:
            report = asyncio.run(
                run_harness(
                    Path(root),
                    messages=messages,
                    kills=args.kills,
                    seed=args.seed,
                    ask_every=args.ask_every,
                    app_every=args.app_every,
                )
            )
        except InvariantBroken as broken:
            print(f"INVARIANT BROKEN (seed {args.seed}): {broken}", file=sys.stderr)
            return 1
    print(report.table())
    if report.kills.total() < args.kills:
        print(f"the workload ended after {report.kills.total()} kills", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
