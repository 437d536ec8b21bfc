"""Paging back through a long mixed conversation, in a real Chromium (issue 20).

The conversation is built through the real parts: the person types the demo agent's
commands in the shell (``/notice``, ``/choose``, ``/confirm``, ``/ask``, ``/dashboard``,
``/whiteboard``, ``/save``, ``/link``, ``/game``, ``/tour``) and answers its questions,
the apps run in their frames, the agent (the demo agent's own SDK conversation, and raw
envelopes through the AppServer) sends messages, status, progress, errors, surfaces and
questions (some inside app sub-sessions, some answered, some left pending), apps are
sent to the background and closed, and the Runtime restarts in the middle. That gives
some 250 rows, several history pages of 50, with app sub-session groups opened early.

Then the person comes back to it (a reload, a new tab, a Runtime restart, a broken
connection while a page of history loads), pages all the way back, and the rows shown,
in order, must be the Runtime's own record (``tests/support/timeline.py``), each once:
a group's seq is the seq of when it opened, so paging by the smallest seq held must not
jump over everything between the first group and the newest page.
"""

from __future__ import annotations

import asyncio
import re
import secrets
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest
from playwright.async_api import Locator, Page, expect

from lineup.agent import Agent, Conversation
from lineup.agent.demo import build_demo_agent
from lineup.host.serve import conversation_id_for
from lineup.miniapps import install_bundled
from tests.browser.test_app_surfaces import BUNDLE
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess
from tests.support.browser import PageWatch, save_screenshot
from tests.support.browser_interactions import dismiss, log_in, tool_call
from tests.support.clients import agent_api, login
from tests.support.sdk_agent import running_agent
from tests.support.timeline import (
    HistoryWatch,
    Link,
    assert_shows_record,
    page_back,
    record_of,
    shown_on,
)
from tests.support.webhost import Client, serving

CHOICE = "interact.choice"
CONFIRM = "interact.confirm"
INPUT = "interact.input"
NOTICE = "interact.notice"
APP_FRAME = "#app-area-frame iframe.app-frame:not([hidden])"
TEST_APP = "dev.lineup.test-app"
APP_ORIGIN = re.compile(r"//m-[0-9a-f]+\.localhost:\d+/")
"""A MiniApp frame's origin (the surface origin's per-mount sites)."""


@dataclass
class Stage:
    """The person's Runtime and Web Host on one data dir (restartable), the demo agent
    (running across restarts: it talks to the AppServer) and the tab."""

    appserver: AppServerProcess
    pair: Pair
    data_dir: Path
    page: Page
    conversation_id: str
    """The conversation the shell shows (the person's only one)."""
    client: Client | None = None
    agent: Agent | None = None
    _runtime: AsyncExitStack = field(default_factory=AsyncExitStack)

    @property
    def now(self) -> Client:
        assert self.client is not None
        return self.client

    @property
    def conversation(self) -> Conversation:
        assert self.agent is not None
        return self.agent.conversations[self.conversation_id]

    async def start(self) -> Client:
        self._runtime = AsyncExitStack()
        self.client = await self._runtime.enter_async_context(
            serving(self.appserver, self.pair, self.data_dir)
        )
        return self.client

    async def stop(self) -> None:
        await self._runtime.aclose()
        self.client = None

    async def restart(self) -> Client:
        """Stop the Runtime (the tab loses it), start it again on the same data dir
        (a new port) and open the tab there; the browser session is in the store."""
        await self.stop()
        await expect(self.page.locator("#connection")).to_have_attribute("data-state", "shell")
        client = await self.start()
        await self.page.goto(client.url + "/")
        await connected(self.page)
        return client


@pytest.fixture
async def lone_pair(appserver: AppServerProcess) -> AsyncIterator[Pair]:
    """A person and an agent with no conversation yet: the one the Runtime opens is
    their only one (the ``pair`` fixture's own conversation would be a second, whose
    rows the shell also holds)."""
    name = f"hist{secrets.token_hex(4)}"
    agent_id = f"{name}-agent"
    key = appserver.add_agent(agent_id)
    appserver.add_user(name)
    user = await login(appserver.url, name)
    agent = agent_api(appserver.url, agent_id, key)
    yield Pair(user, agent, key, conversation_id_for(user.id, agent_id), name)
    await user.aclose()
    await agent.aclose()


