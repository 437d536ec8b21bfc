"""Where LineUp's round trip goes: joins the page's WebSocket log with traced_demo.py's
events (both wall-clock, same machine) into per-message hop times."""

from __future__ import annotations

import json
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Added to the page before its scripts run (trace mode only): every frame on the host
# channel, with the page's wall clock (timeOrigin + now).
WEBSOCKET_LOG_JS = r"""
(() => {
  const log = (window.__lineupWsLog = []);
  const wall = () => performance.timeOrigin + performance.now();
  const Original = window.WebSocket;
  const pick = (text, name) => {
    const match = new RegExp(`"${name}":"([^"]*)"`).exec(text);
    return match ? match[1] : null;
  };
  class Logged extends Original {
    constructor(...args) {
      super(...args);
      this.addEventListener("message", (event) => {
        const text = String(event.data);
        log.push(["in", wall(), pick(text, "envelope_id"), pick(text, "state")]);
      });
    }
    send(data) {
      const text = String(data);
      log.push(["out", wall(), pick(text, "text"), pick(text, "op")]);
      return super.send(data);
    }
  }
  window.WebSocket = Logged;
})();
"""

# (label, from, to): each point is (source, event, which key) resolved per message.
SEGMENTS: list[tuple[str, str, str]] = [
    ("page: keydown -> host-channel send", "keydown", "page_send"),
    ("browser -> Web Host (frame decoded)", "page_send", "host_in"),
    ("Runtime: checks + outbox write (durable)", "host_in", "queued"),
    ("Runtime: queued -> written to AppServer", "queued", "send"),
    ("AppServer: message -> agent's stream", "send", "agent_in"),
    ("agent: frame -> handler", "agent_in", "dispatch"),
    ("agent: handler -> reply written", "dispatch", "reply_send"),
    ("AppServer: reply -> Runtime's stream", "reply_send", "reply_in"),
    ("Runtime: reply applied (durable)", "reply_in", "reply_applied"),
    ("Runtime -> Web Host frame out", "reply_applied", "reply_out"),
    ("Web Host -> page (frame in)", "reply_out", "page_reply"),
    ("page: frame -> reply in DOM", "page_reply", "dom"),
    ("page: reply in DOM -> painted", "dom", "paint"),
]
SIDE: list[tuple[str, str, str]] = [
    ("(side) AppServer ack of the message", "send", "ack"),
    ("(side) AppServer ack of the reply", "reply_send", "reply_ack"),
    ("(side) Web Host -> page, the 'sending' frame", "sending_out", "page_sending"),
    ("(side) keydown -> page gets the 'sending' frame", "keydown", "page_sending"),
]


@dataclass
class Hops:
    segments: dict[str, list[float]] = field(default_factory=dict)
    totals: list[float] = field(default_factory=list)
    batches: dict[str, list[tuple[float, int]]] = field(default_factory=dict)
    cursor_saves: list[float] = field(default_factory=list)
    frame_patterns: dict[str, int] = field(default_factory=dict)
    """Host-channel frames the page got per message ("msg:sending msg:sent ..."): count."""
    messages: int = 0
    incomplete: int = 0


