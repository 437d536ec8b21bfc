"""``lineup demo`` shows signed delivery: it signs the sample Focus Timer with its own
publisher key, publishes it to the AppServer's catalog (idempotently) and has its
Runtime trust the key; the person installs it, and the demo agent's ``/timer`` shows
its card at the installed version and answers when a session is done."""

from __future__ import annotations

import asyncio
import logging
import re
import shutil
import stat
from pathlib import Path

import httpx
import msgspec
import pytest

from lineup.agent import Agent, Conversation
from lineup.agent.demo import FOCUS_TIMER_ID, build_demo_agent
from lineup.delivery.errors import DeliveryError
from lineup.delivery.keys import load_public_key, sign_release
from lineup.delivery.publisher import pack_bundle
from lineup.delivery.release import encode_release
from lineup.delivery.verify import verify
from lineup.demo import (
    _banner,
    ensure_publisher_key,
    publish_sample_app,
    sample_app_dir,
    trust_sample_publisher,
)
from lineup.formats.bundle import load_bundle_dir
from lineup.protocol import ClientInventoryEnvelope, Envelope
from lineup.runtime import Runtime, TimelineChanged
from lineup.server.catalog import catalog_for
from tests.agent.test_agent import FAST, running
from tests.agent.test_demo_interactions import agent_replies
from tests.conftest import Pair, make_pair
from tests.runtime.test_runtime import EventLog, logged_in
from tests.runtime.test_runtime import running as runtime_running
from tests.support.appserver import AppServerProcess, free_port
from tests.support.demo_process import running_demo

VERSION = "1.1.0"
BANNER_LINE = "A signed sample app (Focus Timer) is in the catalog: open Apps to install it."


def test_the_sample_is_a_valid_installed_bundle_with_a_card() -> None:
    bundle = load_bundle_dir(sample_app_dir())
    manifest = bundle.manifest
    assert (manifest.id, manifest.version, manifest.kind, manifest.app_scope) == (
        FOCUS_TIMER_ID,
        VERSION,
        "installed",
        "focus-timer",
    )
    (card,) = manifest.surfaces
    assert (card.id, card.entry, sorted(card.events)) == ("card", "card.html", ["done", "started"])
    js = bundle.files["card.js"].decode()
    assert 'LineUpSurface.event("done", { minutes: timer.minutes })' in js
    assert "LineUpApp" not in js  # an agent surface gets the bridge only


def test_publish_signs_a_release_that_verifies_and_is_idempotent(tmp_path: Path) -> None:
    data_dir = tmp_path / "demo"
    first = publish_sample_app(data_dir)
    key_file = data_dir / "demo-publisher.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert load_public_key(data_dir / "demo-publisher.pub.json") == first.key
    verified = verify(first.release, first.artifact, {first.key.key_id: first.key})
    assert (verified.release.app_id, verified.release.version) == (FOCUS_TIMER_ID, VERSION)
    assert verified.release.key_id == first.key.key_id
    assert first.published
    catalog = catalog_for(data_dir)
    _, revision = catalog.document()
    key_bytes = key_file.read_bytes()

    second = publish_sample_app(data_dir)  # the next start: same key, same bytes
    assert second.published
    assert (second.release_bytes, second.artifact) == (first.release_bytes, first.artifact)
    assert key_file.read_bytes() == key_bytes  # created once
    assert catalog.document()[1] == revision
    assert [(e.release.app_id, e.release.version) for e in catalog.entries()] == [
        (FOCUS_TIMER_ID, VERSION)
    ]
    assert encode_release(catalog.entries()[0].release) == first.release_bytes