@pytest.fixture
async def stage(
    page: Page, lone_pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> AsyncIterator[Stage]:
    made = Stage(appserver, lone_pair, tmp_path / "runtime", page, lone_pair.conversation_id)
    client = await made.start()
    try:
        assert [c.id for c in await client.runtime.store.conversations()] == [made.conversation_id]
        await install_bundled(client.runtime)  # what `lineup demo` does
        await client.runtime.registry.install_bundle(BUNDLE, enable=True)  # a surface
        async with running_agent(client, build_demo_agent) as agent:
            made.agent = agent
            yield made
    finally:
        await made.stop()


async def connected(page: Page) -> None:
    await expect(page.locator("#connection")).to_have_attribute("data-state", "connected")


# --- the person and the agent -------------------------------------------------------------


def agent_rows(page: Page, text: str) -> Locator:
    return page.locator(".item.from-agent").filter(has_text=text)


async def say(page: Page, text: str, reply: str | None = None) -> None:
    """The person types ``text``; then, when given, waits for one more agent row
    containing ``reply``."""
    rows = agent_rows(page, reply) if reply is not None else None
    before = await rows.count() if rows is not None else 0
    await page.fill("#input", text)
    await page.keyboard.press("Enter")
    if rows is not None:
        await expect(rows).to_have_count(before + 1, timeout=30_000)


async def agent_says(stage: Stage, prefix: str, count: int) -> None:
    """``count`` agent messages through the AppServer's API (fast filler)."""
    agent = stage.pair.agent
    for n in range(count):
        await agent.send_text(stage.conversation_id, f"{prefix} message {n + 1} of {count}")


def card(page: Page, prompt: str) -> Locator:
    return page.locator(".item.interaction").filter(
        has=page.locator(".card-prompt", has_text=prompt)
    )


def overlay_card(page: Page, prompt: str) -> Locator:
    return page.locator("#app-overlay .card").filter(
        has=page.locator(".card-prompt", has_text=prompt)
    )


async def to_chat(page: Page) -> None:
    """The app in front goes to the background (its group shows in the chat)."""
    back = page.locator("#app-area-back")
    if await back.is_visible():
        await back.click()
    await expect(page.locator("#app-area")).to_be_hidden()


async def session_of(stage: Stage, app_scope: str) -> str:
    """The sub-session of the newest running instance of ``app_scope``."""
    records = [
        r for r in stage.now.runtime.apps.instances().records.values() if r.app_scope == app_scope
    ]
    assert records, f"no {app_scope} instance"
    newest = max(records, key=lambda r: r.started_at)
    found = await stage.now.runtime.apps.app_session_id(newest.instance_id)
    assert found is not None, f"no sub-session for {newest.instance_id}"
    return found


async def ask(
    stage: Stage, tool: str, arguments: dict[str, Any], call_id: str, **context: Any
) -> None:
    await tool_call(stage.now, tool, arguments, call_id, **context)


def options(*labels: str) -> list[dict[str, str]]:
    return [{"id": label.lower(), "label": label} for label in labels]


async def guess_sun(page: Page) -> None:
    guess = page.frame_locator(APP_FRAME).get_by_role("textbox", name="Your guess")
    await expect(guess).to_be_visible(timeout=30_000)
    await guess.fill("sun")
    await guess.press("Enter")


async def agent_sends(stage: Stage, kind: str, payload: dict[str, Any]) -> None:
    """A raw ``lineup.v1.<kind>`` envelope from the agent, through the AppServer."""
    agent = stage.pair.agent
    body = agent.envelope(stage.conversation_id, kind=f"lineup.v1.{kind}", payload=payload)
    response = await agent.post(stage.conversation_id, body)
    assert response.status_code == 201, response.text


async def surface(stage: Stage, instance_id: str, text: str, version: str = "1.0.0") -> None:
    """The agent shows the test app's card surface in the chat (``ui.open``)."""
    app = {"id": TEST_APP, "version": version, "surface": "card", "name": "Test card"}
    await agent_sends(stage, "ui.open", {"instance_id": instance_id, "app": app,
                                         "state": {"text": text}})  # fmt: skip


def group_row(page: Page, app_session_id: str) -> Locator:
    return page.locator(f'#items > .item.app-session[data-app-session-id="{app_session_id}"]')


async def build_long_conversation(stage: Stage) -> None:
    """Some 250 rows of everything (see the module's docstring); ends with the chat in
    front, every row synced."""
    page = stage.page
    await log_in(page, stage.now)
    await expect(agent_rows(page, "Type /help")).to_have_count(1, timeout=20_000)
    await agent_says(stage, "Early", 12)
    for n in range(4):
        await say(page, f"early note {n + 1}", f"You said: early note {n + 1}")

    # Every kind of loose question, answered in the chat.
    await say(page, "/notice", "I showed you a notice.")
    await say(page, "/choose")
    choose = card(page, "Which colour should the dashboard use?")
    await choose.get_by_role("radio", name="Green").check()
    await choose.get_by_role("button", name="Submit").click()
    await expect(agent_rows(page, "You chose")).to_have_count(1, timeout=20_000)
    await say(page, "/confirm")
    await card(page, "Delete the scratch notes").get_by_role("button", name="Keep them").click()
    await expect(agent_rows(page, "I kept them.")).to_have_count(1, timeout=20_000)
    await say(page, "/ask")
    name = card(page, "What should I call you?").get_by_role("textbox")
    await name.fill("Ada")
    await name.press("Enter")
    await expect(agent_rows(page, "Nice to meet you, Ada.")).to_have_count(1, timeout=20_000)

    # The first app: its group opens early; two questions in it, one answered over it.
    await say(page, "/dashboard", "now holds 3")
    dashboard = await session_of(stage, "task-dashboard")
    context = {"app_session_context": {"app_session_id": dashboard}}
    await ask(
        stage,
        CHOICE,
        {"prompt": "Which column first?", "options": options("Todo", "Done")},
        "dash-1",
        **context,
    )
    await ask(stage, CONFIRM, {"prompt": "Archive the finished tasks?"}, "dash-2", **context)
    over = overlay_card(page, "Which column first?")
    await over.get_by_role("radio", name="Todo").check()
    await over.get_by_role("button", name="Submit").click()
    await expect(over).to_have_count(0)
    await to_chat(page)  # "Archive the finished tasks?" stays pending in the group

    await agent_says(stage, "Middle", 30)
    for n in range(3):
        await say(page, f"middle note {n + 1}", f"You said: middle note {n + 1}")

    # The second app, a status, progress and an error from the agent, a surface.
    await say(page, "/whiteboard", "on the Whiteboard")
    board = await session_of(stage, "whiteboard")
    await ask(stage, INPUT, {"prompt": "Name this drawing?"}, "board-1",
              app_session_context={"app_session_id": board})  # fmt: skip
    over = overlay_card(page, "Name this drawing?")
    await over.get_by_role("textbox").fill("Sunrise")
    await over.get_by_role("textbox").press("Enter")
    await expect(over).to_have_count(0)
    await to_chat(page)
    conversation = stage.conversation
    await conversation.send_status("working", "Reading your notes")
    for step in range(1, 4):
        await conversation.send_progress("notes", step, total=3, label="Reading notes",
                                         state="completed" if step == 3 else "running")  # fmt: skip
    await conversation.send_error("notes_unreadable", "One note could not be read.")
    await surface(stage, "card-1", "a card in the chat")
    card_frame = page.locator('.item.surface[data-instance-id="card-1"]').frame_locator("iframe")
    await expect(card_frame.locator("#text")).to_have_text("a card in the chat")
    await agent_sends(stage, "ui.patch", {"instance_id": "card-1", "state": {"text": "patched"}})
    await expect(card_frame.locator("#text")).to_have_text("patched")
    await surface(stage, "card-2", "never shown", version="9.9.9")  # unavailable: a notice
    await expect(
        page.locator('.item.surface[data-instance-id="card-2"] .surface-notice')
    ).to_be_visible()

    # A saved file (an artifact row) and a refused link.
    await say(page, "/save Notes from the history test")
    dialog = page.locator("dialog#consent")
    await dialog.get_by_role("button", name="Allow").click()
    await expect(agent_rows(page, "Saved note.txt")).to_have_count(1, timeout=20_000)
    await say(page, f"/link {stage.now.url}/static/style.css")
    await dialog.get_by_role("button", name="Deny").click()
    await expect(agent_rows(page, "That did not happen")).to_have_count(1, timeout=20_000)

    # The whiteboard closes (its group is history); then the Runtime restarts.
    await page.get_by_role("button", name="Close Whiteboard").click()
    await expect(group_row(page, board)).to_have_attribute("data-session-state", "closed")
    await agent_says(stage, "Before the restart", 20)
    await synced(stage)
    await stage.restart()

    # After the restart: a game, the tour, more questions, more messages.
    await agent_says(stage, "After the restart", 20)
    await say(page, "/game")
    await guess_sun(page)
    await expect(agent_rows(page, "You got it: a sun!")).to_have_count(1, timeout=30_000)
    game = await session_of(stage, "draw-guess")
    await ask(stage, NOTICE, {"text": "Scores are saved."}, "game-1",
              app_session_context={"app_session_id": game})  # fmt: skip
    await ask(stage, CHOICE, {"prompt": "Play again tomorrow?", "options": options("Yes", "No")},
              "game-2", app_session_context={"app_session_id": game})  # fmt: skip
    await to_chat(page)
    await page.get_by_role("button", name="Close Draw & Guess").click()
    await expect(group_row(page, game)).to_have_attribute("data-session-state", "closed")

    await say(page, "/tour")
    await overlay_card(page, "Keep these tasks?").get_by_role("button", name="Keep them").click()
    await dialog.get_by_role("button", name="Allow").click()
    await guess_sun(page)
    await expect(agent_rows(page, "That was the tour")).to_have_count(1, timeout=30_000)
    await to_chat(page)

    await agent_says(stage, "Late", 25)
    await ask(
        stage, CHOICE, {"prompt": "Lunch at noon?", "options": options("Yes", "Later")}, "late-1"
    )
    await ask(stage, CONFIRM, {"prompt": "Send the weekly summary?"}, "late-2")
    await ask(stage, INPUT, {"prompt": "Anything to add?"}, "late-3")
    await ask(stage, NOTICE, {"text": "The backup finished."}, "late-4")
    await ask(
        stage,
        CHOICE,
        {"prompt": "A question the agent withdraws", "options": options("A", "B")},
        "late-5",
    )
    await dismiss(stage.now, "late-5", "late-5-dismiss")
    answer = card(page, "Send the weekly summary?")
    await answer.get_by_role("button", name="Confirm").click()
    await expect(answer).to_have_attribute("data-interaction-state", "answered")
    await conversation.send_status("waiting", "Waiting for your answers")
    for n in range(3):
        await say(page, f"late note {n + 1}", f"You said: late note {n + 1}")
    await agent_says(stage, "Newest", 30)
    await settled(stage)


async def settled(stage: Stage) -> None:
    """Until every row of the conversation is synced and the tab shows the newest."""
    await synced(stage)
    await expect(agent_rows(stage.page, "Newest message 30 of 30")).to_have_count(1)


async def synced(stage: Stage) -> None:
    """Until every row of the conversation has its seq (nothing waits to be sent)."""
    runtime = stage.now.runtime
    changed = asyncio.Event()
    unsubscribe = runtime.subscribe(lambda _event: changed.set())
    try:
        async with asyncio.timeout(30):
            while True:
                changed.clear()
                rows = await runtime.store.timeline(stage.conversation_id, limit=1_000_000)
                if all(r.seq is not None for r in rows):
                    break
                await changed.wait()
    finally:
        unsubscribe()


async def assert_pages_back_to_the_record(
    stage: Stage, page: Page, watch: HistoryWatch, test_name: str, where: str
) -> None:
    """Page ``page`` all the way back; it must show the Runtime's record, each row once."""
    await connected(page)
    await to_chat(page)
    pages = await page_back(page, watch)
    shown = await shown_on(page)
    record = await record_of(stage.now.runtime, stage.conversation_id)
    # What a person sees: the top of the history, and where the first app opened.
    timeline = page.locator("#timeline")
    await timeline.evaluate("(element) => { element.scrollTop = 0; }")
    await save_screenshot(page, test_name, f"{where}-paged-back-top")
    await page.locator("#items > .item.app-session").first.evaluate(
        "(group) => { group.scrollIntoView({ block: 'start' });"
        " document.getElementById('timeline').scrollTop -= 160; }"
    )
    await save_screenshot(page, test_name, f"{where}-paged-back-first-group")
    assert_shows_record(shown, record, f"{where} (after {pages} history pages)")


def forget(watch: PageWatch) -> None:
    """What went wrong on the page so far is forgotten: the Runtime's restart while
    the conversation was built (the tab lost it; its frames were gone) is expected."""
    for problems in (
        watch.console_errors,
        watch.page_errors,
        watch.failed_requests,
        watch.blocked_requests,
        watch.error_responses,
    ):
        problems.clear()


# --- the tests ----------------------------------------------------------------------------

WayBack = Literal["reload", "new tab", "runtime restart"]


@pytest.mark.parametrize("way_back", ["reload", "new tab", "runtime restart"])
async def test_paging_back_shows_every_row_of_a_long_mixed_conversation(
    page: Page,
    page_watch: PageWatch,
    stage: Stage,
    request: pytest.FixtureRequest,
    way_back: WayBack,
) -> None:
    await build_long_conversation(stage)
    built = await record_of(stage.now.runtime, stage.conversation_id)
    # Five pages of 50 rows and more; six app groups, the first over two pages back.
    assert built.total >= 250 and len(built.keys) > 150, (built.total, len(built.keys))
    first_group = built.keys.index(min(built.groups))
    assert len(built.groups) >= 6 and first_group < len(built.keys) - 100, built.groups
    where = way_back.replace(" ", "-")
    forget(page_watch)
    if way_back == "new tab":
        tab = await page.context.new_page()
        tab_watch = PageWatch()
        tab_watch.attach(tab)
        watch = await HistoryWatch.on(tab)
        await tab.goto(stage.now.url + "/")
        try:
            await assert_pages_back_to_the_record(stage, tab, watch, request.node.name, where)
            tab_watch.assert_clean()
        finally:
            await tab.close()
    else:
        watch = await HistoryWatch.on(page)
        if way_back == "reload":
            await page.reload()
        else:
            await stage.restart()
            forget(page_watch)  # the tab lost the Runtime for a moment
        await assert_pages_back_to_the_record(stage, page, watch, request.node.name, where)
    page_watch.assert_clean()


async def test_a_connection_lost_while_a_history_page_loads_neither_drops_nor_doubles_rows(
    page: Page, page_watch: PageWatch, stage: Stage, request: pytest.FixtureRequest
) -> None:
    await build_long_conversation(stage)
    forget(page_watch)
    lost: list[int] = []

    async def break_two(link: Link, reply: str | bytes) -> None:
        """The first connection breaks while the reply to a history request is on its
        way (the page never gets it); the second right after the page got one."""
        if link.number == 0:
            lost.append(link.number)
            await link.lose("the Web Host went away")
            return
        link.to_page(reply)
        if link.number == 1:
            lost.append(link.number)
            await link.lose("the Web Host went away")

    watch = await HistoryWatch.on(page, break_two)
    await page.reload()
    await assert_pages_back_to_the_record(stage, page, watch, request.node.name, "reconnected")
    assert lost == [0, 1] and len(watch.links) >= 3, (lost, len(watch.links))
    # The apps running in the background may fail a call while the tab is offline
    # (their frames' errors); the shell itself must not.
    shell = [p for p in page_watch.problems() if not APP_ORIGIN.search(p)]
    assert not shell, shell
