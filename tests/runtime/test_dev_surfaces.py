"""Dev surfaces (``lineup.runtime.dev_surfaces``; ``Runtime(dev_surfaces=DIR)``), on a
real store: a ``ui.open`` naming a bundle in DIR by id and exact version shows its
files as they are at that moment (an edit shows at the next open, no restart), before
the registry; what does not load is refused with a stable code, logged once per
change, answered ``surface_invalid`` and never stops anything; a dev surface sends
only the events its manifest declares now."""

from __future__ import annotations

import json
import logging
import shutil
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup import wire
from lineup.protocol import ErrorCode
from lineup.runtime import Runtime, classify, receive, ui_surfaces
from lineup.runtime.apps.registry import AppRegistry
from lineup.runtime.dev_surfaces import DevSurface, DevSurfaceCode, DevSurfaces
from lineup.runtime.ui_surfaces import UiEventRefused
from tests.formats.test_bundle import BUNDLE
from tests.runtime.apps.test_router import C1, SCOPES, RouterHarness
from tests.support.app_kernel import queued
from tests.support.interactions import envelope

HELLO = {
    "id": "com.example.hello",
    "version": "0.1.0",
    "kind": "installed",
    "name": "Hello",
    "app_scope": "hello",
    "min_host_version": "0.1.0",
    "surfaces": [{"id": "card", "entry": "index.html", "events": ["clicked"]}],
}
CARD = {"id": "com.example.hello", "version": "0.1.0", "surface": "card"}


def write_bundle(directory: Path, manifest: dict[str, Any], html: str, js: str = "") -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "manifest.json").write_text(json.dumps(manifest), "utf-8")
    (directory / "index.html").write_text(html, "utf-8")
    if js:
        (directory / "index.js").write_text(js, "utf-8")
    return directory


@pytest.fixture
async def h(tmp_path: Path) -> AsyncIterator[RouterHarness]:
    harness = RouterHarness(tmp_path / "runtime.sqlite3")
    await harness.open()
    await harness.setup(C1)
    await AppRegistry(harness.db, clock=harness.clock).install_bundle(BUNDLE, enable=True)
    yield harness
    await harness.close()


async def send(h: RouterHarness, dev: DevSurfaces, kind: str, payload: dict[str, Any]) -> str:
    """One agent envelope applied as the Runtime's loop does, with ``dev``."""
    body = envelope(C1.id, f"lineup.v1.{kind}", payload, sender_id=C1.agent_id)
    frame = wire.EnvelopeFrame(
        conversation_id=C1.id, seq=h.next_seq(C1.id), envelope=msgspec.Raw(body)
    )
    context = receive.Context(h.db.now(), dev_surfaces=dev)
    await h.db.db.write(receive.apply_batch, [classify(frame, SCOPES)], context)
    return str(msgspec.json.decode(body)["id"])


async def open_hello(h: RouterHarness, dev: DevSurfaces, instance_id: str = "s1") -> str:
    app = {"id": "com.example.hello", "version": "0.1.0", "surface": "card", "name": "Hi"}
    return await send(h, dev, "ui.open", {"instance_id": instance_id, "app": app})


def errors(h: RouterHarness) -> list[tuple[str, str]]:
    return [
        (q.payload["code"], q.payload["ref_id"])
        for q in queued(h.path)
        if q.type == "lineup.v1.error"
    ]


