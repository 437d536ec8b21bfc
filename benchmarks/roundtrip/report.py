"""The text report and the goals of ``roundtrip_browser.py``."""

from __future__ import annotations

import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .pagestats import Heap
from .samples import SPLITS, Length, Run, percentile, summary

GOAL_P50_MS = 20.0
GOAL_P99_MS = 30.0
GOAL_AT_ROWS = 1_000
GOAL_GROWTH = 1.2
"""At 10,000 rows, p50 and renderer CPU per message at most this times those at 100."""
GOAL_CHAINLIT_FACTOR = 10.0
LONG_TASK_MS = 50.0
SHORT, LONG = 100, 10_000


@dataclass
class Startup:
    name: str
    page: str
    page_ms: list[float] = field(default_factory=list)
    ready_ms: list[float] = field(default_factory=list)
    ready_what: str = ""


def fmt(value: float | None, digits: int = 1) -> str:
    return "-" if value is None else f"{value:,.{digits}f}"


def table(rows: list[tuple[str, ...]]) -> list[str]:
    """Left-aligned first column, the others right-aligned."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        "  "
        + "  ".join(
            cell.ljust(widths[i]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)
        )
        for row in rows
    ]


def p(values: Sequence[float], q: float) -> float | None:
    return percentile(values, q) if values else None


def mib(heap: Heap | None) -> str:
    return "-" if heap is None else f"{heap.js_heap_used_bytes / 2**20:.1f}"


# --- goals ---------------------------------------------------------------------------------------


def _length(lengths: Sequence[Length], rows: int) -> Run | None:
    for length in lengths:
        if length.rows == rows and length.run is not None and length.run.samples:
            return length.run
    return None


def _goal(text: str, met: bool | None, value: str) -> dict[str, Any]:
    return {"goal": text, "met": met, "value": value}


def goals(runs: Sequence[Run], lengths: Sequence[Length]) -> list[dict[str, Any]]:
    """Issue 20's goals (and issue 3's p99), each met, missed, or not measured (None)."""
    found: list[dict[str, Any]] = []
    at = _length(lengths, GOAL_AT_ROWS)
    if at is None:
        found.append(_goal(f"p50 <= 20 ms, p99 < 30 ms at {GOAL_AT_ROWS:,} rows", None, "-"))
    else:
        s = summary(at.paint_ms)
        found.append(
            _goal(
                f"p50 <= {GOAL_P50_MS:.0f} ms and p99 < {GOAL_P99_MS:.0f} ms to the painted echo"
                f" at {GOAL_AT_ROWS:,} rows",
                s["p50"] <= GOAL_P50_MS and s["p99"] < GOAL_P99_MS,
                f"p50 {s['p50']:.1f} ms, p99 {s['p99']:.1f} ms",
            )
        )
    short, long = _length(lengths, SHORT), _length(lengths, LONG)
    if short is None or long is None:
        found.append(_goal("p50 at 10,000 rows <= 1.2 x p50 at 100", None, "-"))
        found.append(_goal("renderer CPU/msg at 10,000 rows <= 1.2 x at 100", None, "-"))
    else:
        a, b = summary(short.paint_ms)["p50"], summary(long.paint_ms)["p50"]
        found.append(
            _goal(
                f"p50 at {LONG:,} rows <= {GOAL_GROWTH} x p50 at {SHORT}",
                b <= GOAL_GROWTH * a,
                f"{b:.1f} / {a:.1f} ms = {b / a:.2f} x",
            )
        )
        c, d = short.renderer_cpu_ms_per_message, long.renderer_cpu_ms_per_message
        found.append(
            _goal(
                f"renderer CPU/msg at {LONG:,} rows <= {GOAL_GROWTH} x at {SHORT}",
                d <= GOAL_GROWTH * c,
                f"{d:.1f} / {c:.1f} ms = {d / c:.2f} x" if c else f"{d:.1f} / {c:.1f} ms",
            )
        )
    by_name = {run.name: summary(run.paint_ms) for run in runs if run.samples}
    ours, theirs = by_name.get("LineUp"), by_name.get("Chainlit")
    if ours is None or theirs is None:
        found.append(_goal("Chainlit p50 >= 10 x LineUp's, same run", None, "-"))
    else:
        factor = theirs["p50"] / ours["p50"]
        found.append(
            _goal(
                f"Chainlit p50 >= {GOAL_CHAINLIT_FACTOR:.0f} x LineUp's, same run",
                factor >= GOAL_CHAINLIT_FACTOR,
                f"{theirs['p50']:.1f} / {ours['p50']:.1f} ms = {factor:.1f} x",
            )
        )
    longest = next((x for x in lengths if x.rows == LONG and x.run is not None), None)
    if longest is None:
        found.append(_goal("no long task over 50 ms at 10,000 rows", None, "-"))
    else:
        phases = {"measured messages": longest.run.long_tasks if longest.run else None}
        if longest.scroll is not None:
            phases |= {
                "open": longest.scroll.open_long_tasks,
                "scroll": longest.scroll.long_tasks,
            }
        seen = [(name, tasks) for name, tasks in phases.items() if tasks is not None]
        supported = all(tasks.supported for _, tasks in seen)
        worst = max((tasks.longest_ms for _, tasks in seen), default=0.0)
        found.append(
            _goal(
                f"no long task over {LONG_TASK_MS:.0f} ms at {LONG:,} rows ("
                + ", ".join(name for name, _ in seen)
                + ")",
                (worst <= LONG_TASK_MS) if supported else None,
                "; ".join(f"{name}: {tasks.text()}" for name, tasks in seen),
            )
        )
    lineup = by_name.get("LineUp")
    if lineup is not None:
        found.append(
            _goal(
                f"(issue 3) LineUp p99 under {GOAL_P99_MS:.0f} ms, short conversation",
                lineup["p99"] < GOAL_P99_MS,
                f"{lineup['p99']:.1f} ms",
            )
        )
    return found


# --- the report ----------------------------------------------------------------------------------


def round_trip_lines(runs: Sequence[Run], args: Any) -> list[str]:
    out = [
        "",
        f"Browser round trip: Enter in the composer -> the echo painted; {args.messages}"
        f" messages one at a time after {args.warmup} warm-up (ms)",
    ]
    rows: list[tuple[str, ...]] = [
        (
            *("", "n", "p50", "p90", "p99", "max", "mean", "DOM p50", "lost"),
            *("server CPU", "renderer CPU", "browser CPU"),
        )
    ]
    for run in runs:
        s = summary(run.paint_ms)
        rows.append(
            (
                run.name,
                str(len(run.samples)),
                *(fmt(s.get(k)) for k in ("p50", "p90", "p99", "max", "mean")),
                fmt(p(run.between("t0", "dom"), 0.5)),
                str(run.lost),
                f"{run.per_message(run.server_cpu_s * 1000):.1f}/msg",
                f"{run.renderer_cpu_ms_per_message:.1f}/msg",
                f"{run.per_message(run.browser_cpu_s * 1000):.1f}/msg",
            )
        )
    out += table(rows)
    out.append(
        "  (DOM: Enter -> the reply in the DOM, the figure before issue 20. CPU per message:"
        " server = its process; renderer = Chromium's renderer process; browser = all of"
        " Chromium + Playwright)"
    )
    out += where_lines("where the time goes, ms (p50 / p90 / p99)", [(r.name, r) for r in runs])
    for run in runs:
        if len(run.samples) >= 100:
            quarter = len(run.samples) // 4
            first = statistics.median(run.paint_ms[:quarter])
            last = statistics.median(run.paint_ms[-quarter:])
            out.append(
                f"  {run.name}: p50 of the first {quarter} {first:.1f} ms, of the last {quarter}"
                f" {last:.1f} ms; {run.replies_in_page} replies in the page at the end;"
                f" {run.wall_s:.1f} s for the measured messages; long tasks"
                f" {run.long_tasks.text()}"
            )
        out += extra_lines(run)
    return out


WHERE: list[tuple[str, Callable[[Run], list[float]]]] = [
    ("network to the page: Enter -> reply frame", lambda r: r.between("t0", "frame")),
    ("  of it, the app handling earlier frames", lambda r: r.values("earlier_frames_ms")),
    ("page to visible: frame -> frame showing it", lambda r: r.between("frame", "visible")),
    ("  of it, the app handling the reply frame", lambda r: r.values("reply_handler_ms")),
    ("visible to paint: that frame -> painted", lambda r: r.between("visible", "paint")),
    ("  of it, style and layout", lambda r: r.between("visible", "laid_out")),
    ("(Enter -> reply in the DOM)", lambda r: r.between("t0", "dom")),
    ("(painted -> presented, Element Timing)", lambda r: r.between("paint", "presented")),
]
"""Where Enter -> paint goes: the three parts add up to it; indented lines are inside
the part above; parenthesized ones are other views of the same messages."""


def where_lines(title: str, named: Sequence[tuple[str, Run]]) -> list[str]:
    """One column per run: p50 / p90 / p99 of each part of WHERE."""
    rows: list[tuple[str, ...]] = [(title, *(name for name, _ in named))]
    for label, pick in WHERE:
        cells = []
        for _, run in named:
            values = pick(run)
            cells.append(" / ".join(fmt(p(values, q)) for q in (0.5, 0.9, 0.99)))
        rows.append((label, *cells))
    return table(rows)


def extra_lines(run: Run) -> list[str]:
    out = []
    if run.page_profile:
        out.append(f"  {run.name}: page main thread, self time per message (--page-profile):")
        out += [f"    {ms:7.2f} ms  {label}" for ms, label in run.page_profile]
    out += [f"  {run.name}: page error: {error}" for error in run.page_errors[:5]]
    return out


def length_lines(lengths: Sequence[Length], args: Any) -> list[str]:
    if not lengths:
        return []
    out = [
        "",
        f"LineUp with long conversations: the agent's messages posted through the AppServer"
        f" while the page is open, then {args.messages} messages after {args.warmup} warm-up"
        f" (Enter -> painted, ms)",
    ]
    rows: list[tuple[str, ...]] = [
        (
            *("rows", "in page", "build", "p50", "p90", "p99", "to page", "to visible"),
            *("to paint", "renderer CPU", "main thread", "JS heap", "DOM nodes"),
            "long tasks: build",
            "measured",
        )
    ]
    for length in lengths:
        run = length.run
        s = summary(run.paint_ms) if run is not None else {}
        splits = [fmt(p(run.between(a, b), 0.5)) if run else "-" for _, a, b in SPLITS]
        heap = length.heap_before
        rows.append(
            (
                f"{length.rows:,}",
                f"{length.rows_built:,}",
                f"{length.build_s:.1f} s" + ("" if length.built else " (gave up)"),
                *(fmt(s.get(k)) for k in ("p50", "p90", "p99")),
                *splits,
                f"{run.renderer_cpu_ms_per_message:.1f}/msg" if run else "-",
                f"{run.per_message(run.main_thread_ms.get('TaskDuration', 0.0)):.1f}/msg"
                if run
                else "-",
                f"{mib(heap)} MiB",
                f"{heap.dom_nodes:,}" if heap else "-",
                length.build_long_tasks.text(),
                run.long_tasks.text() if run else "-",
            )
        )
    out += table(rows)
    out.append(
        "  (to page / to visible / to paint: p50 of Enter -> reply frame, frame -> first"
        " frame showing it, that frame -> painted. renderer CPU: /proc of the renderer;"
        " main thread: Performance.getMetrics TaskDuration; JS heap and nodes after a full"
        " GC, at the length built, before measuring)"
    )
    measured = [(f"{x.rows:,} rows", x.run) for x in lengths if x.run and x.run.samples]
    if measured:
        out += where_lines("where the time goes, ms (p50 / p90 / p99)", measured)
    for length in lengths:
        out += one_length_lines(length)
    short, long = _length(lengths, SHORT), _length(lengths, LONG)
    if short is not None and long is not None:
        a, b = summary(short.paint_ms)["p50"], summary(long.paint_ms)["p50"]
        c, d = short.renderer_cpu_ms_per_message, long.renderer_cpu_ms_per_message
        out.append(
            f"  ratios {LONG:,} / {SHORT} rows: p50 {b / a:.2f} x;"
            f" renderer CPU per message {d / c if c else float('nan'):.2f} x"
        )
    return out


def one_length_lines(length: Length) -> list[str]:
    out = []
    name = f"{length.rows:,} rows"
    if length.build_steps:
        rate = length.posted / length.build_s if length.build_s else 0.0
        out.append(
            f"  {name}: {length.posted:,} agent messages posted and shown in"
            f" {length.build_s:.1f} s ({rate:,.0f}/s); rows after measuring"
            f" {length.rows_after:,}; JS heap after measuring {mib(length.heap_after)} MiB"
        )
    if not length.followed:
        out.append(
            f"  {name}: the timeline stopped following the newest row while the messages"
            " came in; scrolled to it before measuring"
        )
    if length.note:
        out.append(f"  {name}: {length.note}")
    if length.run is not None:
        out += extra_lines(length.run)
    scroll = length.scroll
    if scroll is not None:
        pages = scroll.page_ms
        out.append(
            f"  {name}, reopened and scrolled to the top: opened (newest row shown) in"
            f" {scroll.open_ms:.0f} ms with {scroll.rows_open:,} rows, long tasks"
            f" {scroll.open_long_tasks.text()}; {scroll.pages} pages of earlier rows in"
            f" {scroll.wall_s:.1f} s (per page p50 {fmt(p(pages, 0.5), 0)}, max"
            f" {fmt(max(pages, default=None), 0)} ms), {scroll.rows_end:,} rows at the end,"
            f" {'all' if scroll.complete else 'not all'} loaded; long tasks"
            f" {scroll.long_tasks.text()}; JS heap at the end {mib(scroll.heap_end)} MiB"
        )
        if scroll.note:
            out.append(f"  {name}, scrolling: {scroll.note}")
    return out


def goal_lines(found: Sequence[dict[str, Any]]) -> list[str]:
    out = [""]
    for goal in found:
        met = {True: "met", False: "NOT met", None: "not measured"}[goal["met"]]
        out.append(f"  goal: {goal['goal']}: {met} ({goal['value']})")
    return out


def startup_lines(startups: Sequence[Startup], args: Any) -> list[str]:
    if not startups:
        return []
    out = [
        "",
        f"Startup: process start -> first HTTP 200 (polled every 5 ms),"
        f" {args.startups} runs, fresh directory each",
    ]
    for result in startups:
        runs_text = ", ".join(f"{v:.0f}" for v in result.page_ms)
        median = statistics.median(result.page_ms)
        line = f"  {result.name:18} GET {result.page:7} median {median:6.0f} ms  [{runs_text}]"
        if result.ready_ms:
            line += f"; {result.ready_what}: median {statistics.median(result.ready_ms):.0f} ms"
        out.append(line)
    if len(startups) == 2:
        a, b = (statistics.median(s.page_ms) for s in startups)
        out.append(f"  lineup demo / Chainlit = {a / b:.2f}")
    return out


def lines(
    runs: Sequence[Run],
    lengths: Sequence[Length],
    startups: Sequence[Startup],
    found: Sequence[dict[str, Any]],
    info: dict[str, Any],
    args: Any,
) -> list[str]:
    out = round_trip_lines(runs, args) if runs else []
    out += length_lines(lengths, args)
    out += goal_lines(found)
    out += startup_lines(startups, args)
    src = info["src_commit"] + (" (modified)" if info["src_dirty"] else "")
    out += [
        "",
        f"  machine: {info['cpus']} CPUs ({info['model']}), Python {info['python']},"
        f" kernel {info['kernel']}, {info['chromium']}; LineUp {info['lineup_commit']}"
        f" (src {src}); Chainlit {info.get('chainlit', '-')}; 1-minute load average"
        f" {info['load_average_1m']:.2f} before, {info['load_average_1m_after']:.2f} after",
    ]
    return out
