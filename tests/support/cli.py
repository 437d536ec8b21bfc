"""``lineup`` as a user runs it: a real ``python -m lineup`` process, no terminal (so
prompts read stdin, empty unless given)."""

from __future__ import annotations

import os
import subprocess
import sys


def lineup(
    *args: str, input: str | None = None, env: dict[str, str] | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "lineup", *args],
        capture_output=True,
        text=True,
        input=input if input is not None else "",
        timeout=timeout,
        env={**os.environ, **(env or {})},
        check=False,
        start_new_session=True,  # no terminal: prompts read stdin
    )
