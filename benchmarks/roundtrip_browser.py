"""Browser round trip: Enter in the composer to the agent's echo painted in the timeline.

LineUp (``lineup demo``: browser -> Web Host/Runtime -> AppServer -> demo agent and back,
every hop durable) against a minimal Chainlit echo app, in one run, in headless Chromium.
Each message waits for its reply; the time is taken inside the page (see
``roundtrip/probe.js``): Enter, the reply's WebSocket frame, the reply in the DOM, the
first frame that lays it out as visible text, and that frame painted. Then LineUp again
with long conversations (``--lengths``): the demo agent's messages are posted through
the AppServer while the page is open, then the same measured messages at the end, with
the renderer's CPU, the page's JS heap and its long tasks. Also times each server from
process start to its first page.

    .venv/bin/python benchmarks/roundtrip_browser.py [--messages 200] [--json FILE]
    .venv/bin/python benchmarks/roundtrip_browser.py --lengths 100,1000 --scroll
    .venv/bin/python benchmarks/roundtrip_browser.py --trace     # LineUp's hops
    .venv/bin/python benchmarks/roundtrip_browser.py --page-profile

Chainlit is installed once into its own virtual environment (``--chainlit-venv``, by
default ``~/.cache/lineup-bench/chainlit-venv``) and reused. Everything else lives in a
temporary directory and on 127.0.0.1; every server is stopped at the end. See
docs/benchmarks.md, "Browser round trip (issues 3 and 20)".

Exit status: 0 when every message got its reply, 1 when some did not (or a long
conversation could not be built or measured), 2 when the run could not complete.
Missing a goal is reported, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from playwright.async_api import Browser, BrowserContext, Page, async_playwright
from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeout
from roundtrip import backlog, hops, report
from roundtrip.pagestats import (
    PageStats,
    main_thread_ms,
    start_page_profile,
    stop_page_profile,
    take_long_tasks,
)
from roundtrip.samples import Length, Run, Sample, Scroll, summary
from roundtrip.servers import (
    LINK,
    CpuMeter,
    Server,
    chainlit_server,
    ensure_chainlit,
    lineup_server,
    running,
)

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent / "roundtrip"
PROBE_JS = (HERE / "probe.js").read_text(encoding="utf-8")
PAGE_INIT_JS = (HERE / "page_init.js").read_text(encoding="utf-8")
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
MAX_LOST = 5
BACKLOG_TEXT = "Backlog {index:05d} {token}: the quick brown fox jumps over the lazy dog."
"""The agent's messages that make a conversation long (one short line each)."""


# --- the page -------------------------------------------------------------------------------


@dataclass(frozen=True)
class App:
    """How to drive one chat page."""

    composer: str
    probe: dict[str, Any] = field(default_factory=dict)
    """probe.js's config: where the newest replies are."""


LINEUP_PAGE = App(
    composer="#input",
    probe={"list": "items", "row": "li.item.from-agent.message", "text": ".body", "lookBack": 6},
)
CHAINLIT_PAGE = App(
    composer="#chat-input",
    probe={
        "replyClass": "step",
        "replyFilter": '[data-step-type="assistant_message"]',
        "lookBack": 3,
    },
)

# LineUp's timeline (the shell keeps these through its rewrite): #items > li.item rows,
# the scroll container #timeline, "Show earlier messages" #older.
ROWS_JS = "() => document.querySelectorAll('#items > li.item').length"
NEWEST_SHOWS_JS = """text => {
  const row = document.getElementById('items')?.lastElementChild;
  return !!row && row.textContent.includes(text);
}"""
NEWEST_TEXT_JS = """() => {
  const rows = document.querySelectorAll('#items > li.item.message .body');
  return rows.length ? rows[rows.length - 1].textContent.trim() : '';
}"""
NEWEST_IN_VIEW_JS = """() => {
  const row = document.getElementById('items')?.lastElementChild;
  if (!row) return false;
  const box = row.getBoundingClientRect();
  return box.bottom > 0 && box.top < window.innerHeight && box.bottom <= window.innerHeight + 1;
}"""
TO_NEWEST_JS = """async () => {
  // As a person would: scroll until the newest row is in view (rows that come into view
  // get their real height, so one scroll may not be enough).
  for (let i = 0; i < 30; i += 1) {
    document.getElementById('items').lastElementChild.scrollIntoView({ block: 'end' });
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    const box = document.getElementById('items').lastElementChild.getBoundingClientRect();
    if (box.bottom <= window.innerHeight + 1 && box.bottom > 0) return i + 1;
  }
  return 0;
}"""
OLDER_HIDDEN_JS = "() => { const b = document.getElementById('older'); return !b || b.hidden; }"
FIRST_KEY_JS = "() => document.getElementById('items').firstElementChild?.dataset.key ?? null"
# Earlier rows came: the first row is another one (a shell that holds a window keeps
# its row count), or there is nothing earlier.
GREW_JS = """key =>
  (document.getElementById('items').firstElementChild?.dataset.key ?? null) !== key
  || !document.getElementById('older') || document.getElementById('older').hidden"""
