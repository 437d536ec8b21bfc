"""A logged-in Runtime in its own process, running the MCP fault server, that SIGKILLs
itself (no cleanup, no flush) at the first ``tool.progress`` it queues: an MCP call is
then forwarded and still running on the server.

Usage: python -m tests.support.mcp_runtime_child DATA_DIR RECORD_FILE
(``RECORD_FILE``: where the fault server writes what it was sent).
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys

from lineup.runtime import Runtime, RuntimeEvent, TimelineChanged
from tests.runtime.mcp.conftest import FAULT_SERVER, stdio_config


async def main(data_dir: str, record: str) -> None:
    fault = stdio_config("faults", sys.executable, str(FAULT_SERVER), env={"FAULT_RECORD": record})
    runtime = Runtime(data_dir, mcp_servers=[fault])
    await runtime.open()

    def watch(event: RuntimeEvent) -> None:
        if isinstance(event, TimelineChanged) and event.item.type == "lineup.v1.tool.progress":
            os.kill(os.getpid(), signal.SIGKILL)

    runtime.subscribe(watch)
    await runtime.run()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
