"""App sub-sessions on the host channel, over real sockets: the snapshot carries each
sub-session as a group holding its interactions, every tab hears a group change when
its instance opens or closes and when one of its interactions changes, and an
interaction that names a sub-session is never sent as a loose timeline row."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from typing import Any

from websockets.asyncio.client import ClientConnection

from tests.support.browser_interactions import chat_id, tool_call, tool_result
from tests.support.host_channel import hello, tab
from tests.support.webhost import Client

APP = "testapp"
CHOICE = "interact.choice"


def choice(prompt: str) -> dict[str, Any]:
    return {"prompt": prompt, "options": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]}


async def open_started(client: Client) -> tuple[str, str]:
    """An instance opened in the chat and started: its id and its sub-session's."""
    conversation = await chat_id(client)
    record = await client.runtime.apps.open_instance(APP, conversation_id=conversation)
    assert (await client.runtime.apps.started(record.instance_id)).accepted
    app_session_id = await client.runtime.apps.app_session_id(record.instance_id)
    assert app_session_id is not None
    return record.instance_id, app_session_id


class Frames:
    """Every frame one tab receives, and a way to wait for one that fits."""

    def __init__(self, ws: ClientConnection) -> None:
        self.ws = ws
        self.seen: list[dict[str, Any]] = []

    async def until(
        self, fits: Callable[[dict[str, Any]], bool], within: float = 15
    ) -> dict[str, Any]:
        async with asyncio.timeout(within):
            while True:
                frame = json.loads(await self.ws.recv())
                self.seen.append(frame)
                if fits(frame):
                    return frame

    async def group(
        self, app_session_id: str, fits: Callable[[dict[str, Any]], bool]
    ) -> dict[str, Any]:
        """The next ``app_sessions`` frame whose group ``app_session_id`` fits."""

        def matches(frame: dict[str, Any]) -> bool:
            return frame["op"] == "app_sessions" and any(
                g["app_session_id"] == app_session_id and fits(g) for g in frame["sessions"]
            )

        frame = await self.until(matches)
        return next(g for g in frame["sessions"] if g["app_session_id"] == app_session_id)

    async def send(self, frame: dict[str, Any], answer_op: str) -> dict[str, Any]:
        """Send a frame and wait for its answer (the next frame of ``answer_op``)."""
        await self.ws.send(json.dumps(frame))
        return await self.until(lambda f: f["op"] == answer_op)

    def loose_interaction_ids(self) -> set[str]:
        """Interactions that came as loose ``item`` rows."""
        return {
            f["item"]["data"]["interaction_id"]
            for f in self.seen
            if f["op"] == "item" and f["item"]["kind"] == "interaction"
        }


def interaction_of(group: dict[str, Any], prompt: str) -> dict[str, Any]:
    return next(i for i in group["items"] if i["data"]["arguments"]["prompt"] == prompt)


async def test_snapshot_carries_groups_and_grouped_interactions_are_not_loose(
    client: Client,
) -> None:
    instance_id, sid = await open_started(client)
    async with tab(client) as ws:
        snapshot = await hello(ws)
        [group] = snapshot["app_sessions"]
        assert group["app_session_id"] == sid
        assert group["instance_id"] == instance_id
        assert group["app_scope"] == APP
        assert group["conversation_id"] == await chat_id(client)
        assert (group["state"], group["count"], group["pending"], group["items"]) == (
            "open",
            0,
            0,
            [],
        )
        assert isinstance(group["key"], int)

        frames = Frames(ws)
        await tool_call(
            client, CHOICE, choice("In the app?"), "g1", app_session_context={"app_session_id": sid}
        )
        await tool_call(client, CHOICE, choice("Loose?"), "l1")
        changed = await frames.group(sid, lambda g: g["pending"] == 1)
        assert (changed["state"], changed["count"]) == ("open", 1)
        asked = interaction_of(changed, "In the app?")
        assert asked["kind"] == "interaction"
        assert asked["data"]["state"] == "pending"
        assert asked["data"]["app_session_id"] == sid
        loose = await frames.until(
            lambda f: f["op"] == "item" and f["item"]["kind"] == "interaction"
        )
        assert loose["item"]["data"]["arguments"]["prompt"] == "Loose?"
        assert "app_session_id" not in loose["item"]["data"]
        assert asked["data"]["interaction_id"] not in frames.loose_interaction_ids()

        again = await hello(ws)
    [group] = again["app_sessions"]
    assert (group["count"], group["pending"]) == (1, 1)
    assert interaction_of(group, "In the app?")["data"]["app_session_id"] == sid
    prompts = [
        i["data"]["arguments"]["prompt"] for i in again["items"] if i["kind"] == "interaction"
    ]
    assert prompts == ["Loose?"]  # the grouped question is not a loose card


