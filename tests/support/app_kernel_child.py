"""A Runtime in its own process that SIGKILLs itself between the steps of an app close.

Usage: python -m tests.support.app_kernel_child DATA_DIR STEP INSTANCE_ID CONVERSATION_ID NOW

Opens the Runtime in DATA_DIR (its store recovers on open) with a clock frozen at NOW
and, offline, takes the steps up to STEP:

- ``open``: opens a new instance in CONVERSATION_ID (it takes focus, ``starting``);
- ``request_close``: asks to close INSTANCE_ID (it is ``stopping``, its tools cancelled);
- ``closed``: ... and reports the stop finished (``stopped``, sub-session ended).

As soon as the last step has committed it prints one JSON line (the step, the
instance and its state) and kills itself with SIGKILL: no cleanup, no flush, no
chance to send anything.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from datetime import datetime

import msgspec

from lineup.runtime import Runtime
from tests.support.app_kernel import APP


def die(step: str, instance_id: str, state: str | None) -> None:
    line = msgspec.json.encode({"step": step, "instance_id": instance_id, "state": state})
    sys.stdout.write(line.decode() + "\n")
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


async def main(data_dir: str, step: str, instance_id: str, conversation_id: str, now: str) -> None:
    at = datetime.fromisoformat(now)
    runtime = Runtime(data_dir, clock=lambda: at)
    await runtime.open()
    if step == "open":
        record = await runtime.apps.open_instance(APP, conversation_id=conversation_id)
        die(step, record.instance_id, record.state)
    receipt = await runtime.apps.request_close(instance_id)
    assert receipt.accepted, receipt
    if step == "request_close":
        die(step, instance_id, receipt.record and receipt.record.state)
    receipt = await runtime.apps.closed(instance_id, reason="closed by the user")
    assert receipt.accepted, receipt
    die(step, instance_id, receipt.record and receipt.record.state)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:6]))
