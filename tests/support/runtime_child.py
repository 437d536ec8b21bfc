"""A Runtime in its own process, for tests that SIGKILL it.

Usage: python -m tests.support.runtime_child DATA_DIR CONVERSATION_ID COUNT
Queues COUNT messages ("q0", "q1", ...) durably, prints "queued", then runs the sync
loop (sending them) until killed.
"""

from __future__ import annotations

import asyncio
import sys

from lineup.runtime import Runtime


async def main(data_dir: str, conversation_id: str, count: int) -> None:
    runtime = Runtime(data_dir)
    await runtime.open()
    for n in range(count):
        await runtime.send_message(conversation_id, f"q{n}")
    print("queued", flush=True)
    await runtime.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
