"""Desktop window: start to a loaded shell, memory, and a clean stop (issue 12).

``lineup demo --desktop`` (Qt's offscreen platform, no GPU) against the same demo in a
browser in the same run: ``lineup demo`` plus Debian's Chromium (headless, the flags
the tests use) opening the demo's one-time login link. For each, N times:

- start: process start to the shell loaded (the desktop's "desktop window loaded"
  log line; the browser's ``load`` event after the link's redirect);
- memory: resident set size of the whole process tree once loaded (the desktop
  process with QtWebEngine's helpers; the demo plus Chromium's processes);
- stop: SIGTERM to exit (the desktop drains the outbox and closes the window).

    .venv/bin/python benchmarks/desktop_window.py [--runs 5]

Everything runs on 127.0.0.1 in temporary directories. Figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from roundtrip.servers import descendants  # noqa: E402  (benchmarks/ is the script's path)
from tests.support.browser import CHROMIUM, CHROMIUM_ARGS  # noqa: E402

from lineup.desktop.launch import free_port  # noqa: E402

LINEUP = [sys.executable, "-m", "lineup"]
ENV = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "QTWEBENGINE_CHROMIUM_FLAGS": "--disable-gpu"}


def tree_rss_mib(root: int) -> float:
    """Resident memory of ``root`` and every descendant, from /proc."""
    total = 0
    for pid in {root} | descendants(root):
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        found = re.search(r"VmRSS:\s+(\d+) kB", status)
        total += int(found.group(1)) if found else 0
    return total / 1024


def wait_line(process: subprocess.Popen[str], text: str) -> str:
    assert process.stdout is not None
    for line in process.stdout:
        if text in line:
            return line
    raise RuntimeError(f"exited before {text!r}")


def demo_args(data_dir: str) -> list[str]:
    port, web = free_port(), free_port()
    return ["demo", "--data-dir", data_dir, "--port", str(port), "--web-port", str(web)]


def stop(process: subprocess.Popen[str]) -> float:
    started = time.perf_counter()
    process.send_signal(signal.SIGTERM)
    code = process.wait(60)
    seconds = time.perf_counter() - started
    if process.stdout is not None:
        process.stdout.close()
    if code != 0:
        raise RuntimeError(f"exit status {code}")
    return seconds


def desktop_once() -> tuple[float, float, float]:
    with tempfile.TemporaryDirectory(prefix="lineup-bench-desktop-") as data_dir:
        started = time.perf_counter()
        process = subprocess.Popen(
            [*LINEUP, *demo_args(data_dir), "--desktop"],
            env=ENV,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        wait_line(process, "desktop window loaded ok=True")
        loaded = time.perf_counter() - started
        memory = tree_rss_mib(process.pid)
        return loaded, memory, stop(process)


def browser_once() -> tuple[float, float, float]:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory(prefix="lineup-bench-browser-") as data_dir:
        started = time.perf_counter()
        demo = subprocess.Popen(
            [*LINEUP, *demo_args(data_dir)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        link = re.search(r"http://\S+/login/link\?code=\S+", wait_line(demo, "/login/link"))
        assert link is not None
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=list(CHROMIUM_ARGS), headless=True
            )
            page = browser.new_page()
            page.goto(link.group(0), wait_until="load")
            loaded = time.perf_counter() - started
            chromium = [
                int(p.name)
                for p in Path("/proc").iterdir()
                if p.name.isdigit() and _is_chromium(int(p.name))
            ]
            memory = tree_rss_mib(demo.pid) + sum(tree_rss_mib(pid) for pid in _roots(chromium))
            browser.close()
        return loaded, memory, stop(demo)


def _is_chromium(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/exe").resolve().name in ("chromium", "chrome")
    except OSError:
        return False


def _roots(pids: list[int]) -> list[int]:
    """The Chromium processes whose parent is not a Chromium process."""
    own = set(pids)
    roots = []
    for pid in pids:
        try:
            ppid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        if ppid not in own:
            roots.append(pid)
    return roots


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    rows = {"desktop window": desktop_once, "browser (reference)": browser_once}
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in rows}
    for _ in range(args.runs):  # interleaved, so machine noise hits both alike
        for name, once in rows.items():
            results[name].append(once())
    header = f"{'':22} {'start→loaded s':>15} {'memory MiB':>11} {'stop s':>7}"
    print(f"{header}   (median of {args.runs})")
    medians = {}
    for name, runs in results.items():
        medians[name] = [statistics.median(column) for column in zip(*runs, strict=True)]
        loaded, memory, stopped = medians[name]
        print(f"{name:22} {loaded:15.2f} {memory:11.0f} {stopped:7.2f}")
    desktop, browser = medians["desktop window"], medians["browser (reference)"]
    print(
        f"desktop / browser: start {desktop[0] / browser[0]:.2f}x,"
        f" memory {desktop[1] / browser[1]:.2f}x, stop {desktop[2] / browser[2]:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
