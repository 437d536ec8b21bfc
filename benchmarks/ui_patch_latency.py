"""Agent surface patch latency: ``conversation.patch_surface`` -> the frame's ``onState``.

Three processes, as deployed: the AppServer (``lineup server``), the user's Runtime
and Web Host (``lineup client``: ``build_host_server`` with its surface origin, and
``run_client``), and this script, which is the agent (the Python SDK) and drives
headless Chromium through Playwright. Before the client starts, the script logs its
Runtime in and installs the benchmark's own bundle (written to the work directory:
one surface, ``card``, whose ``onState`` records the wall time and ``state.seq``).
The page logs in with the client's one-time link. The agent then opens the surface
with ``open_surface`` and measures

* **one at a time**: from just before ``conversation.patch_surface(...)`` to the
  frame's ``onState`` callback seeing that ``seq``; the next patch is sent once it
  has arrived;
* **sustained rates**: patches sent at a fixed rate, paced by the event loop's clock
  and not waiting for arrivals (each is its own task, written in order). Counted
  per rate: sent, seen by the frame, coalesced (never seen, but a newer state was),
  out of order, and whether the last state arrived. Latency is per seen ``seq``;
  "it or newer" is, for every patch sent, the time until the frame saw it or a
  later one (a coalesced patch counts with the state that superseded it);

and, as the reference measured in the same run, **message -> DOM**: from just before
``conversation.send_markdown(...)`` to the message being in ``#items`` (a
``MutationObserver`` callback).

Times on both sides are wall-clock on the same machine: ``time.time()`` here,
``performance.timeOrigin + performance.now()`` in the page and in the frame. That is
sound here because all of them are one kernel's ``CLOCK_REALTIME``: ``timeOrigin``
is the wall time when the document started and ``performance.now()`` a monotonic
count since then (coarsened to 0.1 ms), so the two sides can part only if the wall
clock is stepped or slewed during the run. The script checks that at the start and
at the end (``clock``): 30 times, it reads the page's (and the frame's)
``performance`` sum and ``Date.now()`` between two ``time.time()`` reads and reports
how far, at worst, a reading fell outside that window (0 when the clocks agree to
within one round trip, ~1 ms) and the offset at the shortest round trip.

    .venv/bin/python benchmarks/ui_patch_latency.py [--patches 1000] [--messages 200]
        [--rates 30,60,120,240] [--rate-patches 300] [--warmup 20] [--json F] [--keep]

Exit status: 0 when every phase completed, 1 when a check failed (the last state of
a rate did not reach the frame, a state arrived out of order, the frame reloaded),
2 when the run could not complete. Missing the goal (60 patches/s with p99 under
30 ms) is reported, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import shutil
import socket
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from interaction_latency import PASSWORD, process, stack_commands, step, wait_until
from playwright.async_api import Frame, Page, async_playwright
from roundtrip_browser import CHROMIUM, free_port, machine, page_ok, summary

from lineup.agent import Agent, Conversation
from lineup.runtime import Runtime

APP_ID = "dev.lineup.bench-patch"
APP_VERSION = "1.0.0"
INSTANCE = "bench-card"
GOAL_RATE = 60
GOAL_MS = 30.0
ARRIVAL_TIMEOUT_S = 10.0
LINK = re.compile(r"http://127\.0\.0\.1:\d+/login/link\?code=[A-Za-z0-9_\-]+")
# As tests/support/browser.py, plus: nothing but loopback resolves (the surface origin's
# m-<random>.localhost sites are loopback to Chromium).
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
    "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1 , EXCLUDE localhost"
    " , EXCLUDE *.localhost",
]

# The benchmark's bundle: one surface for agents, bridge only (LineUpSurface).
MANIFEST = {
    "id": APP_ID,
    "version": APP_VERSION,
    "kind": "bundled",
    "name": "Patch bench",
    "app_scope": "bench-patch",
    "min_host_version": "0.1.0",
    "surfaces": [{"id": "card", "entry": "card.html", "events": ["close"]}],
}
CARD_HTML = '<section class="card"><p>State <output id="seq">-</output></p></section>\n'
CARD_CSS = "body { margin: 0; font: 15px system-ui, sans-serif; } .card { padding: 10px 14px; }\n"
# Records [seq, wall ms] for every state onState sees, first thing in the callback;
# `arm(seq)` makes `pending` resolve with [seq, at] once a state with that seq or a
# later one is seen (Playwright awaits it; nothing polls).
CARD_JS = r"""
const wall = () => performance.timeOrigin + performance.now();
const out = document.getElementById("seq");
const probe = (window.__surface = { seen: [], waiter: null, pending: null });
probe.arm = (seq) => {
  probe.pending = new Promise((resolve) => {
    probe.waiter = { seq, resolve };
  });
};
LineUpSurface.onState((state) => {
  const at = wall();
  probe.seen.push([state.seq, at]);
  out.textContent = String(state.seq);
  const waiter = probe.waiter;
  if (waiter && typeof state.seq === "number" && state.seq >= waiter.seq) {
    probe.waiter = null;
    waiter.resolve([state.seq, at]);
  }
});
LineUpSurface.resize(document.documentElement.scrollHeight);
"""

# Evaluated in the shell's main frame once it is connected (not an init script: that
# would also run in the surface frame). `arm(text)` makes `pending` resolve with the
# wall time at which an agent message containing `text` is in #items.
SHELL_PROBE_JS = r"""
(() => {
  const wall = () => performance.timeOrigin + performance.now();
  const items = document.getElementById("items");
  const probe = (window.__shell = {});
  const found = (text) => {
    // Agent messages are appended: look at the last few rows only.
    let row = items.lastElementChild;
    for (let i = 0; row && i < 5; i += 1, row = row.previousElementSibling) {
      if (row.matches("li.item.message.from-agent") && row.textContent.includes(text)) return true;
    }
    return false;
  };
  probe.arm = (text) => {
    probe.pending = new Promise((resolve) => {
      if (found(text)) return resolve(wall());
      const observer = new MutationObserver(() => {
        if (found(text)) {
          const at = wall();
          observer.disconnect();
          resolve(at);
        }
      });
      observer.observe(items, { childList: true, subtree: true, characterData: true });
    });
  };
})();
"""

CLOCK_JS = "[Date.now(), performance.timeOrigin + performance.now()]"


def write_bundle(directory: Path) -> Path:
    directory.mkdir(parents=True)
    (directory / "manifest.json").write_text(json.dumps(MANIFEST, indent=2), encoding="utf-8")
    (directory / "card.html").write_text(CARD_HTML, encoding="utf-8")
    (directory / "card.css").write_text(CARD_CSS, encoding="utf-8")
    (directory / "card.js").write_text(CARD_JS.lstrip(), encoding="utf-8")
    return directory


def port_pair() -> int:
    """A free port whose successor is free too (``lineup client`` puts the surface
    origin on the next port)."""
    for _ in range(50):
        port = free_port()
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            try:
                sock.bind(("127.0.0.1", port + 1))
            except OSError:
                continue
        return port
    raise RuntimeError("no two consecutive free ports")


async def prepare_runtime(client_dir: Path, server_url: str, bundle: Path) -> None:
    """Log the Runtime in and install + enable the bundle, before ``lineup client``
    starts on the same data directory (both are kept in its store)."""
    runtime = Runtime(client_dir)
    await runtime.open()
    try:
        await runtime.login(server_url, "bench", PASSWORD)
        await runtime.registry.install_bundle(bundle, enable=True)
    finally:
        await runtime.close()


async def bench(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    server_port, host_port = free_port(), port_pair()
    server_dir, client_dir = work / "server", work / "client"
    bundle = write_bundle(work / "bundle")
    env = {**os.environ, "XDG_STATE_HOME": str(work / "state")}
    key, server_url, server_cmd, client_cmd = stack_commands(
        work, server_dir, client_dir, server_port, host_port
    )
    client_log = work / "client.log"
    with process(server_cmd, work / "server.log", env):
        wait_until(lambda: page_ok(server_port, "/healthz"), "the AppServer")
        await prepare_runtime(client_dir, server_url, bundle)
        with process(client_cmd, client_log, env):
            wait_until(lambda: LINK.search(client_log.read_text(errors="replace")), "the link")
            match = LINK.search(client_log.read_text(errors="replace"))
            assert match is not None
            return await drive(args, server_url, key, match.group(0), host_port + 1, work)


async def drive(
    args: argparse.Namespace, server_url: str, key: str, link: str, surface_port: int, work: Path
) -> dict[str, Any]:
    agent = Agent(server_url, key, cursor_path=work / "agent-cursors.json")
    opened: asyncio.Future[Conversation] = asyncio.get_running_loop().create_future()

    @agent.on_conversation
    async def first(conversation: Conversation) -> None:
        if not opened.done():
            opened.set_result(conversation)

    agent_task = asyncio.create_task(agent.run())
    result: dict[str, Any] = {}
    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            page = await browser.new_page(viewport={"width": 1280, "height": 800})
            step("logging in with the one-time link")
            await page.goto(link)
            await page.wait_for_selector("#connection[data-state=connected]", timeout=30_000)
            await page.evaluate(SHELL_PROBE_JS)
            step("waiting for the conversation")
            conversation = await asyncio.wait_for(opened, 30)
            await asyncio.wait_for(conversation.latest_inventory(), 30)

            step(f"reference: {args.messages} messages (+{args.warmup // 2} warm-up)")
            messages = []
            for n in range(args.warmup // 2 + args.messages):
                latency = await one_message(page, conversation, n)
                if n >= args.warmup // 2:
                    messages.append(latency)
            result["message_to_dom"] = messages

            step("opening the surface")
            frame = await open_card(page, conversation, surface_port)
            result["clock_start"] = {
                "page": await calibrate(page),
                "frame": await calibrate(frame),
            }

            step(f"one at a time: {args.patches} patches (+{args.warmup} warm-up)")
            seq = 1
            one = []
            for n in range(args.warmup + args.patches):
                latency = await one_patch(frame, conversation, seq)
                seq += 1
                if n >= args.warmup:
                    one.append(latency)
            result["patch_one_at_a_time"] = one

            result["rates"] = []
            for rate in args.rates:
                step(f"sustained: {args.rate_patches} patches at {rate}/s")
                phase = await rate_phase(frame, conversation, rate, args.rate_patches, seq)
                seq += args.rate_patches
                result["rates"].append(phase)
                await asyncio.sleep(0.3)

            result["clock_end"] = {"page": await calibrate(page), "frame": await calibrate(frame)}
            result["frame_reloaded"] = frame.is_detached() or not await frame.evaluate(
                "Boolean(window.__surface) && window.__surface.seen.length > 0"
            )
            await browser.close()
    finally:
        await agent.stop()
        await agent_task
    return result


async def one_message(page: Page, conversation: Conversation, n: int) -> float:
    text = f"Bench message {n:04d}"
    await page.evaluate("(text) => window.__shell.arm(text)", text)
    sent_at = time.time() * 1000
    await conversation.send_markdown(text)
    arrived_at: float = await page.evaluate("window.__shell.pending")
    return arrived_at - sent_at


async def open_card(page: Page, conversation: Conversation, surface_port: int) -> Frame:
    """``open_surface`` with seq 0; the frame once its ``onState`` has seen it."""
    await conversation.open_surface(
        APP_ID,
        APP_VERSION,
        instance_id=INSTANCE,
        surface="card",
        state={"seq": 0, "sent_at": time.time() * 1000},
        name="Patch bench",
    )
    origin = f".localhost:{surface_port}/"
    deadline = time.monotonic() + 30
    while True:
        for frame in page.frames:
            if origin in frame.url and await frame.evaluate(
                "Boolean(window.__surface) && window.__surface.seen.length > 0"
            ):
                return frame
        if time.monotonic() > deadline:
            raise RuntimeError("the surface frame did not show its first state")
        await asyncio.sleep(0.05)


async def one_patch(frame: Frame, conversation: Conversation, seq: int) -> float:
    await frame.evaluate("(seq) => window.__surface.arm(seq)", seq)
    sent_at = time.time() * 1000
    await conversation.patch_surface(INSTANCE, {"seq": seq, "sent_at": sent_at})
    seen, arrived_at = await asyncio.wait_for(
        frame.evaluate("window.__surface.pending"), ARRIVAL_TIMEOUT_S
    )
    if seen != seq:
        raise RuntimeError(f"sent seq {seq} one at a time, the frame saw {seen}")
    return float(arrived_at) - sent_at


async def rate_phase(
    frame: Frame, conversation: Conversation, rate: int, count: int, first: int
) -> dict[str, Any]:
    """``count`` patches at ``rate``/s, not waiting for arrivals, then what the frame saw."""
    start = await frame.evaluate("window.__surface.seen.length")
    last = first + count - 1
    await frame.evaluate("(seq) => window.__surface.arm(seq)", last)
    loop = asyncio.get_running_loop()
    sent: dict[int, float] = {}
    tasks: list[asyncio.Task[int]] = []
    t0 = loop.time() + 0.05
    max_late = 0.0
    for i in range(count):
        due = t0 + i / rate
        delay = due - loop.time()
        if delay > 0:
            await asyncio.sleep(delay)
        else:
            max_late = max(max_late, -delay)
        seq = first + i
        at = time.time() * 1000
        sent[seq] = at
        patch = conversation.patch_surface(INSTANCE, {"seq": seq, "sent_at": at})
        tasks.append(asyncio.create_task(patch))
    acks = await asyncio.gather(*tasks)
    last_arrived = True
    try:
        await asyncio.wait_for(frame.evaluate("window.__surface.pending"), ARRIVAL_TIMEOUT_S)
    except TimeoutError:
        last_arrived = False
    seen: list[list[float]] = await frame.evaluate(f"window.__surface.seen.slice({start})")
    order = [int(s) for s, _ in seen]
    out_of_order = sum(1 for a, b in itertools.pairwise(order) if b <= a)
    latencies = [at - sent[int(s)] for s, at in seen if int(s) in sent]
    # Every patch sent: until the frame saw it or a newer state (coalescing included).
    superseded = []
    for seq, at in sent.items():
        later = [t for s, t in seen if int(s) >= seq]
        if later:
            superseded.append(min(later) - at)
    times = sorted(sent.values())
    return {
        "rate": rate,
        "sent": count,
        "sent_rate": (count - 1) / ((times[-1] - times[0]) / 1000) if count > 1 else 0.0,
        "max_late_ms": max_late * 1000,
        "acks_in_order": all(b > a for a, b in itertools.pairwise(acks)),
        "seen": len(order),
        "distinct_seen": len(set(order)),
        "coalesced": count - len(set(order) & set(sent)),
        "out_of_order": out_of_order,
        "last_arrived": last_arrived and bool(order) and order[-1] == last,
        "latency": latencies,
        "it_or_newer": superseded,
    }


async def calibrate(target: Page | Frame, rounds: int = 30) -> dict[str, float]:
    """Read the page's clocks between two ``time.time()`` reads, ``rounds`` times.
    A sound clock puts every reading inside its window; ``outside_ms`` is how far the
    worst one fell outside (0 when all were inside)."""
    best: tuple[float, float] | None = None
    outside = 0.0
    date_outside = 0.0
    for _ in range(rounds):
        before = time.time() * 1000
        date_now, perf = await target.evaluate(CLOCK_JS)
        after = time.time() * 1000
        outside = max(outside, before - perf, perf - after)
        # Date.now() is whole ms, truncated: allow it 1 ms below the window.
        date_outside = max(date_outside, before - 1 - date_now, date_now - after)
        offset = perf - (before + after) / 2
        if best is None or after - before < best[0]:
            best = (after - before, offset)
    assert best is not None
    return {
        "min_round_trip_ms": best[0],
        "offset_at_min_ms": best[1],
        "perf_outside_ms": max(outside, 0.0),
        "date_outside_ms": max(date_outside, 0.0),
    }


def report(result: dict[str, Any], info: dict[str, Any]) -> tuple[bool, bool]:
    """Print the figures; return (checks passed, goal met)."""
    one = summary(result["patch_one_at_a_time"])
    ref = summary(result["message_to_dom"])
    print(f"\nAgent surface patch latency (ms), {one['n']} patches one at a time")
    print(f"  {'':46} {'p50':>6} {'p90':>6} {'p99':>6} {'max':>6} {'mean':>6}")
    for title, s in (
        ("patch_surface -> onState, one at a time", one),
        (f"reference: send_markdown -> #items ({ref['n']})", ref),
    ):
        print(
            f"  {title:46} {s['p50']:6.1f} {s['p90']:6.1f} {s['p99']:6.1f}"
            f" {s['max']:6.1f} {s['mean']:6.1f}"
        )
    print(
        f"  patch/message: p50 {one['p50'] / ref['p50']:.2f}x, p99 {one['p99'] / ref['p99']:.2f}x"
    )

    print("\n  sustained (not waiting for arrivals), latency of each state the frame saw:")
    print(
        f"  {'rate/s':>7} {'sent/s':>7} {'late':>5} {'sent':>5} {'seen':>5} {'coal':>5}"
        f" {'order':>5} {'last':>5} {'p50':>6} {'p99':>6} {'max':>6} {'p99*':>6}"
    )
    checks = not result["frame_reloaded"]
    goal = False
    for phase in result["rates"]:
        s = summary(phase["latency"]) or {"p50": float("nan"), "p99": float("nan"), "max": 0.0}
        newer = summary(phase["it_or_newer"]) or {"p99": float("nan")}
        ok = phase["last_arrived"] and phase["out_of_order"] == 0 and phase["acks_in_order"]
        checks = checks and ok
        if phase["rate"] == GOAL_RATE:
            goal = ok and s["p99"] < GOAL_MS and newer["p99"] < GOAL_MS
        print(
            f"  {phase['rate']:7d} {phase['sent_rate']:7.1f} {phase['max_late_ms']:5.1f}"
            f" {phase['sent']:5d} {phase['distinct_seen']:5d} {phase['coalesced']:5d}"
            f" {phase['out_of_order']:5d} {'yes' if phase['last_arrived'] else 'NO':>5}"
            f" {s['p50']:6.1f} {s['p99']:6.1f} {s['max']:6.1f} {newer['p99']:6.1f}"
        )
    print(
        "  (late: most the sender fell behind its schedule, ms; coal: never seen but"
        " superseded;\n   order: seen out of order; last: the final state arrived;"
        " p99*: until the frame saw it\n   or a newer state, over every patch sent)"
    )
    for when in ("clock_start", "clock_end"):
        clock = result[when]
        parts = [
            f"{name} offset {c['offset_at_min_ms']:+.2f} ms"
            f" (round trip {c['min_round_trip_ms']:.2f}), outside the window by at most"
            f" {c['perf_outside_ms']:.2f} (Date.now() {c['date_outside_ms']:.2f})"
            for name, c in clock.items()
        ]
        print(f"  clock at the {when.removeprefix('clock_')}: " + "; ".join(parts))
    if GOAL_RATE not in [p["rate"] for p in result["rates"]]:
        print(f"\n  goal: {GOAL_RATE} patches/s not measured (--rates)")
    else:
        verdict = "met" if goal else "NOT met"
        print(f"\n  goal: {GOAL_RATE} patches/s with p99 under {GOAL_MS:.0f} ms: {verdict}")
    if result["frame_reloaded"]:
        print("  CHECK FAILED: the surface frame reloaded or went away during the run")
    print(
        f"\n  machine: {info['cpus']} CPUs ({info['model']}), Python {info['python']},"
        f" {info['chromium']}; LineUp {info['lineup_commit']};"
        f" load average before {info['load_average_1m']:.2f},"
        f" after {info['load_average_1m_after']:.2f}"
    )
    return checks, goal


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patches", type=int, default=1000, help="one-at-a-time patches")
    parser.add_argument("--messages", type=int, default=200, help="reference messages")
    parser.add_argument(
        "--rates",
        type=lambda text: [int(part) for part in text.split(",")],
        default=[30, 60, 120, 240],
        help="sustained rates, patches/s, comma-separated",
    )
    parser.add_argument("--rate-patches", type=int, default=300, help="patches per rate")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    info = machine()
    work = Path(tempfile.mkdtemp(prefix="lineup-ui-patch-bench-"))
    started = time.monotonic()
    try:
        result = asyncio.run(bench(args, work))
    except Exception as exc:  # report, with the logs, and fail
        print(f"the benchmark could not complete: {exc!r}; logs in {work}", file=sys.stderr)
        return 2
    info["load_average_1m_after"] = os.getloadavg()[0]
    checks, _ = report(result, info)
    print(f"  whole run: {time.monotonic() - started:.0f} s")
    if args.json:
        args.json.write_text(json.dumps({"info": info, **result}, indent=2), encoding="utf-8")
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if checks else 1


if __name__ == "__main__":
    sys.exit(main())