TO_TOP_JS = """() => {
  const timeline = document.getElementById('timeline');
  if (timeline) timeline.scrollTop = 0;
  else document.getElementById('older')?.scrollIntoView();
}"""


async def install_probe(page: Page, app: App) -> None:
    await page.evaluate(PROBE_JS, app.probe)


async def round_trip(
    page: Page, app: App, text: str, timeout_ms: int
) -> tuple[dict[str, Any], Sample | None]:
    """Type ``text``, press Enter, wait for "You said: text" to be painted. The probe's
    raw result (page ms) and the sample (ms after Enter), None when no reply came in time."""
    await page.evaluate("e => window.__lineupBench.arm(e)", f"You said: {text}")
    await page.fill(app.composer, text)
    await page.keyboard.press("Enter")
    result: dict[str, Any] = await page.evaluate("ms => window.__lineupBench.wait(ms)", timeout_ms)
    result["text"] = text
    return result, Sample.of(result)


async def until_first_reply(page: Page, app: App, tag: str, attempts: int = 3) -> None:
    """The page may show its composer before its socket is up: retry the first message."""
    for attempt in range(attempts):
        _, sample = await round_trip(page, app, f"ready {tag} {attempt}", 15_000)
        if sample is not None:
            return
    raise RuntimeError(f"no reply to the first message after {attempts} attempts")


async def measure(
    page: Page,
    app: App,
    run: Run,
    server_pid: int,
    args: argparse.Namespace,
    trace: list[dict[str, Any]] | None = None,
) -> None:
    """Warm up, then the measured messages with the CPU, the main thread's task time and
    the long tasks over them; with ``trace``, also each message's frames."""
    token = secrets.token_hex(3)
    for index in range(args.warmup):
        await round_trip(page, app, f"warm {index:03d} {token}", args.timeout_ms)
    if trace is not None:
        await page.evaluate("() => window.__lineupWsLog.splice(0)")
    stats = await PageStats.attach(page)
    profiler = await start_page_profile(page) if args.page_profile else None
    await take_long_tasks(page)  # not the warm-up's
    meter = CpuMeter(server_pid)
    before = await stats.read()
    meter.start()
    run.window_ms = (time.time() * 1000, 0.0)
    began = time.monotonic()
    for index in range(args.messages):
        result, sample = await round_trip(page, app, f"ping {index:04d} {token}", args.timeout_ms)
        if trace is not None:
            result["log"] = await page.evaluate("() => window.__lineupWsLog.splice(0)")
            trace.append(result)
        if sample is None:
            run.lost += 1
            if run.lost >= MAX_LOST:
                raise RuntimeError(f"{run.name}: {MAX_LOST} messages without a reply, giving up")
            continue
        run.samples.append(sample)
    run.wall_s = time.monotonic() - began
    run.window_ms = (run.window_ms[0], time.time() * 1000)
    meter.stop()
    run.main_thread_ms = main_thread_ms(before, await stats.read())
    await stats.detach()
    run.long_tasks = await take_long_tasks(page)
    run.server_cpu_s, run.browser_cpu_s = meter.server, meter.browser
    run.renderer_cpu_s = meter.renderer
    if profiler is not None:
        run.page_profile = await stop_page_profile(profiler, len(run.samples))
    run.replies_in_page = await page.evaluate("() => window.__lineupBench.count()")


