"""``lineup demo`` in its own process, for the tests that drive it end to end."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def running_demo(data_dir: Path, port: int, web_port: int, surface_port: int) -> Iterator[str]:
    """Start ``lineup demo`` on these ports, yield its banner once it is ready, then stop
    it with SIGTERM and check it exits cleanly."""
    demo = subprocess.Popen(
        [sys.executable, "-m", "lineup", "demo", "--data-dir", str(data_dir), "--port",
         str(port), "--web-port", str(web_port), "--surface-port", str(surface_port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )  # fmt: skip
    try:
        assert demo.stdout is not None
        lines: list[str] = []
        while not any("Press Ctrl-C" in line for line in lines):
            line = demo.stdout.readline()
            assert line, "the demo exited before it was ready"
            lines.append(line)
        yield "".join(lines)
    finally:
        demo.terminate()
        code = demo.wait(timeout=20)
        if demo.stdout is not None:
            demo.stdout.close()
    assert code == 0