def refusals(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [
        (r.__dict__["directory"], r.__dict__["code"])
        for r in caplog.records
        if r.name == "lineup.runtime.dev_surfaces" and r.levelno == logging.WARNING
    ]


async def test_an_open_shows_the_files_as_they_are_then(h: RouterHarness, tmp_path: Path) -> None:
    root = tmp_path / "surfaces"
    bundle = write_bundle(root / "hello", HELLO, "<p>A</p>", "LineUpSurface.resize(1);")
    dev = DevSurfaces(root)

    first = await open_hello(h, dev)
    record = await h.db.db.read(ui_surfaces.record_of, C1.id, "s1")
    assert record is not None
    assert (record.status, record.surface_id, record.inline) == ("open", "card", True)
    parts = await h.db.db.read(ui_surfaces.inline_parts, C1.id, first)
    assert parts == ("<p>A</p>", "", "LineUpSurface.resize(1);")

    # Edited in place (same length, same second): the next open has the new bytes.
    (bundle / "index.html").write_text("<p>B</p>", "utf-8")
    (bundle / "index.css").write_text("p { color: red }", "utf-8")
    second = await open_hello(h, dev)
    assert await h.db.db.read(ui_surfaces.inline_parts, C1.id, second) == (
        "<p>B</p>",
        "p { color: red }",
        "LineUpSurface.resize(1);",
    )
    old = await h.db.item(C1.id, first)
    assert old is not None and old.surface is not None and old.surface.status == "replaced"
    assert errors(h) == []


async def test_a_dev_bundle_comes_before_the_installed_app(
    h: RouterHarness, tmp_path: Path
) -> None:
    root = tmp_path / "surfaces"
    shutil.copytree(BUNDLE, root / "test-app")
    (root / "test-app" / "card.html").write_text("<p>dev copy</p>", "utf-8")
    dev = DevSurfaces(root)
    app = {"id": "dev.lineup.test-app", "version": "1.0.0", "surface": "card"}
    opened = await send(h, dev, "ui.open", {"instance_id": "s1", "app": app})
    parts = await h.db.db.read(ui_surfaces.inline_parts, C1.id, opened)
    assert parts is not None and parts[0] == "<p>dev copy</p>"
    # Another version is not the dev bundle's: the registry answers (not in use there).
    other = await send(h, dev, "ui.open", {"instance_id": "s2", "app": {**app, "version": "2.0.0"}})
    assert errors(h) == [("surface_unavailable", other)]


async def test_what_does_not_load_is_refused_once_with_its_code(
    h: RouterHarness, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "lineup.runtime.dev_surfaces")
    root = tmp_path / "surfaces"
    write_bundle(root / "a-good", HELLO, "<p>A</p>")
    write_bundle(root / "b-twin", HELLO, "<p>twin</p>")  # the same id and version
    broken = root / "c-broken"
    broken.mkdir(parents=True)
    (broken / "manifest.json").write_text(
        json.dumps({**HELLO, "id": "com.example.broken", "version": "01.0"}), "utf-8"
    )
    (broken / "index.html").write_text("<p>x</p>", "utf-8")
    write_bundle(root / "d-no-entry", {**HELLO, "id": "com.example.noentry"}, "")
    (root / "d-no-entry" / "index.html").unlink()
    (root / "e-empty").mkdir()
    (root / ".hidden").mkdir()  # an editor's or VCS directory: not a bundle
    (root / "notes.txt").write_text("not a directory", "utf-8")
    dev = DevSurfaces(root)

    problems = dev.report()
    expected = [
        ("b-twin", DevSurfaceCode.DUPLICATE.value),
        ("c-broken", "manifest_invalid"),
        ("d-no-entry", "bundle_missing_file"),
        ("e-empty", "bundle_no_manifest"),
    ]
    assert [(p.directory, p.code) for p in problems] == expected
    assert refusals(caplog) == expected
    assert all("refused" in r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING)

    # Opening them, again and again, logs nothing new: the problems did not change.
    caplog.clear()
    good = await open_hello(h, dev, "good")
    bad = await send(
        h,
        dev,
        "ui.open",
        {
            "instance_id": "bad",
            "app": {"id": "com.example.broken", "version": "1.0.0", "surface": "card"},
        },
    )
    no_entry = await send(
        h,
        dev,
        "ui.open",
        {
            "instance_id": "ne",
            "app": {"id": "com.example.noentry", "version": "0.1.0", "surface": "card"},
        },
    )
    no_surface = await send(
        h,
        dev,
        "ui.open",
        {
            "instance_id": "ns",
            "app": {"id": "com.example.hello", "version": "0.1.0", "surface": "x"},
        },
    )
    assert refusals(caplog) == []
    assert errors(h) == [
        ("surface_invalid", bad),
        ("surface_invalid", no_entry),
        ("surface_unavailable", no_surface),
    ]
    assert await h.db.db.read(ui_surfaces.inline_parts, C1.id, good) == ("<p>A</p>", "", "")

    # A problem that changes is logged again; one fixed is logged as loaded.
    (root / "e-empty" / "manifest.json").write_text("{", "utf-8")
    shutil.rmtree(root / "b-twin")
    assert dev.find("com.example.hello", "0.1.0") is not None
    assert refusals(caplog) == [("e-empty", "manifest_invalid")]


async def test_a_missing_directory_stops_nothing(tmp_path: Path) -> None:
    dev = DevSurfaces(tmp_path / "nowhere")
    [problem] = dev.report()
    assert problem.code == DevSurfaceCode.UNREADABLE
    assert dev.find("com.example.hello", "0.1.0") is None
    write_bundle(tmp_path / "nowhere" / "hello", HELLO, "<p>late</p>")  # made later: found
    found = dev.find("com.example.hello", "0.1.0")
    assert isinstance(found, DevSurface) and found.source.html == "<p>late</p>"
    assert (found.name, found.events) == ("Hello", ("clicked",))

    # A Runtime given a directory that is not there opens and closes as usual.
    runtime = Runtime(tmp_path / "runtime", dev_surfaces=tmp_path / "not-there")
    await runtime.open()
    await runtime.close()


async def test_a_dev_surface_sends_the_events_its_manifest_declares_now(
    h: RouterHarness, tmp_path: Path
) -> None:
    root = tmp_path / "surfaces"
    write_bundle(root / "hello", HELLO, "<p>A</p>")
    dev = DevSurfaces(root)
    await open_hello(h, dev)

    async def ui_event(name: str) -> None:
        await h.db.db.write(ui_surfaces.event, C1.id, "s1", name, {}, h.db.now(), dev)

    await ui_event("clicked")
    with pytest.raises(UiEventRefused) as refused:
        await ui_event("other")
    assert refused.value.code == ErrorCode.EVENT_NOT_DECLARED
    declared = {**HELLO, "surfaces": [{"id": "card", "entry": "index.html", "events": ["other"]}]}
    (root / "hello" / "manifest.json").write_text(json.dumps(declared), "utf-8")
    await ui_event("other")  # declared now: no reopen needed
    events = [q.payload["event"] for q in queued(h.path) if q.type == "lineup.v1.ui.event"]
    assert events == ["clicked", "other"]