async def new_page(
    browser: Browser, run: Run, init_script: str | None = None
) -> tuple[BrowserContext, Page]:
    """A fresh context (1280x800) whose pages get page_init.js before their own scripts."""
    context = await browser.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(15_000)
    if init_script is not None:
        await context.add_init_script(init_script)
    await context.add_init_script(PAGE_INIT_JS)
    page = await context.new_page()
    page.on("pageerror", lambda error: run.page_errors.append(error.message))
    return context, page


async def open_lineup(
    browser: Browser, server: Server, run: Run, args: argparse.Namespace, init: str | None = None
) -> tuple[BrowserContext, Page]:
    """Log in with the demo's one-time link; connected, greeted, one echo answered."""
    link = LINK.search(server.output())
    assert link is not None
    context, page = await new_page(browser, run, init)
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
    return context, page


async def run_lineup(
    browser: Browser,
    server: Server,
    args: argparse.Namespace,
    trace: list[dict[str, Any]] | None = None,
) -> Run:
    run = Run("LineUp")
    assert server.proc is not None
    init = hops.WEBSOCKET_LOG_JS if trace is not None else None
    context, page = await open_lineup(browser, server, run, args, init)
    try:
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


# --- long conversations ----------------------------------------------------------------------


async def newest_shows(page: Page, text: str, timeout_s: float) -> bool:
    """Whether the timeline's newest row shows ``text`` within ``timeout_s`` (polled every
    100 ms; the check reads one row)."""
    try:
        await page.wait_for_function(
            NEWEST_SHOWS_JS, arg=text, polling=100, timeout=max(1.0, timeout_s * 1000)
        )
    except PlaywrightTimeout:
        return False
    return True


async def build(page: Page, access: backlog.AgentAccess, length: Length, args: Any) -> None:
    """Post the agent's messages until the conversation holds ``length.rows`` rows (the
    page's rows when it began, plus those posted; a shell that lets old rows go holds
    fewer, reported as "in page"): batches of
    ``--build-batch``, ``--build-window`` requests in flight, each batch's last one
    alone (so it is the newest row), then wait until the page shows it."""
    token = secrets.token_hex(3)
    began = time.monotonic()
    deadline = began + args.build_timeout_s
    await take_long_tasks(page)  # not the opening's
    have = int(await page.evaluate(ROWS_JS))
    todo = max(0, length.rows - have)
    poster = backlog.Poster(access, args.build_window)
    try:
        done = 0
        while done < todo:
            count = min(args.build_batch, todo - done)
            batch = [
                (f"bench.{token}.{i:05d}", BACKLOG_TEXT.format(index=i, token=token))
                for i in range(done, done + count)
            ]
            await poster.post(batch[:-1])
            await poster.post(batch[-1:])
            posted_s = time.monotonic() - began
            done += count
            marker = batch[-1][1].split(":", 1)[0]
            if not await newest_shows(page, marker, deadline - time.monotonic()):
                length.note = (
                    f"the page had not shown the {have + done:,}th row"
                    f" {args.build_timeout_s:.0f} s after the build began"
                )
                break
            length.build_steps.append((have + done, posted_s, time.monotonic() - began))
        else:
            length.built = True
    finally:
        await poster.close()
    length.posted = poster.posted
    length.build_s = time.monotonic() - began
    length.rows_built = int(await page.evaluate(ROWS_JS))
    length.build_long_tasks = await take_long_tasks(page)
    length.followed = bool(await page.evaluate(NEWEST_IN_VIEW_JS))
    if length.built and not length.followed and not await page.evaluate(TO_NEWEST_JS):
        length.note = "the newest row could not be scrolled into view"
        length.built = False


async def grew(page: Page, before: str | None, timeout_s: float) -> bool:
    try:
        await page.wait_for_function(GREW_JS, arg=before, polling=20, timeout=timeout_s * 1000)
    except PlaywrightTimeout:
        return False
    return True


