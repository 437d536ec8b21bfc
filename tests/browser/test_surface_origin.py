"""The surface origin in real Chromium: a shell-like page frames surfaces with
``surface_host.js``; the bridge and the shell talk; forged, reloaded and navigated
frames are refused; and a surface cannot reach the network (a canary listens).

The stage (``tests.support.surface_stage``) is a small loopback Starlette app whose CSP
copies the real shell's (``lineup.host.app.csp``) with ``frame-src`` =
``frame_source(port)``; the surface origin is a second listener. Both run in this test's
event loop, with a Chromium of this test's own.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

import pytest

from tests.support.browser import save_screenshot
from tests.support.canary import Canary
from tests.support.surface_stage import Stage, document, staged


@pytest.fixture
async def stage() -> AsyncIterator[Stage]:
    async with staged() as staged_stage:
        yield staged_stage


BASIC_HTML = '<h1>Hello from a surface</h1><p id="out">waiting for state</p>'
BASIC_CSS = "body { font: 18px sans-serif; margin: 16px; color: #223; } #out { color: #064; }"
BASIC_JS = """
LineUpSurface.onState((state) => {
  document.getElementById("out").textContent = "state: " + state.text;
  LineUpSurface.event("got_state", { text: state.text });
});
LineUpSurface.event("hello", { n: 1, nested: { ok: true } });
LineUpSurface.resize(5);
LineUpSurface.resize(99999);
LineUpSurface.resize(180);
"""


async def test_events_state_and_resize_flow_between_shell_and_surface(
    stage: Stage, request: pytest.FixtureRequest
) -> None:
    _, index = await stage.mount("inst-basic", document(BASIC_HTML, BASIC_JS, BASIC_CSS))
    await stage.until("() => window.harness.log.events.length >= 1")
    assert await stage.post(index, {"text": "Zoë ✓"})
    await stage.until("() => window.harness.log.events.length >= 2")

    log = await stage.log()
    assert log["ready"] == 1
    assert log["events"] == [
        {"name": "hello", "data": {"n": 1, "nested": {"ok": True}}},
        {"name": "got_state", "data": {"text": "Zoë ✓"}},
    ]
    assert log["resizes"] == [40, 4000, 180]
    frame = stage.page.locator("iframe.surface-frame")
    assert await frame.evaluate("(f) => f.style.height") == "180px"
    assert await frame.get_attribute("sandbox") == "allow-scripts"
    assert await frame.get_attribute("referrerpolicy") == "no-referrer"
    surface = stage.page.frame_locator("iframe.surface-frame")
    assert await surface.locator("#out").text_content() == "state: Zoë ✓"
    assert log["rejects"] == []

    path = await save_screenshot(stage.page, request.node.name, "mounted")
    assert path.read_bytes().startswith(b"\x89PNG")
    stage.watch.assert_clean()
    # Every Permissions-Policy name and CSP directive is one Chromium knows.
    assert stage.warnings == []


FORGER_JS = """
const P = parent;
LineUpSurface.onState((ids) => {
  const base = { namespace: "lineup.surface.v1", instance_id: ids.instance_id,
                 mount_id: ids.mount_id };
  P.postMessage({ ...base, instance_id: "someone-else", type: "event", event: "x", data: {} }, "*");
  P.postMessage({ ...base, type: "event", event: "9bad name", data: {} }, "*");
  P.postMessage({ ...base, type: "event", event: "arr", data: [1, 2] }, "*");
  P.postMessage({ ...base, type: "event", event: "big", data: { s: "x".repeat(16384) } }, "*");
  P.postMessage({ ...base, type: "event", event: "nul", data: null }, "*");
  P.postMessage({ ...base, type: "event", event: "date", data: { when: new Date(0) } }, "*");
  P.postMessage({ ...base, type: "event", event: "extra", data: {}, admin: true }, "*");
  P.postMessage({ ...base, type: "tool.call" }, "*");
  P.postMessage({ ...base, type: "ready" }, "*");
  P.postMessage({ ...base, mount_id: "another-mount", type: "resize", height: 90 }, "*");
  P.postMessage({ ...base, type: "resize", height: "90px" }, "*");
  P.postMessage("lineup.surface.v1", "*");
  P.postMessage({ ...base, namespace: "lineup.surface.v2", type: "event", event: "v", data: {} },
                "*");
  LineUpSurface.event("after_forgery", { ok: true });
});
"""


async def test_forged_messages_are_dropped_and_counted(stage: Stage) -> None:
    mount, index = await stage.mount("inst-forger", document("<p>forger</p>", FORGER_JS))
    await stage.until("(i) => window.harness.counts(i).ready", index)
    await stage.post(index, {"instance_id": mount.instance_id, "mount_id": mount.mount_id})
    await stage.until("() => window.harness.log.events.length >= 1")

    log = await stage.log()
    assert log["events"] == [{"name": "after_forgery", "data": {"ok": True}}]
    expected = [
        "instance_mismatch",
        "bad_event_name",
        "bad_data",
        "bad_data",
        "bad_data",
        "bad_data",
        "malformed",
        "unknown_type",
        "duplicate_ready",
        "mount_mismatch",
        "bad_height",
        "namespace",
        "namespace",
    ]
    assert log["rejects"] == expected
    counts = await stage.counts(index)
    assert counts["rejected"] == len(expected)
    assert counts["rejections"]["bad_data"] == 4
    assert counts["trusted"] is True
    stage.watch.assert_clean()


FLOOD_JS = """
for (let i = 0; i < 1000; i++) LineUpSurface.event("tick", { i });
LineUpSurface.event("done", {});
"""


async def test_a_message_flood_is_rate_limited(stage: Stage) -> None:
    _, index = await stage.mount("inst-flood", document("<p>flood</p>", FLOOD_JS))
    await stage.until(
        "(i) => window.harness.counts(i).rejected + window.harness.log.events.length >= 1001", index
    )
    log = await stage.log()
    accepted = len(log["events"])
    assert 200 <= accepted < 400  # the burst, plus what refilled while the flood ran
    counts = await stage.counts(index)
    assert counts["rejections"] == {"rate_limited": 1001 - accepted}
    stage.watch.assert_clean()


RELOADER_JS = """
LineUpSurface.onState((state) => {
  if (state.go) location.href = state.go;
  if (state.reload) location.reload();
});
LineUpSurface.event("loaded", {});
"""


async def test_a_frame_that_reloads_itself_is_untrusted_and_fetches_nothing(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="lineup.host.surface")
    _, index = await stage.mount("inst-reload", document("<p>reloader</p>", RELOADER_JS))
    await stage.until("() => window.harness.log.events.length >= 1")
    await stage.post(index, {"reload": True})
    await stage.until("() => window.harness.log.reloads >= 1")

    assert (await stage.counts(index))["trusted"] is False
    assert await stage.post(index, {"text": "late"}) is False
    assert await stage.page.locator("iframe.surface-frame").get_attribute("data-trusted") == "false"
    assert (await stage.log())["events"] == [{"name": "loaded", "data": {}}]
    # Connection-Allowlist: () stops even the frame's own reload before it is sent
    # (Chromium shows its error page): the origin saw one request, not two.
    assert [r.getMessage() for r in caplog.records] == ["surface mounted", "surface served"]
    assert [frame.url for frame in stage.page.frames][1:] == ["chrome-error://chromewebdata/"]


async def test_without_connection_allowlist_a_reload_meets_410(
    stage: Stage, caplog: pytest.LogCaptureFixture
) -> None:
    """The single-use layer on its own: with the header stripped, the reload reaches the
    origin, which has already served that document."""
    stage.stripped.add(b"connection-allowlist")
    caplog.set_level(logging.INFO, logger="lineup.host.surface")
    mount, index = await stage.mount("inst-reload", document("<p>reloader</p>", RELOADER_JS))
    await stage.until("() => window.harness.log.events.length >= 1")
    await stage.post(index, {"reload": True})
    await stage.until("() => window.harness.log.reloads >= 1")

    again = [r for r in caplog.records if r.getMessage() == "surface document requested again"]
    assert [r.__dict__["mount_id"] for r in again] == [mount.mount_id]  # answered 410
    assert (await stage.counts(index))["trusted"] is False
    assert (await stage.log())["events"] == [{"name": "loaded", "data": {}}]


async def test_a_frame_that_navigates_to_another_mount_is_untrusted(stage: Stage) -> None:
    """With all headers the navigation never leaves the frame (as a reload does not);
    without Connection-Allowlist it reaches a second, unserved document of the same
    instance, whose bridge then speaks: the second load still makes the frame untrusted."""
    stage.stripped.add(b"connection-allowlist")
    _, index = await stage.mount("inst-nav", document("<p>first</p>", RELOADER_JS))
    await stage.until("() => window.harness.log.events.length >= 1")
    # A second, still unserved document of the same instance: the worst place to go.
    second = stage.origin.mount("inst-nav", document("<p>second</p>", RELOADER_JS))
    await stage.post(index, {"go": second.url})
    await stage.until("() => window.harness.log.reloads >= 1")
    # The second document's bridge speaks ("ready", "loaded"): all of it is dropped.
    await stage.until("() => window.harness.log.rejects.length >= 2")

    log = await stage.log()
    assert log["events"] == [{"name": "loaded", "data": {}}]
    assert log["ready"] == 1
    assert set(log["rejects"]) <= {"untrusted", "mount_mismatch"}
    assert (await stage.counts(index))["trusted"] is False


def attacker_js(canary: Canary) -> str:
    """Every way out a hostile surface might try; it reports when each has been tried."""
    ice = [
        {"urls": f"stun:127.0.0.1:{canary.udp_port}"},
        {
            "urls": f"turn:127.0.0.1:{canary.tcp_port}?transport=tcp",
            "username": "u",
            "credential": "p",
        },
    ]
    return f"""
