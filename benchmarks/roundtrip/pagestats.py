"""What one page costs, for ``roundtrip_browser.py``: its main thread's task time and its
JavaScript heap (Chrome DevTools Protocol, ``Performance.getMetrics``) and the long
tasks page_init.js collected. (The renderer's CPU, from ``/proc``, is servers.CpuMeter's.)

``Performance.getMetrics`` durations are seconds of main-thread task time: wall time
while a task runs, so a thread that the kernel descheduled mid-task still counts.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from playwright.async_api import CDPSession, Page

MAIN_THREAD_METRICS = ("TaskDuration", "ScriptDuration", "LayoutDuration", "RecalcStyleDuration")


@dataclass
class LongTasks:
    """Long tasks (> 50 ms, the browser's threshold) seen in one phase."""

    count: int = 0
    longest_ms: float = 0.0
    total_ms: float = 0.0
    supported: bool = True

    @classmethod
    def of(cls, entries: list[list[float]] | None) -> LongTasks:
        if entries is None:
            return cls(supported=False)
        durations = [float(duration) for _, duration in entries]
        return cls(len(durations), max(durations, default=0.0), sum(durations))

    def text(self) -> str:
        if not self.supported:
            return "not supported"
        if not self.count:
            return "none"
        return f"{self.count}, longest {self.longest_ms:.0f} ms"


async def take_long_tasks(page: Page) -> LongTasks:
    """The long tasks since the last call (page_init.js keeps them), and forget them."""
    entries = await page.evaluate(
        "() => { const t = window.__lineupPage.longTasks; return t === null ? null : t.splice(0) }"
    )
    return LongTasks.of(entries)


@dataclass
class Heap:
    js_heap_used_bytes: float
    dom_nodes: int
    listeners: int


@dataclass
class PageStats:
    """A DevTools session on one page."""

    cdp: CDPSession
    metrics: dict[str, float] = field(default_factory=dict)

    @classmethod
    async def attach(cls, page: Page) -> PageStats:
        cdp = await page.context.new_cdp_session(page)
        await cdp.send("Performance.enable")
        return cls(cdp)

    async def read(self) -> dict[str, float]:
        reply: dict[str, Any] = await self.cdp.send("Performance.getMetrics")
        self.metrics = {item["name"]: float(item["value"]) for item in reply["metrics"]}
        return self.metrics

    async def heap_after_gc(self) -> Heap:
        """The JS heap in use after a full garbage collection, and the DOM's size."""
        await self.cdp.send("HeapProfiler.collectGarbage")
        metrics = await self.read()
        return Heap(
            metrics.get("JSHeapUsedSize", 0.0),
            int(metrics.get("Nodes", 0)),
            int(metrics.get("JSEventListeners", 0)),
        )

    async def detach(self) -> None:
        await self.cdp.detach()


def main_thread_ms(before: dict[str, float], after: dict[str, float]) -> dict[str, float]:
    """Main-thread time between two readings, ms, per metric of MAIN_THREAD_METRICS."""
    return {
        name: (after.get(name, 0.0) - before.get(name, 0.0)) * 1000 for name in MAIN_THREAD_METRICS
    }


async def start_page_profile(page: Page) -> CDPSession:
    """V8's sampling profiler on the page's main thread (``--page-profile``)."""
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