async def scroll_through(
    page: Page, server: Server, stats: PageStats, args: argparse.Namespace
) -> Scroll:
    """Open the timeline anew (it opens at the newest rows), then scroll to the top again
    and again, each time waiting for the earlier rows, until ``#older`` is hidden or
    ``--scroll-pages`` pages came."""
    result = Scroll()
    newest = await page.evaluate(NEWEST_TEXT_JS)
    await take_long_tasks(page)
    began = time.monotonic()
    await page.goto(f"http://127.0.0.1:{server.port}/")
    await page.wait_for_selector('#connection[data-state="connected"]')
    if not await newest_shows(page, newest, 60):
        result.note = "the reopened page did not show the newest row within 60 s"
        return result
    result.open_ms = (time.monotonic() - began) * 1000
    result.open_long_tasks = await take_long_tasks(page)
    result.rows_open = int(await page.evaluate(ROWS_JS))
    began = time.monotonic()
    for _ in range(args.scroll_pages):
        if await page.evaluate(OLDER_HIDDEN_JS):
            break
        before = await page.evaluate(FIRST_KEY_JS)
        asked = time.monotonic()
        await page.evaluate(TO_TOP_JS)
        if not await grew(page, before, 5):
            # Already at the top (a shell that keeps scrollTop at 0): ask with the button.
            await page.evaluate("() => document.getElementById('older')?.click()")
            if not await grew(page, before, 30):
                result.note = "no earlier rows came after scrolling to the top and clicking it"
                break
        result.pages += 1
        result.page_ms.append((time.monotonic() - asked) * 1000)
    result.wall_s = time.monotonic() - began
    result.complete = bool(await page.evaluate(OLDER_HIDDEN_JS))
    result.rows_end = int(await page.evaluate(ROWS_JS))
    result.long_tasks = await take_long_tasks(page)
    result.heap_end = await stats.heap_after_gc()
    return result


async def run_length(
    browser: Browser, work: Path, rows: int, args: argparse.Namespace, scroll: bool
) -> Length:
    """A fresh ``lineup demo`` and page; build ``rows`` rows; measure; maybe scroll."""
    length = Length(rows)
    server = lineup_server(work, f"length-{rows}")
    await asyncio.to_thread(server.start)
    try:
        assert server.proc is not None
        assert server.data_dir is not None
        assert server.api_port is not None
        run = Run(f"LineUp at {rows:,} rows")
        context, page = await open_lineup(browser, server, run, args)
        try:
            access = await backlog.demo_agent_access(server.data_dir, server.api_port)
            await build(page, access, length, args)
            if not length.built:
                return length
            stats = await PageStats.attach(page)
            length.heap_before = await stats.heap_after_gc()
            try:
                await measure(page, LINEUP_PAGE, run, server.proc.pid, args)
            except RuntimeError as exc:
                length.note = str(exc)
            length.run = run
            length.rows_after = int(await page.evaluate(ROWS_JS))
            length.heap_after = await stats.heap_after_gc()
            if scroll and not length.note:
                length.scroll = await scroll_through(page, server, stats, args)
            await stats.detach()
        finally:
            await context.close()
    finally:
        await asyncio.to_thread(server.stop)
    return length


# --- phases -------------------------------------------------------------------------------------


@dataclass
class Results:
    runs: list[Run] = field(default_factory=list)
    traced: hops.Hops | None = None
    lengths: list[Length] = field(default_factory=list)


async def browser_phase(work: Path, venv: Path, args: argparse.Namespace) -> Results:
    results = Results()
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            if not args.no_roundtrip:
                await compare(browser, work, venv, args, results)
            for rows in args.lengths:
                scroll = args.scroll and rows == max(args.lengths)
                print(f"  building and measuring {rows:,} rows ...", flush=True)
                results.lengths.append(await run_length(browser, work, rows, args, scroll))
        finally:
            await browser.close()
    return results


