"""The processes of ``roundtrip_browser.py``: ``lineup demo`` and the Chainlit echo app,
each in its own session with its output in a log file, and the CPU that they and the
browser use (``/proc``)."""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHAINLIT_APP = HERE / "chainlit_app.py"
LINEUP = Path(sys.executable).parent / "lineup"
LINK = re.compile(rb"http://127\.0\.0\.1:\d+/login/link\?code=[A-Za-z0-9_\-]+")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
PIP_TIMEOUT_S = 900.0


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def page_ok(port: int, path: str) -> bool:
    """One GET on 127.0.0.1; True on HTTP 200. Refused or not answering: False."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        response.read()
        return response.status == 200
    except OSError:
        return False
    finally:
        connection.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU of one process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def descendants(root: int) -> set[int]:
    """Every process below ``root``, from /proc."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        parents.setdefault(ppid, []).append(int(entry.name))
    found: set[int] = set()
    todo = [root]
    while todo:
        for child in parents.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def renderer_pids(pids: set[int]) -> set[int]:
    """Those of ``pids`` that are Chromium renderer processes (``--type=renderer``)."""
    found: set[int] = set()
    for pid in pids:
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"--type=renderer" in command:
            found.add(pid)
    return found


class CpuMeter:
    """CPU between ``start()`` and ``stop()``: of the server process; of everything else
    this script started (the Playwright driver and Chromium: ``browser``); and of
    Chromium's renderer processes alone (``renderer``: every thread of the page's
    process, main, compositor and raster; one page is open at a time)."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self._start: dict[int, float] = {}
        self._renderers: set[int] = set()
        self.server = 0.0
        self.browser = 0.0
        self.renderer = 0.0

    def _sample(self) -> dict[int, float]:
        pids = descendants(os.getpid())
        pids -= descendants(self.server_pid) | {self.server_pid}
        self._renderers |= renderer_pids(pids)
        return {pid: cpu_seconds(pid) for pid in pids} | {-1: cpu_seconds(self.server_pid)}

    def start(self) -> None:
        self._renderers = set()
        self._start = self._sample()

    def stop(self) -> None:
        end = self._sample()
        self.server = end.pop(-1) - self._start.pop(-1)
        used = {pid: value - self._start.get(pid, 0.0) for pid, value in end.items()}
        self.browser = sum(used.values())
        self.renderer = sum(used.get(pid, 0.0) for pid in self._renderers)


@dataclass
class Started:
    page_s: float
    """Process start to the first HTTP 200 on the polled page."""
    ready_s: float | None
    """Process start to the line that says it is ready (the login link, for LineUp)."""


class Server:
    """One server process in its own session, its output in a log file."""

    def __init__(
        self,
        name: str,
        command: list[str],
        *,
        cwd: Path,
        port: int,
        path: str,
        ready: re.Pattern[bytes],
        log: Path,
        env: dict[str, str] | None = None,
        api_port: int | None = None,
        data_dir: Path | None = None,
    ) -> None:
        self.name = name
        self.command = command
        self.cwd = cwd
        self.port = port
        self.path = path
        self.ready = ready
        self.log = log
        self.env = env
        self.api_port = api_port
        """``lineup demo``: the AppServer's port (``port`` is the Web Host's)."""
        self.data_dir = data_dir
        """``lineup demo``: its ``--data-dir``."""
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Started:
        """Start and poll every 5 ms until the page answers 200 and the ready line is out."""
        self.cwd.mkdir(parents=True, exist_ok=True)
        with self.log.open("wb") as output:
            began = time.monotonic()
            self.proc = subprocess.Popen(
                self.command,
                cwd=self.cwd,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        page_s: float | None = None
        ready_s: float | None = None
        while time.monotonic() - began < START_TIMEOUT_S:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited during startup:\n{self.tail()}")
            if page_s is None and page_ok(self.port, self.path):
                page_s = time.monotonic() - began
            if ready_s is None and self.ready.search(self.log.read_bytes()):
                ready_s = time.monotonic() - began
            if page_s is not None and ready_s is not None:
                return Started(page_s, ready_s)
            time.sleep(0.005)
        self.stop()
        raise RuntimeError(f"{self.name} did not start in {START_TIMEOUT_S:.0f} s:\n{self.tail()}")

    def stop(self) -> None:
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: pgid == pid
            proc.wait(5)

    def tail(self, lines: int = 20) -> str:
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def output(self) -> bytes:
        return self.log.read_bytes()


@contextlib.contextmanager
def running(server: Server) -> Iterator[Started]:
    try:
        yield server.start()
    finally:
        server.stop()


def lineup_server(work: Path, tag: str, trace_file: Path | None = None) -> Server:
    """``lineup demo``; with ``trace_file``, through roundtrip/traced_demo.py."""
    port, web_port = free_port(), free_port()
    data = work / f"lineup-{tag}"
    env = os.environ | {"PYTHONUNBUFFERED": "1"}
    launcher = [str(LINEUP)]
    if trace_file is not None:
        launcher = [sys.executable, str(HERE / "traced_demo.py")]
        env["LINEUP_BENCH_TRACE"] = str(trace_file)
    return Server(
        "lineup demo",
        [
            *launcher,
            "demo",
            "--data-dir",
            str(data / "data"),
            "--port",
            str(port),
            "--web-port",
            str(web_port),
        ],
        cwd=data,
        port=web_port,
        path="/login",
        ready=LINK,
        log=data / "demo.log",
        env=env,
        api_port=port,
        data_dir=data / "data",
    )


def chainlit_server(work: Path, tag: str, venv: Path) -> Server:
    """The echo app in a fresh directory (Chainlit writes .chainlit/ and chainlit.md there)."""
    port = free_port()
    app = work / f"chainlit-{tag}"
    app.mkdir(parents=True)
    (app / "app.py").write_bytes(CHAINLIT_APP.read_bytes())
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env |= {"PATH": f"{venv / 'bin'}:{env.get('PATH', '')}", "PYTHONUNBUFFERED": "1"}
    return Server(
        "chainlit",
        [
            str(venv / "bin" / "chainlit"),
            "run",
            "app.py",
            "--headless",
            "--port",
            str(port),
            "--host",
            "127.0.0.1",
        ],
        cwd=app,
        port=port,
        path="/",
        ready=re.compile(rb"Your app is available at"),
        log=app / "chainlit.log",
        env=env,
    )


def ensure_chainlit(venv: Path, spec: str) -> str:
    """Create the venv and ``pip install`` Chainlit unless it is already there; the version."""
    chainlit = venv / "bin" / "chainlit"
    if not chainlit.exists():
        print(f"installing {spec} into {venv} (once) ...", flush=True)
        base = getattr(sys, "_base_executable", sys.executable)
        subprocess.run([base, "-m", "venv", str(venv)], check=True, timeout=120)
        subprocess.run(
            [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", spec],
            check=True,
            timeout=PIP_TIMEOUT_S,
        )
    version = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; print(m.version('chainlit'))",
        ],
        check=True,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return version.stdout.strip()
