"""A Runtime in its own process that SIGKILLs itself between consent and result.

Usage: python -m tests.support.capability_child DATA_DIR STEP CONVERSATION_ID CALL_ID NOW

Opens the Runtime in DATA_DIR with a clock frozen at NOW and, offline, takes the
steps up to STEP for the agent's capability call CALL_ID: ``decide`` (the person
allowed it: ``approved``), ``claim`` (a tab took it to run: ``executing``). As soon as
the step has committed it prints one JSON line and kills itself with SIGKILL, before
any result can be recorded.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import datetime

import msgspec

from lineup.runtime import Runtime
from lineup.runtime.capabilities.gateway import CallKey


async def main(data_dir: str, step: str, conversation_id: str, call_id: str, now: str) -> None:
    at = datetime.fromisoformat(now)
    runtime = Runtime(data_dir, clock=lambda: at)
    await runtime.open()
    key = CallKey(conversation_id, call_id, "agent")
    call = await runtime.capabilities.decide(key, allow=True)
    if step == "claim":
        call = await runtime.capabilities.claim(key)
    line = msgspec.json.encode({"step": step, "state": str(call.state)})
    sys.stdout.write(line.decode() + "\n")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