async def compare(
    browser: Browser, work: Path, venv: Path, args: argparse.Namespace, results: Results
) -> None:
    """LineUp, then Chainlit, each from a fresh server and page."""
    trace_file = work / "hops.jsonl" if args.trace else None
    server = lineup_server(work, "roundtrip", trace_file)
    trace: list[dict[str, Any]] | None = [] if args.trace else None
    try:
        await asyncio.to_thread(server.start)
        results.runs.append(await run_lineup(browser, server, args, trace))
    finally:
        await asyncio.to_thread(server.stop)
    if trace_file is not None and trace is not None and trace_file.exists():
        run = results.runs[-1]
        events = hops.load_events(trace_file)
        results.traced = hops.analyse(events, trace, run.origin_ms, run.window_ms)
    if not args.no_chainlit:
        server = chainlit_server(work, "roundtrip", venv)
        try:
            await asyncio.to_thread(server.start)
            results.runs.append(await run_chainlit(browser, server, args))
        finally:
            await asyncio.to_thread(server.stop)


def startup_phase(work: Path, venv: Path, args: argparse.Namespace) -> list[report.Startup]:
    """Fresh data/app directory each time; LineUp and Chainlit alternate."""
    lineup = report.Startup("lineup demo", "/login", ready_what="login link printed")
    chainlit = report.Startup("Chainlit echo app", "/", ready_what='"Your app is available" logged')
    for index in range(args.startups):
        makers: list[tuple[report.Startup, Callable[[str], Server]]] = [
            (lineup, lambda tag: lineup_server(work, tag))
        ]
        if not args.no_chainlit:
            makers.append((chainlit, lambda tag: chainlit_server(work, tag, venv)))
        for result, make in makers:
            with running(make(f"startup-{index}")) as started:
                result.page_ms.append(started.page_s * 1000)
                if started.ready_s is not None:
                    result.ready_ms.append(started.ready_s * 1000)
    return [lineup] if args.no_chainlit else [lineup, chainlit]


def machine() -> dict[str, Any]:
    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break

    def output(*command: str) -> str:
        return subprocess.run(
            list(command), capture_output=True, text=True, timeout=30
        ).stdout.strip()

    return {
        "cpus": os.cpu_count(),
        "model": model,
        "python": platform.python_version(),
        "kernel": platform.release(),
        "chromium": output(str(CHROMIUM), "--version"),
        "lineup_commit": output("git", "-C", str(ROOT), "describe", "--always", "--dirty"),
        "src_commit": output("git", "-C", str(ROOT), "log", "-1", "--format=%h", "--", "src"),
        "src_dirty": bool(output("git", "-C", str(ROOT), "status", "--porcelain", "--", "src")),
        "load_average_1m": os.getloadavg()[0],
    }


# --- command line ----------------------------------------------------------------------------


