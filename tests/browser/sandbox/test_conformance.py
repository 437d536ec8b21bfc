"""Sandbox conformance: every hostile bundle in ``bundles.BUNDLES``, mounted in real
Chromium beside a well-behaved sibling, gets nothing out and leaves the host working.

For each bundle: mount it (twice for the storage bundle), wait for what it reports
(and, for a bundle that navigates, for the shell to see the second load), give it a
quiet period (sibling round trips) to leak in, then assert on its report, the shell's
rejections for it, the canary, every request of the context, the surface origin's
request log, the frames, the shell's DOM and prototype, popups, and the sibling.

The positive controls at the end show the detectors can hear: a plain page and
surfaces served without ``Connection-Allowlist`` reach the canary within the same quiet
period, and the shell-page checks notice a changed page.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest

from tests.browser.sandbox.bundles import BUNDLES, FLOOD_COUNT, Bundle
from tests.browser.sandbox.conftest import Arena
from tests.support.browser import save_screenshot

pytestmark = pytest.mark.asyncio(loop_scope="module")

RATE = 100  # surface_host.js's defaults: 100 messages a second, bursts of 200
BURST = 200
BY_NAME = {bundle.name: bundle for bundle in BUNDLES}


async def test_the_corpus_is_large_and_named_uniquely() -> None:
    assert len(BUNDLES) >= 40
    assert len(BY_NAME) == len(BUNDLES)


async def _settle(arena: Arena, bundle: Bundle, index: int) -> None:
    """Wait for the bundle's report (and reload), then a quiet period; check what the
    bundle and the shell saw of it."""
    if bundle.reports:
        report = await arena.wait_report(index)
        assert {key: report.get(key) for key in bundle.expect} == dict(bundle.expect), report
    if bundle.navigates:
        await arena.until("(i) => window.harness.log.mounts[i].reloads >= 1", index)
    await arena.quiet_period()
    own = await arena.own_log(index)
    assert own["rejects"] == dict(bundle.rejects)
    assert own["reloads"] == (1 if bundle.navigates else 0)
    assert own["trusted"] is (not bundle.navigates)
    if bundle.navigates:
        assert await arena.post(index, {"late": True}) is False


async def _settle_flood(arena: Arena, bundle: Bundle, index: int) -> None:
    """All FLOOD_COUNT messages (and the report before them) were handled; no more got
    through than the token bucket allows over the time they took; the sibling, with a
    bucket of its own, round-trips at once after the flood."""
    await arena.wait_report(index)
    await arena.until(
        """([i, total]) => {
          const m = window.harness.log.mounts[i];
          return m.events.length + m.rejects.length >= total;
        }""",
        [index, FLOOD_COUNT + 1],
    )
    await arena.quiet_period()
    own = await arena.own_log(index)
    assert own["events"] + sum(own["rejects"].values()) == FLOOD_COUNT + 1
    seconds = (own["last"] - own["first"]) / 1000
    passed = FLOOD_COUNT + 1 - own["rejects"]["rate_limited"]
    assert BURST - 1 <= passed <= BURST + RATE * seconds + 1, (passed, seconds)
    if "tick" in bundle.js:
        assert own["events"] == passed  # every tick that passed the limit is valid
    else:
        assert own["events"] == 1  # the report: none of the garbage is an event
        assert set(own["rejects"]) == {"rate_limited", "namespace", "malformed"}
    assert own["trusted"] is True


async def _settle_renderer_killed(arena: Arena, bundle: Bundle, index: int) -> None:
    """The srcdoc child's own RTCPeerConnection makes Chromium kill the surface's
    renderer (Connection-Allowlist): the surface stops answering, the host carries on."""
    await arena.wait_report(index)
    await arena.quiet_period()
    await _assert_no_pong(arena, index)


async def _settle_busy(arena: Arena, bundle: Bundle, index: int) -> None:
    """The busy surface is stuck (it no longer answers a ping); the sibling, in its own
    process, round-trips all the same."""
    await arena.wait_report(index)
    await arena.quiet_period()
    await _assert_no_pong(arena, index)


async def _assert_no_pong(arena: Arena, index: int) -> None:
    assert await arena.post(index, {"ping": 1})
    await arena.quiet_period()
    names = [event["name"] for event in await arena.events(index)]
    assert names == ["report"]


SETTLE: dict[str, Callable[[Arena, Bundle, int], Awaitable[None]]] = {
    "": _settle,
    "pollution": _settle,
    "flood": _settle_flood,
    "renderer_killed": _settle_renderer_killed,
    "busy": _settle_busy,
}


@pytest.mark.parametrize("bundle", BUNDLES, ids=[bundle.name for bundle in BUNDLES])
async def test_a_hostile_bundle_gets_nothing_and_the_host_keeps_working(
    arena: Arena, bundle: Bundle
) -> None:
    for _ in range(bundle.mounts):
        index = await arena.mount_hostile(bundle)
        await SETTLE[bundle.special](arena, bundle, index)
    await arena.assert_nothing_leaked()
    await arena.assert_host_works(history=bundle.history)
    assert arena.crashes == (1 if bundle.special == "renderer_killed" else 0)
    if bundle.special == "pollution":
        names = [event["name"] for event in await arena.events(1)]
        assert names == [
            "pollute",
            "pollute",
            "pollute",
            "constructor",
            "hasOwnProperty",
            "after_patching",
            "report",
        ]


async def test_a_page_with_hostile_and_sibling_surfaces(
    arena: Arena, request: pytest.FixtureRequest
) -> None:
    """What a person would see: the sibling, and a hostile surface that tried to read
    the shell, styled to look like the shell."""
    bundle = BY_NAME["parent_dom"]
    visible = Bundle(
        "visible",
        js=bundle.js + "\nLineUpSurface.resize(110);",
        leak=bundle.leak,
        html="<h1>Shell</h1><p>I am a surface dressed as the shell.</p>",
        css="body { font: 16px sans-serif; background: #fee; margin: 8px; }",
    )
    index = await arena.mount_hostile(visible)
    report = await arena.wait_report(index)
    assert report["parent_document"] == "threw:SecurityError"
    await arena.quiet_period()
    path = await save_screenshot(arena.page, request.node.name, "hostile-and-sibling")
    assert path.read_bytes().startswith(b"\x89PNG")
    await arena.assert_nothing_leaked()
    await arena.assert_host_works()


# --- positive controls: the detectors can hear -----------------------------------------------


async def test_control_a_plain_page_reaches_the_canary_and_is_recorded(arena: Arena) -> None:
    """The same context, a page without the surface's headers: its fetch reaches the
    canary over the attacker name and shows in the request record; its STUN packet
    arrives over UDP."""
    control = await arena.stage.new_page()
    await control.goto(arena.servers.shell + "/control")
    canary = arena.servers.canary
    assert "control-fetch" in (await canary.wait_for("tcp")).first_line
    await canary.wait_for("udp")
    assert any("control.attacker.test" in url for url in arena.outside)
    with pytest.raises(AssertionError):
        await arena.assert_nothing_leaked()


async def test_control_the_shell_checks_notice_a_changed_page(arena: Arena) -> None:
    await arena.call("() => { document.title = 'changed'; Object.prototype.polluted = 'x'; }")
    with pytest.raises(AssertionError):
        await arena.assert_host_works()
    await arena.call("() => { delete Object.prototype.polluted; }")
    popup = await arena.stage.new_page()
    assert arena.popups == [popup]
    with pytest.raises(AssertionError):
        await arena.assert_nothing_leaked()


LEAKS_WITHOUT_ALLOWLIST = (
    ("webrtc_stun_udp_ufrag", "udp"),
    ("webrtc_turn_tcp_and_udp", "tcp"),
    ("webrtc_remote_candidate", "udp"),
    ("dns_burst_location", "tcp"),
    ("dns_burst_anchor_clicks", "tcp"),
)


@pytest.mark.parametrize(
    ("name", "channel"), LEAKS_WITHOUT_ALLOWLIST, ids=[n for n, _ in LEAKS_WITHOUT_ALLOWLIST]
)
async def test_control_without_connection_allowlist_the_bundle_reaches_the_canary(
    arena: Arena, name: str, channel: str
) -> None:
    """The same bundle, served with every header but ``Connection-Allowlist``, is heard
    within the same quiet period: the suite is not passing by being deaf."""
    arena.servers.stripped.add(b"connection-allowlist")
    await arena.mount_hostile(BY_NAME[name])
    await arena.until("() => window.harness.log.mounts[1].ready === 1")
    await arena.quiet_period()
    canary = arena.servers.canary
    if channel == "udp":
        assert canary.udp_hits() != []
    else:
        assert canary.connects != []