async def test_groups_follow_answers_and_closes_in_every_tab(client: Client) -> None:
    instance_id, sid = await open_started(client)
    conversation = await chat_id(client)
    async with tab(client) as one, tab(client) as two:
        await hello(one)
        await hello(two)
        tabs = [Frames(one), Frames(two)]
        for call_id, prompt in (("q1", "First?"), ("q2", "Second?")):
            await tool_call(
                client, CHOICE, choice(prompt), call_id, app_session_context={"app_session_id": sid}
            )
        for frames in tabs:
            group = await frames.group(sid, lambda g: g["pending"] == 2)
        first = interaction_of(group, "First?")["data"]["interaction_id"]
        second = interaction_of(group, "Second?")["data"]["interaction_id"]

        # Answered in one tab: every tab's group shows it answered.
        answer = {"selected": ["a"]}
        receipt = await tabs[0].send(
            {
                "op": "answer",
                "conversation_id": conversation,
                "interaction_id": first,
                "answer": answer,
            },
            "receipt",
        )
        assert receipt["outcome"] == "accepted"
        for frames in tabs:
            group = await frames.group(sid, lambda g: g["pending"] == 1)
            done = interaction_of(group, "First?")["data"]
            assert (done["state"], done["result"]) == ("answered", answer)
        assert (await tool_result(client, "q1"))["status"] == "completed"

        # The instance closes: the group is closed history; its question is still open.
        close = {"op": "app", "action": "close", "instance_id": instance_id}
        assert (await tabs[0].send(close, "app_receipt"))["outcome"] == "accepted"
        for frames in tabs:
            group = await frames.group(sid, lambda g: g["state"] == "closed")
            assert group["closed_at"] is not None
            assert (group["count"], group["pending"]) == (2, 1)
            assert interaction_of(group, "Second?")["data"]["state"] == "pending"
        receipt = await tabs[0].send(
            {
                "op": "answer",
                "conversation_id": conversation,
                "interaction_id": second,
                "answer": {"selected": ["b"]},
            },
            "receipt",
        )
        assert receipt["outcome"] == "accepted"
        group = await tabs[1].group(sid, lambda g: g["pending"] == 0)
        assert group["state"] == "closed"
        assert interaction_of(group, "Second?")["data"]["state"] == "answered"
        for frames in tabs:
            assert not {first, second} & frames.loose_interaction_ids()
    result = await tool_result(client, "q2")
    assert (result["status"], result["result"]) == ("completed", {"selected": ["b"]})


async def agent_envelopes(client: Client, kind: str, within: float = 20) -> list[dict[str, Any]]:
    """The payloads of ``kind`` the agent can read, once there is at least one."""
    agent = client.pair.agent
    conversation = await chat_id(client)
    async with asyncio.timeout(within):
        while True:
            stored = await agent.read_all(conversation)
            found = [
                s["envelope"]["payload"]
                for s in stored
                if s["envelope"]["type"] == f"lineup.v1.{kind}"
            ]
            if found:
                return found
            await agent.read(conversation, stored[-1]["seq"] if stored else 0, wait=5)


async def test_continue_opens_a_new_instance_and_sub_session_without_old_questions(
    client: Client,
) -> None:
    old_instance, old_sid = await open_started(client)
    async with tab(client) as ws:
        await hello(ws)
        frames = Frames(ws)
        await tool_call(
            client, CHOICE, choice("Old?"), "old1", app_session_context={"app_session_id": old_sid}
        )
        await frames.group(old_sid, lambda g: g["pending"] == 1)
        close = {"op": "app", "action": "close", "instance_id": old_instance}
        assert (await frames.send(close, "app_receipt"))["outcome"] == "accepted"
        await frames.group(old_sid, lambda g: g["state"] == "closed")

        again = {"op": "app", "action": "continue", "instance_id": old_instance}
        receipt = await frames.send(again, "app_receipt")
        assert (receipt["outcome"], receipt["action"]) == ("accepted", "continue")
        new = await frames.until(
            lambda f: (
                f["op"] == "app_sessions"
                and any(g.get("continues") == old_sid for g in f["sessions"])
            )
        )
        [group] = [g for g in new["sessions"] if g.get("continues") == old_sid]
        assert group["app_session_id"] != old_sid
        assert group["instance_id"] != old_instance
        assert (group["state"], group["count"], group["items"]) == ("open", 0, [])

        snapshot = await hello(ws)
    groups = {g["app_session_id"]: g for g in snapshot["app_sessions"]}
    old = groups[old_sid]
    assert (old["state"], old["count"], old["pending"]) == ("closed", 1, 1)  # not revived
    assert groups[group["app_session_id"]]["continues"] == old_sid
    assert snapshot["apps"]["focus"] == group["instance_id"]

    opened = await agent_envelopes(client, "app_session.opened")
    continued = [o for o in opened if o.get("continues_app_session_id") == old_sid]
    assert [o["app_session_id"] for o in continued] == [group["app_session_id"]]
    assert continued[0]["instance_id"] == group["instance_id"]

    # A question that names the old sub-session still goes to the old group.
    await tool_call(
        client, CHOICE, choice("Late?"), "old2", app_session_context={"app_session_id": old_sid}
    )
    async with tab(client) as ws:
        snapshot = await hello(ws)
    groups = {g["app_session_id"]: g for g in snapshot["app_sessions"]}
    assert (groups[old_sid]["count"], groups[group["app_session_id"]]["count"]) == (2, 0)


async def test_continue_on_live_work_brings_it_forward_and_unknown_work_is_refused(
    client: Client,
) -> None:
    first, _ = await open_started(client)
    second, _ = await open_started(client)
    async with tab(client) as ws:
        snapshot = await hello(ws)
        assert snapshot["apps"]["focus"] == second
        frames = Frames(ws)
        receipt = await frames.send(
            {"op": "app", "action": "continue", "instance_id": first}, "app_receipt"
        )
        assert receipt["outcome"] == "accepted"
        snapshot = await hello(ws)
        assert snapshot["apps"]["focus"] == first
        assert len(snapshot["app_sessions"]) == 2  # no new instance, no new group
        receipt = await frames.send(
            {"op": "app", "action": "continue", "instance_id": "testapp.nothing"}, "app_receipt"
        )
        assert receipt["outcome"] == "app_instance_not_found"