def lengths_arg(text: str) -> list[int]:
    try:
        values = [int(part.replace("_", "")) for part in text.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a list of row counts: {text!r}") from exc
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError("row counts must be >= 1")
    return values


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    add = parser.add_argument
    add("--messages", type=int, default=200, help="measured messages per app and length")
    add("--warmup", type=int, default=10, help="messages sent first, not counted")
    add("--startups", type=int, default=3, help="startup runs per server")
    add("--timeout-ms", type=int, default=10_000, help="longest wait for a painted reply")
    add(
        "--chainlit-venv",
        type=Path,
        default=Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "lineup-bench"
        / "chainlit-venv",
    )
    add("--chainlit-spec", default="chainlit", help="what pip installs")
    add("--no-chainlit", action="store_true", help="LineUp only")
    add("--no-startup", action="store_true", help="skip the startup timings")
    add(
        "--no-roundtrip",
        action="store_true",
        help="skip LineUp against Chainlit (only the startup and --lengths phases)",
    )
    add(
        "--lengths",
        type=lengths_arg,
        default=[100, 1_000, 10_000],
        help="conversation lengths (rows) to build and measure LineUp at (default 100,1000,10000)",
    )
    add("--no-lengths", action="store_true", help="skip the long conversations")
    add("--build-batch", type=int, default=500, help="agent messages posted per batch")
    add("--build-window", type=int, default=100, help="agent messages in flight while building")
    add(
        "--build-timeout-s",
        type=float,
        default=600.0,
        help="give up building one length after this long (reported, not measured)",
    )
    add(
        "--scroll",
        action="store_true",
        help="at the longest length, reopen the page and scroll to the top page after page",
    )
    add("--scroll-pages", type=int, default=300, help="most pages of earlier rows to load")
    add(
        "--trace",
        action="store_true",
        help="LineUp only, through roundtrip/traced_demo.py: print the time of each hop"
        " (the tracing slows it a little; quote untraced figures)",
    )
    add(
        "--page-profile",
        action="store_true",
        help="sample each page's JavaScript (V8 profiler) and print where its main thread"
        " spends the time (slows the pages a little)",
    )
    add(
        "--shell-js",
        type=Path,
        help="serve this file as LineUp's /static/app.js, the shell's entry module (try a shell"
        " change; only app.js is replaced: the modules it imports, such as dom.js and cards.js,"
        " are still served from src)",
    )
    add("--json", type=Path, help="also write every figure as JSON")
    add("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.messages < 1 or args.warmup < 0 or args.startups < 1:
        parser.error("--messages and --startups must be >= 1, --warmup >= 0")
    if args.build_batch < 1 or args.build_window < 1 or args.scroll_pages < 1:
        parser.error("--build-batch, --build-window and --scroll-pages must be >= 1")
    if args.trace:
        args.no_chainlit = args.no_startup = args.no_lengths = True
        args.no_roundtrip = False
    if args.no_lengths:
        args.lengths = []
    return args


def deadline_s(args: argparse.Namespace) -> float:
    """Normal runs take well under 0.2 s a message; five lost messages end a run."""
    per_run = 2.0 * (args.messages + args.warmup) + 10 * args.timeout_ms / 1000
    runs = 0 if args.no_roundtrip else 2
    total: float = 300 + per_run * (runs + len(args.lengths))
    total += len(args.lengths) * (float(args.build_timeout_s) + 120)
    scroll = args.scroll_pages * 35.0 + 120 if args.scroll and args.lengths else 0.0
    return total + scroll


def write_json(path: Path, args: argparse.Namespace, info: dict[str, Any], **parts: Any) -> None:
    runs: list[Run] = parts["runs"]
    lengths: list[Length] = parts["lengths"]
    path.write_text(
        json.dumps(
            {
                "options": {k: str(v) for k, v in vars(args).items()},
                "machine": info,
                "runs": [asdict(run) | {"summary": summary(run.paint_ms)} for run in runs],
                "lengths": [
                    asdict(length) | {"summary": summary(length.run.paint_ms) if length.run else {}}
                    for length in lengths
                ],
                "startups": [asdict(s) for s in parts["startups"]],
                "hops": asdict(parts["traced"]) if parts["traced"] is not None else None,
                "goals": parts["goals"],
            },
            indent=2,
        )
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if not os.access(CHROMIUM, os.X_OK):
        print(f"no Chromium at {CHROMIUM} (set LINEUP_CHROMIUM)", file=sys.stderr)
        return 2
    info = machine()
    if not args.no_chainlit and not args.no_roundtrip:
        info["chainlit"] = ensure_chainlit(args.chainlit_venv, args.chainlit_spec)
    work = Path(tempfile.mkdtemp(prefix="lineup-roundtrip-"))
    try:
        startups = [] if args.no_startup else startup_phase(work, args.chainlit_venv, args)
        results = asyncio.run(
            asyncio.wait_for(browser_phase(work, args.chainlit_venv, args), deadline_s(args))
        )
    except (RuntimeError, TimeoutError, subprocess.SubprocessError, PlaywrightError) as exc:
        print(f"the run could not complete: {exc}", file=sys.stderr)
        print(f"(files kept in {work})", file=sys.stderr)
        return 2
    info["load_average_1m_after"] = os.getloadavg()[0]
    goals = report.goals(results.runs, results.lengths)
    print("\n".join(report.lines(results.runs, results.lengths, startups, goals, info, args)))
    if results.traced is not None:
        print()
        print("\n".join(hops.report(results.traced)))
    if args.json:
        write_json(
            args.json,
            args,
            info,
            runs=results.runs,
            lengths=results.lengths,
            startups=startups,
            traced=results.traced,
            goals=goals,
        )
    if args.keep:
        print(f"  files kept in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    incomplete = any(not length.built or length.note for length in results.lengths)
    return 1 if incomplete or any(run.lost for run in results.runs) else 0


if __name__ == "__main__":
    sys.exit(main())
