"""Surfaces an agent opens (``lineup.runtime.ui_surfaces``), on a real store: what
``ui.open`` accepts (an enabled app's exact version and surface; inline bundles only
when allowlisted and matching), what patch and close do, and which of the person's
events reach the agent. Every refusal has a stable code and changes nothing."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup import wire
from lineup.runtime import classify, ui_surfaces
from lineup.runtime.apps.registry import AppRegistry
from lineup.runtime.ui_surfaces import UiEventRefused, inline_integrity
from tests.formats.test_bundle import BUNDLE
from tests.runtime.apps.test_router import C1, SCOPES, RouterHarness
from tests.support.app_kernel import queued
from tests.support.interactions import envelope
from tests.support.receiving import apply_received

APP = {"id": "dev.lineup.test-app", "version": "1.0.0", "surface": "card"}
INLINE = ("<p id=x></p>", "p { color: red }", "LineUpSurface.onState(() => {});")


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[RouterHarness]:
    harness = RouterHarness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(C1)
    await AppRegistry(harness.db, clock=harness.clock).install_bundle(BUNDLE, enable=True)
    yield harness
    await harness.close()


async def ui_event(
    h: RouterHarness, conversation_id: str, instance_id: str, name: str, data: dict[str, Any]
) -> None:
    """The person's event from a surface, in one writer transaction."""
    await h.db.db.write(ui_surfaces.event, conversation_id, instance_id, name, data, h.db.now())


async def send(
    h: RouterHarness, kind: str, payload: dict[str, Any], allow: frozenset[str] = frozenset()
) -> str:
    body = envelope(C1.id, f"lineup.v1.{kind}", payload, sender_id=C1.agent_id)
    frame = wire.EnvelopeFrame(
        conversation_id=C1.id, seq=h.next_seq(C1.id), envelope=msgspec.Raw(body)
    )
    await apply_received(h.db, [classify(frame, SCOPES)], inline_surfaces=allow)
    return str(msgspec.json.decode(body)["id"])


def errors(h: RouterHarness) -> list[tuple[str, str]]:
    return [
        (q.payload["code"], q.payload["ref_id"])
        for q in queued(h.path)
        if q.type == "lineup.v1.error"
    ]


async def test_open_patch_close(h: RouterHarness) -> None:
    opened = await send(h, "ui.open", {"instance_id": "s1", "app": APP, "state": {"n": 1}})
    record = await h.db.db.read(ui_surfaces.record_of, C1.id, "s1")
    assert record is not None
    assert (record.open_envelope_id, record.status, record.surface_id) == (opened, "open", "card")
    await send(h, "ui.patch", {"instance_id": "s1", "state": {"n": 2}})
    record = await h.db.db.read(ui_surfaces.record_of, C1.id, "s1")
    assert record is not None and msgspec.json.decode(record.state) == {"n": 2}
    item = await h.db.item(C1.id, opened)
    assert item is not None and item.surface == record  # the ui.open row shows it as it is
    await send(h, "ui.close", {"instance_id": "s1", "reason": "done"})
    assert await h.db.db.read(ui_surfaces.record_of, C1.id, "s1") is None
    closed = await h.db.item(C1.id, opened)
    assert closed is not None and closed.surface is not None
    assert (closed.surface.status, closed.surface.reason) == ("closed", "done")
    assert errors(h) == []


@pytest.mark.parametrize(
    "app",
    [
        {**APP, "version": "1.0.1"},  # not the exact version in use
        {**APP, "surface": "nope"},
        {**APP, "id": "dev.lineup.other"},
    ],
)
async def test_what_is_not_installed_is_unavailable(h: RouterHarness, app: dict[str, Any]) -> None:
    opened = await send(h, "ui.open", {"instance_id": "s1", "app": app})
    assert errors(h) == [("surface_unavailable", opened)]
    item = await h.db.item(C1.id, opened)
    assert item is not None and item.surface is not None
    assert item.surface.status == "unavailable"
    assert await h.db.db.read(ui_surfaces.record_of, C1.id, "s1") is None  # nothing open to patch


async def test_a_disabled_app_is_unavailable(h: RouterHarness) -> None:
    await AppRegistry(h.db, clock=h.clock).disable("dev.lineup.test-app")
    opened = await send(h, "ui.open", {"instance_id": "s1", "app": APP})
    assert errors(h) == [("surface_unavailable", opened)]


async def test_inline_bundles_need_dev_mode_an_allowlist_and_a_matching_digest(
    h: RouterHarness,
) -> None:
    html, css, js = INLINE
    good = inline_integrity(html, css, js)
    other = inline_integrity("<p>other</p>", "", "")
    app = {"id": "dev.lineup.inline", "version": "0.1.0", "html": html, "css": css, "js": js}
    first = await send(h, "ui.open", {"instance_id": "i1", "app": {**app, "integrity": good}})
    second = await send(
        h, "ui.open", {"instance_id": "i2", "app": {**app, "integrity": other}}, frozenset({other})
    )
    third = await send(
        h, "ui.open", {"instance_id": "i3", "app": {**app, "integrity": good}}, frozenset({good})
    )
    assert errors(h) == [("surface_unavailable", first), ("surface_invalid", second)]
    record = await h.db.db.read(ui_surfaces.record_of, C1.id, "i3")
    assert record is not None and record.inline
    assert await h.db.db.read(ui_surfaces.inline_parts, C1.id, third) == INLINE


async def test_patch_or_close_of_what_is_not_open(h: RouterHarness) -> None:
    patch = await send(h, "ui.patch", {"instance_id": "ghost", "state": {}})
    close = await send(h, "ui.close", {"instance_id": "ghost"})
    assert errors(h) == [("app_instance_not_found", patch), ("app_instance_not_found", close)]


async def test_a_second_open_replaces_the_first(h: RouterHarness) -> None:
    first = await send(h, "ui.open", {"instance_id": "s1", "app": APP})
    second = await send(h, "ui.open", {"instance_id": "s1", "app": APP, "state": {"v": 2}})
    old = await h.db.item(C1.id, first)
    assert old is not None and old.surface is not None and old.surface.status == "replaced"
    record = await h.db.db.read(ui_surfaces.record_of, C1.id, "s1")
    assert record is not None and record.open_envelope_id == second


async def test_events_declared_by_the_surface_reach_the_agent(h: RouterHarness) -> None:
    await send(h, "ui.open", {"instance_id": "s1", "app": APP})
    await ui_event(h, C1.id, "s1", "ping", {"n": 1})
    for name, data, code in [
        ("undeclared", {}, "event_not_declared"),
        ("ping", {"big": "x" * 20_000}, "malformed_envelope"),
    ]:
        with pytest.raises(UiEventRefused) as refused:
            await ui_event(h, C1.id, "s1", name, data)
        assert refused.value.code == code
    with pytest.raises(UiEventRefused) as refused:
        await ui_event(h, C1.id, "ghost", "ping", {})
    assert refused.value.code == "app_instance_not_found"
    await ui_event(h, C1.id, "s1", "close", {})
    assert await h.db.db.read(ui_surfaces.record_of, C1.id, "s1") is None
    events = [q.payload for q in queued(h.path) if q.type == "lineup.v1.ui.event"]
    assert events == [
        {"instance_id": "s1", "event": "ping", "data": {"n": 1}},
        {"instance_id": "s1", "event": "close"},
    ]
    with pytest.raises(UiEventRefused):  # closed: nothing more goes out
        await ui_event(h, C1.id, "s1", "ping", {})
