"""Browser round trip: Enter in the composer to the agent's echo in the timeline.

LineUp (``lineup demo``: browser -> Web Host/Runtime -> AppServer -> demo agent and back,
every hop durable) against a minimal Chainlit echo app, in one run, in headless Chromium.
Each message waits for its reply; the time is taken inside the page (see
``roundtrip/probe.js``). Also times each server from process start to its first page.

    .venv/bin/python benchmarks/roundtrip_browser.py [--messages 200] [--json FILE]
    .venv/bin/python benchmarks/roundtrip_browser.py --trace     # LineUp's hops
    .venv/bin/python benchmarks/roundtrip_browser.py --page-profile

Chainlit is installed once into its own virtual environment (``--chainlit-venv``, by
default ``~/.cache/lineup-bench/chainlit-venv``) and reused. Everything else lives in a
temporary directory and on 127.0.0.1; every server is stopped at the end. See
docs/benchmarks.md, "Browser round trip (issue 3)".

Exit status: 0 when every message got its reply, 1 when some did not, 2 when the run
could not complete. Missing a goal is reported, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import http.client
import json
import math
import os
import platform
import re
import secrets
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, CDPSession, Page, async_playwright
from playwright.async_api import Error as PlaywrightError
from roundtrip import hops

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "roundtrip"
PROBE_JS = (HERE / "probe.js").read_text(encoding="utf-8")
CHAINLIT_APP = HERE / "chainlit_app.py"
LINEUP = Path(sys.executable).parent / "lineup"
CHROMIUM = Path(os.environ.get("LINEUP_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    # Loopback only: other names do not resolve (Chainlit's page asks for web fonts and
    # KaTeX CSS from CDNs). No request interception, which would slow every request.
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost",
]
LINK = re.compile(rb"http://127\.0\.0\.1:\d+/login/link\?code=[A-Za-z0-9_\-]+")
START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 15.0
PIP_TIMEOUT_S = 900.0
GOAL_P99_MS = 30.0
MAX_LOST = 5


# --- statistics -------------------------------------------------------------------------------


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest rank: the smallest value with at least ``q`` of the values at or below it."""
    ordered = sorted(values)
    rank = max(1, math.ceil(q * len(ordered)))
    return ordered[rank - 1]


def summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {}
    return {
        "n": len(values),
        "min": min(values),
        "p50": percentile(values, 0.50),
        "p90": percentile(values, 0.90),
        "p99": percentile(values, 0.99),
        "max": max(values),
        "mean": statistics.fmean(values),
    }


# --- processes ----------------------------------------------------------------------------------


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


class CpuMeter:
    """CPU of the server process and of everything else this script started (the
    Playwright driver and Chromium), between ``start()`` and ``stop()``."""

    def __init__(self, server_pid: int) -> None:
        self.server_pid = server_pid
        self._start: dict[int, float] = {}
        self.server = 0.0
        self.browser = 0.0

    def _sample(self) -> dict[int, float]:
        pids = descendants(os.getpid())
        pids -= descendants(self.server_pid) | {self.server_pid}
        return {pid: cpu_seconds(pid) for pid in pids} | {-1: cpu_seconds(self.server_pid)}

    def start(self) -> None:
        self._start = self._sample()

    def stop(self) -> None:
        end = self._sample()
        self.server = end.pop(-1) - self._start.pop(-1)
        self.browser = sum(value - self._start.get(pid, 0.0) for pid, value in end.items())


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
    ) -> None:
        self.name = name
        self.command = command
        self.cwd = cwd
        self.port = port
        self.path = path
        self.ready = ready
        self.log = log
        self.env = env
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


# --- the browser side -------------------------------------------------------------------------


@dataclass(frozen=True)
class App:
    """How to drive one chat page."""

    composer: str
    reply_class: str
    """Class of the elements that hold replies (read through a live collection)."""
    reply_filter: str = ""
    """CSS selector those elements must also match ('' for all)."""


LINEUP_PAGE = App(composer="#input", reply_class="from-agent")
CHAINLIT_PAGE = App(
    composer="#chat-input", reply_class="step", reply_filter='[data-step-type="assistant_message"]'
)


