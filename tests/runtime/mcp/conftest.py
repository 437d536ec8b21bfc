"""Real MCP servers for the MCP host tests: server-everything from npm (over stdio, and
over streamable HTTP on a loopback port) and the fault server written here."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import pytest

from lineup.runtime.mcp import McpLimits, McpServer, McpState, ServerConfig
from tests.support.npm import EVERYTHING, NpmUnavailable, npm_package

HERE = Path(__file__).resolve().parent
FAULT_SERVER = HERE / "fault_server.py"
LOOPBACK = HERE.parents[1] / "support" / "loopback_listen.cjs"

FAST = McpLimits(
    initialize_timeout_s=10.0,
    list_timeout_s=10.0,
    backoff_base_s=0.05,
    backoff_cap_s=0.2,
    max_quick_failures=3,
)
"""Limits for tests: quick retries, so a restart is seen at once."""


def stdio_config(
    name: str, command: str, *args: str, env: dict[str, str] | None = None
) -> ServerConfig:
    return ServerConfig(
        name=name, key=name, transport="stdio", command=command, args=args, env=env or {}
    )


@pytest.fixture(scope="session")
def everything_dir() -> Path:
    try:
        return npm_package(*EVERYTHING, marker="dist/index.js")
    except NpmUnavailable as exc:
        pytest.fail(str(exc))


@pytest.fixture
def everything_stdio(everything_dir: Path) -> ServerConfig:
    return stdio_config("everything", "node", str(everything_dir / "dist" / "index.js"), "stdio")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class HttpEverything:
    """server-everything serving streamable HTTP on a loopback port, as a child that
    can be killed and started again on the same port."""

    def __init__(self, everything_dir: Path) -> None:
        self.port = free_port()
        self.script = everything_dir / "dist" / "index.js"
        self.config = ServerConfig(
            name="everything",
            key="everything",
            transport="http",
            url=f"http://127.0.0.1:{self.port}/mcp",
        )
        self._process: subprocess.Popen[str] | None = None
        self._drain: threading.Thread | None = None

    def start(self) -> None:
        env = {
            "PATH": os.environ["PATH"],
            "HOME": os.environ.get("HOME", "/tmp"),
            "PORT": str(self.port),
        }
        process = subprocess.Popen(
            ["node", "--require", str(LOOPBACK), str(self.script), "streamableHttp"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        self._process = process
        assert process.stderr is not None
        for line in process.stderr:  # it says so on stderr once it listens
            if f"listening on port {self.port}" in line:
                break
        else:
            self.stop()
            pytest.fail("server-everything did not listen on its port")
        # Keep reading, so that its writes never block on a full pipe.
        self._drain = threading.Thread(target=process.stderr.read, daemon=True)
        self._drain.start()

    def stop(self, *, kill: bool = False) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        if kill:
            process.kill()
        else:
            process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        if self._drain is not None:
            self._drain.join(5)
            self._drain = None
        if process.stderr is not None:
            process.stderr.close()


@pytest.fixture
def http_everything(everything_dir: Path) -> Iterator[HttpEverything]:
    server = HttpEverything(everything_dir)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def everything_http(http_everything: HttpEverything) -> ServerConfig:
    return http_everything.config


FaultFactory = Callable[..., tuple[ServerConfig, Path]]


@pytest.fixture
def fault(tmp_path: Path) -> FaultFactory:
    """``fault(mode="normal", name="fault", **env)``: the fault server's config and the
    file it records what it saw in."""

    def make(mode: str = "normal", name: str = "fault", **env: str) -> tuple[ServerConfig, Path]:
        record = tmp_path / f"{name}.record"
        environ = {"FAULT_MODE": mode, "FAULT_RECORD": str(record), **env}
        return stdio_config(name, sys.executable, str(FAULT_SERVER), env=environ), record

    return make


@asynccontextmanager
async def running(config: ServerConfig, **kwargs: object) -> AsyncIterator[McpServer]:
    """A started server, ready; stopped after."""
    kwargs.setdefault("limits", FAST)
    server = McpServer(config, **kwargs)  # type: ignore[arg-type]
    await server.start()
    try:
        state = await server.wait_for(McpState.READY, McpState.FAILED, timeout_s=30)
        assert state is McpState.READY, (server.reason, server.stderr_tail())
        yield server
    finally:
        await server.stop()


def pid_gone(pid: int) -> bool:
    """The process is gone and reaped (a zombie still answers ``kill(pid, 0)``)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


@contextmanager
def fault_over_http(
    tmp_path: Path, *, json_response: bool = False, **headers: str
) -> Iterator[ServerConfig]:
    """The fault server serving streamable HTTP on a free loopback port, as a child;
    ``headers`` are the config's (``x_team`` is sent as ``X-Team``)."""
    port = free_port()
    env = {
        "PATH": os.environ["PATH"],
        "HOME": os.environ.get("HOME", "/tmp"),
        "FAULT_HTTP_PORT": str(port),
        "FAULT_HTTP_JSON": "1" if json_response else "0",
        "FAULT_RECORD": str(tmp_path / "http.record"),
    }
    process = subprocess.Popen(
        [sys.executable, str(FAULT_SERVER)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    drain: threading.Thread | None = None
    try:
        assert process.stderr is not None
        for line in process.stderr:
            if "Uvicorn running on" in line:
                break
        else:
            pytest.fail("the fault server did not listen")
        drain = threading.Thread(target=process.stderr.read, daemon=True)
        drain.start()
        yield ServerConfig(
            name="fault",
            key="fault",
            transport="http",
            url=f"http://127.0.0.1:{port}/mcp",
            headers={name.replace("_", "-").title(): value for name, value in headers.items()},
        )
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)
        if drain is not None:
            drain.join(5)
        if process.stderr is not None:
            process.stderr.close()
