"""What ``roundtrip_browser.py`` measures, as data: one message's timings (``Sample``),
one app's measured messages (``Run``), one conversation length (``Length``) and the
scroll through a long timeline (``Scroll``); and the statistics over them."""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .pagestats import Heap, LongTasks

SPLITS: list[tuple[str, str, str]] = [
    ("network to the page", "t0", "frame"),
    ("page to visible", "frame", "visible"),
    ("visible to paint", "visible", "paint"),
]
"""Where Enter -> paint goes: (label, from, to), fields of Sample ("t0" is 0)."""


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


@dataclass(frozen=True)
class Sample:
    """One message, in ms after Enter (the page's t0); None where the page did not see
    that point (``frame`` needs page_init.js, ``presented`` Element Timing)."""

    frame: float | None
    """The WebSocket frame carrying the reply was dispatched to the page."""
    dom: float | None
    """The reply's text was in the DOM (MutationObserver)."""
    visible: float
    """Start of the first animation frame whose layout shows the reply's text."""
    laid_out: float
    """That frame's style and layout were done (ResizeObserver)."""
    paint: float
    """The first task after that frame's rendering update: painted. The headline."""
    presented: float | None
    mutations: int
    earlier_frames: int | None = None
    """Frames the page got after Enter and before the reply's (page_init.js)."""
    earlier_frames_ms: float | None = None
    """Time the app's handlers spent on those frames (part of ``frame``: the page
    handles one frame at a time, so the reply's waits for them)."""
    reply_handler_ms: float | None = None
    """Time the app's handlers spent on the reply's frame (part of ``visible``)."""

    @classmethod
    def of(cls, result: dict[str, Any]) -> Sample | None:
        """From the probe's result; None when the reply was not painted in time."""
        t0 = result.get("t0")
        if t0 is None or result.get("tVisible") is None or result.get("tPaint") is None:
            return None

        def since(name: str) -> float | None:
            value = result.get(name)
            return None if value is None else float(value) - float(t0)

        earlier: list[float] = []
        reply: float | None = None
        frames = result.get("frames")
        for start, took, holds_reply in frames or []:
            if holds_reply and reply is None:
                reply = float(took)
            elif reply is None and float(start) >= float(t0):
                earlier.append(float(took))
        return cls(
            frame=since("tFrame"),
            dom=since("tDom"),
            visible=float(result["tVisible"]) - float(t0),
            laid_out=float(result["tLaidOut"]) - float(t0),
            paint=float(result["tPaint"]) - float(t0),
            presented=since("tPresented"),
            mutations=int(result.get("mutations") or 0),
            earlier_frames=len(earlier) if frames is not None else None,
            earlier_frames_ms=sum(earlier) if frames is not None else None,
            reply_handler_ms=reply,
        )

    def point(self, name: str) -> float | None:
        return 0.0 if name == "t0" else getattr(self, name)

    def value(self, name: str) -> float | None:
        found: float | int | None = getattr(self, name)
        return None if found is None else float(found)


@dataclass
class Run:
    """One app's measured messages, one at a time, and what they cost."""

    name: str
    samples: list[Sample] = field(default_factory=list)
    lost: int = 0
    server_cpu_s: float = 0.0
    browser_cpu_s: float = 0.0
    renderer_cpu_s: float = 0.0
    main_thread_ms: dict[str, float] = field(default_factory=dict)
    """Performance.getMetrics deltas over the measured messages (TaskDuration, ...)."""
    long_tasks: LongTasks = field(default_factory=LongTasks)
    wall_s: float = 0.0
    replies_in_page: int = 0
    window_ms: tuple[float, float] = (0.0, 0.0)
    """Wall clock (ms) at the start and end of the measured messages."""
    origin_ms: float = 0.0
    """The page's performance.timeOrigin (trace mode)."""
    page_profile: list[tuple[float, str]] = field(default_factory=list)
    """--page-profile: (ms of main-thread self time per message, function)."""
    page_errors: list[str] = field(default_factory=list)

    @property
    def paint_ms(self) -> list[float]:
        """Enter -> the echo painted, per message."""
        return [sample.paint for sample in self.samples]

    def between(self, start: str, end: str) -> list[float]:
        """Per message, ms from point ``start`` to point ``end`` (where both were seen)."""
        found = []
        for sample in self.samples:
            a, b = sample.point(start), sample.point(end)
            if a is not None and b is not None:
                found.append(b - a)
        return found

    def values(self, name: str) -> list[float]:
        """Per message, one field of Sample (where it was seen)."""
        return [v for v in (sample.value(name) for sample in self.samples) if v is not None]

    def per_message(self, total: float) -> float:
        return total / max(1, len(self.samples))

    @property
    def renderer_cpu_ms_per_message(self) -> float:
        return self.per_message(self.renderer_cpu_s * 1000)


@dataclass
class Length:
    """LineUp with a conversation of ``rows`` rows built before measuring."""

    rows: int
    """The length asked for."""
    rows_built: int = 0
    """Rows in the page's timeline when the build ended."""
    rows_after: int = 0
    built: bool = False
    build_s: float = 0.0
    posted: int = 0
    build_steps: list[tuple[int, float, float]] = field(default_factory=list)
    """Per batch: rows in the page once it showed the batch's last, and the seconds since
    the build began when that batch was stored and when the page showed it."""
    build_long_tasks: LongTasks = field(default_factory=LongTasks)
    followed: bool = True
    """The newest row was in view when the build ended (the timeline kept following);
    when not, the script scrolled to it, as the person would, before measuring."""
    heap_before: Heap | None = None
    """After the build, after a full GC, before the measured messages."""
    heap_after: Heap | None = None
    run: Run | None = None
    scroll: Scroll | None = None
    note: str = ""


@dataclass
class Scroll:
    """The long timeline opened anew (at its newest rows), then scrolled to the top
    page after page ("Show earlier messages")."""

    open_ms: float = 0.0
    """Navigation to the newest row shown, connected."""
    open_long_tasks: LongTasks = field(default_factory=LongTasks)
    rows_open: int = 0
    pages: int = 0
    page_ms: list[float] = field(default_factory=list)
    """Per page: scrolled to the top -> more rows in the timeline."""
    rows_end: int = 0
    complete: bool = False
    """``#older`` hidden at the end: the whole conversation is in the page."""
    wall_s: float = 0.0
    long_tasks: LongTasks = field(default_factory=LongTasks)
    heap_end: Heap | None = None
    note: str = ""
