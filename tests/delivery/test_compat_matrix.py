"""The host compatibility matrix of spec 002 §9.1, one test per row, on a real Runtime
store and verified cache (the golden fixtures in ``tests/fixtures/delivery``).

Row 7 (a bridge message from a frame that is not the current one is dropped) needs
real frames: it is ``tests/browser/test_signed_delivery.py::
test_bridge_drops_messages_from_other_frames`` (and the sandbox conformance suite's
forged-sibling bundles).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import msgspec
import pytest

from lineup import wire
from lineup.delivery.archive import unpack
from lineup.delivery.errors import DeliveryError
from lineup.delivery.keys import load_public_key
from lineup.host.views import item_view
from lineup.runtime import Runtime, Session, classify
from lineup.runtime.apps.registry import RegistryError
from lineup.runtime.events import TimelineChanged
from lineup.runtime.runtime import STORE_FILE, VERIFIED_CACHE_DIR
from tests.support.app_kernel import queued
from tests.support.receiving import apply_received

FIXTURES = Path(__file__).parent.parent / "fixtures" / "delivery"
CASES: dict[str, dict[str, Any]] = json.loads((FIXTURES / "cases.json").read_text())
APP_ID = "dev.lineup.test-app"
CONVERSATION = "c1"
SCOPES = frozenset({"chat"})


def fixture(case: str) -> tuple[bytes, bytes]:
    return (FIXTURES / case / "release.json").read_bytes(), (
        FIXTURES / case / "artifact.tar"
    ).read_bytes()


@pytest.fixture
async def rt(tmp_path: Path) -> AsyncIterator[Runtime]:
    runtime = Runtime(tmp_path / "rt", catalog_interval=None)
    await runtime.open()
    await runtime.delivery.trust_key(load_public_key(FIXTURES / "publisher.pub.json"))
    await runtime.store.save_session(Session("http://127.0.0.1:1", "user", "u1", "token"))
    await runtime.store.upsert_conversation(CONVERSATION, "a1", "")
    yield runtime
    await runtime.close()


def envelope_frame(seq: int, kind: str, payload: dict[str, object]) -> wire.EnvelopeFrame:
    envelope = {
        "v": 1,
        "id": f"e{seq}",
        "type": kind,
        "conversation_id": CONVERSATION,
        "sender": {"kind": "agent", "id": "a1"},
        "created_at": "2026-11-30T00:00:00Z",
        "payload": payload,
    }
    return wire.EnvelopeFrame(
        conversation_id=CONVERSATION, seq=seq, envelope=msgspec.Raw(msgspec.json.encode(envelope))
    )


def errors(rt: Runtime) -> list[tuple[str, str]]:
    return [
        (q.payload["code"], q.payload["ref_id"])
        for q in queued(rt.data_dir / STORE_FILE)
        if q.type == "lineup.v1.error"
    ]


def cache_files(rt: Runtime) -> list[str]:
    return sorted(p.name for p in (rt.data_dir / VERIFIED_CACHE_DIR).iterdir())


async def install(rt: Runtime, case: str) -> None:
    await rt.delivery.install_release(*fixture(case))


# --- row 1: an old client gets an unknown lineup.v1.* type --------------------------------


async def test_unknown_type_falls_back_safely(rt: Runtime) -> None:
    received = [
        classify(
            envelope_frame(1, "lineup.v1.app.hologram", {"html": "<script>x()</script>"}), SCOPES
        ),
        classify(envelope_frame(2, "lineup.v1.ui.teleport", {"js": "alert(1)"}), SCOPES),
    ]
    assert [r.code for r in received] == [None, None]
    applied = await apply_received(rt.store, received)
    views = [item_view(item) for item in applied.items]
    assert [(v.kind, v.html) for v in views] == [("unsupported", None), ("unsupported", None)]
    assert [v.data for v in views] == [
        {"type": "lineup.v1.app.hologram"},
        {"type": "lineup.v1.ui.teleport"},
    ]
    # nothing executed: nothing queued, and nobody but the timeline told
    assert applied.outbox == []
    assert all(isinstance(e, TimelineChanged) for e in applied.events)


# --- row 2: a new client gets old plain text ------------------------------------------------


async def test_plain_text_is_only_markdown(rt: Runtime) -> None:
    text = "**done** <button onclick=x()>approve</button> [ok](javascript:alert(1))"
    applied = await apply_received(
        rt.store, [classify(envelope_frame(1, "lineup.v1.message", {"text": text}), SCOPES)]
    )
    (view,) = [item_view(item) for item in applied.items]
    assert view.kind == "message"
    assert view.html is not None and "<strong>done</strong>" in view.html
    assert "<button" not in view.html and "href=" not in view.html
    assert await rt.store.pending_interactions() == []  # no interaction, no capability
    assert applied.outbox == []


# --- row 3: a surface version this host does not run ----------------------------------------


async def test_unsupported_surface_version_is_not_mounted_nor_moved_forward(rt: Runtime) -> None:
    await install(rt, "good")
    await install(rt, "good-v2")
    await rt.delivery.revoke_version(APP_ID, "1.1.0")  # back on 1.0.0; 1.1.0 stays stored
    asked = {"1.1.0": "e1", "1.2.0": "e2", "1.0.0": "e3"}
    for seq, version in enumerate(asked, start=1):
        app = {"id": APP_ID, "version": version, "surface": "main"}
        payload = {"instance_id": f"s{seq}", "app": app}
        received = classify(envelope_frame(seq, "lineup.v1.ui.open", payload), SCOPES)
        assert received.code is None
        await apply_received(rt.store, [received])
    assert errors(rt) == [("surface_unavailable", "e1"), ("surface_unavailable", "e2")]
    for seq, version in ((1, "1.1.0"), (2, "1.2.0")):  # a notice, never a neighbour version
        item = await rt.store.item(CONVERSATION, f"e{seq}")
        assert item is not None and item.surface is not None
        assert (item.surface.status, item.surface.reason, item.surface.app_version) == (
            "unavailable",
            "surface_unavailable",
            version,
        )
    opened = await rt.ui_surface(CONVERSATION, "s3")
    assert opened is not None and opened.app_version == "1.0.0"


# --- row 4: a production surface is mounted only from verified bytes ------------------------


async def test_production_surface_comes_only_from_verified_bytes(rt: Runtime) -> None:
    release, artifact = fixture("good")
    await rt.delivery.install_release(release, artifact)
    files = unpack(artifact)
    surface = await rt.registry.surface_version(APP_ID, "1.0.0", None)
    assert surface is not None
    assert (surface.html, surface.css, surface.js) == (
        files["index.html"].decode(),
        files["index.css"].decode(),
        files["index.js"].decode(),
    )

    def forget_release(conn: Any) -> None:  # as if the bytes had never been verified
        conn.execute("DELETE FROM app_releases WHERE app_id = ?", (APP_ID,))

    await rt.store.db.write(forget_release)
    assert await rt.registry.surface_version(APP_ID, "1.0.0", None) is None


# --- row 5: a candidate that fails keeps the active version ---------------------------------

REFUSED = sorted(name for name, case in CASES.items() if case["code"] is not None)


@pytest.mark.parametrize("case", REFUSED)
async def test_failed_candidate_keeps_the_active_version(rt: Runtime, case: str) -> None:
    await install(rt, "good")
    before = cache_files(rt)
    spec = CASES[case]
    for name in spec["trust"]:
        await rt.delivery.trust_key(load_public_key(FIXTURES / name))
    for name in spec["revoked"]:
        await rt.delivery.revoke_key(load_public_key(FIXTURES / name).key_id)
    with pytest.raises((DeliveryError, RegistryError)) as caught:
        await install(rt, case)
    assert getattr(caught.value, "code", None) == spec["code"]
    (entry,) = await rt.registry.apps()
    assert (entry.version, entry.versions, entry.enabled) == ("1.0.0", ("1.0.0",), True)
    assert cache_files(rt) == before
    assert await rt.registry.surface_version(APP_ID, "1.0.0", None) is not None


def test_every_failure_fixture_has_a_stable_code() -> None:
    assert {CASES[c]["code"] for c in REFUSED} == {
        "artifact_too_large",
        "digest_mismatch",
        "key_revoked",
        "key_unknown",
        "length_mismatch",
        "release_field_forbidden",
        "release_mismatch",
        "signature_invalid",
        "version_downgrade",
    }


# --- row 6: the active bundle is revoked ----------------------------------------------------


async def test_revoked_active_rolls_back_to_the_verified_predecessor(rt: Runtime) -> None:
    await install(rt, "good")
    await install(rt, "good-v2")
    (fallback,) = await rt.delivery.revoke_version(APP_ID, "1.1.0")
    assert (fallback.outcome, fallback.from_version, fallback.to_version) == (
        "rolled_back",
        "1.1.0",
        "1.0.0",
    )
    (entry,) = await rt.registry.apps()
    assert (entry.version, entry.enabled) == ("1.0.0", True)


async def test_revoked_active_without_predecessor_is_unavailable(rt: Runtime) -> None:
    await install(rt, "good")
    (fallback,) = await rt.delivery.revoke_version(APP_ID, "1.0.0")
    assert (fallback.outcome, fallback.to_version) == ("unavailable", None)
    (entry,) = await rt.registry.apps()
    assert (entry.enabled, entry.unavailable) == (False, "version_revoked")
    assert await rt.registry.surface_version(APP_ID, "1.0.0", None) is None
    assert all(app.id != APP_ID for app in rt.inventory.applications)


# --- row 8: the catalog changes -------------------------------------------------------------


def _revision(rt: Runtime) -> int:
    return int(rt.inventory.revision.removeprefix("inv-"))


async def test_catalog_change_publishes_a_new_minimal_inventory(rt: Runtime) -> None:
    start = _revision(rt)
    await install(rt, "good")
    installed = _revision(rt)
    assert installed > start
    assert [(a.id, a.version) for a in rt.inventory.applications] == [(APP_ID, "1.0.0")]
    await install(rt, "good-v2")
    updated = _revision(rt)
    assert updated > installed
    assert [(a.id, a.version) for a in rt.inventory.applications] == [(APP_ID, "1.1.0")]
    await rt.delivery.revoke_version(APP_ID, "1.1.0")
    rolled_back = _revision(rt)
    assert rolled_back > updated
    assert [(a.id, a.version) for a in rt.inventory.applications] == [(APP_ID, "1.0.0")]
    await rt.delivery.revoke_version(APP_ID, "1.0.0")
    assert _revision(rt) > rolled_back
    assert rt.inventory.applications == []  # nothing stale stays advertised
    assert all(not t.id.startswith("test-app.") for t in rt.inventory.tools)