def load_events(path: Path) -> list[list[Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def analyse(
    events: list[list[Any]],
    messages: Sequence[dict[str, Any]],
    origin_ms: float,
    window: tuple[float, float],
) -> Hops:
    """``messages``: per measured message its ``text``, probe.js's times (page ms) and the
    page's WebSocket log entries ``[dir, wall ms, key, state-or-op]``."""
    first: dict[tuple[str, str], float] = {}
    detail: dict[tuple[str, str], Any] = {}
    by_seq: dict[int, str] = {}
    hops = Hops()
    for at, name, key, extra in events:
        first.setdefault((name, key), at * 1000)
        detail.setdefault((name, key), extra)
        if name == "client.ack":
            by_seq[int(extra)] = key
        if window[0] <= at * 1000 <= window[1]:
            if name == "db.batch":
                began, ended, names = extra
                hops.batches.setdefault(key, []).append(((ended - began) * 1000, len(names)))
            elif name == "agent.cursor_save":
                hops.cursor_saves.append(float(extra) * 1000)
    agent_frames = {int(key): at * 1000 for at, name, key, _ in events if name == "agent.frame_in"}
    found: dict[str, list[float]] = defaultdict(list)
    for message in messages:
        text = message["text"]
        envelope = detail.get(("runtime.queued", text))
        if envelope is None:
            hops.incomplete += 1
            continue
        reply = f"reply.{envelope}"[:128]
        seq = detail.get(("client.ack", envelope))
        page_in = {(key, state): at for kind, at, key, state in message["log"] if kind == "in"}
        pattern = " ".join(
            f"{'reply' if key == reply else 'msg' if key == envelope else 'other'}:{state}"
            for kind, _, key, state in message["log"]
            if kind == "in"
        )
        hops.frame_patterns[pattern] = hops.frame_patterns.get(pattern, 0) + 1
        page_out = [at for kind, at, key, _ in message["log"] if kind == "out" and key == text]
        points = {
            "keydown": origin_ms + message["t0"],
            "dom": origin_ms + message["tDom"],
            "paint": origin_ms + message["tPaint"],
            "page_send": page_out[0] if page_out else None,
            "page_sending": page_in.get((envelope, "sending")),
            "page_reply": page_in.get((reply, "received")),
            "host_in": first.get(("host.frame_in", text)),
            "queued": first.get(("runtime.queued", text)),
            "sending_out": first.get(("host.frame_out", envelope)),
            "send": first.get(("client.send", envelope)),
            "ack": first.get(("client.ack", envelope)),
            "agent_in": agent_frames.get(int(seq)) if seq is not None else None,
            "dispatch": first.get(("agent.dispatch", envelope)),
            "reply_send": first.get(("client.send", reply)),
            "reply_ack": first.get(("client.ack", reply)),
            "reply_in": first.get(("runtime.frame_in", reply)),
            "reply_applied": first.get(("runtime.applied", reply)),
            "reply_out": first.get(("host.frame_out", reply)),
        }
        if any(points[a] is None or points[b] is None for _, a, b in SEGMENTS):
            hops.incomplete += 1
            continue
        hops.messages += 1
        hops.totals.append(points["paint"] - points["keydown"])
        for label, a, b in SEGMENTS + SIDE:
            if points[a] is not None and points[b] is not None:
                found[label].append(points[b] - points[a])
    hops.segments = dict(found)
    return hops


def report(hops: Hops) -> list[str]:
    lines = [
        f"Where LineUp's round trip goes (traced run, {hops.messages} messages;"
        f" {hops.incomplete} not matched), ms:",
    ]
    width = max(len(label) for label, _, _ in SEGMENTS + SIDE)
    lines.append(f"  {'hop':{width}}  {'p50':>6}  {'p90':>6}  {'p99':>6}  {'mean':>6}")

    def row(label: str, values: list[float]) -> str:
        ordered = sorted(values)
        pick = [ordered[min(len(ordered) - 1, int(q * len(ordered)))] for q in (0.5, 0.9, 0.99)]
        cells = "  ".join(f"{v:6.1f}" for v in [*pick, statistics.fmean(values)])
        return f"  {label:{width}}  {cells}"

    for label, _, _ in SEGMENTS:
        if hops.segments.get(label):
            lines.append(row(label, hops.segments[label]))
    if hops.totals:
        lines.append(row("total: keydown -> reply painted", hops.totals))
    for label, _, _ in SIDE:
        if hops.segments.get(label):
            lines.append(row(label, hops.segments[label]))
    for pattern, count in sorted(hops.frame_patterns.items(), key=lambda item: -item[1])[:3]:
        lines.append(f"  frames to the page per message ({count}x): {pattern}")
    per = max(1, hops.messages)
    for name, batches in sorted(hops.batches.items()):
        durations = [d for d, _ in batches]
        jobs = sum(n for _, n in batches)
        lines.append(
            f"  SQLite writer '{name}': {len(batches) / per:.1f} commits and {jobs / per:.1f} jobs"
            f" per message; commit batch p50 {statistics.median(durations):.2f} ms,"
            f" max {max(durations):.2f} ms"
        )
    if hops.cursor_saves:
        lines.append(
            f"  agent cursor file (write + fsync + rename, in a worker thread):"
            f" {len(hops.cursor_saves) / per:.1f} per message,"
            f" p50 {statistics.median(hops.cursor_saves):.2f} ms,"
            f" max {max(hops.cursor_saves):.2f} ms"
        )
    return lines
