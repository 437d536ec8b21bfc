"""The MCP Apps bridge in real Chromium: an MCP view (untrusted ``ui://`` HTML) runs
nested in our surface document, speaks MCP Apps JSON-RPC to ``mcp_bridge.js``, and only
what the bridge relays reaches the shell.

The surface document comes from ``lineup.host.surface.mcp_view_document`` and is served
once by the real surface origin (``SurfaceOrigin.mount_mcp_view``: a per-mount
``m-<random>.localhost`` host on its own loopback listener). A stand-in shell page (test
code at the edge, with the real shell's CSP) frames it with ``sandbox="allow-scripts"``,
records every message and answers as the shell and Runtime would. The view side is the
real ``@modelcontextprotocol/ext-apps`` App SDK (2.0.4, from the npm registry, inlined
into a test view), the three official example servers' own views (one test runs them
against the real servers over stdio), or hand-written views that break the protocol on
purpose. A canary (``tests.support.canary``; TCP connections noted the moment they are
accepted) hears any network attempt.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from playwright.async_api import Browser, Frame, Page

from lineup.host.app import csp as shell_csp
from lineup.host.surface import SurfaceOrigin, frame_source
from tests.host.surface.listener import serving
from tests.support.browser import DEFAULT_TIMEOUT_MS, VIEWPORT, PageWatch, save_screenshot
from tests.support.canary import launch_chromium_with, resolver_args
from tests.support.ext_apps import (
    ExtAppsUnavailable,
    app_sdk_script,
    example_server,
    example_view,
)
from tests.support.surface_stage import ConnectCanary

PARENT_JS = """
const NS = "lineup.mcp.v1";
const frames = [];
const mounts = [];
window.strays = []; // messages from a window that is no surface frame (a view, directly)
window.mounts = mounts;
window.addEventListener("message", (e) => {
  const at = frames.findIndex((f) => f.contentWindow === e.source);
  if (at < 0) { window.strays.push(e.data); return; }
  const own = mounts[at];
  const data = e.data;
  if (data && data.namespace === "lineup.surface.v1") {
    own.surface.push(data);
    if (data.type === "resize") {
      const height = Math.round(Math.min(4000, Math.max(40, data.height)));
      frames[at].style.height = height + "px";
    }
  } else if (data && data.namespace === NS) {
    own.mcp.push(data);
    if (window.lineupMcp) window.lineupMcp(at, data); // the test's Runtime, if it has one
  } else {
    own.unknown += 1;
  }
});
window.mount = (url, instanceId, mountId) => {
  const frame = document.createElement("iframe");
  frame.setAttribute("sandbox", "allow-scripts");
  frame.setAttribute("referrerpolicy", "no-referrer");
  frame.setAttribute("title", "Surface");
  frame.className = "surface-frame";
  frames.push(frame);
  mounts.push({ url, instanceId, mountId, surface: [], mcp: [], unknown: 0 });
  frame.src = url;
  document.getElementById("stage").append(frame);
  return frames.length - 1;
};
window.toSurface = (index, message) => {
  const own = mounts[index];
  frames[index].contentWindow.postMessage(
    { namespace: NS, instance_id: own.instanceId, ...message }, "*");
};
"""
PARENT_CSS = """
body { font: 16px sans-serif; margin: 24px; background: #f4f4f6; }
.surface-frame { display: block; width: 560px; border: 1px solid #99a; background: white; }
"""
PARENT_HTML = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><link rel="icon" href="data:,">
<title>MCP view harness</title><link rel="stylesheet" href="/parent.css">
<script type="module" src="/parent.js"></script>
</head><body><h1>Shell</h1><div id="stage"></div></body></html>"""
CONTROL_HTML = """<!doctype html><html><head><meta charset="utf-8"><title>Control</title></head>
<body><script>fetch("http://control.attacker.test/control", { mode: "no-cors" }).catch(() => {});
</script></body></html>"""


@dataclass
class _Server:
    """The stand-in shell's own server (the surface origin is a second listener)."""

    port: int = 0
    surface_port: int = 0

    @property
    def shell(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        host = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
        status, body, headers = self._respond(host, scope["path"])
        raw = [(k.lower().encode(), v.encode()) for k, v in headers.items()]
        raw.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": raw})
        await send({"type": "http.response.body", "body": body})

    def _respond(self, host: str, path: str) -> tuple[int, bytes, dict[str, str]]:
        if host == f"127.0.0.1:{self.port}":
            policy = shell_csp([frame_source(self.surface_port)])
            html = {"Content-Type": "text/html; charset=utf-8", "Content-Security-Policy": policy}
            if path == "/":
                return 200, PARENT_HTML.encode(), html
            if path == "/control":
                return 200, CONTROL_HTML.encode(), {"Content-Type": "text/html"}
            if path == "/parent.js":
                return 200, PARENT_JS.encode(), {"Content-Type": "text/javascript"}
            if path == "/parent.css":
                return 200, PARENT_CSS.encode(), {"Content-Type": "text/css"}
        return 404, b"", {}


McpHandler = Callable[[int, dict[str, Any]], None]


@dataclass
class Stage:
    server: _Server
    origin: SurfaceOrigin
    page: Page
    watch: PageWatch
    canary: ConnectCanary
    count: int = 0
    on_mcp: McpHandler | None = None
    """Called with (mount index, message) for every lineup.mcp.v1 message, if set."""

    async def mount(
        self,
        view_html: str,
        ui_meta: dict[str, Any] | None = None,
        tool: dict[str, Any] | None = None,
    ) -> int:
        self.count += 1
        mount = self.origin.mount_mcp_view(
            f"inst-{self.count}", view_html, ui_meta, name="Example server", lang="en", tool=tool
        )
        return int(
            await self.page.evaluate(
                "([u, i, m]) => window.mount(u, i, m)",
                [mount.url, mount.instance_id, mount.mount_id],
            )
        )

    async def mcp(self, index: int) -> list[dict[str, Any]]:
        return list(await self.page.evaluate("(i) => window.mounts[i].mcp", index))

    async def surface(self, index: int) -> list[dict[str, Any]]:
        return list(await self.page.evaluate("(i) => window.mounts[i].surface", index))

    async def until_mcp(self, index: int, predicate: str) -> dict[str, Any]:
        """The first lineup.mcp.v1 message of mount ``index`` matching a JS predicate
        ``(m) => bool``, waiting for it."""
        handle = await self.page.wait_for_function(
            f"([i]) => window.mounts[i].mcp.find({predicate}) || false", arg=[index]
        )
        return dict(await handle.json_value())

    async def ready(self, index: int) -> None:
        """Wait for the surface's ``ready``: the shell posts nothing before it."""
        await self.page.wait_for_function(
            "([i]) => window.mounts[i].surface.some((m) => m.type === 'ready')", arg=[index]
        )

    async def to_surface(self, index: int, message: dict[str, Any]) -> None:
        await self.page.evaluate("([i, m]) => window.toSurface(i, m)", [index, message])

    async def surface_frame(self, index: int) -> Frame:
        url = await self.page.evaluate("(i) => window.mounts[i].url", index)
        element = await self.page.wait_for_selector(f'iframe[src="{url}"]', state="attached")
        assert element is not None
        frame = await element.content_frame()
        assert frame is not None
        return frame

    async def view(self, index: int) -> Frame:
        """The view's frame: the one the bridge nests in the mount's surface frame."""
        surface = await self.surface_frame(index)
        element = await surface.wait_for_selector("#lineup-mcp-view", state="attached")
        assert element is not None
        frame = await element.content_frame()
        assert frame is not None
        return frame


@asynccontextmanager
async def _origin(shell_port: int) -> AsyncIterator[SurfaceOrigin]:
    """The real surface origin, on a listener of its own, framable by the shell."""
    origin = SurfaceOrigin([f"http://127.0.0.1:{shell_port}"])
    async with serving(origin.asgi()) as port:
        origin.bind_port(port)
        yield origin


@pytest.fixture(scope="module")
def sdk() -> str:
    try:
        return app_sdk_script()
    except ExtAppsUnavailable as error:  # no registry here: say so, do not pass quietly
        pytest.fail(f"the ext-apps App SDK is needed from the npm registry: {error}")


@pytest.fixture
async def canary() -> AsyncIterator[ConnectCanary]:
    async with ConnectCanary.listening() as listening:
        assert isinstance(listening, ConnectCanary)
        yield listening


@pytest.fixture
async def mcp_browser(canary: ConnectCanary) -> AsyncIterator[Browser]:
    async with launch_chromium_with(resolver_args(canary)) as browser:
        yield browser


@pytest.fixture
async def stage(mcp_browser: Browser, canary: ConnectCanary) -> AsyncIterator[Stage]:
    server = _Server()
    async with serving(server) as port, _origin(port) as origin:
        server.port = port
        server.surface_port = origin.port or 0
        context = await mcp_browser.new_context(viewport=VIEWPORT)
        context.set_default_timeout(DEFAULT_TIMEOUT_MS)
        page = await context.new_page()
        watch = PageWatch()
        watch.attach(page)
        staged = Stage(server, origin, page, watch, canary)

        def relay(index: int, message: dict[str, Any]) -> None:
            if staged.on_mcp is not None:
                staged.on_mcp(index, message)

        await page.expose_function("lineupMcp", relay)
        await page.goto(server.shell + "/")
        await page.wait_for_function("() => window.mount !== undefined")
        try:
            yield staged
        finally:
            await context.close()


def sdk_view(sdk: str, body: str) -> str:
    """A test view whose JSON-RPC side is the real App SDK; ``run(name, fn)`` keeps
    what ``fn()``'s promise settles to in ``window.results[name]``."""
    prelude = """
const { App } = globalThis.ExtApps;
window.results = {};
window.run = (name, fn) => fn().then(
  (value) => { window.results[name] = { ok: value }; },
  (error) => {
    const { code, message, data } = error;
    window.results[name] = { error: { code, message: String(message), data } };
  });
"""
    return (
        '<!doctype html><html><head><meta charset="utf-8"><title>Test view</title></head>'
        '<body><p id="status">starting</p>'
        f'<script type="module">{sdk}\n{prelude}\n{body}</script></body></html>'
    )


SDK_BODY = """
const app = new App({ name: "Test View", version: "1.2.3" }, { availableDisplayModes: ["inline"] });
const seen = [];
window.seen = seen;
window.app = app;
// "early": it came before the handshake ended (the host must send nothing before the
// view's ui/notifications/initialized, and the SDK would not notice if it did).
const early = () => window.connected === undefined;
app.ontoolinput = (params) => seen.push({ kind: "tool-input", params, early: early() });
app.ontoolresult = (params) => {
  seen.push({ kind: "tool-result", params, early: early() });
  document.getElementById("status").textContent = "result: " + params.content[0].text;
};
app.onhostcontextchanged = (params) => seen.push({ kind: "context", params });
app.onteardown = async (params) => { seen.push({ kind: "teardown" }); return {}; };
await app.connect();
window.connected = {
  context: app.getHostContext(),
  capabilities: app.getHostCapabilities(),
  host: app.getHostVersion(),
};
"""

TOOL = {"name": "get-time", "inputSchema": {"type": "object", "properties": {}}}


async def _result(view: Frame, name: str) -> dict[str, Any]:
    handle = await view.wait_for_function(f"() => window.results[{json.dumps(name)}] || false")
    return dict(await handle.json_value())


async def _request(stage: Stage, index: int, method: str) -> dict[str, Any]:
    return await stage.until_mcp(
        index, f"(m) => m.type === 'request' && m.method === {json.dumps(method)}"
    )


async def test_the_real_app_sdk_handshakes_gets_input_and_result_and_its_requests_are_relayed(
    stage: Stage, sdk: str, request: pytest.FixtureRequest
) -> None:
    index = await stage.mount(sdk_view(sdk, SDK_BODY), tool=TOOL)
    await stage.ready(index)
    # The shell sends the result before the input, and both before the view is ready:
    # the bridge holds them for ui/notifications/initialized and keeps the order.
    await stage.to_surface(index, {"type": "tool_result", "result": _TIME_RESULT})
    await stage.to_surface(index, {"type": "tool_input", "arguments": {"zone": "UTC"}})
    initialized = await stage.until_mcp(
        index, "(m) => m.type === 'event' && m.name === 'view.initialized'"
    )
    assert initialized["data"] == {
        "app_name": "Test View",
        "app_version": "1.2.3",
        "protocol_version": "2026-01-26",
        "app_tools": False,
        "display_modes": ["inline"],
    }
    view = await stage.view(index)
    await view.wait_for_function("() => window.seen && window.seen.length >= 2")
    seen = await view.evaluate("() => window.seen")
    assert seen == [
        {"kind": "tool-input", "params": {"arguments": {"zone": "UTC"}}, "early": False},
        {"kind": "tool-result", "params": _TIME_RESULT, "early": False},
    ]
    await view.wait_for_function("() => window.connected !== undefined")
    connected = await view.evaluate("() => window.connected")
    context = connected["context"]
    assert {k: context[k] for k in ("theme", "locale", "displayMode", "platform")} == {
        "theme": "light",
        "locale": "en",
        "displayMode": "inline",
        "platform": "web",
    }
    assert context["availableDisplayModes"] == ["inline"]
    assert context["styles"]["variables"]["--color-text-primary"] == "#1d2330"
    assert context["toolInfo"] == {"tool": TOOL}
    assert context["containerDimensions"]["maxHeight"] == 4000
    assert 500 <= context["containerDimensions"]["width"] <= 560
    assert isinstance(context["timeZone"], str)
    assert connected["host"]["name"] == "LineUp"
    assert connected["capabilities"]["sandbox"] == {"permissions": {}, "csp": {}}
    assert await view.locator("#status").text_content() == "result: 12:00:00Z"

    # tools/call: relayed with the view's name and arguments only (no _meta), and the
    # shell's answer is the view's result.
    await view.evaluate(
        "() => void run('call', () => app.callServerTool({name: 'get-time', arguments: {}}))"
    )
    relayed = await _request(stage, index, "tools/call")
    assert set(relayed) == {
        "namespace",
        "type",
        "instance_id",
        "mount_id",
        "id",
        "method",
        "params",
    }
    assert relayed["params"] == {"name": "get-time", "arguments": {}}
    assert (relayed["instance_id"], relayed["id"]) == ("inst-1", "v1")
    await stage.to_surface(
        index, {"type": "response", "id": relayed["id"], "ok": True, "result": _TIME_RESULT}
    )
    assert (await _result(view, "call"))["ok"]["content"] == _TIME_RESULT["content"]

    # A refusal becomes a JSON-RPC error whose data carries the stable code.
    await view.evaluate(
        "() => void run('link', () => app.openLink({url: 'https://example.com/x'}))"
    )
    link = await _request(stage, index, "ui/open-link")
    assert link["params"] == {"url": "https://example.com/x"}
    refusal = {"code": "capability_denied", "message": "The person said no."}
    await stage.to_surface(
        index, {"type": "response", "id": link["id"], "ok": False, "error": refusal}
    )
    assert (await _result(view, "link"))["error"] == {
        "code": -32000,
        "message": "The person said no.",
        "data": {"code": "capability_denied"},
    }

    await view.evaluate(
        "() => void run('message', () => app.sendMessage({role: 'user',"
        " content: [{type: 'text', text: 'hello'}]}))"
    )
    message = await _request(stage, index, "ui/message")
    assert message["params"] == {"role": "user", "content": [{"type": "text", "text": "hello"}]}
    await stage.to_surface(
        index, {"type": "response", "id": message["id"], "ok": True, "result": {}}
    )
    assert (await _result(view, "message")) == {"ok": {}}

    await view.evaluate(
        "() => void run('context', () => app.updateModelContext({structuredContent: {n: 1}}))"
    )
    update = await _request(stage, index, "ui/update-model-context")
    assert update["params"] == {"structuredContent": {"n": 1}}
    await stage.to_surface(
        index, {"type": "response", "id": update["id"], "ok": True, "result": {}}
    )
    assert (await _result(view, "context")) == {"ok": {}}

    await view.evaluate(
        "() => void run('mode', () => app.requestDisplayMode({mode: 'fullscreen'}))"
    )
    mode = await _request(stage, index, "ui/request-display-mode")
    assert mode["params"] == {"mode": "fullscreen"}
    await stage.to_surface(
        index, {"type": "response", "id": mode["id"], "ok": True, "result": {"mode": "inline"}}
    )
    assert (await _result(view, "mode")) == {"ok": {"mode": "inline"}}

    # A log reaches the shell as its level and size, never its text.
    await view.evaluate("() => app.sendLog({level: 'warning', data: 'a secret line'})")
    log = await stage.until_mcp(index, "(m) => m.type === 'event' && m.name === 'view.log'")
    assert log["data"] == {"level": "warning", "bytes": len(json.dumps("a secret line"))}
    assert "a secret line" not in json.dumps(await stage.mcp(index))

    # The SDK's auto-resize reached the shell as LineUp resizes (notice-less: the
    # view's own height), and the view frame follows it.
    surface = await stage.surface(index)
    assert surface[0]["type"] == "ready"
    heights = [m["height"] for m in surface if m["type"] == "resize"]
    assert heights[0] == 150 and len(heights) >= 2
    # A host context change reaches the view once it is initialized.
    await stage.to_surface(index, {"type": "host_context", "context": {"theme": "dark"}})
    await view.wait_for_function("() => window.seen.some((s) => s.kind === 'context')")
    # The shell narrows the frame: the view hears its new container width.
    await stage.page.evaluate(
        "() => { document.querySelector('iframe.surface-frame').style.width = '400px'; }"
    )
    narrowed = await view.wait_for_function(
        "() => window.seen.find((s) => s.kind === 'context' && s.params.containerDimensions)"
    )
    dims = (await narrowed.json_value())["params"]["containerDimensions"]
    assert dims["maxHeight"] == 4000 and 380 <= dims["width"] <= 400

    await save_screenshot(stage.page, request.node.name, "mounted")
    # Teardown: a ui/resource-teardown request, the view's handler runs, its answer
    # reaches the shell as view.torn_down.
    await stage.to_surface(index, {"type": "teardown", "reason": "closed by the person"})
    torn = await stage.until_mcp(index, "(m) => m.type === 'event' && m.name === 'view.torn_down'")
    assert torn["data"] == {"answered": True}
    assert (await view.evaluate("() => window.seen.at(-1)")) == {"kind": "teardown"}
    assert await stage.page.evaluate("() => window.strays") == []
    assert [m["type"] for m in await stage.mcp(index)].count("request") == 5
    assert (stage.canary.hits, stage.canary.connects) == ([], [])


_TIME_RESULT = {
    "content": [{"type": "text", "text": "12:00:00Z"}],
    "structuredContent": {"time": "12:00:00Z"},
}

RAW_VIEW = """<!doctype html><html><head><meta charset="utf-8"></head><body><p>raw</p><script>
window.answers = {};
window.blocked = [];
addEventListener("message", (e) => {
  if (e.source !== parent) return;
  const m = e.data;
  if (m && m.jsonrpc === "2.0" && "id" in m) {
    const key = JSON.stringify(m.id);
    window.answers[key] = window.answers[key] || [];
    window.answers[key].push(m.error ? m.error : { result: m.result });
  }
});
const send = (m) => parent.postMessage(m, "*");
window.attack = () => {
  send({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "x" } });
  send({ jsonrpc: "2.0", id: 2, method: "ui/initialize",
         params: { protocolVersion: "2026-01-26", appInfo: { name: "raw", version: "0" },
                   appCapabilities: {} } });
  send({ jsonrpc: "2.0", id: 3, method: "sampling/createMessage", params: {} });
  send({ jsonrpc: "2.0", id: 4, method: "no/such-method" });
  send({ jsonrpc: "1.0", id: 5, method: "ping" });
  send({ jsonrpc: "2.0", id: 6, method: "tools/call", params: { name: 42 } });
  send({ jsonrpc: "2.0", id: 7, method: "tools/call", params: [1] });
  send({ jsonrpc: "2.0", id: 8, method: "ping" });
  send({ jsonrpc: "2.0", id: 9, method: "tools/call",
         params: { name: "a", arguments: { blob: "x".repeat(200000) } } });
  send({ jsonrpc: "2.0", id: {}, method: "ping" });
  send({ jsonrpc: "2.0", id: 10, method: "ui/open-link", params: { url: new Date(0) } });
  send({ jsonrpc: "2.0", id: 11, method: "ui/open-link", params: { url: "not a url" } });
  send({ jsonrpc: "2.0", id: 12, method: "ui/message",
         params: { role: "assistant", content: [] } });
  send({ jsonrpc: "2.0", method: "ui/notifications/unknown", params: {} });
  send("just a string");
  // Straight to the shell, past the bridge: the shell hears it as a stray, not the mount.
  top.postMessage({ jsonrpc: "2.0", id: 13, method: "tools/call", params: { name: "x" } }, "*");
  try { parent.LineUpSurface.event("x", {}); } catch (error) { window.blocked.push(error.name); }
  try { parent.document.body; } catch (error) { window.blocked.push(error.name); }
};
window.flood = () => {
  for (let i = 0; i < 300; i++) send({ jsonrpc: "2.0", id: "f" + i, method: "ping" });
};
</script></body></html>"""


def _codes(answers: dict[str, Any], key: Any) -> list[Any]:
    return [
        (a.get("code"), (a.get("data") or {}).get("code")) if "result" not in a else "ok"
        for a in answers.get(json.dumps(key), [])
    ]


async def test_a_view_breaking_the_protocol_is_answered_by_the_bridge_and_never_reaches_the_shell(
    stage: Stage,
) -> None:
    index = await stage.mount(RAW_VIEW)
    view = await stage.view(index)
    await view.wait_for_function("() => window.attack !== undefined")
    await view.evaluate("() => window.attack()")
    await view.wait_for_function("() => Object.keys(window.answers).length >= 12")
    answers = await view.evaluate("() => window.answers")
    assert _codes(answers, 1) == [(-32000, "request_invalid")]  # before ui/initialize
    assert answers[json.dumps(2)][0]["result"]["protocolVersion"] == "2026-01-26"
    assert _codes(answers, 3) == [(-32601, "method_unknown")]
    assert _codes(answers, 4) == [(-32601, "method_unknown")]
    assert json.dumps(5) not in answers  # not JSON-RPC 2.0: dropped
    assert _codes(answers, 6) == [(-32602, "request_invalid")]
    assert _codes(answers, 7) == [(-32602, "request_invalid")]
    assert _codes(answers, 8) == ["ok"]
    assert _codes(answers, 9) == [(-32600, "too_large")]
    assert _codes(answers, None) == [(-32600, "request_invalid")]  # id {} is no id
    assert _codes(answers, 10) == [(-32600, "request_invalid")]  # a Date is not JSON
    assert _codes(answers, 11) == [(-32602, "request_invalid")]
    assert _codes(answers, 12) == [(-32602, "request_invalid")]
    assert sorted(await view.evaluate("() => window.blocked")) == ["SecurityError"] * 2
    strays = await stage.page.evaluate("() => window.strays")
    assert strays == [{"jsonrpc": "2.0", "id": 13, "method": "tools/call", "params": {"name": "x"}}]

    await view.evaluate("() => window.flood()")
    await view.wait_for_function(
        "() => Array.from({length: 300}, (_, i) => JSON.stringify('f' + i))"
        ".every((k) => window.answers[k])"
    )
    answers = await view.evaluate("() => window.answers")
    flood = [c for i in range(300) for c in _codes(answers, f"f{i}")]
    assert len(flood) == 300
    assert "ok" in flood and (-32000, "rate_limited") in flood
    assert set(flood) == {"ok", (-32000, "rate_limited")}
    # Nothing the view sent was for the shell to decide.
    assert await stage.mcp(index) == []


async def test_the_official_basic_view_renders_offline_and_its_button_calls_its_tool(
    stage: Stage, request: pytest.FixtureRequest
) -> None:
    try:
        html = example_view("@modelcontextprotocol/server-basic-vanillajs")
    except ExtAppsUnavailable as error:
        pytest.fail(f"the example server is needed from the npm registry: {error}")
    index = await stage.mount(html, tool={"name": "get-time", "inputSchema": {"type": "object"}})
    await stage.ready(index)
    await stage.to_surface(index, {"type": "tool_input", "arguments": {}})
    await stage.to_surface(index, {"type": "tool_result", "result": _TIME_RESULT})
    await stage.until_mcp(index, "(m) => m.type === 'event' && m.name === 'view.initialized'")
    view = await stage.view(index)
    await view.get_by_text("12:00:00Z").wait_for()
    await view.get_by_role("button", name="Get Server Time").click()
    relayed = await _request(stage, index, "tools/call")
    assert relayed["params"] == {"name": "get-time", "arguments": {}}
    later = {
        "content": [{"type": "text", "text": "13:30:00Z"}],
        "structuredContent": {"time": "13:30:00Z"},
    }
    await stage.to_surface(
        index, {"type": "response", "id": relayed["id"], "ok": True, "result": later}
    )
    await view.get_by_text("13:30:00Z").wait_for()
    await save_screenshot(stage.page, request.node.name, "basic-view")
    assert (stage.canary.hits, stage.canary.connects) == ([], [])


DOMAINS_VIEW = """<!doctype html><html><head><meta charset="utf-8"></head><body>
<h1 id="title">Weather</h1><img src="http://cdn.attacker.test/logo.png" alt="">
<script>
window.outcome = "pending";
fetch("http://api.attacker.test/forecast").then(
  () => { window.outcome = "reached"; }, () => { window.outcome = "blocked"; });
</script></body></html>"""


async def test_a_view_that_names_domains_renders_without_them_and_the_person_is_told(
    stage: Stage, request: pytest.FixtureRequest
) -> None:
    meta = {
        "csp": {
            "connectDomains": ["http://api.attacker.test"],
            "resourceDomains": ["http://cdn.attacker.test", "bad; script-src *"],
        }
    }
    index = await stage.mount(DOMAINS_VIEW, ui_meta=meta)
    view = await stage.view(index)
    await view.wait_for_function("() => window.outcome !== 'pending'")
    assert await view.evaluate("() => window.outcome") == "blocked"
    assert await view.locator("#title").text_content() == "Weather"
    surface = await stage.surface_frame(index)
    notice = surface.locator("#lineup-mcp-notice")
    assert await notice.get_attribute("role") == "status"
    text = await notice.text_content()
    assert text is not None
    assert "http://api.attacker.test, http://cdn.attacker.test" in text
    assert "no internet access" in text and "script-src" not in text
    await save_screenshot(stage.page, request.node.name, "notice")

    # The canary can hear (a page without the surface's headers reaches it), and heard
    # nothing from the view.
    assert (stage.canary.hits, stage.canary.connects) == ([], [])
    control = await stage.page.context.new_page()
    await control.goto(stage.server.shell + "/control")
    assert "control" in (await stage.canary.wait_for("tcp")).first_line
    assert all("control" in hit.first_line for hit in stage.canary.tcp_hits())


UI_EXTENSION = {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}}


def _wire(model: Any) -> dict[str, Any]:
    return dict(model.model_dump(by_alias=True, exclude_none=True, mode="json"))


@asynccontextmanager
async def _server(package: str, errlog: Path) -> AsyncIterator[ClientSession]:
    """An official example server over stdio, as the Runtime's MCP client would run it."""
    try:
        command = example_server(package)
    except ExtAppsUnavailable as error:
        pytest.fail(f"the example server is needed from the npm registry: {error}")
    params = StdioServerParameters(command=command[0], args=command[1:])
    with errlog.open("w") as err:
        async with (
            stdio_client(params, errlog=err) as (read, write),
            ClientSession(read, write, extensions=UI_EXTENSION) as session,
        ):
            await session.initialize()
            yield session


class _Runtime:
    """The test's stand-in for the Runtime behind the shell: it answers a view's
    ``tools/call`` from the real server, for tools whose visibility includes "app"."""

    def __init__(self, stage: Stage, session: ClientSession, tools: dict[str, Any]) -> None:
        self.stage, self.session, self.tools = stage, session, tools
        self.calls: list[str] = []
        self.changed = asyncio.Event()
        self.tasks: set[asyncio.Task[None]] = set()
        stage.on_mcp = self.on_message

    def on_message(self, index: int, message: dict[str, Any]) -> None:
        if message["type"] == "request":
            task = asyncio.create_task(self.answer(index, message))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def answer(self, index: int, message: dict[str, Any]) -> None:
        reply: dict[str, Any]
        params = message["params"]
        tool = self.tools.get(params.get("name")) if message["method"] == "tools/call" else None
        visibility = ((tool or {}).get("_meta") or {}).get("ui", {}).get("visibility")
        if tool is None or "app" not in (visibility or ["model", "app"]):
            reply = {"ok": False, "error": {"code": "tool_not_advertised", "message": "no"}}
        else:
            result = await self.session.call_tool(params["name"], params["arguments"])
            reply = {"ok": True, "result": _wire(result)}
            self.calls.append(params["name"])
        await self.stage.to_surface(index, {"type": "response", "id": message["id"], **reply})
        self.changed.set()

    async def until_calls(self, count: int) -> None:
        async with asyncio.timeout(20):
            while len(self.calls) < count:
                self.changed.clear()
                await self.changed.wait()


EXAMPLES = {
    # package: (the text its view shows once it has the tool result, app calls to wait for)
    "@modelcontextprotocol/server-basic-vanillajs": ("Server Time", 0),
    "@modelcontextprotocol/server-budget-allocator": ("Marketing", 0),
    "@modelcontextprotocol/server-system-monitor": ("Memory", 2),
}


@pytest.mark.parametrize("package", sorted(EXAMPLES))
async def test_an_official_example_runs_against_its_real_server_through_the_bridge(
    stage: Stage, package: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    shows, polls = EXAMPLES[package]
    async with _server(package, tmp_path / "stderr.txt") as session:
        tools = {t.name: _wire(t) for t in (await session.list_tools()).tools}
        name, tool = next((n, t) for n, t in tools.items() if "resourceUri" in t["_meta"]["ui"])
        read = await session.read_resource(tool["_meta"]["ui"]["resourceUri"])
        content = _wire(read.contents[0])
        assert content["mimeType"] == "text/html;profile=mcp-app"
        runtime = _Runtime(stage, session, tools)
        index = await stage.mount(
            content["text"], (content.get("_meta") or {}).get("ui"), tool=tool
        )
        await stage.ready(index)
        result = _wire(await session.call_tool(name, {}))
        await stage.to_surface(index, {"type": "tool_input", "arguments": {}})
        await stage.to_surface(index, {"type": "tool_result", "result": result})
        await stage.until_mcp(index, "(m) => m.type === 'event' && m.name === 'view.initialized'")
        view = await stage.view(index)
        await view.get_by_text(shows).first.wait_for()
        if package.endswith("basic-vanillajs"):
            await view.get_by_role("button", name="Get Server Time").click()
            polls = 1
        await runtime.until_calls(polls)
        await save_screenshot(stage.page, request.node.name, "real-server")
        await stage.to_surface(index, {"type": "teardown"})
        torn = await stage.until_mcp(
            index, "(m) => m.type === 'event' && m.name === 'view.torn_down'"
        )
        assert torn["data"] == {"answered": True}
    if package.endswith("system-monitor"):
        assert set(runtime.calls) == {"poll-system-stats"}  # app-only, so the app may
    assert (stage.canary.hits, stage.canary.connects) == ([], [])
    assert await stage.page.evaluate("() => window.strays") == []


LIFECYCLE_VIEW = """<!doctype html><html><head><meta charset="utf-8"></head><body><p>raw</p><script>
window.got = [];
addEventListener("message", (e) => { if (e.source === parent) window.got.push(e.data); });
const send = (m) => parent.postMessage(m, "*");
send({ jsonrpc: "2.0", id: "init", method: "ui/initialize",
       params: { protocolVersion: "2026-01-26", appInfo: { name: "raw", version: "0" },
                 appCapabilities: {} } });
send({ jsonrpc: "2.0", method: "ui/notifications/initialized" });
window.call = (id, name) => send({ jsonrpc: "2.0", id, method: "tools/call",
  params: { name, arguments: {}, _meta: { progressToken: "p-" + id } } });
window.cancel = (id) => send({ jsonrpc: "2.0", method: "notifications/cancelled",
  params: { requestId: id, reason: "user" } });
window.askTeardown = () => send({ jsonrpc: "2.0", method: "ui/notifications/request-teardown" });
</script></body></html>"""


async def _got(view: Frame, predicate: str) -> dict[str, Any]:
    handle = await view.wait_for_function(f"() => window.got.find({predicate}) || false")
    return dict(await handle.json_value())


async def test_cancel_progress_order_teardown_timeout_and_a_reload_are_kept_to_the_protocol(
    stage: Stage,
) -> None:
    index = await stage.mount(LIFECYCLE_VIEW)
    await stage.ready(index)
    await stage.until_mcp(index, "(m) => m.type === 'event' && m.name === 'view.initialized'")
    view = await stage.view(index)
    # A second tool_input, and a result after a cancellation, are not the protocol's:
    # the view gets one input and one terminal notification.
    for message in (
        {"type": "tool_input", "arguments": {"a": 1}},
        {"type": "tool_input", "arguments": {"a": 2}},
        {"type": "tool_cancelled", "reason": "the agent dismissed the call"},
        {"type": "tool_result", "result": _TIME_RESULT},
    ):
        await stage.to_surface(index, message)
    await _got(view, "(m) => m.method === 'ui/notifications/tool-cancelled'")

    # Progress for a relayed call reaches the view under its own progressToken; the
    # view's cancellation reaches the shell, and a late answer reaches nobody.
    await view.evaluate("() => window.call(7, 'slow')")
    slow = await _request(stage, index, "tools/call")
    await stage.to_surface(index, {"type": "progress", "id": slow["id"], "progress": 1, "total": 3})
    progress = await _got(view, "(m) => m.method === 'notifications/progress'")
    assert progress["params"] == {"progressToken": "p-7", "progress": 1, "total": 3}
    await view.evaluate("() => window.cancel(7)")
    cancel = await stage.until_mcp(index, "(m) => m.type === 'cancel'")
    assert cancel["id"] == slow["id"]
    await stage.to_surface(index, {"type": "response", "id": slow["id"], "ok": True, "result": {}})
    # The view asks to be torn down; the shell hears it.
    await view.evaluate("() => window.askTeardown()")
    await stage.until_mcp(index, "(m) => m.name === 'view.teardown_requested'")
    # A call still waiting when the shell tears the view down: the view's teardown
    # request goes unanswered, so the bridge gives up after its timeout; the waiting
    # call is answered with an error and cancelled for the shell.
    await view.evaluate("() => window.call(8, 'waiting')")
    waiting = await stage.until_mcp(
        index, "(m) => m.type === 'request' && m.params.name === 'waiting'"
    )
    await stage.to_surface(index, {"type": "teardown", "reason": "closed"})
    teardown = await _got(view, "(m) => m.method === 'ui/resource-teardown'")
    assert teardown == {
        "jsonrpc": "2.0",
        "id": "lineup-teardown",
        "method": "ui/resource-teardown",
        "params": {"reason": "closed"},
    }
    torn = await stage.until_mcp(index, "(m) => m.name === 'view.torn_down'")
    assert torn["data"] == {"answered": False}
    refused = await _got(view, "(m) => m.id === 8")
    assert refused["error"]["data"] == {"code": "request_invalid"}
    cancels = [m["id"] for m in await stage.mcp(index) if m["type"] == "cancel"]
    assert cancels == [slow["id"], waiting["id"]]

    got = await view.evaluate("() => window.got.filter((m) => m.method)")
    methods = [m["method"] for m in got]
    assert methods == [
        "ui/notifications/tool-input",
        "ui/notifications/tool-cancelled",
        "notifications/progress",
        "ui/resource-teardown",
    ]
    assert got[0]["params"] == {"arguments": {"a": 1}}
    answered = await view.evaluate("() => window.got.filter((m) => m.id === 7)")
    assert answered == []


NAVIGATING_VIEW = """<!doctype html><html><head><meta charset="utf-8"></head><body><script>
parent.postMessage({ jsonrpc: "2.0", id: "init", method: "ui/initialize",
  params: { protocolVersion: "2026-01-26", appInfo: { name: "nav", version: "0" },
            appCapabilities: {} } }, "*");
parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized" }, "*");
parent.postMessage({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "x" } }, "*");
window.go = (url) => { location.href = url; };
</script></body></html>"""


@pytest.mark.parametrize("target", ["reload", "http://nav.attacker.test/away"])
async def test_a_view_that_reloads_or_navigates_itself_is_cut_off(
    stage: Stage, target: str
) -> None:
    index = await stage.mount(NAVIGATING_VIEW)
    await stage.ready(index)
    call = await _request(stage, index, "tools/call")
    view = await stage.view(index)
    script = "() => location.reload()" if target == "reload" else f"() => window.go({target!r})"
    await view.evaluate(script)
    await stage.until_mcp(index, "(m) => m.name === 'view.reloaded'")
    assert [m for m in await stage.mcp(index) if m["type"] == "cancel"] == [
        {**{k: call[k] for k in ("namespace", "instance_id", "mount_id", "id")}, "type": "cancel"}
    ]
    # What the new document sends is dropped: nothing more reaches the shell.
    before = len(await stage.mcp(index))
    await stage.to_surface(index, {"type": "tool_input", "arguments": {}})
    surface = await stage.surface_frame(index)
    assert await surface.evaluate("() => LineUpMcpBridge.pending") == 0
    assert len(await stage.mcp(index)) == before
    assert (stage.canary.hits, stage.canary.connects) == ([], [])


FUZZ_VIEW = """<!doctype html><html><head><meta charset="utf-8"></head><body><script>
window.answers = 0;
window.pong = false;
addEventListener("message", (e) => {
  if (e.source !== parent) return;
  window.answers += 1;
  if (e.data && e.data.id === "after" && e.data.result) window.pong = true;
});
let seed = SEED;
const rand = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const RELAYED = ["tools/call", "resources/read", "ui/open-link", "ui/message",
  "ui/update-model-context", "ui/request-display-mode"];
const METHODS = [...RELAYED, ...RELAYED, ...RELAYED, "ping", "ui/notifications/initialized",
  "ui/notifications/size-changed", "notifications/message", "notifications/cancelled",
  "ui/notifications/request-teardown", "ui/resource-teardown", "x", "", "__proto__",
  "constructor", "toString"];
const value = (depth) => {
  const kinds = depth > 3 ? 6 : 10;
  switch (Math.floor(rand() * kinds)) {
    case 0: return null;
    case 1: return rand() < 0.5;
    case 2: return pick([0, -1, 1.5, 2 ** 60, NaN, Infinity, -0]);
    case 3: return pick(["", "x", "\\ud800", "ui/open-link", "https://a.example/",
                         "a".repeat(3000)]);
    case 4: return undefined;
    case 5: return pick([new Date(0), new Map(), new Uint8Array(4), /re/, new Error("e")]);
    case 6: return Array.from({ length: Math.floor(rand() * 4) }, () => value(depth + 1));
    default: {
      const o = {};
      for (const k of ["name", "arguments", "uri", "url", "role", "content", "mode", "height",
                       "requestId", "level", "data", "_meta", "__proto__", "then"]) {
        if (rand() < 0.3) o[k] = value(depth + 1);
      }
      return o;
    }
  }
};
parent.postMessage({ jsonrpc: "2.0", id: "init", method: "ui/initialize",
  params: { protocolVersion: "2026-01-26", appInfo: { name: "fuzz", version: "0" } } }, "*");
parent.postMessage({ jsonrpc: "2.0", method: "ui/notifications/initialized" }, "*");
window.fuzz = (count) => {
  for (let i = 0; i < count; i++) {
    const m = {};
    if (rand() < 0.95) m.jsonrpc = pick(["2.0", "2.0", "2.0", "2.0", "1.0", 2]);
    if (rand() < 0.9) m.method = rand() < 0.9 ? pick(METHODS) : value(2);
    if (rand() < 0.8) m.id = rand() < 0.85 ? i : value(2);
    if (rand() < 0.7) m.params = rand() < 0.6 ? value(1) : {};
    if (rand() < 0.1) m.result = value(2);
    parent.postMessage(rand() < 0.05 ? value(1) : m, "*");
  }
  parent.postMessage({ jsonrpc: "2.0", id: "after", method: "ping" }, "*");
};
</script></body></html>"""


async def test_random_messages_from_a_view_reach_the_shell_only_in_the_promised_shapes(
    stage: Stage,
) -> None:
    for seed in (24, 7, 1865):
        await _fuzz_one(stage, seed)


async def _fuzz_one(stage: Stage, seed: int) -> None:
    """One view, one burst of random messages (under the rate limit's burst, so that the
    bridge judges each one rather than refusing them all as a flood)."""
    index = await stage.mount(FUZZ_VIEW.replace("SEED", str(seed)))
    await stage.ready(index)
    view = await stage.view(index)
    surface = await stage.surface_frame(index)
    # Test instrumentation in the bridge's realm (through the browser's debugger, which
    # the view cannot reach): any exception the bridge throws.
    await surface.evaluate(
        "() => { window.thrown = [];"
        " addEventListener('error', (e) => window.thrown.push(String(e.message))); }"
    )
    await view.wait_for_function("() => window.fuzz !== undefined")
    await view.evaluate("() => window.fuzz(95)")
    await view.wait_for_function("() => window.pong")  # the bridge still answers
    assert await surface.evaluate("() => window.thrown") == []
    assert await surface.evaluate("() => LineUpMcpBridge.refused") > 0
    assert await surface.evaluate("() => LineUpMcpBridge.pending") <= 8
    # What reached the shell is what the bridge may relay, in the shapes it promises.
    shapes = {
        "tools/call": {"name", "arguments"},
        "resources/read": {"uri"},
        "ui/open-link": {"url"},
        "ui/message": {"role", "content"},
        "ui/request-display-mode": {"mode"},
    }
    relayed = await stage.mcp(index)
    events = {"view.initialized", "view.log", "view.teardown_requested"}
    assert {m["name"] for m in relayed if m["type"] == "event"} <= events
    for message in (m for m in relayed if m["type"] == "request"):
        params = message["params"]
        if message["method"] == "ui/update-model-context":
            assert set(params) <= {"content", "structuredContent"}
        else:
            assert set(params) == shapes[message["method"]], message
        assert all(isinstance(v, str) for k, v in params.items() if k in ("name", "uri", "url"))


WEBRTC_VIEW = """<!doctype html><html><head><meta charset="utf-8"></head><body><script>
window.tryWebrtc = (udp, tcp) => {
  const pc = new RTCPeerConnection({ iceServers: [
    { urls: "stun:127.0.0.1:" + udp },
    { urls: "turn:127.0.0.1:" + tcp + "?transport=tcp", username: "u", credential: "p" }] });
  pc.createDataChannel("x");
  pc.createOffer().then((offer) => pc.setLocalDescription(offer));
};
</script></body></html>"""


async def test_a_view_that_tries_webrtc_sends_nothing_and_only_its_own_mount_dies(
    stage: Stage,
) -> None:
    index = await stage.mount(WEBRTC_VIEW)
    await stage.ready(index)
    view = await stage.view(index)
    await view.wait_for_function("() => window.tryWebrtc !== undefined")
    # Chromium enforces Connection-Allowlist on a srcdoc child's RTCPeerConnection by
    # ending its renderer (architecture notes): the mount's own site. Playwright then
    # marks the whole Page crashed, so the shell is reached over a CDP session of its own
    # (as tests/browser/sandbox does).
    cdp = await stage.page.context.new_cdp_session(stage.page)
    crashed = asyncio.Event()
    stage.page.on("crash", lambda _: crashed.set())
    with contextlib.suppress(Exception):  # the frame may die before evaluate returns
        await view.evaluate(
            "([u, t]) => window.tryWebrtc(u, t)", [stage.canary.udp_port, stage.canary.tcp_port]
        )
    async with asyncio.timeout(10):
        await crashed.wait()

    async def shell(expression: str) -> Any:
        reply = await cdp.send(
            "Runtime.evaluate",
            {"expression": expression, "awaitPromise": True, "returnByValue": True},
        )
        assert "exceptionDetails" not in reply, reply
        return reply["result"].get("value")

    # The shell lives on, and a view mounted now handshakes as usual.
    assert await shell("document.title") == "MCP view harness"
    mount = stage.origin.mount_mcp_view("inst-after", LIFECYCLE_VIEW, None, name="After")
    after = await shell(f"window.mount({json.dumps(mount.url)}, 'inst-after', '{mount.mount_id}')")
    initialized = (
        "new Promise((resolve) => { const t = setInterval(() => {"
        f" if (window.mounts[{after}].mcp.some((m) => m.name === 'view.initialized'))"
        " { clearInterval(t); resolve(true); } }, 20); })"
    )
    assert await asyncio.wait_for(shell(initialized), 10) is True
    assert (stage.canary.hits, stage.canary.connects) == ([], [])