@dataclass
class Run:
    name: str
    latencies_ms: list[float] = field(default_factory=list)
    lost: int = 0
    mutations: list[int] = field(default_factory=list)
    server_cpu_s: float = 0.0
    browser_cpu_s: float = 0.0
    wall_s: float = 0.0
    replies_in_page: int = 0
    window_ms: tuple[float, float] = (0.0, 0.0)
    """Wall clock (ms) at the start and end of the measured messages."""
    origin_ms: float = 0.0
    """The page's performance.timeOrigin (trace mode)."""
    page_profile: list[tuple[float, str]] = field(default_factory=list)
    """--page-profile: (ms of main-thread self time per message, function)."""
    page_errors: list[str] = field(default_factory=list)


async def install_probe(page: Page, app: App) -> None:
    await page.evaluate(
        PROBE_JS,
        {"replyClass": app.reply_class, "replyFilter": app.reply_filter, "lookBack": 3},
    )


async def round_trip(page: Page, app: App, text: str, timeout_ms: int) -> dict[str, Any]:
    """Type ``text``, press Enter, wait for "You said: text". ``latency`` is t1 - t0 in the
    page (ms), None when no reply came in time."""
    await page.evaluate("e => window.__lineupBench.arm(e)", f"You said: {text}")
    await page.fill(app.composer, text)
    await page.keyboard.press("Enter")
    result: dict[str, Any] = await page.evaluate("ms => window.__lineupBench.wait(ms)", timeout_ms)
    done = result["t0"] is not None and result["t1"] is not None
    result["latency"] = float(result["t1"]) - float(result["t0"]) if done else None
    result["text"] = text
    return result


async def until_first_reply(page: Page, app: App, tag: str, attempts: int = 3) -> None:
    """The page may show its composer before its socket is up: retry the first message."""
    for attempt in range(attempts):
        result = await round_trip(page, app, f"ready {tag} {attempt}", 15_000)
        if result["latency"] is not None:
            return
    raise RuntimeError(f"no reply to the first message after {attempts} attempts")


async def start_page_profile(page: Page) -> CDPSession:
    """V8's sampling profiler on the page's main thread (Chrome DevTools Protocol)."""
    cdp = await page.context.new_cdp_session(page)
    await cdp.send("Profiler.enable")
    await cdp.send("Profiler.setSamplingInterval", {"interval": 500})
    await cdp.send("Profiler.start")
    return cdp


async def stop_page_profile(cdp: CDPSession, messages: int) -> list[tuple[float, str]]:
    """Self time per function, ms per message, largest first."""
    profile = (await cdp.send("Profiler.stop"))["profile"]
    await cdp.detach()
    frames = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    self_us: dict[str, float] = {}
    for node_id, delta in zip(profile["samples"], profile["timeDeltas"], strict=True):
        frame = frames[node_id]
        where = frame["url"].rsplit("/", 1)[-1]
        label = frame["functionName"] or "(anonymous)"
        if where:
            label += f" ({where}:{frame['lineNumber'] + 1})"
        self_us[label] = self_us.get(label, 0.0) + delta
    per = max(1, messages)
    ranked = sorted(self_us.items(), key=lambda item: -item[1])
    return [(us / 1000 / per, label) for label, us in ranked if label != "(idle)"][:12]


async def measure(
    page: Page,
    app: App,
    run: Run,
    server_pid: int,
    args: argparse.Namespace,
    trace: list[dict[str, Any]] | None = None,
) -> None:
    """Warm up, then the measured messages; with ``trace``, also each message's frames."""
    token = secrets.token_hex(3)
    for index in range(args.warmup):
        await round_trip(page, app, f"warm {index:03d} {token}", args.timeout_ms)
    if trace is not None:
        await page.evaluate("() => window.__lineupWsLog.splice(0)")
    profiler = await start_page_profile(page) if args.page_profile else None
    meter = CpuMeter(server_pid)
    meter.start()
    run.window_ms = (time.time() * 1000, 0.0)
    began = time.monotonic()
    for index in range(args.messages):
        result = await round_trip(page, app, f"ping {index:04d} {token}", args.timeout_ms)
        if trace is not None:
            result["log"] = await page.evaluate("() => window.__lineupWsLog.splice(0)")
            trace.append(result)
        if result["latency"] is None:
            run.lost += 1
            if run.lost >= MAX_LOST:
                raise RuntimeError(f"{run.name}: {MAX_LOST} messages without a reply, giving up")
            continue
        run.latencies_ms.append(result["latency"])
        run.mutations.append(int(result["mutations"]))
    run.wall_s = time.monotonic() - began
    run.window_ms = (run.window_ms[0], time.time() * 1000)
    meter.stop()
    run.server_cpu_s, run.browser_cpu_s = meter.server, meter.browser
    if profiler is not None:
        run.page_profile = await stop_page_profile(profiler, len(run.latencies_ms))
    run.replies_in_page = await page.evaluate("() => window.__lineupBench.count()")


