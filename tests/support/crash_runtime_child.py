"""The person's side of the crash harness: a Runtime in its own process (so it can be
SIGKILLed) that works through a fixed plan and picks it up again after a restart.

Usage: python -m tests.support.crash_runtime_child DATA_DIR CONVERSATION_ID COUNT

The plan is COUNT user messages ``u0`` .. ``u<COUNT-1>``, one at a time: the next is
queued once the agent's reply ``a:u<i>`` to the previous one is in the timeline. The
person answers every question the agent asks with the second option, as soon as it
shows (including questions that were pending when the process died). What is done is
read back from the Runtime's own store at start, so a restarted child continues where
the store says it stopped. It prints one line per step (``queued i``, ``reply i``,
``answered``), which the harness counts to decide when to kill it, and ``done`` at
the end; then it keeps syncing until it is killed or stopped.
"""

from __future__ import annotations

import asyncio
import os
import sys

import msgspec

from lineup.client import Backoff
from lineup.runtime import (
    InteractionRefused,
    Runtime,
    RuntimeEvent,
    TimelineChanged,
    TimelineItem,
)

FAST = Backoff(base=0.05, cap=0.3)


def text_of(item: TimelineItem) -> str:
    """A message row's text ("" for any other row)."""
    if item.type != "lineup.v1.message":
        return ""
    return str(msgspec.json.decode(item.body).get("payload", {}).get("text", ""))


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


async def main(data_dir: str, conversation_id: str, count: int) -> None:
    runtime = Runtime(data_dir, backoff=FAST, catalog_interval=None)
    await runtime.open()
    replies: set[str] = set()
    progressed = asyncio.Event()
    answering: set[str] = set()

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

    def ended(finished: asyncio.Task[None]) -> None:  # a sync loop that dies is a finding
        if not finished.cancelled() and finished.exception() is not None:
            say(f"failed {type(finished.exception()).__name__}")
            os._exit(1)

    task.add_done_callback(ended)
    for record in await runtime.store.pending_interactions():
        start_answer(record.id)
    timeline = await runtime.store.timeline(conversation_id, limit=10 * count + 100)
    sent = {text_of(t) for t in timeline if t.sender_kind == "user"}
    replies.update(
        text_of(t)[2:]
        for t in timeline
        if t.sender_kind == "agent" and text_of(t).startswith("a:u")
    )
    for i in range(count):
        text = f"u{i}"
        if text not in sent:
            await runtime.send_message(conversation_id, text)
            say(f"queued {i}")
        while text not in replies:
            progressed.clear()
            await progressed.wait()
        say(f"reply {i}")
    say("done")
    await task


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
