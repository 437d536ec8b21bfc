"""Draw & Guess in the real shell, in Chromium, with the real agent SDK calling every
tool: round A (the agent draws stroke by stroke, the person guesses, the agent takes
the guesses and judges them), round B (the person draws with the mouse, the agent
pulls the strokes, the demo matcher guesses, the person marks it), the timer ending a
round, the state surviving a reload (a waiting call delivered again and answered
once), and closing the app while the agent waits for a guess."""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import FrameLocator, Page, expect

from lineup.agent import Agent, Conversation, ToolCallError
from lineup.formats.bundle import load_bundle_dir
from lineup.miniapps import bundle_dir
from lineup.miniapps.draw_guess_matcher import guess_word
from lineup.protocol import Envelope, UiEventEnvelope
from tests.browser.conftest import Screenshot
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch
from tests.support.browser_interactions import log_in
from tests.support.sdk_agent import running_agent
from tests.support.webhost import Client, serving

BUNDLE = bundle_dir("draw_guess")
MAX_SURFACE_BYTES = 160 * 1024


@dataclass
class Events:
    """The ``lineup.v1.ui.event``s the agent received, in order, and a way to wait."""

    seen: list[dict[str, Any]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    async def until(self, name: str, within: float = 10, **match: Any) -> dict[str, Any]:
        """The first ``name`` event whose data has ``match``, waiting for it."""
        async with asyncio.timeout(within):
            while True:
                self.changed.clear()
                for event in self.seen:
                    data: dict[str, Any] = event["data"]
                    if event["event"] == name and all(data.get(k) == v for k, v in match.items()):
                        return data
                await self.changed.wait()


@asynccontextmanager
async def agent_playing(client: Client) -> AsyncIterator[tuple[Conversation, Events]]:
    """The agent SDK's conversation with the person, and the app's events it gets."""
    events = Events()

    def listening(agent: Agent) -> Agent:
        @agent.on_event("lineup.v1.ui.event")
        async def on_ui_event(conversation: Conversation, envelope: Envelope) -> None:
            assert isinstance(envelope, UiEventEnvelope)
            data = dict(envelope.payload.data)
            events.seen.append({"event": envelope.payload.event, "data": data})
            events.changed.set()

        return agent

    async with running_agent(client, listening) as agent:
        yield agent.conversations[client.pair.conversation_id], events


async def results_of(client: Client, call_id: str) -> list[dict[str, Any]]:
    """Every ``tool.result`` for ``call_id`` in the agent's conversation."""
    stored = await client.pair.agent.read_all(client.pair.conversation_id)
    return [
        s["envelope"]["payload"]
        for s in stored
        if s["envelope"]["type"] == "lineup.v1.tool.result"
        and s["envelope"]["payload"]["call_id"] == call_id
    ]


def app_frame(page: Page) -> FrameLocator:
    return page.frame_locator("#app-area-frame iframe.app-frame:not([hidden])")


async def open_game(page: Page, client: Client) -> None:
    await client.runtime.registry.install_bundle(BUNDLE, enable=True)
    await log_in(page, client)


async def started(page: Page) -> FrameLocator:
    frame = app_frame(page)
    await expect(frame.locator("body")).to_have_attribute("data-ready", "true")
    return frame


def circle(cx: float, cy: float, r: float, n: int = 24) -> list[list[float]]:
    return [
        [
            round(cx + r * math.cos(2 * math.pi * i / n), 1),
            round(cy + r * math.sin(2 * math.pi * i / n), 1),
        ]
        for i in range(n + 1)
    ]


def ray(cx: float, cy: float, r: float, angle: float) -> list[list[float]]:
    return [
        [round(cx + 1.25 * r * math.cos(angle), 1), round(cy + 1.25 * r * math.sin(angle), 1)],
        [round(cx + 1.8 * r * math.cos(angle), 1), round(cy + 1.8 * r * math.sin(angle), 1)],
    ]


async def draw_with_mouse(page: Page, frame: FrameLocator, points: list[list[float]]) -> None:
    """The person drags the mouse through ``points`` (canvas units, 400 x 300)."""
    box = await frame.locator("#canvas").bounding_box()
    assert box is not None
    scale_x, scale_y = box["width"] / 400, box["height"] / 300

    def at(point: list[float]) -> tuple[float, float]:
        return box["x"] + point[0] * scale_x, box["y"] + point[1] * scale_y

    await page.mouse.move(*at(points[0]))
    await page.mouse.down()
    for point in points[1:]:
        await page.mouse.move(*at(point), steps=3)
    await page.mouse.up()


def test_the_surface_bundle_stays_under_160_kib() -> None:
    files = load_bundle_dir(BUNDLE).files
    surface = sum(len(files[name]) for name in ("index.html", "index.css", "index.js"))
    assert surface < MAX_SURFACE_BYTES
    assert set(files) == {
        "manifest.json",
        "icons/draw-guess.svg",
        "index.html",
        "index.css",
        "index.js",
    }


@pytest.mark.headed_path
async def test_round_a_the_agent_draws_and_the_person_guesses_wrong_then_right(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await open_game(page, client)
    async with agent_playing(client) as (conversation, events):
        started_a = await conversation.call_tool(
            "draw-guess.start_round_a", {"word_length": 3, "hint": "Look up", "seconds": 120}
        )
        assert started_a == {"round_id": "r1"}
        round_id = started_a["round_id"]
        frame = await started(page)
        await expect(frame.locator("#app")).to_have_attribute("data-phase", "a")
        await expect(frame.locator("#prompt")).to_contain_text("_ _ _")
        await expect(frame.locator("#hint")).to_have_text("Hint: Look up")
        await expect(frame.locator("#timer")).to_be_visible()
        assert await events.until("round", round_id=round_id, phase="started")

        # The agent draws stroke by stroke: a disc, then two rays.
        strokes = [
            {"points": circle(200, 150, 50), "color": "#f2c014", "width": 6},
            {"points": ray(200, 150, 50, 0)},
            {"points": ray(200, 150, 50, math.pi / 2), "color": "#ef476f"},
        ]
        for total, stroke in enumerate(strokes, start=1):
            drawn = await conversation.call_tool(
                "draw-guess.draw", {"round_id": round_id, "strokes": [stroke]}
            )
            assert drawn == {"drawn": 1, "total": total}
        await expect(frame.locator("#ink path")).to_have_count(3)
        await expect(frame.locator("#ink path").nth(2)).to_have_attribute("stroke", "#ef476f")

        # The agent waits for a guess; the person's first one is wrong.
        async with asyncio.TaskGroup() as tasks:
            first = tasks.create_task(
                conversation.call_tool("draw-guess.next_guess", {"round_id": round_id})
            )
            await expect(frame.locator("#waiting")).to_be_visible()
            await frame.get_by_role("textbox", name="Your guess").fill("moon")
            await frame.get_by_role("button", name="Guess").click()
        assert first.result() == {"guess": "moon"}
        assert await events.until("guess", guess="moon") == {"round_id": round_id, "guess": "moon"}
        judged = await conversation.call_tool(
            "draw-guess.judge", {"round_id": round_id, "correct": False, "hint": "It is hot"}
        )
        assert judged == {"score": 0}
        await expect(frame.locator("#guesses li[data-verdict=wrong]")).to_have_text("moon")
        await expect(frame.locator("#hint")).to_have_text("Hint: It is hot")

        # A guess made before the agent asks waits for it; the right one wins the round.
        await frame.get_by_role("textbox", name="Your guess").fill("sun")
        await frame.get_by_role("textbox", name="Your guess").press("Enter")
        await expect(frame.locator("#guesses li")).to_have_count(2)
        second = await conversation.call_tool("draw-guess.next_guess", {"round_id": round_id})
        assert second == {"guess": "sun"}
        won = await conversation.call_tool(
            "draw-guess.judge", {"round_id": round_id, "correct": True}
        )
        assert won == {"score": 10, "ended": "guessed"}
        await expect(frame.locator("#banner")).to_contain_text("You got it!")
        await expect(frame.locator("#banner")).to_contain_text("It was “sun”")
        await expect(frame.locator("#score")).to_have_text("★ 10")
        await expect(frame.locator("#history-list li")).to_have_count(1)
        await expect(frame.locator("#guess-form")).to_be_hidden()
        ended = await events.until("round", round_id=round_id, phase="ended")
        assert ended == {
            "round_id": round_id,
            "kind": "a",
            "phase": "ended",
            "outcome": "guessed",
            "score": 10,
        }
        await screenshot("round-a-won")

        # The round is over: no more guesses, no more strokes, no more judging.
        over = await conversation.call_tool("draw-guess.next_guess", {"round_id": round_id})
        assert over == {"guess": None, "ended": "guessed"}
        with pytest.raises(ToolCallError) as refused:
            await conversation.call_tool(
                "draw-guess.draw", {"round_id": round_id, "strokes": strokes}
            )
        assert (refused.value.status, refused.value.code) == ("failed", "round_over")
        with pytest.raises(ToolCallError) as unknown:
            await conversation.call_tool("draw-guess.judge", {"round_id": "r9", "correct": True})
        assert unknown.value.code == "round_not_found"
        await page.set_viewport_size({"width": 375, "height": 812})
        await expect(frame.locator("#banner")).to_be_visible()
        await screenshot("round-a-won-375")
    page_watch.assert_clean()


async def test_round_b_the_person_draws_and_the_agent_guesses_with_the_matcher(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await open_game(page, client)
    async with agent_playing(client) as (conversation, events):
        started_b = await conversation.call_tool(
            "draw-guess.start_round_b", {"word": "sun", "seconds": 120}
        )
        round_id = started_b["round_id"]
        assert started_b == {"round_id": "r1"}
        frame = await started(page)
        await expect(frame.locator("#prompt .word")).to_have_text("sun")
        await expect(frame.locator("#pens")).to_be_visible()

        # A scribble, undone; another, cleared; then a sun: a disc and eight rays.
        await draw_with_mouse(page, frame, [[20, 20], [80, 40], [60, 90]])
        await expect(frame.locator("#ink path")).to_have_count(1)
        await frame.get_by_role("button", name="Undo").click()
        await expect(frame.locator("#ink path")).to_have_count(0)
        await draw_with_mouse(page, frame, [[300, 200], [350, 260]])
        await expect(frame.locator("#ink path")).to_have_count(1)
        await frame.get_by_role("button", name="Clear").click()
        await expect(frame.locator("#ink path")).to_have_count(0)
        await frame.get_by_role("button", name="Red").click()
        await draw_with_mouse(page, frame, circle(200, 150, 55))
        await frame.get_by_role("button", name="Orange").click()
        for i in range(8):
            await draw_with_mouse(page, frame, ray(200, 150, 55, i * math.pi / 4))
        await expect(frame.locator("#ink path")).to_have_count(9)
        await expect(frame.locator("#ink path").first).to_have_attribute("stroke", "#ef476f")

        # The agent pulls the strokes (also sent as a snapshot event) and guesses.
        pulled = await conversation.call_tool("draw-guess.strokes", {"round_id": round_id})
        assert len(pulled["strokes"]) == 9
        assert pulled["strokes"][1]["color"] == "#f78c1f"
        assert all(
            0 <= x <= 400 and 0 <= y <= 300 for s in pulled["strokes"] for x, y in s["points"]
        )
        assert guess_word(pulled["strokes"]) == "sun"
        snapshot = await events.until("snapshot", round_id=round_id)
        while len(snapshot["strokes"]) < 9:  # throttled: the last change comes last
            events.seen.remove({"event": "snapshot", "data": snapshot})
            snapshot = await events.until("snapshot", round_id=round_id)
        assert guess_word(snapshot["strokes"]) == "sun"

        # A wrong guess first, marked wrong; then the matcher's, marked right.
        async with asyncio.TaskGroup() as tasks:
            wrong = tasks.create_task(
                conversation.call_tool("draw-guess.guess", {"round_id": round_id, "guess": "moon"})
            )
            guess = frame.locator("#agent-guesses li", has_text="moon")
            await guess.get_by_role("button", name="Wrong").click()
        assert wrong.result() == {"correct": False, "score": 0}
        async with asyncio.TaskGroup() as tasks:
            right = tasks.create_task(
                conversation.call_tool(
                    "draw-guess.guess",
                    {"round_id": round_id, "guess": guess_word(pulled["strokes"])},
                )
            )
            guess = frame.locator("#agent-guesses li", has_text="sun")
            await expect(guess.get_by_role("button", name="Right")).to_be_visible()
            await screenshot("round-b-agent-guesses")
            await guess.get_by_role("button", name="Right").click()
        assert right.result() == {"correct": True, "score": 10, "ended": "guessed"}
        await expect(frame.locator("#banner")).to_contain_text("The agent got it!")
        await expect(frame.locator("#score")).to_have_text("★ 10")
        await expect(frame.locator("#pens")).to_be_hidden()
        assert await events.until("round", round_id=round_id, phase="ended", outcome="guessed")
        await screenshot("round-b-won")
        await page.set_viewport_size({"width": 375, "height": 812})
        await screenshot("round-b-won-375")
    page_watch.assert_clean()


async def test_the_timer_ends_a_round_and_the_agent_reveals_the_word(
    page: Page, page_watch: PageWatch, client: Client, screenshot: Screenshot
) -> None:
    await page.clock.install()
    await open_game(page, client)
    async with agent_playing(client) as (conversation, events):
        round_id = (
            await conversation.call_tool(
                "draw-guess.start_round_a", {"word_length": 3, "seconds": 30}
            )
        )["round_id"]
        frame = await started(page)
        await expect(frame.locator("#timer")).to_have_attribute("data-seconds", "30")
        await conversation.call_tool(
            "draw-guess.draw", {"round_id": round_id, "strokes": [{"points": circle(200, 150, 40)}]}
        )
        async with asyncio.TaskGroup() as tasks:
            waiting = tasks.create_task(
                conversation.call_tool("draw-guess.next_guess", {"round_id": round_id})
            )
            await expect(frame.locator("#waiting")).to_be_visible()
            await page.clock.fast_forward(31_000)
        assert waiting.result() == {"guess": None, "ended": "timeout"}
        await expect(frame.locator("#app")).to_have_attribute("data-ended", "timeout")
        await expect(frame.locator("#banner")).to_contain_text("Time's up!")
        await expect(frame.locator("#timer")).to_have_attribute("data-seconds", "0")
        assert await events.until("round", round_id=round_id, outcome="timeout")

        revealed = await conversation.call_tool(
            "draw-guess.end_round", {"round_id": round_id, "word": "sun"}
        )
        assert revealed == {"score": 0, "ended": "timeout"}
        await expect(frame.locator("#banner")).to_contain_text("The word was “sun”")
        await expect(frame.locator("#history-list li")).to_have_text(["sun · time's up"])
        await screenshot("round-a-timeout")
    page_watch.assert_clean()


async def test_score_history_and_the_round_survive_a_reload_and_a_waiting_call_is_answered_once(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    await open_game(page, client)
    async with agent_playing(client) as (conversation, _):
        first = (
            await conversation.call_tool(
                "draw-guess.start_round_b", {"word": "fish", "seconds": 300}
            )
        )["round_id"]
        frame = await started(page)
        await conversation.call_tool("draw-guess.end_round", {"round_id": first, "word": "fish"})
        round_id = (
            await conversation.call_tool(
                "draw-guess.start_round_a", {"word_length": 4, "hint": "It swims", "seconds": 300}
            )
        )["round_id"]
        assert round_id == "r2"
        for i in range(2):
            await conversation.call_tool(
                "draw-guess.draw",
                {"round_id": round_id, "strokes": [{"points": [[10 + i, 10], [300, 200 + i]]}]},
            )
        await frame.get_by_role("textbox", name="Your guess").fill("boat")
        await frame.get_by_role("button", name="Guess").click()
        await expect(frame.locator("#guesses li")).to_have_count(1)
        assert await conversation.call_tool("draw-guess.next_guess", {"round_id": round_id}) == {
            "guess": "boat"
        }

        async with asyncio.TaskGroup() as tasks:
            held = tasks.create_task(
                conversation.call_tool(
                    "draw-guess.next_guess", {"round_id": round_id}, call_id="held-guess"
                )
            )
            await expect(frame.locator("#waiting")).to_be_visible()
            await page.reload()
            await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
            frame = await started(page)
            await expect(frame.locator("#ink path")).to_have_count(2)
            await expect(frame.locator("#guesses li")).to_have_text(["boat"])
            await expect(frame.locator("#hint")).to_have_text("Hint: It swims")
            await expect(frame.locator("#history-list li")).to_have_text(["fish · revealed"])
            await expect(frame.locator("#timer")).to_be_visible()
            await expect(frame.locator("#waiting")).to_be_visible()  # delivered again
            await frame.get_by_role("textbox", name="Your guess").fill("fish")
            await frame.get_by_role("button", name="Guess").click()
        assert held.result() == {"guess": "fish"}
        assert len(await results_of(client, "held-guess")) == 1
        await page.reload()
        frame = await started(page)
        await expect(frame.locator("#guesses li")).to_have_text(["boat", "fish"])
    page_watch.assert_clean()


async def test_closing_the_app_while_the_agent_waits_for_a_guess_cancels_the_call_once(
    page: Page, page_watch: PageWatch, client: Client
) -> None:
    await open_game(page, client)
    async with agent_playing(client) as (conversation, _):
        round_id = (
            await conversation.call_tool(
                "draw-guess.start_round_a", {"word_length": 4, "seconds": 60}
            )
        )["round_id"]
        frame = await started(page)
        waiting = asyncio.ensure_future(
            conversation.call_tool("draw-guess.next_guess", {"round_id": round_id})
        )
        await expect(frame.locator("#waiting")).to_be_visible()
        await page.get_by_role("button", name="Close Draw & Guess").click()
        with pytest.raises(ToolCallError) as closed:
            await waiting
        assert (closed.value.status, closed.value.code) == ("cancelled", "app_closed")
        assert len(await results_of(client, closed.value.call_id)) == 1
        await expect(page.locator("#app-area-frame iframe")).to_have_count(0)
        with pytest.raises(ToolCallError) as gone:
            await conversation.call_tool("draw-guess.next_guess", {"round_id": round_id})
        assert gone.value.code == "app_instance_not_found"
    page_watch.assert_clean()


async def test_the_game_survives_a_runtime_restart(
    page: Page, appserver: AppServerProcess, pair: Pair, tmp_path: Path
) -> None:
    data_dir = tmp_path / "runtime"
    async with serving(appserver, pair, data_dir) as client:
        await open_game(page, client)
        async with agent_playing(client) as (conversation, _):
            round_id = (
                await conversation.call_tool(
                    "draw-guess.start_round_a", {"word_length": 3, "hint": "Hot", "seconds": 300}
                )
            )["round_id"]
            frame = await started(page)
            await conversation.call_tool(
                "draw-guess.draw",
                {"round_id": round_id, "strokes": [{"points": circle(200, 150, 40)}]},
            )
            await frame.get_by_role("textbox", name="Your guess").fill("moon")
            await frame.get_by_role("button", name="Guess").click()
            await expect(frame.locator("#guesses li")).to_have_text(["moon"])
            await expect(frame.locator("#ink path")).to_have_count(1)

    async with serving(appserver, pair, data_dir) as restarted:
        await page.goto(restarted.url + "/")
        await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")
        await page.get_by_role("button", name=re.compile("Bring to front: Draw & Guess")).click()
        frame = await started(page)
        await expect(frame.locator("#ink path")).to_have_count(1)
        await expect(frame.locator("#guesses li")).to_have_text(["moon"])
        await expect(frame.locator("#hint")).to_have_text("Hint: Hot")
        async with agent_playing(restarted) as (conversation, _):
            # The round goes on where it was: the waiting guess is still there.
            assert await conversation.call_tool(
                "draw-guess.next_guess", {"round_id": round_id}
            ) == {"guess": "moon"}
