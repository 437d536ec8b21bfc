"""A real AppServer in its own process, on a loopback port, over a real SQLite file or
a real PostgreSQL database (``database``), with one or several worker processes."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, TypeVar

import httpx

from lineup.server import admin

T = TypeVar("T")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class AppServerProcess:
    def __init__(
        self,
        data_dir: Path,
        log_path: Path,
        *,
        database: str | None = None,
        workers: int = 1,
        port: int | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.log_path = log_path
        self.database = database
        self.workers = workers
        self.port = port or free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self, timeout: float = 20.0) -> None:
        """Start the process and return once it listens (read from its own log, no polling)."""
        assert self.process is None, "already running"
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "lineup",
                "--log-level",
                "DEBUG",
                "server",
                "--data-dir",
                str(self.data_dir),
                "--port",
                str(self.port),
                *(["--database", self.database] if self.database else []),
                *(["--workers", str(self.workers)] if self.workers > 1 else []),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
        )
        listening = threading.Event()
        threading.Thread(
            target=_copy_log, args=(self.process, self.log_path, listening), daemon=True
        ).start()
        if not listening.wait(timeout) or self.process.poll() is not None:
            raise RuntimeError(f"AppServer did not start: see {self.log_path}")
        assert httpx.get(self.url + "/readyz", timeout=5.0).status_code == 200

    def kill(self) -> None:
        """SIGKILL: no shutdown, no flush; what was acknowledged must survive."""
        if self.process is not None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
            self.process = None

    def stop(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)
            self.process = None

    def restart(self) -> None:
        self.kill()
        self.start()

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    # --- principals -----------------------------------------------------------------

    def add_user(self, username: str, password: str = "correct horse battery") -> str:
        return _run_aside(admin.add_user(self.data_dir, username, password, database=self.database))

    def add_agent(self, agent_id: str) -> str:
        return _run_aside(
            admin.add_agent(self.data_dir, agent_id, agent_id, database=self.database)
        )


def _copy_log(process: subprocess.Popen[bytes], log_path: Path, listening: threading.Event) -> None:
    """Copy the server's output to its log file; say when uvicorn is listening.

    uvicorn prints "Uvicorn running on" once the lifespan (storage open) is done and
    the socket is bound; at end of output (exit or kill) the waiter is released too.
    """
    assert process.stdout is not None
    with process.stdout, log_path.open("ab") as log:
        for line in process.stdout:
            log.write(line)
            log.flush()
            if b"Uvicorn running on" in line:
                listening.set()
    listening.set()


def _run_aside(coro: Coroutine[Any, Any, T]) -> T:
    """Run an operator action on its own loop in a thread (tests may hold a loop)."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()