def test_changed_bytes_under_the_same_version_are_skipped(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    data_dir = tmp_path / "demo"
    private, _ = ensure_publisher_key(data_dir)
    changed = tmp_path / "changed"
    shutil.copytree(sample_app_dir(), changed)
    html = changed / "card.html"
    html.write_text(html.read_text() + "<!-- another build -->\n")
    artifact, unsigned = pack_bundle(changed)
    earlier = encode_release(sign_release(unsigned, private))
    catalog = catalog_for(data_dir)
    catalog.publish(earlier, artifact)

    with caplog.at_level(logging.WARNING, logger="lineup.demo"):
        result = publish_sample_app(data_dir)
    assert not result.published
    assert [r.getMessage() for r in caplog.records if r.name == "lineup.demo"] == [
        "sample app not published: this version is in the catalog with other bytes;"
        " bump its version"
    ]
    assert [encode_release(e.release) for e in catalog.entries()] == [earlier]


def test_the_banner_mentions_the_sample_only_when_it_is_offered(tmp_path: Path) -> None:
    credentials = {"username": "demo", "password": "pw", "agent_id": "demo-agent"}
    args = (credentials, "http://a", "http://w", "code", tmp_path)
    assert BANNER_LINE in _banner(*args, sample=True).splitlines()
    assert BANNER_LINE not in _banner(*args, sample=False)


def start_demo(data_dir: Path, ports: tuple[int, int, int]) -> tuple[str, str]:
    """Run ``lineup demo`` until its banner, then stop it; the banner and the catalog
    its AppServer serves (the Runtime keeps its session: same ports every start)."""
    port, web_port, surface_port = ports
    with running_demo(data_dir, port, web_port, surface_port) as banner:
        url = f"http://127.0.0.1:{port}"
        password = re.search(r"LINEUP_PASSWORD=(\S+)", banner)
        assert password, banner
        login = httpx.post(url + "/v1/login", json={"username": "demo", "password": password[1]})
        assert login.status_code == 200, login.text
        headers = {"Authorization": f"Bearer {login.json()['token']}"}
        catalog = httpx.get(url + "/v1/catalog", headers=headers).json()
    return banner, msgspec.json.encode(catalog).decode()


def test_lineup_demo_offers_the_signed_sample_on_every_start(tmp_path: Path) -> None:
    data_dir = tmp_path / "demo"
    ports = (free_port(), free_port(), free_port())
    first, catalog = start_demo(data_dir, ports)
    assert BANNER_LINE in first.splitlines()
    key = load_public_key(data_dir / "demo-publisher.pub.json")
    document = msgspec.json.decode(catalog)
    ((app,),) = [document["apps"]]
    assert app["app_id"] == FOCUS_TIMER_ID
    assert [(r["version"], r["key_id"]) for r in app["releases"]] == [(VERSION, key.key_id)]
    again, catalog_again = start_demo(data_dir, ports)  # same key, same bytes: still offered
    assert BANNER_LINE in again.splitlines()
    assert catalog_again == catalog
    assert load_public_key(data_dir / "demo-publisher.pub.json") == key


async def test_a_runtime_trusting_the_demo_key_installs_and_mounts_it(
    own_appserver: AppServerProcess, tmp_path: Path
) -> None:
    sample = publish_sample_app(own_appserver.data_dir)  # the demo's embedded server dir
    pair = await make_pair(own_appserver)
    stranger = await logged_in(own_appserver, pair, tmp_path / "stranger")
    runtime = await logged_in(own_appserver, pair, tmp_path / "runtime")
    try:
        with pytest.raises(DeliveryError) as refused:  # no trust, no install
            await stranger.delivery.install(FOCUS_TIMER_ID, VERSION)
        assert refused.value.code == "key_unknown"

        assert await trust_sample_publisher(runtime, sample.key)
        assert await trust_sample_publisher(runtime, sample.key)  # again: no-op
        assert await runtime.registry.surface_version(FOCUS_TIMER_ID, VERSION, "card") is None
        installed = await runtime.delivery.install(FOCUS_TIMER_ID, VERSION)
        assert (installed.entry.app_id, installed.entry.version) == (FOCUS_TIMER_ID, VERSION)
        surface = await runtime.registry.surface_version(FOCUS_TIMER_ID, VERSION, "card")
        assert surface is not None
        bundle = load_bundle_dir(sample_app_dir())
        assert surface.html == bundle.files["card.html"].decode()
        assert surface.js == bundle.files["card.js"].decode()
    finally:
        await stranger.close()
        await runtime.close()
        await pair.user.aclose()
        await pair.agent.aclose()


def inventory_lists_the_timer(agent: Agent) -> asyncio.Event:
    """Set once the agent has seen an inventory that lists the Focus Timer."""
    seen = asyncio.Event()

    @agent.on_event("lineup.v1.client.inventory")
    async def noted(_conversation: Conversation, envelope: Envelope) -> None:
        if isinstance(envelope, ClientInventoryEnvelope) and any(
            a.id == FOCUS_TIMER_ID for a in envelope.payload.applications
        ):
            seen.set()

    return seen


def opened_timer(log: EventLog) -> str | None:
    """The instance id of the Focus Timer surface the agent opened, once it is open."""
    for event in log.events:
        if isinstance(event, TimelineChanged) and event.item.surface is not None:
            surface = event.item.surface
            if surface.app_id == FOCUS_TIMER_ID and surface.status == "open":
                return surface.instance_id
    return None


async def test_timer_asks_to_install_then_opens_the_installed_version(
    own_appserver: AppServerProcess, tmp_path: Path
) -> None:
    sample = publish_sample_app(own_appserver.data_dir)
    pair = await make_pair(own_appserver)
    runtime: Runtime = await logged_in(own_appserver, pair, tmp_path / "runtime")
    await runtime.locale_seen("en")  # a tab showed English: the agent greets
    await trust_sample_publisher(runtime, sample.key)
    log = EventLog(runtime)
    agent = build_demo_agent(
        Agent(own_appserver.url, pair.agent_key, backoff=FAST, cursor_path=tmp_path / "c.json")
    )
    installed_seen = inventory_lists_the_timer(agent)
    try:
        async with runtime_running(runtime), running(agent):
            await log.until(lambda: len(agent_replies(log)) == 1)  # the greeting
            await runtime.send_message(pair.conversation_id, "/timer")
            await log.until(lambda: len(agent_replies(log)) == 2)
            assert agent_replies(log)[-1].startswith("The Focus Timer is not installed here")
            assert "**Apps**" in agent_replies(log)[-1]
            assert opened_timer(log) is None

            await runtime.delivery.install(FOCUS_TIMER_ID, VERSION)  # the person, in Apps
            await asyncio.wait_for(installed_seen.wait(), 20)
            await runtime.send_message(pair.conversation_id, "/timer 5")
            await log.until(lambda: opened_timer(log) is not None)
            instance_id = opened_timer(log)
            assert instance_id is not None
            record = await runtime.ui_surface(pair.conversation_id, instance_id)
            assert record is not None
            assert (record.app_id, record.app_version, record.surface_id) == (
                FOCUS_TIMER_ID,
                VERSION,
                "card",
            )
            assert msgspec.json.decode(record.state) == {"minutes": 5, "label": "Focus"}
            await log.until(lambda: len(agent_replies(log)) == 3)
            assert agent_replies(log)[-1] == (
                "Here is a 5-minute Focus Timer. Press Start when you are ready."
            )

            # The person starts and finishes the session in the card.
            await runtime.ui_event(pair.conversation_id, instance_id, "started", {"minutes": 5})
            await runtime.ui_event(pair.conversation_id, instance_id, "done", {"minutes": 5})
            await log.until(lambda: len(agent_replies(log)) == 4)
            assert agent_replies(log)[-1] == "Focus session done — 5 minutes."
    finally:
        await runtime.close()
        await pair.user.aclose()
        await pair.agent.aclose()


async def test_timer_refuses_a_bad_duration(
    pair: Pair, appserver: AppServerProcess, tmp_path: Path
) -> None:
    runtime = await logged_in(appserver, pair, tmp_path / "runtime")
    await runtime.locale_seen("en")  # a tab showed English: the agent greets
    log = EventLog(runtime)
    agent = build_demo_agent(
        Agent(appserver.url, pair.agent_key, backoff=FAST, cursor_path=tmp_path / "c.json")
    )
    try:
        async with runtime_running(runtime), running(agent):
            await log.until(lambda: len(agent_replies(log)) == 1)
            await runtime.send_message(pair.conversation_id, "/timer 0")
            await log.until(lambda: len(agent_replies(log)) == 2)
            assert agent_replies(log)[-1] == "Say `/timer` or `/timer MINUTES` (1 to 600)."
    finally:
        await runtime.close()