const report = (name, data) => LineUpSurface.event(name, data);
fetch("http://fetch.attacker.test/surface-fetch", {{ mode: "no-cors" }})
  .then(() => report("fetch", {{ ok: true }}), () => report("fetch", {{ ok: false }}));
const img = new Image();
img.src = "http://img.attacker.test/surface-img";
try {{
  const pc = new RTCPeerConnection({{ iceServers: {json.dumps(ice)} }});
  let candidates = 0;
  pc.onicecandidate = (event) => {{ if (event.candidate) candidates += 1; }};
  pc.onicegatheringstatechange = () => {{
    if (pc.iceGatheringState === "complete") report("rtc", {{ state: "complete", candidates }});
  }};
  pc.createDataChannel("x");
  pc.createOffer().then((offer) => pc.setLocalDescription(offer))
    .catch((error) => report("rtc", {{ error: error.name }}));
}} catch (error) {{
  report("rtc", {{ error: error.name }});
}}
LineUpSurface.onState((state) => {{
  if (state.navigate) location.href = "http://nav.attacker.test/surface-nav";
}});
"""


ATTACKER_HTML = (
    '<link rel="dns-prefetch" href="//prefetch.attacker.test">'
    '<link rel="preconnect" href="http://preconnect.attacker.test">'
    "<p>attacker</p>"
)


async def attack(stage: Stage) -> None:
    """Mount the attacker surface and wait until it has tried every channel, the
    navigation last (it replaces the document)."""
    _, index = await stage.mount(
        "inst-attacker", document(ATTACKER_HTML, attacker_js(stage.canary))
    )
    await stage.until("() => window.harness.log.events.some((e) => e.name === 'fetch')")
    await stage.until("() => window.harness.log.events.some((e) => e.name === 'rtc')")
    await stage.post(index, {"navigate": True})
    await stage.until("() => window.harness.log.reloads >= 1")


async def test_a_surface_reaches_nothing_while_a_plain_page_reaches_the_canary(
    stage: Stage,
) -> None:
    await attack(stage)
    assert stage.canary.hits == []
    rtc = next(e for e in (await stage.log())["events"] if e["name"] == "rtc")
    assert rtc["data"]["state"] == "complete"  # ICE gathering ran, and sent nothing

    # The canary can hear: a page without the surface's headers reaches it at once.
    control = await stage.context.new_page()
    await control.goto(stage.shell + "/control")
    assert "control-fetch" in (await stage.canary.wait_for("tcp")).first_line
    await stage.canary.wait_for("udp")
    await control.close()
    assert all("control" in hit.first_line for hit in stage.canary.tcp_hits())
    # What the page saw: CSP refusals in the surface, nothing crashed or left hanging.
    assert stage.watch.page_errors == []
    assert stage.watch.in_flight == []
    assert stage.watch.blocked_requests == []
    refused = " ".join(stage.watch.console_errors)
    assert "connect-src 'none'" in refused
    assert "img-src data: blob:" in refused


async def test_without_connection_allowlist_webrtc_reaches_the_canary(stage: Stage) -> None:
    """What Connection-Allowlist is for: the same surface with every other header in
    place sends STUN (UDP) to the canary."""
    stage.stripped.add(b"connection-allowlist")
    await stage.mount("inst-attacker", document(ATTACKER_HTML, attacker_js(stage.canary)))
    await stage.canary.wait_for("udp")  # STUN binding request
    turn = await stage.canary.wait_for("tcp")  # TURN over TCP: a STUN Allocate, not HTTP
    assert not turn.first_line.startswith(("GET", "POST", "HEAD"))
