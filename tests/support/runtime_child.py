"""A Runtime in its own process that SIGKILLs itself in the middle of sending.

Usage: python -m tests.support.runtime_child DATA_DIR CONVERSATION_ID COUNT KILL_AFTER
Queues COUNT messages ("q0", "q1", ...) durably, prints "queued", runs the sync loop,
and kills itself with SIGKILL (no cleanup, no flush) as soon as KILL_AFTER of them
are acknowledged: the rest are in flight or not yet sent.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from lineup.runtime import Runtime, RuntimeEvent, TimelineChanged


async def main(data_dir: str, conversation_id: str, count: int, kill_after: int) -> None:
    runtime = Runtime(data_dir)
    await runtime.open()
    for n in range(count):
        await runtime.send_message(conversation_id, f"q{n}")
    print("queued", flush=True)
    acked = 0

    def watch(event: RuntimeEvent) -> None:
        nonlocal acked
        if isinstance(event, TimelineChanged) and event.item.state == "sent":
            acked += 1
            if acked >= kill_after:
                os.kill(os.getpid(), signal.SIGKILL)

    runtime.subscribe(watch)
    await runtime.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])))