async def new_page(browser: Browser, run: Run, init_script: str | None = None) -> Any:
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    if init_script is not None:
        await context.add_init_script(init_script)
    page = await context.new_page()
    page.on("pageerror", lambda error: run.page_errors.append(error.message))
    return context, page


async def run_lineup(
    browser: Browser,
    server: Server,
    args: argparse.Namespace,
    trace: list[dict[str, Any]] | None = None,
) -> Run:
    run = Run("LineUp")
    link = LINK.search(server.output())
    assert link is not None
    assert server.proc is not None
    init = hops.WEBSOCKET_LOG_JS if trace is not None else None
    context, page = await new_page(browser, run, init)
    try:
        if args.shell_js is not None:
            shell = args.shell_js.read_bytes()
            await context.route(
                "**/static/app.js",
                lambda route: route.fulfill(body=shell, content_type="text/javascript"),
            )
        await page.goto(link.group().decode())
        await page.wait_for_selector('#connection[data-state="connected"]')
        await page.wait_for_selector(".item.from-agent")  # the agent's greeting
        await install_probe(page, LINEUP_PAGE)
        await until_first_reply(page, LINEUP_PAGE, "lineup")
        if trace is not None:
            run.origin_ms = await page.evaluate("() => performance.timeOrigin")
        await measure(page, LINEUP_PAGE, run, server.proc.pid, args, trace)
    finally:
        await context.close()
    return run


async def run_chainlit(browser: Browser, server: Server, args: argparse.Namespace) -> Run:
    run = Run("Chainlit")
    assert server.proc is not None
    context, page = await new_page(browser, run)
    try:
        await page.goto(f"http://127.0.0.1:{server.port}/")
        await page.wait_for_selector(CHAINLIT_PAGE.composer)
        await install_probe(page, CHAINLIT_PAGE)
        await until_first_reply(page, CHAINLIT_PAGE, "chainlit")
        await measure(page, CHAINLIT_PAGE, run, server.proc.pid, args)
    finally:
        await context.close()
    return run


async def browser_phase(
    work: Path, venv: Path, args: argparse.Namespace
) -> tuple[list[Run], hops.Hops | None]:
    runs: list[Run] = []
    traced: hops.Hops | None = None
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            trace_file = work / "hops.jsonl" if args.trace else None
            server = lineup_server(work, "roundtrip", trace_file)
            trace: list[dict[str, Any]] | None = [] if args.trace else None
            try:
                await asyncio.to_thread(server.start)
                runs.append(await run_lineup(browser, server, args, trace))
            finally:
                await asyncio.to_thread(server.stop)
            if trace_file is not None and trace is not None and trace_file.exists():
                run = runs[-1]
                events = hops.load_events(trace_file)
                traced = hops.analyse(events, trace, run.origin_ms, run.window_ms)
            if not args.no_chainlit:
                server = chainlit_server(work, "roundtrip", venv)
                try:
                    await asyncio.to_thread(server.start)
                    runs.append(await run_chainlit(browser, server, args))
                finally:
                    await asyncio.to_thread(server.stop)
        finally:
            await browser.close()
    return runs, traced


# --- startup -------------------------------------------------------------------------------------


@dataclass
class Startup:
    name: str
    page: str
    page_ms: list[float] = field(default_factory=list)
    ready_ms: list[float] = field(default_factory=list)
    ready_what: str = ""


