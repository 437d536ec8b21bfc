"""Log hygiene end to end (issue 11): canaries planted in everything the person and the
agent say and type go through a real AppServer (its own process, at DEBUG), a real
Runtime and Web Host, the host channel and the agent SDK; none may reach a log line,
the AppServer's log or the Runtime's audit rows (docs/security.md, "Logs").

The suite-wide guard (``tests/support/log_canary.py``, installed by
``tests/conftest.py``) checks every other test the same way; this test plants a canary
on every path the issue names and checks each place explicitly, so it also shows that
each place was written to (the check is not vacuous).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.asyncio.client import ClientConnection

from lineup import logs
from lineup.agent import Agent, CapabilityRejected, Conversation
from lineup.logs import pseudonym, quiet_libraries
from lineup.protocol import MessageEnvelope
from lineup.runtime.runtime import STORE_FILE
from tests.conftest import Pair
from tests.support import log_canary
from tests.support.appserver import AppServerProcess
from tests.support.browser_interactions import chat_id
from tests.support.clients import agent_api, login
from tests.support.host_channel import hello, tab
from tests.support.sdk_agent import running_agent
from tests.support.webhost import serving

WAIT = 20
USER = "hygiene"
AGENT = "hygiene-agent"


@pytest.fixture
def recorded() -> Iterator[log_canary.Recorder]:
    """Every log line of this process while the test runs, formatted as ``lineup.logs``
    formats it, at the levels ``lineup --log-level DEBUG`` sets."""
    root = logging.getLogger()
    loggers = [root, *map(logging.getLogger, log_canary.NOISY)]
    levels = [logger.level for logger in loggers]
    recorder = log_canary.Recorder()
    root.addHandler(recorder)
    root.setLevel(logging.DEBUG)
    quiet_libraries()
    try:
        yield recorder
    finally:
        root.removeHandler(recorder)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


class Frames:
    """Every host-channel frame one tab receives; ``until`` waits for one that fits
    (frames already seen count too)."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.seen: list[dict[str, Any]] = []

    async def send(self, frame: dict[str, Any]) -> None:
        await self.ws.send(json.dumps(frame))

    async def until(self, fits: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        for seen in self.seen:
            if fits(seen):
                return seen
        async with asyncio.timeout(WAIT):
            while True:
                frame: dict[str, Any] = json.loads(await self.ws.recv())
                self.seen.append(frame)
                if fits(frame):
                    return frame

    async def interaction(self, prompt: str) -> str:
        """The id of the interaction card asking ``prompt``."""
        frame = await self.until(
            lambda f: (
                f["op"] == "item"
                and f["item"]["kind"] == "interaction"
                and f["item"]["data"]["arguments"]["prompt"] == prompt
            )
        )
        return str(frame["item"]["data"]["interaction_id"])

    async def receipt(self, interaction_id: str) -> dict[str, Any]:
        frame = await self.until(
            lambda f: f["op"] == "receipt" and f.get("interaction_id") == interaction_id
        )
        self.seen.remove(frame)  # the next answer to it gets its own receipt
        return frame

    async def capability(self, call_id: str, state: str) -> dict[str, Any]:
        frame = await self.until(
            lambda f: (
                f["op"] == "capabilities"
                and any(c["call_id"] == call_id and c["state"] == state for c in f["calls"])
            )
        )
        return next(c for c in frame["calls"] if c["call_id"] == call_id)


async def test_no_canary_reaches_a_log_line_the_appserver_log_or_an_audit_row(
    own_appserver: AppServerProcess, tmp_path: Path, recorded: log_canary.Recorder
) -> None:
    plant = log_canary.plant
    password, wrong_password = plant("password"), plant("wrong-password")
    user_body, agent_body = plant("user-body"), plant("agent-body")
    input_prompt, placeholder, draft = plant("prompt"), plant("placeholder"), plant("draft")
    refused_answer, answer = f"{plant('refused-answer')} !", plant("answer")
    choice_prompt, option_a, option_b = plant("choice"), plant("option"), plant("option")
    reason, clipboard = plant("reason"), plant("clipboard")
    url = f"https://example.org/{plant('path')}?q={plant('query')}"
    planted = [
        password, wrong_password, user_body, agent_body, input_prompt, placeholder, draft,
        refused_answer, answer, choice_prompt, option_a, option_b, reason, clipboard, url,
    ]  # fmt: skip

    # A password, an API key and a bearer token; a login refused with a wrong password.
    own_appserver.add_user(USER, password)
    key = log_canary.register(own_appserver.add_agent(AGENT))
    user = await login(own_appserver.url, USER, password)
    secrets = [key, log_canary.register(user.secret)]
    async with httpx.AsyncClient(base_url=own_appserver.url) as http:
        refused = await http.post("/v1/login", json={"username": USER, "password": wrong_password})
    assert refused.status_code == 401
    agent = agent_api(own_appserver.url, AGENT, key)
    pair = Pair(user, agent, key, await user.open_conversation(AGENT), USER)

    heard: asyncio.Queue[str] = asyncio.Queue()

    async def on_message(_conversation: Conversation, message: MessageEnvelope) -> None:
        await heard.put(message.payload.text)

    def build(made: Agent) -> Agent:
        made.on_message(on_message)
        return made

    async with serving(own_appserver, pair, tmp_path / "runtime", password=password) as client:
        assert client.runtime.session is not None
        secrets.append(log_canary.register(client.runtime.session.token))
        # The Web Host's login form, with a wrong password.
        async with httpx.AsyncClient(base_url=client.url) as http:
            form = await http.post(
                "/login",
                data={"username": USER, "password": wrong_password},
                headers={"Origin": client.url},
            )
        assert "Wrong username or password." in form.text
        assert wrong_password not in form.text  # the username comes back, never this
        cookie = log_canary.register(await client.session_cookie())
        secrets.append(cookie)
        conversation_id = await chat_id(client)
        # Who talks to whom is not the log's business either: a keyed hash stands in.
        identities = [client.runtime.session.user_id, AGENT, conversation_id]
        async with tab(client, cookie) as ws, running_agent(client, build) as running:
            frames = Frames(ws)
            await hello(ws)
            conversation = running.conversations[conversation_id]

            # A message body each way.
            await frames.send({"op": "send", "conversation_id": conversation_id, "text": user_body})
            assert await asyncio.wait_for(heard.get(), WAIT) == user_body
            await conversation.send_markdown(agent_body)
            await frames.until(lambda f: f["op"] == "item" and agent_body in f["item"]["html"])

            # Tool-call arguments, a draft, a refused answer and the person's answer.
            asking = asyncio.create_task(
                conversation.ask_input(
                    input_prompt, placeholder=placeholder, pattern="[A-Za-z0-9-]+"
                )
            )
            interaction = await frames.interaction(input_prompt)
            await frames.send({"op": "draft", "interaction_id": interaction, "text": draft})
            for text, outcome in ((refused_answer, "answer_invalid"), (answer, "accepted")):
                await frames.send(
                    {
                        "op": "answer",
                        "conversation_id": conversation_id,
                        "interaction_id": interaction,
                        "answer": {"text": text},
                    }
                )
                assert (await frames.receipt(interaction))["outcome"] == outcome
            assert await asyncio.wait_for(asking, WAIT) == answer

            choosing = asyncio.create_task(
                conversation.ask_choice(choice_prompt, [option_a, option_b])
            )
            interaction = await frames.interaction(choice_prompt)
            await frames.send(
                {
                    "op": "answer",
                    "conversation_id": conversation_id,
                    "interaction_id": interaction,
                    "answer": {"selected": ["2"]},
                }
            )
            assert await asyncio.wait_for(choosing, WAIT) == option_b

            # Capability arguments: one call the person allows, one they refuse.
            writing = asyncio.create_task(
                conversation.call_capability(
                    "clipboard.write", {"text": clipboard}, reason=reason, call_id="clip-1"
                )
            )
            opening = asyncio.create_task(
                conversation.call_capability(
                    "app.open_url", {"url": url}, reason=reason, call_id="open-1"
                )
            )
            key_of = {"conversation_id": conversation_id, "requester_kind": "agent"}
            for call_id, allow in (("clip-1", True), ("open-1", False)):
                await frames.capability(call_id, "awaiting_consent")
                await frames.send({"op": "consent", **key_of, "call_id": call_id, "allow": allow})
            run = await frames.until(lambda f: f["op"] == "capability_run")
            assert run["arguments"] == {"text": clipboard}
            done = {"op": "capability_done", **key_of, "call_id": "clip-1", "ok": True}
            await frames.send({**done, "result": {"written": True}})
            assert await asyncio.wait_for(writing, WAIT) == {"written": True}
            with pytest.raises(CapabilityRejected):
                await asyncio.wait_for(opening, WAIT)
    history = json.dumps(await user.read_all(conversation_id))
    await user.aclose()
    await agent.aclose()
    own_appserver.stop()  # its log is complete once the process has exited

    # The canaries did travel: the history holds what the person and the agent said.
    for said in (user_body, agent_body, input_prompt, answer, option_b, clipboard, url):
        assert said in history
    assert all(secrets)

    # Each place was written to while the canaries went by.
    lines = recorded.take()
    for message in ("interaction ended", "answer refused"):
        assert any(f": {message}" in line for line in lines), message
    server_log = own_appserver.log_text()
    for message in (" DEBUG lineup.server", "login refused", "login user_id="):
        assert message in server_log, message
    audit = log_canary.audit_rows(tmp_path / "runtime" / STORE_FILE)
    actions = {(row[3], row[5]) for row in audit}  # (action, outcome)
    assert {("answer", "refused"), ("send", "queued")} <= actions, actions
    assert {"capability.call", "capability.deny"} <= {action for action, _ in actions}, actions

    for place, text in (
        ("in-process log lines", "\n".join(lines)),
        ("the AppServer's log", server_log),
        ("the Runtime's audit rows", "\n".join(map(repr, audit))),
    ):
        for canary in [*planted, *secrets]:
            assert canary not in text, f"{canary!r} in {place}"
        own_record = place == "the Runtime's audit rows"  # the user's own record names them
        assert log_canary.leaks_in(text, identities=not own_record) == [], place
    for place, text in (
        ("in-process log lines", "\n".join(lines)),
        ("the AppServer's log", server_log),
    ):
        for identity in identities:  # (audit rows name them: the user's own record)
            assert identity not in text, f"an identity in {place}"
    assert "principal_id=h:" in server_log and "user_id=h:" in server_log


def test_the_guard_knows_identities_as_whole_words() -> None:
    user_id = log_canary.identify("usr_0123456789abcdef")
    agent_id = log_canary.identify("hygiene-agent-9")
    assert log_canary.leaks_in(f"INFO lineup.server: login user_id={user_id}") == [user_id]
    assert set(log_canary.leaks_in(f"conversation_id=chat.{user_id}.{agent_id}")) == {
        user_id,
        agent_id,
    }
    assert log_canary.leaks_in(f"user_id={pseudonym(user_id)} hygiene-agent-90") == []
    assert log_canary.leaking_lines([f"audit {user_id}"], identities=False) == []


def test_the_pseudonym_key_is_kept_in_the_data_dir(tmp_path: Path) -> None:
    saved = logs._PSEUDONYM_KEY
    try:
        logs.use_data_dir(tmp_path / "data")
        first = pseudonym("usr_0123456789abcdef")
        key = tmp_path / "data" / logs.KEY_FILE
        assert key.stat().st_mode & 0o777 == 0o600
        logs._PSEUDONYM_KEY = b"another process"
        logs.use_data_dir(tmp_path / "data")
        assert pseudonym("usr_0123456789abcdef") == first  # the same after a restart
        logs.use_data_dir(tmp_path / "other")
        assert pseudonym("usr_0123456789abcdef") != first
    finally:
        logs._PSEUDONYM_KEY = saved
