"""A Runtime in its own process that SIGKILLs itself right after it stored a question.

Usage: python -m tests.support.interaction_child DATA_DIR CALL_ID
Runs the sync loop of the (logged-in) Runtime in DATA_DIR and prints "ready" once it
is in sync. When the agent's ``tool.call`` CALL_ID has been applied (its pending
interaction committed and shown), it prints the record as one JSON line and kills
itself with SIGKILL: no cleanup, no flush, no chance to send anything else.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

import msgspec

from lineup.runtime import Runtime, RuntimeEvent, TimelineChanged


async def main(data_dir: str, call_id: str) -> None:
    runtime = Runtime(data_dir)
    await runtime.open()

    def watch(event: RuntimeEvent) -> None:
        if not isinstance(event, TimelineChanged) or event.item.interaction is None:
            return
        record = event.item.interaction
        if record.call_id == call_id and record.state == "pending":
            line = msgspec.json.encode(
                {
                    "id": record.id,
                    "state": record.state,
                    "created_at": record.created_at,
                    "expires_at": record.expires_at,
                }
            )
            sys.stdout.write(line.decode() + "\n")
            sys.stdout.flush()
            os.kill(os.getpid(), signal.SIGKILL)

    runtime.subscribe(watch)
    task = asyncio.create_task(runtime.run())
    await runtime.ready.wait()
    print("ready", flush=True)
    await task


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