def startup_phase(work: Path, venv: Path, args: argparse.Namespace) -> list[Startup]:
    """Fresh data/app directory each time; LineUp and Chainlit alternate."""
    lineup = Startup("lineup demo", "/login", ready_what="login link printed")
    chainlit = Startup("Chainlit echo app", "/", ready_what='"Your app is available" logged')
    for index in range(args.startups):
        makers = [(lineup, lambda tag: lineup_server(work, tag))]
        if not args.no_chainlit:
            makers.append((chainlit, lambda tag: chainlit_server(work, tag, venv)))
        for result, make in makers:
            with running(make(f"startup-{index}")) as started:
                result.page_ms.append(started.page_s * 1000)
                if started.ready_s is not None:
                    result.ready_ms.append(started.ready_s * 1000)
    return [lineup] if args.no_chainlit else [lineup, chainlit]


# --- report --------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    chromium = subprocess.run(
        [str(CHROMIUM), "--version"], capture_output=True, text=True, timeout=30
    ).stdout.strip()
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "model": model,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "chromium": chromium,
        "lineup_commit": commit,
        "load_average_1m": os.getloadavg()[0],
    }


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def report(runs: list[Run], startups: list[Startup], info: dict[str, Any], args: Any) -> None:
    print()
    print(
        f"Browser round trip: Enter in the composer -> the echo reply in the DOM; "
        f"{args.messages} messages one at a time after {args.warmup} warm-up (ms)"
    )
    head = ("", "n", "p50", "p90", "p99", "max", "mean", "lost", "server CPU", "browser CPU")
    rows = [head]
    for run in runs:
        s = summary(run.latencies_ms)
        per = max(1, len(run.latencies_ms))
        rows.append(
            (
                run.name,
                str(len(run.latencies_ms)),
                *(fmt(s.get(k)) for k in ("p50", "p90", "p99", "max", "mean")),
                str(run.lost),
                f"{run.server_cpu_s * 1000 / per:.1f}/msg",
                f"{run.browser_cpu_s * 1000 / per:.1f}/msg",
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(head))]
    for row in rows:
        print(
            "  "
            + "  ".join(
                cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i])
                for i, cell in enumerate(row)
            )
        )
    print("  (CPU per message: server = its process; browser = Chromium's processes + Playwright)")
    for run in runs:
        if len(run.latencies_ms) >= 100:
            quarter = len(run.latencies_ms) // 4
            first = statistics.median(run.latencies_ms[:quarter])
            last = statistics.median(run.latencies_ms[-quarter:])
            print(
                f"  {run.name}: p50 of the first {quarter} {first:.1f} ms, of the last {quarter}"
                f" {last:.1f} ms; {run.replies_in_page} replies in the page at the end;"
                f" {run.wall_s:.1f} s for the measured messages"
            )
        if run.page_profile:
            print(f"  {run.name}: page main thread, self time per message (--page-profile):")
            for ms, label in run.page_profile:
                print(f"    {ms:7.2f} ms  {label}")
        for error in run.page_errors[:5]:
            print(f"  {run.name}: page error: {error}")
    by_name = {run.name: summary(run.latencies_ms) for run in runs}
    lineup, chainlit = by_name.get("LineUp", {}), by_name.get("Chainlit", {})
    print()
    if lineup and chainlit:
        ratio = lineup["p50"] / chainlit["p50"]
        print(f"  LineUp p50 / Chainlit p50 = {ratio:.2f}")
        print(f"  LineUp p99 / Chainlit p99 = {lineup['p99'] / chainlit['p99']:.2f}")
        met = "met" if lineup["p50"] <= chainlit["p50"] else "NOT met"
        print(f"  goal: LineUp p50 no slower than Chainlit's: {met}")
    if lineup:
        met = "met" if lineup["p99"] < GOAL_P99_MS else "NOT met"
        print(f"  goal: LineUp p99 under {GOAL_P99_MS:.0f} ms: {met} ({lineup['p99']:.1f} ms)")
    if startups:
        print()
        print(
            f"Startup: process start -> first HTTP 200 (polled every 5 ms),"
            f" {args.startups} runs, fresh directory each"
        )
        for result in startups:
            runs_text = ", ".join(f"{v:.0f}" for v in result.page_ms)
            median = statistics.median(result.page_ms)
            line = f"  {result.name:18} GET {result.page:7} median {median:6.0f} ms  [{runs_text}]"
            if result.ready_ms:
                line += f"; {result.ready_what}: median {statistics.median(result.ready_ms):.0f} ms"
            print(line)
        if len(startups) == 2:
            a, b = (statistics.median(s.page_ms) for s in startups)
            print(f"  lineup demo / Chainlit = {a / b:.2f}")
    print()
    print(
        f"  machine: {info['cpus']} CPUs ({info['model']}), Python {info['python']},"
        f" kernel {info['kernel']}, {info['chromium']}; LineUp {info['lineup_commit']};"
        f" Chainlit {info.get('chainlit', '-')}; load average before {info['load_average_1m']:.2f}"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--messages", type=int, default=200, help="measured messages per app")
    parser.add_argument("--warmup", type=int, default=10, help="messages sent first, not counted")
    parser.add_argument("--startups", type=int, default=3, help="startup runs per server")
    parser.add_argument("--timeout-ms", type=int, default=10_000, help="longest wait for a reply")
    parser.add_argument(
        "--chainlit-venv",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "lineup-bench"
        / "chainlit-venv",
    )
    parser.add_argument("--chainlit-spec", default="chainlit", help="what pip installs")
    parser.add_argument("--no-chainlit", action="store_true", help="LineUp only")
    parser.add_argument("--no-startup", action="store_true", help="skip the startup timings")
    parser.add_argument(
        "--trace",
        action="store_true",
        help="LineUp only, through roundtrip/traced_demo.py: print the time of each hop"
        " (the tracing slows it a little; quote untraced figures)",
    )
    parser.add_argument(
        "--page-profile",
        action="store_true",
        help="sample each page's JavaScript (V8 profiler) and print where its main thread"
        " spends the time (slows the pages a little)",
    )
    parser.add_argument(
        "--shell-js",
        type=Path,
        help="serve this file as LineUp's /static/app.js, the shell's entry module (try a shell"
        " change; only app.js is replaced: the modules it imports, such as dom.js and cards.js,"
        " are still served from src)",
    )
    parser.add_argument("--json", type=Path, help="also write every figure as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.warmup < 0 or args.startups < 1:
        parser.error("--messages and --startups must be >= 1, --warmup >= 0")
    if args.trace:
        args.no_chainlit = args.no_startup = True

    if not os.access(CHROMIUM, os.X_OK):
        print(f"no Chromium at {CHROMIUM} (set LINEUP_CHROMIUM)", file=sys.stderr)
        return 2
    info = machine()
    if not args.no_chainlit:
        info["chainlit"] = ensure_chainlit(args.chainlit_venv, args.chainlit_spec)
    work = Path(tempfile.mkdtemp(prefix="lineup-roundtrip-"))
    try:
        startups = [] if args.no_startup else startup_phase(work, args.chainlit_venv, args)
        # Normal runs take well under 0.2 s a message; five lost messages end a run.
        deadline = 300 + 2 * (args.messages + args.warmup) + 10 * args.timeout_ms / 1000
        runs, traced = asyncio.run(
            asyncio.wait_for(browser_phase(work, args.chainlit_venv, args), deadline)
        )
    except (RuntimeError, TimeoutError, subprocess.SubprocessError, PlaywrightError) as exc:
        print(f"the run could not complete: {exc}", file=sys.stderr)
        print(f"(files kept in {work})", file=sys.stderr)
        return 2
    report(runs, startups, info, args)
    if traced is not None:
        print()
        print("\n".join(hops.report(traced)))
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "options": {k: str(v) for k, v in vars(args).items()},
                    "machine": info,
                    "runs": [asdict(run) | {"summary": summary(run.latencies_ms)} for run in runs],
                    "startups": [asdict(s) for s in startups],
                    "hops": asdict(traced) if traced is not None else None,
                },
                indent=2,
            )
        )
    if args.keep:
        print(f"  files kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if any(run.lost for run in runs) else 0


if __name__ == "__main__":
    sys.exit(main())
