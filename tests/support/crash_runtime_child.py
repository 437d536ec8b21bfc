"""The person's side of the crash harness: a Runtime in its own process (so it can be
SIGKILLed) that works through a fixed plan and picks it up again after a restart.

Usage: python -m tests.support.crash_runtime_child DATA_DIR CONVERSATION_ID COUNT APP_EVERY

The plan is COUNT user messages ``u0`` .. ``u<COUNT-1>``, one at a time: the next is
queued once the agent's reply ``a:u<i>`` to the previous one is in the timeline. The
child plays every part on the user's side that a person and a host would:

* the person answers every question with the second option as soon as it shows
  (including questions that were pending when the process died);
* the test MiniApp (``test-app``), through the same ``AppApi`` the Web Host's bridge
  calls: it reports ``lifecycle.ready`` when an instance starts and completes every
  call ``tools.list`` shows it (``open`` with its instance id, ``echo`` with its text);
  an instance a restart left ``suspended`` with calls waiting is brought back to the
  front by the person, as the dock does;
* the host and the person for capabilities: every call awaiting consent is allowed,
  and every approved call is claimed and finished (``clipboard.write``);
* after the reply to every APP_EVERY-th message, the person closes every live
  instance but the newest (request, then the host reports it closed).

What is done is read back from the Runtime's own store at start, so a restarted child
continues where the store says it stopped. It prints one line per step (``queued
i``, ``reply i``, ``answered``, ``ready``, ``completed``, ``resumed``, ``consented``,
``finished``, ``closed``), which the harness counts to decide when to kill it, and
``done`` at the end; then it keeps syncing until it is killed or stopped.
"""

from __future__ import annotations

import asyncio
import os
import sys
from typing import Any

import msgspec

from lineup.client import Backoff
from lineup.runtime import (
    InteractionRefused,
    Runtime,
    RuntimeEvent,
    TimelineChanged,
    TimelineItem,
)
from lineup.runtime.apps.app_api import AppApiError
from lineup.runtime.apps.lifecycle import State as AppState
from lineup.runtime.capabilities.calls import State as CallState
from lineup.runtime.capabilities.gateway import CapabilityRefused

FAST = Backoff(base=0.05, cap=0.3)
APP_SCOPE = "test-app"
RUNNING = (AppState.FOREGROUND, AppState.BACKGROUND)


def text_of(item: TimelineItem) -> str:
    """A message row's text ("" for any other row)."""
    if item.type != "lineup.v1.message":
        return ""
    return str(msgspec.json.decode(item.body).get("payload", {}).get("text", ""))


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def app_result(tool: str, instance_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """What the test app answers for each of its tools."""
    if tool == "test-app.open":
        return {"instance_id": instance_id}
    return {"text": str(arguments.get("text", ""))}


class UserSide:
    """The app and the host, reconciled with the Runtime's state after every change:
    one pass at a time, and another pass whenever something changed meanwhile."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.changed = asyncio.Event()

    async def run(self) -> None:
        while True:
            self.changed.clear()
            await self._apps()
            await self._capabilities()
            await self.changed.wait()

    async def _apps(self) -> None:
        runtime = self.runtime
        for record in runtime.apps.instances().live():
            if record.app_scope != APP_SCOPE:
                continue
            iid = record.instance_id
            try:
                if record.state is AppState.STARTING:
                    await runtime.app_api.call(iid, "lifecycle.ready", {})
                    say("ready")
                calls = await runtime.app_api.call(iid, "tools.list", {})
                resume = calls and record.state is AppState.SUSPENDED
                if resume and (await runtime.apps.request_foreground(iid)).accepted:
                    say("resumed")
                for call in calls:
                    result = app_result(call["tool"], iid, call["arguments"])
                    params = {"call_id": call["call_id"], "result": result}
                    await runtime.app_api.call(iid, "tools.complete", params)
                    say("completed")
            except AppApiError:
                pass  # the instance or the call moved on meanwhile: its change wakes us

    async def _capabilities(self) -> None:
        gateway = self.runtime.capabilities
        for call in await gateway.open_calls():
            try:
                if call.state is CallState.AWAITING_CONSENT:
                    call = await gateway.decide(call.key, True)
                    say("consented")
                if call.state is CallState.APPROVED:
                    await gateway.claim(call.key)
                    await gateway.finish(call.key, result={"written": True})
                    say("finished")
            except CapabilityRefused:
                pass  # decided, expired or interrupted meanwhile: its change wakes us


async def close_all_but_newest(runtime: Runtime) -> None:
    """The person tidies up: every live test-app instance but the newest closes."""
    live = [r for r in runtime.apps.instances().live() if r.app_scope == APP_SCOPE]
    live.sort(key=lambda r: r.started_at)
    for record in live[:-1]:
        iid = record.instance_id
        if (
            record.state is not AppState.STOPPING
            and not (await runtime.apps.request_close(iid)).accepted
        ):
            continue
        if (await runtime.apps.closed(iid)).accepted:  # the host took its surface down
            say("closed")


async def main(data_dir: str, conversation_id: str, count: int, app_every: int) -> None:
    runtime = Runtime(data_dir, backoff=FAST, catalog_interval=None)
    await runtime.open()
    replies: set[str] = set()
    progressed = asyncio.Event()
    answering: set[str] = set()
    side = UserSide(runtime)

    async def answer(interaction_id: str) -> None:
        try:
            await runtime.answer(interaction_id, conversation_id, {"selected": ["2"]})
            say("answered")
        except InteractionRefused:
            pass  # answered before the crash, or expired: the first answer stands
        finally:
            answering.discard(interaction_id)

    def start_answer(interaction_id: str) -> None:
        if interaction_id not in answering:
            answering.add(interaction_id)
            asyncio.get_running_loop().create_task(answer(interaction_id))

    def watch(event: RuntimeEvent) -> None:
        side.changed.set()
        if not isinstance(event, TimelineChanged):
            return
        item = event.item
        record = item.interaction
        if record is not None and record.state == "pending":
            start_answer(record.id)
        text = text_of(item)
        if item.sender_kind == "agent" and text.startswith("a:u"):
            replies.add(text[2:])
            progressed.set()

    runtime.subscribe(watch)
    task = asyncio.create_task(runtime.run())
    user_side = asyncio.create_task(side.run())

    def ended(finished: asyncio.Task[None]) -> None:  # a loop that dies is a finding
        if not finished.cancelled() and finished.exception() is not None:
            say(f"failed {type(finished.exception()).__name__}: {finished.exception()}")
            os._exit(1)

    task.add_done_callback(ended)
    user_side.add_done_callback(ended)
    for record in await runtime.store.pending_interactions():
        start_answer(record.id)
    timeline = await runtime.store.timeline(conversation_id, limit=20 * count + 100)
    sent = {text_of(t) for t in timeline if t.sender_kind == "user"}
    replies.update(
        text_of(t)[2:]
        for t in timeline
        if t.sender_kind == "agent" and text_of(t).startswith("a:u")
    )
    await close_all_but_newest(runtime)  # a tidy-up a kill interrupted
    for i in range(count):
        text = f"u{i}"
        if text not in sent:
            await runtime.send_message(conversation_id, text)
            say(f"queued {i}")
        while text not in replies:
            progressed.clear()
            await progressed.wait()
        say(f"reply {i}")
        if i % app_every == app_every - 1:
            await close_all_but_newest(runtime)
    say("done")
    await task


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
