"""Standard interaction latency: agent ``ask_choice`` -> card in Chromium -> click -> answer.

Three processes, as deployed: the AppServer (``lineup server``), the user's Runtime
and Web Host (``lineup client``), and this script, which is the agent (the Python
SDK) and drives headless Chromium through Playwright. For each run it measures

* **ask -> card**: from just before ``conversation.ask_choice(...)`` is called to the
  moment the card is in the page's DOM (a ``MutationObserver`` callback);
* **click -> answer**: from the click on Submit (a capture-phase listener in the page)
  to the agent's ``await`` returning the chosen option id;

and, as the reference measured in the same run, **message -> DOM**: from just before
``conversation.send_markdown(...)`` to the message being in the DOM.

Times on both sides are wall-clock (``time.time()`` here, ``performance.timeOrigin +
performance.now()`` in the page) on the same machine.

    .venv/bin/python benchmarks/interaction_latency.py [--runs 100] [--warmup 10] [--json F]

Exit status: 0 when every run completed, 2 when the run could not complete. Missing
the goal (both p99 under 30 ms) is reported, not an error.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Iterator, Sequence
from pathlib import Path
from typing import Any, TypeVar

from playwright.async_api import Page, async_playwright
from roundtrip_browser import CHROMIUM, CHROMIUM_ARGS, free_port, machine, page_ok, summary

from lineup.agent import Agent, Conversation

LINEUP = Path(sys.executable).parent / "lineup"
PASSWORD = "bench-password-123"
GOAL_MS = 30.0

# Installed into the page: resolves with the wall time at which a row containing
# `text` (in `selector`) first appears, and records Submit clicks.
PROBE_JS = r"""
(() => {
  const wall = () => performance.timeOrigin + performance.now();
  const probe = (window.__bench = { clicks: [] });
  probe.waitFor = (selector, text) =>
    new Promise((resolve) => {
      const found = () =>
        [...document.querySelectorAll(selector)].some((el) => el.textContent.includes(text));
      if (found()) return resolve(wall());
      const observer = new MutationObserver(() => {
        if (found()) {
          const at = wall();
          observer.disconnect();
          resolve(at);
        }
      });
      observer.observe(document.body, { childList: true, subtree: true, characterData: true });
    });
  // Not returned: Playwright would wait for it. Collected later with `pending`.
  probe.arm = (selector, text) => {
    probe.pending = probe.waitFor(selector, text);
  };
  document.addEventListener(
    "click",
    (event) => {
      if (event.target.closest("[data-bench-submit]")) probe.clicks.push(wall());
    },
    true,
  );
})();
"""

T = TypeVar("T")
CARD = "li.item.interaction"
MESSAGE = "li.item.message.from-agent"


def cli(*args: str, work: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(LINEUP), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        cwd=work,
    )
    return done.stdout


@contextlib.contextmanager
def process(args: list[str], log: Path, env: dict[str, str]) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, env=env)
        try:
            yield proc
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def step(what: str) -> None:
    print(f"  [{time.strftime('%H:%M:%S')}] {what}", file=sys.stderr, flush=True)


def wait_until(check: Any, what: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.02)


async def answer_card(page: Page, prompt: str, label: str) -> None:
    """Pick ``label`` on the card showing ``prompt`` and press Submit (the real UI)."""
    card = page.locator(CARD, has_text=prompt)
    await card.get_by_label(label, exact=True).check()
    submit = card.get_by_role("button", name="Submit")
    await submit.evaluate("(button) => button.setAttribute('data-bench-submit', '')")
    await submit.click()


async def timed(awaitable: Awaitable[T]) -> tuple[T, float]:
    value = await awaitable
    return value, time.time()


async def one_run(page: Page, conversation: Conversation, n: int) -> dict[str, float]:
    prompt = f"Bench question {n:04d}"
    await page.evaluate(f"window.__bench.arm({CARD!r}, {prompt!r})")
    asked_at = time.time()
    ask = asyncio.create_task(timed(conversation.ask_choice(prompt, ["Yes", "No"])))
    card_at = await page.evaluate("window.__bench.pending") / 1000
    clicks_before = await page.evaluate("window.__bench.clicks.length")
    await answer_card(page, prompt, "Yes")
    answer, answered_at = await ask  # taken when the await returned, not after the click
    assert answer == "Yes", answer
    clicked_at = await page.evaluate(f"window.__bench.clicks[{clicks_before}]") / 1000

    text = f"Bench message {n:04d}"
    await page.evaluate(f"window.__bench.arm({MESSAGE!r}, {text!r})")
    sent_at = time.time()
    await conversation.send_markdown(text)
    message_at = await page.evaluate("window.__bench.pending") / 1000
    return {
        "ask_to_card": (card_at - asked_at) * 1000,
        "click_to_answer": (answered_at - clicked_at) * 1000,
        "message_to_dom": (message_at - sent_at) * 1000,
    }


def stack_commands(
    work: Path, server_dir: Path, client_dir: Path, server_port: int, host_port: int
) -> tuple[str, str, list[str], list[str]]:
    """Add the benchmark's user and agent to a fresh AppServer data dir; return the
    agent key, the AppServer URL and the ``lineup server`` / ``lineup client``
    commands to run."""
    cli(
        "server",
        "--data-dir",
        str(server_dir),
        "user",
        "add",
        "bench",
        work=work,
        env={"LINEUP_PASSWORD": PASSWORD},
    )
    key = (
        cli("server", "--data-dir", str(server_dir), "agent", "add", "bench-agent", work=work)
        .strip()
        .split()[-1]
    )
    server_url = f"http://127.0.0.1:{server_port}"
    server_cmd = [str(LINEUP), "server", "--data-dir", str(server_dir), "--port", str(server_port)]
    client_cmd = [
        str(LINEUP),
        "client",
        "--server",
        server_url,
        "--data-dir",
        str(client_dir),
        "--port",
        str(host_port),
        "--agent",
        "bench-agent",
    ]
    return key, server_url, server_cmd, client_cmd


async def bench(args: argparse.Namespace, work: Path) -> dict[str, Any]:
    server_port, host_port = free_port(), free_port()
    server_dir, client_dir = work / "server", work / "client"
    env = {**os.environ, "XDG_STATE_HOME": str(work / "state")}
    key, server_url, server_cmd, client_cmd = stack_commands(
        work, server_dir, client_dir, server_port, host_port
    )
    with process(server_cmd, work / "server.log", env):
        wait_until(lambda: page_ok(server_port, "/healthz"), "the AppServer")
        with process(client_cmd, work / "client.log", env):
            wait_until(lambda: page_ok(host_port, "/login"), "the Web Host")
            return await drive(args, server_url, key, host_port, work)


async def drive(
    args: argparse.Namespace, server_url: str, key: str, host_port: int, work: Path
) -> dict[str, Any]:
    agent = Agent(server_url, key, cursor_path=work / "agent-cursors.json")
    opened: asyncio.Future[Conversation] = asyncio.get_running_loop().create_future()

    @agent.on_conversation
    async def first(conversation: Conversation) -> None:
        if not opened.done():
            opened.set_result(conversation)

    agent_task = asyncio.create_task(agent.run())
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = await browser.new_page(viewport={"width": 1280, "height": 800})
        await page.add_init_script(PROBE_JS)
        step("logging in")
        await page.goto(f"http://127.0.0.1:{host_port}/login")
        await page.get_by_label("Username").fill("bench")
        await page.get_by_label("Password").fill(PASSWORD)
        await page.get_by_role("button", name="Log in").click()
        await page.wait_for_selector("#connection[data-state=connected]", timeout=30_000)
        step("waiting for the conversation")
        conversation = await asyncio.wait_for(opened, 30)
        step("waiting for the inventory")
        await asyncio.wait_for(conversation.latest_inventory(), 30)
        step("measuring")
        samples = []
        for n in range(args.warmup + args.runs):
            sample = await one_run(page, conversation, n)
            if n >= args.warmup:
                samples.append(sample)
        await browser.close()
    await agent.stop()
    await agent_task
    return {"samples": samples}


def report(samples: list[dict[str, float]], info: dict[str, Any]) -> bool:
    rows = [
        ("ask_choice -> card in DOM", "ask_to_card"),
        ("click Submit -> agent's await returns", "click_to_answer"),
        ("reference: send_markdown -> message in DOM", "message_to_dom"),
    ]
    print(f"\nStandard interaction latency, {len(samples)} runs (ms)")
    print(f"  {'':44} {'p50':>6} {'p90':>6} {'p99':>6} {'max':>6} {'mean':>6}")
    stats = {}
    for title, name in rows:
        s = summary([sample[name] for sample in samples])
        stats[name] = s
        print(
            f"  {title:44} {s['p50']:6.1f} {s['p90']:6.1f} {s['p99']:6.1f}"
            f" {s['max']:6.1f} {s['mean']:6.1f}"
        )
    ref = stats["message_to_dom"]["p50"]
    print(f"  ask -> card p50 is {stats['ask_to_card']['p50'] / ref:.2f}x a plain message's")
    met = all(stats[name]["p99"] < GOAL_MS for name in ("ask_to_card", "click_to_answer"))
    print(f"\n  goal: both p99 under {GOAL_MS:.0f} ms: {'met' if met else 'NOT met'}")
    print(
        f"\n  machine: {info['cpus']} CPUs ({info['model']}), Python {info['python']},"
        f" {info['chromium']}; LineUp {info['lineup_commit']};"
        f" load average before {info['load_average_1m']:.2f}"
    )
    return met


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="keep the work directory")
    args = parser.parse_args(argv)
    info = machine()
    work = Path(tempfile.mkdtemp(prefix="lineup-interaction-bench-"))
    try:
        result = asyncio.run(bench(args, work))
    except Exception as exc:  # report, with the logs, and fail
        print(f"the benchmark could not complete: {exc!r}; logs in {work}", file=sys.stderr)
        return 2
    report(result["samples"], info)
    if args.json:
        args.json.write_text(json.dumps({"info": info, **result}, indent=2), encoding="utf-8")
    if not args.keep:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
