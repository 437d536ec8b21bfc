"""The demo agent answers at once, whatever else waits: the Focus Timer's ``done``
while a question is pending, the Whiteboard's strokes, and chat while a game waits
for the person's guess. A real AppServer process, a syncing Runtime with the apps
installed; the test plays the apps' side (``Runtime.tools``, ``Runtime.app_event``)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from lineup.agent import Agent
from lineup.agent.demo import FOCUS_TIMER_ID, build_demo_agent
from lineup.demo import publish_sample_app, trust_sample_publisher
from lineup.miniapps import install_bundled
from lineup.runtime import Runtime
from tests.agent.test_agent import FAST, running
from tests.agent.test_demo_interactions import agent_replies, latest_interaction
from tests.conftest import Pair, make_pair
from tests.runtime.test_runtime import EventLog, logged_in
from tests.runtime.test_runtime import running as runtime_running
from tests.support.appserver import AppServerProcess
from tests.test_demo_delivery import VERSION, inventory_lists_the_timer, opened_timer


def demo_agent(server: AppServerProcess, pair: Pair, tmp_path: Path) -> Agent:
    return build_demo_agent(
        Agent(server.url, pair.agent_key, backoff=FAST, cursor_path=tmp_path / "c.json")
    )


async def pending_question(log: EventLog, tool: str) -> str:
    await log.until(
        lambda: (r := latest_interaction(log, tool)) is not None and r.state == "pending"
    )
    record = latest_interaction(log, tool)
    assert record is not None
    return record.id


def still_pending(log: EventLog, tool: str) -> bool:
    record = latest_interaction(log, tool)
    return record is not None and record.state == "pending"


async def reply_after(log: EventLog, count: int) -> str:
    await log.until(lambda: len(agent_replies(log)) > count)
    return agent_replies(log)[-1]


async def test_the_timer_s_done_is_answered_while_a_question_waits(
    own_appserver: AppServerProcess, tmp_path: Path
) -> None:
    sample = publish_sample_app(own_appserver.data_dir)
    pair = await make_pair(own_appserver)
    runtime: Runtime = await logged_in(own_appserver, pair, tmp_path / "runtime")
    await runtime.locale_seen("en")  # a tab showed English: the agent greets
    await trust_sample_publisher(runtime, sample.key)
    log = EventLog(runtime)
    agent = demo_agent(own_appserver, pair, tmp_path)
    installed_seen = inventory_lists_the_timer(agent)
    try:
        async with runtime_running(runtime), running(agent):
            await log.until(lambda: len(agent_replies(log)) == 1)  # the greeting
            await runtime.delivery.install(FOCUS_TIMER_ID, VERSION)
            await asyncio.wait_for(installed_seen.wait(), 20)
            await runtime.send_message(pair.conversation_id, "/timer 1")
            await log.until(lambda: opened_timer(log) is not None)
            timer = opened_timer(log)
            assert timer is not None
            await reply_after(log, 1)  # "Here is a 1-minute Focus Timer."

            await runtime.send_message(pair.conversation_id, "/confirm")
            question = await pending_question(log, "interact.confirm")
            count = len(agent_replies(log))
            await runtime.ui_event(pair.conversation_id, timer, "done", {"minutes": 1})
            assert await reply_after(log, count) == "Focus session done — 1 minute."
            assert still_pending(log, "interact.confirm")  # answered without waiting for it

            await runtime.answer(question, pair.conversation_id, {"confirmed": False})
            assert await reply_after(log, count + 1) == "I kept them."
    finally:
        await runtime.close()
        await pair.user.aclose()
        await pair.agent.aclose()


async def test_the_whiteboard_s_strokes_get_an_answer(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path / "runtime")
    await runtime.locale_seen("en")  # a tab showed English: the agent greets
    await install_bundled(runtime)
    log = EventLog(runtime)
    async with runtime_running(runtime), running(demo_agent(appserver, pair, tmp_path)):
        await log.until(lambda: len(agent_replies(log)) == 1)
        # The person opened a Whiteboard, drew and pressed "Send to agent".
        board = await runtime.apps.open_instance("whiteboard", conversation_id=pair.conversation_id)
        assert (await runtime.tools.app_started(board.instance_id)).accepted
        stroke = {"kind": "path", "points": [[1, 1], [9, 9]], "color": "#000000", "width": 2}
        snapshot = {"strokes": [stroke] * 3, "total": 3, "simplified": False, "truncated": False}
        await runtime.app_event(board.instance_id, "snapshot", snapshot)
        reply = await reply_after(log, 1)
        assert reply.startswith("I got 3 strokes from the Whiteboard.")
    await runtime.close()


async def running_call(
    runtime: Runtime, log: EventLog, tool: str, seen: set[str]
) -> tuple[str, str]:
    """The next call of ``tool`` running in an app (not in ``seen``): (instance, call id)."""
    found: list[tuple[str, str]] = []

    async def check() -> bool:
        rows = await runtime.store.db.read(
            lambda conn: conn.execute(
                "SELECT instance_id, call_id FROM tool_calls WHERE tool = ? AND state = 'running'",
                (tool,),
            ).fetchall()
        )
        found[:] = [(str(i), str(c)) for i, c in rows if c not in seen]
        return bool(found)

    await log.until_async(check)
    seen.add(found[0][1])
    return found[0]


async def app_answers(
    runtime: Runtime, log: EventLog, tool: str, result: dict[str, Any], seen: set[str]
) -> str:
    """Play the app: complete the next running call of ``tool`` with ``result``."""
    instance_id, call_id = await running_call(runtime, log, tool, seen)
    assert (await runtime.tools.app_complete(instance_id, call_id, result)).accepted
    return instance_id


async def test_chat_is_answered_while_a_game_waits_for_the_guess(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path / "runtime")
    await runtime.locale_seen("en")  # a tab showed English: the agent greets
    await install_bundled(runtime)
    log = EventLog(runtime)
    seen: set[str] = set()
    async with runtime_running(runtime), running(demo_agent(appserver, pair, tmp_path)):
        await log.until(lambda: len(agent_replies(log)) == 1)
        await runtime.send_message(pair.conversation_id, "/game")
        await log.until(lambda: runtime.apps.instances().records)
        (game,) = runtime.apps.instances().records
        assert (await runtime.tools.app_started(game)).accepted
        await app_answers(runtime, log, "draw-guess.start_round_a", {"round_id": "r1"}, seen)
        for n in range(1, 6):  # the sun, stroke by stroke, each call naming the game
            drawn = await app_answers(
                runtime, log, "draw-guess.draw", {"drawn": 1, "total": n}, seen
            )
            assert drawn == game
        # The game now waits for the person's guess (next_guess runs in the app)...
        guessing = set(seen)
        instance_id, guess_call = await running_call(
            runtime, log, "draw-guess.next_guess", guessing
        )
        assert instance_id == game

        # ...and chat is answered meanwhile.
        await runtime.send_message(pair.conversation_id, "hello there")
        assert await reply_after(log, 1) == "You said: hello there"

        assert (await runtime.tools.app_complete(game, guess_call, {"guess": "sun"})).accepted
        await app_answers(runtime, log, "draw-guess.judge", {"score": 1, "ended": "guessed"}, seen)
        assert await reply_after(log, 2) == "You got it: a sun!"
    await runtime.close()
