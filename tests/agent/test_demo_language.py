# ruff: noqa: RUF001 - Chinese text has full-width punctuation on purpose
"""The demo agent speaks the person's language as the Runtime's inventory tells it:
Chinese when the person's language is ``zh-CN`` (the greeting, help, questions and
their choices, replies, echo), English otherwise, and the other one from the next
message on when the person switches. Its commands stay the same, and their Chinese
names work too. A real AppServer process and a real Runtime."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from lineup.agent import Agent, Conversation
from lineup.agent.demo import CATALOGUES, build_demo_agent, command_of, speech
from lineup.protocol import ClientInventoryEnvelope, Envelope
from lineup.protocol.payloads import ClientInventory
from lineup.runtime import Runtime
from tests.agent.test_agent import FAST, running, wait_for_texts
from tests.agent.test_demo_interactions import agent_replies, ask_and_answer, latest_interaction
from tests.conftest import Pair
from tests.runtime.test_runtime import EventLog, logged_in
from tests.runtime.test_runtime import running as runtime_running
from tests.support.appserver import AppServerProcess
from tests.support.clients import envelope


def demo_agent(server: AppServerProcess, pair: Pair, tmp_path: Path) -> Agent:
    return build_demo_agent(
        Agent(server.url, pair.agent_key, backoff=FAST, cursor_path=tmp_path / "c.json")
    )


async def reply_to(runtime: Runtime, log: EventLog, pair: Pair, text: str) -> str:
    before = len(agent_replies(log))
    await runtime.send_message(pair.conversation_id, text)
    await log.until(lambda: len(agent_replies(log)) > before)
    return agent_replies(log)[-1]


async def test_the_demo_agent_answers_in_chinese_when_the_person_reads_chinese(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path / "runtime")
    await runtime.choose_locale("zh-CN")
    log = EventLog(runtime)
    agent = demo_agent(appserver, pair, tmp_path)
    async with runtime_running(runtime), running(agent):
        await log.until(lambda: len(agent_replies(log)) == 1)
        assert agent_replies(log) == ["你好！输入 `/help` 看看我能做什么。"]

        help_text = await reply_to(runtime, log, pair, "/help")
        assert help_text.startswith("我是 LineUp 演示智能体")
        assert "`/dashboard`" in help_text  # the commands stay as they are
        assert await reply_to(runtime, log, pair, "你好呀") == "你说的是：你好呀"

        chose = await ask_and_answer(
            runtime, log, pair, "/choose", "interact.choice", {"selected": ["green"]}
        )
        question = latest_interaction(log, "interact.choice")
        assert question is not None
        arguments = json.loads(question.arguments)
        assert arguments["prompt"] == "看板用哪种颜色？"
        assert [o["label"] for o in arguments["options"]] == ["蓝色", "绿色", "橙色", "紫色"]
        assert chose == "你选了**绿色**。"

        # A Chinese name, typed with a full-width slash and space as an input method does.
        many = await ask_and_answer(
            runtime,
            log,
            pair,
            "\uff0f选择\u3000多选",
            "interact.choice",
            {"selected": ["purple", "blue"]},
        )
        assert many == "你选了**蓝色**、**紫色**。"
        kept = await ask_and_answer(
            runtime, log, pair, "/确认", "interact.confirm", {"confirmed": False}
        )
        confirm = latest_interaction(log, "interact.confirm")
        assert confirm is not None
        labels = json.loads(confirm.arguments)
        assert (labels["confirm_label"], labels["cancel_label"]) == ("删除", "保留")
        assert kept == "好的，都给你留着。"

        # The person switches to English: the next answer is in English.
        await runtime.choose_locale("en")
        assert await reply_to(runtime, log, pair, "hello") == "You said: hello"
        named = await ask_and_answer(runtime, log, pair, "/ask", "interact.input", {"text": "Ada"})
        assert named == "Nice to meet you, Ada."
    await runtime.close()


async def test_the_greeting_waits_for_the_person_s_first_tab_and_speaks_its_language(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    """The conversation exists before the person opens their client (``lineup demo``
    makes it at start): the greeting comes when a tab first shows its language, in it,
    not in English before anyone is there."""
    runtime = await logged_in(appserver, pair, tmp_path / "runtime")
    log = EventLog(runtime)
    agent = demo_agent(appserver, pair, tmp_path)
    inventories: asyncio.Queue[ClientInventory] = asyncio.Queue()

    @agent.on_event("lineup.v1.client.inventory", concurrent=True)
    async def heard(conversation: Conversation, envelope: Envelope) -> None:
        assert isinstance(envelope, ClientInventoryEnvelope)
        await inventories.put(envelope.payload)

    async with runtime_running(runtime), running(agent):
        first = await asyncio.wait_for(inventories.get(), 20)
        assert first.locale is None  # the agent has heard the Runtime: no language yet
        await runtime.locale_seen("zh-CN")  # the person's first tab, in Chinese
        # The first thing the agent says is the Chinese greeting: one sent before the
        # language was known (in English) would have come first.
        await log.until(lambda: len(agent_replies(log)) == 1)
        assert agent_replies(log) == ["你好！输入 `/help` 看看我能做什么。"]
        await runtime.locale_seen("en")  # another tab: a new language, no second greeting
        assert await reply_to(runtime, log, pair, "hello") == "You said: hello"
        assert agent_replies(log)[0] == "你好！输入 `/help` 看看我能做什么。"
        assert len(agent_replies(log)) == 2
    await runtime.close()


async def test_the_demo_agent_answers_in_english_otherwise(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path / "runtime")
    await runtime.locale_seen("en")  # a tab showed English: the agent greets
    log = EventLog(runtime)
    agent = demo_agent(appserver, pair, tmp_path)
    async with runtime_running(runtime), running(agent):
        await log.until(lambda: len(agent_replies(log)) == 1)
        assert agent_replies(log) == ["Hello! Type `/help` to see what I can do."]
        assert (await reply_to(runtime, log, pair, "/help")).startswith("I am the LineUp demo")
        confirmed = await ask_and_answer(
            runtime, log, pair, "/confirm", "interact.confirm", {"confirmed": True}
        )
        assert confirmed == "Deleted (not really: this is a demo)."
        # A tab showing Chinese (nothing chosen) makes it the person's language.
        await runtime.locale_seen("zh-CN")
        assert await reply_to(runtime, log, pair, "/notice") == "已经给你看了一条通知。"
        notice = latest_interaction(log, "interact.notice")
        assert notice is not None
        assert json.loads(notice.arguments)["title"] == "通知"
    await runtime.close()


async def test_a_restarted_demo_agent_finds_the_language_in_the_history(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path / "runtime")
    await runtime.choose_locale("zh-CN")
    log = EventLog(runtime)
    async with runtime_running(runtime):
        async with running(demo_agent(appserver, pair, tmp_path)):
            await log.until(lambda: len(agent_replies(log)) == 1)  # the greeting
        # Its cursor is past the inventory now: the stream will not replay it.
        async with running(demo_agent(appserver, pair, tmp_path)) as again:
            assert again.conversations[pair.conversation_id].locale is None
            assert await reply_to(runtime, log, pair, "/通知") == "已经给你看了一条通知。"
            assert again.conversations[pair.conversation_id].locale == "zh-CN"
    await runtime.close()


async def test_an_inventory_without_a_language_is_an_older_runtime_s_english(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    older = {"revision": "inv-1", "tools": []}  # what a Runtime from before `locale` sent
    inventory = envelope(
        pair.conversation_id,
        "runtime",
        pair.user.id,
        kind="lineup.v1.client.inventory",
        payload=older,
    )
    assert (await pair.user.post(pair.conversation_id, inventory)).status_code == 201
    async with running(demo_agent(appserver, pair, tmp_path)) as agent:
        # No language said, so no greeting on its own: it comes, in English, with the
        # first answer.
        message = envelope(pair.conversation_id, "user", pair.user.id, text="hi")
        assert (await pair.user.post(pair.conversation_id, message)).status_code == 201
        texts = await asyncio.wait_for(wait_for_texts(pair, 2), 20)
        conversation = agent.conversations[pair.conversation_id]
        assert await conversation.known_locale() is None
        assert conversation.inventory is not None and conversation.locale is None
    assert texts == ["Hello! Type `/help` to see what I can do.", "You said: hi"]


def test_the_commands_and_their_chinese_names() -> None:
    assert command_of("/dashboard") == ("/dashboard", "")
    assert command_of("  /看板  ") == ("/dashboard", "")
    assert command_of("\uff0f游戏 b") == ("/game", "b")
    assert command_of("/timer\u300010") == ("/timer", "10")
    assert command_of("你好 世界") == ("你好", "世界")
    assert command_of("") == ("", "")


def test_any_chinese_tag_is_chinese_and_other_languages_english() -> None:
    assert speech("zh-CN")("welcome") == speech("zh-Hans-CN")("welcome") == speech("zh")("welcome")
    assert speech("zh-CN")("welcome") == CATALOGUES.text("zh-CN", "welcome")
    assert speech("fr")("welcome") == speech(None)("welcome") == speech("en-GB")("welcome")
    assert speech(None)("welcome").startswith("Hello!")
    # Plurals as each language has them.
    assert speech("en")("timer.done", count=1) == "Focus session done — 1 minute."
    assert speech("en")("timer.done", count=5) == "Focus session done — 5 minutes."
    assert speech("zh-CN")("timer.done", count=1) == "专注结束，共 1 分钟。"
