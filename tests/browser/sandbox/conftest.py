"""The sandbox suite's stage: one set of servers, one canary and one Chromium per module
(``stage_servers``), and for every test a fresh context and shell page (``arena``) with
a well-behaved sibling surface already mounted and round-tripping.

Why one Chromium for many tests, when tests/support/browser.py gives each test its own:
the corpus is dozens of bundles, and a launch costs ~0.7 s on 2 cores. What must not
carry over is per context (a renderer Chromium kills, a hung busy loop, popups, history),
and each test gets its own context. The fixtures and tests here share the module's event
loop (``loop_scope="module"``), so Playwright's objects never cross loops.

How "leaked" is detected, beyond each bundle's own report:

- the canary (TCP connects, at accept time, and UDP datagrams) with ``*.attacker.test``
  resolved to it: HTTP, WebSocket, pre-connects, DNS-then-connect and WebRTC all land
  there. Its record is cleared when each test starts.
- every request the context makes (``context.on("request")``) and a route that records
  (and, unless it is an attacker name, aborts) anything not bound for the shell or the
  surface origin;
- the surface origin's own request log: each mount's document is fetched exactly once;
- the frames of the page: none ever commits a URL outside the shell, the surface origin,
  ``about:`` or Chromium's error page.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import pytest_asyncio
from playwright.async_api import CDPSession, Page, Route
from playwright.async_api import Request as PlaywrightRequest

from lineup.host.surface import Mount, SurfaceDocument
from tests.browser.sandbox.bundles import HOSTILE_INSTANCE, PRELUDE, SIBLING_INSTANCE, Bundle
from tests.support.surface_stage import Stage, StageServers, document, open_stage

# The well-behaved sibling: echoes every state it gets, and counts what a
# BroadcastChannel of the name the hostile bundle uses brings it.
SIBLING_JS = """
let broadcast = 0;
try {
  new BroadcastChannel("lineup-surfaces").onmessage = () => { broadcast += 1; };
} catch {
  broadcast = -1;
}
LineUpSurface.onState((state) => {
  LineUpSurface.event("echo", { n: state.n, keys: Object.keys(state).sort(), broadcast });
});
"""
SIBLING_HTML = "<p>sibling: well behaved</p>"

# What the shell's page looks like to the suite; compared before and after each bundle.
SHELL_SNAPSHOT_JS = """() => ({
  title: document.title,
  href: location.href,
  marker: document.getElementById("marker")?.textContent ?? null,
  body: Array.from(document.body.children, (e) => e.tagName + "#" + e.id),
  head: document.head.children.length,
  proto: Object.getOwnPropertyNames(Object.prototype).sort(),
  polluted: ({}).polluted ?? null,
  cookie: document.cookie,
})"""

QUIET_TRIPS = 5
QUIET_SECONDS = 0.4
WAIT_MS = 20_000  # a ceiling for loaded machines, not a timing assertion
# Frames may show these besides the shell and the surface origin: a fresh or srcdoc
# child, and Chromium's error page where a blocked navigation ends.
# Playwright's names for Chromium's blocked reasons that stop a request in the renderer:
# the CSP, and the origin rule of SVG <use>.
BLOCKED = frozenset({"csp", "origin"})
FRAME_URLS = ("about:blank", "about:srcdoc", "chrome-error://chromewebdata/")


@dataclass
class Arena:
    """One test's shell page, with the sibling mounted at index 0."""

    servers: StageServers
    stage: Stage
    cdp: CDPSession
    secret: str
    first_origin_request: int
    baseline: dict[str, Any] = field(default_factory=dict)
    baseline_history: int = 0
    requests: list[str] = field(default_factory=list)
    failures: dict[str, str] = field(default_factory=dict)
    outside: list[str] = field(default_factory=list)
    popups: list[Page] = field(default_factory=list)
    crashes: int = 0
    mounts: list[Mount] = field(default_factory=list)
    sibling: int = 0
    echoes_sent: int = 0
    wait_ms: int = WAIT_MS
    """How long ``until`` waits; shorter only for a known gap whose wait cannot end."""

    @property
    def page(self) -> Page:
        return self.stage.page

    # --- the shell page, over a CDP session of its own ----------------------------------
    #
    # Playwright marks the whole Page as crashed when any of its frames' renderers dies
    # (its per-frame sessions all report to the Page), so after Chromium kills a surface's
    # renderer every page.evaluate fails although the shell lives on. The suite talks to
    # the shell through a raw CDP session to the page's target instead, which only the
    # shell's own renderer can end. (DevTools evaluation is not subject to the page's CSP.)

    async def call(self, function: str, arg: Any = None) -> Any:
        """``function(arg)`` in the shell's main frame; its (awaited) JSON value."""
        reply = await self.cdp.send(
            "Runtime.evaluate",
            {
                "expression": f"({function})({json.dumps(arg)})",
                "awaitPromise": True,
                "returnByValue": True,
            },
        )
        if "exceptionDetails" in reply:
            raise AssertionError(f"shell evaluation failed: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def until(self, predicate: str, arg: Any = None) -> None:
        """Wait (in the page, on its clock, at most ``wait_ms``) for ``predicate(arg)``."""
        waited = await self.call(
            f"""async (arg) => {{
              const predicate = {predicate};
              const deadline = performance.now() + {self.wait_ms};
              while (!predicate(arg)) {{
                if (performance.now() > deadline) return false;
                await new Promise((resolve) => setTimeout(resolve, 10));
              }}
              return true;
            }}""",
            arg,
        )
        assert waited is True, f"timed out waiting for {predicate} ({arg!r})"

    async def mount(self, instance_id: str, document: SurfaceDocument) -> int:
        mount = self.servers.origin.mount(instance_id, document)
        self.mounts.append(mount)
        index = await self.call(
            "([url, i, m]) => window.harness.mount(url, i, m)",
            [mount.url, mount.instance_id, mount.mount_id],
        )
        return int(index)

    async def post(self, index: int, state: dict[str, Any]) -> bool:
        return bool(await self.call("([i, s]) => window.harness.post(i, s)", [index, state]))

    # --- hostile bundles ------------------------------------------------------------------

    def compose(self, bundle: Bundle) -> str:
        canary = self.servers.canary
        prelude = (
            PRELUDE.replace("__SECRET__", self.secret)
            .replace("__UDP_PORT__", str(canary.udp_port))
            .replace("__TCP_PORT__", str(canary.tcp_port))
        )
        return prelude + bundle.js

    async def mount_hostile(self, bundle: Bundle) -> int:
        """Mount ``bundle`` and hand it its first state (``{go: true}``), which the shell
        keeps until the bridge says it is ready."""
        index = await self.mount(
            HOSTILE_INSTANCE, document(bundle.html, self.compose(bundle), bundle.css)
        )
        assert await self.post(index, {"go": True})
        return index

    async def wait_report(self, index: int) -> dict[str, Any]:
        await self.until(
            "(i) => window.harness.log.mounts[i].events.some((e) => e.name === 'report')", index
        )
        return await self.report(index)

    async def report(self, index: int) -> dict[str, Any]:
        events = await self.events(index)
        reports = [e["data"] for e in events if e["name"] == "report"]
        assert len(reports) == 1, reports
        return dict(reports[0])

    async def events(self, index: int) -> list[dict[str, Any]]:
        return list(
            await self.call(
                "(i) => window.harness.log.mounts[i].events.filter((e) => e.name !== 'tick')",
                index,
            )
        )

    async def own_log(self, index: int) -> dict[str, Any]:
        """Mount ``index``'s counters (not its event list, which a flood makes long)."""
        return dict(
            await self.call(
                """(i) => {
                  const m = window.harness.log.mounts[i];
                  const rejects = {};
                  for (const code of m.rejects) rejects[code] = (rejects[code] || 0) + 1;
                  return { events: m.events.length, rejects, ready: m.ready,
                           reloads: m.reloads, first: m.first, last: m.last,
                           trusted: window.harness.handles[i].trusted };
                }""",
                index,
            )
        )

    # --- the sibling ----------------------------------------------------------------------

    async def round_trip(self) -> None:
        """A state to the sibling and its echo back to the shell."""
        self.echoes_sent += 1
        n = self.echoes_sent
        assert await self.post(self.sibling, {"n": n})
        await self.until(
            """([i, n]) => window.harness.log.mounts[i].events
                 .some((e) => e.name === "echo" && e.data.n === n)""",
            [self.sibling, n],
        )

    async def quiet_period(self) -> None:
        """Time for a leak to show: at least QUIET_TRIPS sibling round trips and at least
        QUIET_SECONDS of the loop's clock, so the canary's callbacks have run too."""
        loop_time = asyncio.get_running_loop().time
        start = loop_time()
        trips = 0
        while trips < QUIET_TRIPS or loop_time() - start < QUIET_SECONDS:
            await self.round_trip()
            trips += 1

    # --- checks ---------------------------------------------------------------------------

    async def shell(self) -> dict[str, Any]:
        return dict(await self.call(SHELL_SNAPSHOT_JS))

    def allowed(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return True
        shell = urlsplit(self.servers.shell)
        if (parts.hostname, parts.port) == (shell.hostname, shell.port):
            return True
        return (parts.hostname or "").endswith(".localhost") and (
            parts.port == self.servers.surface_port
        )

    async def assert_nothing_leaked(self) -> None:
        canary = self.servers.canary
        assert canary.connects == [], f"TCP connects to the canary: {canary.connects}"
        assert canary.hits == [], f"canary hits: {canary.hits}"
        assert self.outside == [], f"requests outside the shell and surface origin: {self.outside}"
        # A request the page starts shows here even when the CSP blocks it in the
        # renderer; those must have failed as blocked, and nothing else may be outside.
        outside = [url for url in self.requests if not self.allowed(url)]
        unblocked = {u: why for u in outside if (why := self.failures.get(u)) not in BLOCKED}
        assert unblocked == {}, f"requests that were not blocked in the renderer: {unblocked}"
        assert self.popups == []
        assert self.page.context.pages == [self.page]
        # Each mount's document was fetched exactly once, and nothing else was asked of
        # the surface origin in this test.
        seen = self.servers.recorder.requests[self.first_origin_request :]
        port = self.servers.surface_port
        assert sorted((r.method, r.host, r.path, r.status) for r in seen) == sorted(
            ("GET", f"{m.host_name}:{port}", "/", 200) for m in self.mounts
        )
        for frame in self.page.frames:
            assert frame.url in FRAME_URLS or self.allowed(frame.url), frame.url

    async def assert_host_works(self, *, history: int | None = 0) -> None:
        """The shell's page is as it was, and the sibling still round-trips (having seen
        exactly the states the shell sent it, and no broadcast). ``history``: how many
        entries the shell's session history gained (None: not checked here)."""
        await self.round_trip()
        now = await self.shell()
        expected = dict(self.baseline)
        assert now == expected
        events = await self.events(self.sibling)
        assert events == [
            {"name": "echo", "data": {"n": n, "keys": ["n"], "broadcast": 0}}
            for n in range(1, self.echoes_sent + 1)
        ]
        sibling = await self.own_log(self.sibling)
        assert sibling["rejects"] == {}
        assert sibling["trusted"] is True
        assert sibling["reloads"] == 0
        if history is not None:
            assert await self.call("() => history.length") == self.baseline_history + history


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stage_servers() -> AsyncIterator[StageServers]:
    async with StageServers.running() as servers:
        yield servers


@pytest_asyncio.fixture(loop_scope="module")
async def arena(stage_servers: StageServers) -> AsyncIterator[Arena]:
    servers = stage_servers
    servers.canary.clear()
    servers.stripped.clear()
    first_origin_request = len(servers.recorder.requests)
    stage = await open_stage(servers)
    context = stage.context
    cdp = await context.new_cdp_session(stage.page)
    arena = Arena(servers, stage, cdp, "s" + secrets.token_hex(6), first_origin_request)
    # Removed at the end: an engine may hand every test the same context (QtWebEngine).
    listeners: dict[str, Callable[[Any], None]] = {
        "request": lambda request: arena.requests.append(request.url),
        "requestfailed": lambda request: _note_failure(arena, request),
        "page": lambda page: arena.popups.append(page),
    }
    try:
        for event, listener in listeners.items():
            context.on(event, listener)  # type: ignore[call-overload]
        stage.page.on("crash", lambda page: _note_crash(arena))

        async def record_outside(route: Route) -> None:
            arena.outside.append(route.request.url)
            if (urlsplit(route.request.url).hostname or "").endswith(".attacker.test"):
                await route.continue_()  # let the canary hear it too
            else:
                await route.abort("blockedbyclient")

        await context.route(lambda url: not arena.allowed(url), record_outside)
        arena.sibling = await arena.mount(SIBLING_INSTANCE, document(SIBLING_HTML, SIBLING_JS))
        await arena.round_trip()
        arena.baseline = await arena.shell()
        arena.baseline_history = int(await arena.call("() => history.length"))
        yield arena
    finally:
        for event, listener in listeners.items():
            context.remove_listener(event, listener)
        await stage.close()
        servers.stripped.clear()


def _note_failure(arena: Arena, request: PlaywrightRequest) -> None:
    arena.failures[request.url] = request.failure or ""


def _note_crash(arena: Arena) -> None:
    arena.crashes += 1
