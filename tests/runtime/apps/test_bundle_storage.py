"""MiniApp bundles stored by the app registry (``lineup.runtime.apps.registry``):
a stored version's files are fixed, a refusal stores nothing, and surfaces are built
from the entry and the files of the same stem."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from lineup.formats.bundle import load_bundle
from lineup.runtime import RuntimeStore
from lineup.runtime.apps.registry import AppRegistry, RegistryError
from lineup.runtime.runtime import STORE_FILE
from tests.formats.test_bundle import BUNDLE, files
from tests.support.interactions import FrozenClock


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[AppRegistry]:
    store = RuntimeStore(tmp_path / STORE_FILE, clock=FrozenClock())
    await store.open()
    registry = AppRegistry(store, clock=FrozenClock())
    await registry.load()
    yield registry
    await store.close()


async def test_install_stores_the_files_and_serves_surfaces(reg: AppRegistry) -> None:
    installed = await reg.install_bundle(BUNDLE, enable=True)
    assert installed.installed
    main = await reg.surface("test-app")
    assert main is not None
    assert (main.app_id, main.app_version, main.surface_id) == (
        "dev.lineup.test-app",
        "1.0.0",
        "main",
    )
    assert main.html == (BUNDLE / "index.html").read_text()
    assert main.js == (BUNDLE / "index.js").read_text()
    card = await reg.surface_version("dev.lineup.test-app", "1.0.0", "card")
    assert card is not None and card.css == (BUNDLE / "card.css").read_text()
    assert await reg.surface_version("dev.lineup.test-app", "1.0.0", "nope") is None
    assert await reg.surface_version("dev.lineup.test-app", "2.0.0", None) is None
    assert "index" not in repr(main)  # contents stay out of repr

    again = await reg.install_bundle(BUNDLE, enable=True)  # the same bytes: idempotent
    assert not again.installed


async def test_the_same_version_with_other_files_is_a_conflict(
    reg: AppRegistry, tmp_path: Path
) -> None:
    await reg.install_bundle(BUNDLE, enable=True)
    bundle = files()
    bundle["index.js"] = b"// changed\n" + bundle["index.js"]
    with pytest.raises(RegistryError) as refused:
        await reg.install_bundle(load_bundle(bundle))
    assert refused.value.code == "app_version_conflict"
    main = await reg.surface("test-app")
    assert main is not None and not main.js.startswith("// changed")  # nothing changed

    newer = dict(bundle)
    manifest = msgspec.json.decode(bundle["manifest.json"])
    manifest["version"] = "1.1.0"
    newer["manifest.json"] = msgspec.json.encode(manifest)
    await reg.install_bundle(load_bundle(newer))
    main = await reg.surface("test-app")
    assert main is not None and main.js.startswith("// changed")
    path = tmp_path / STORE_FILE
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        versions = conn.execute(
            "SELECT DISTINCT version FROM app_files ORDER BY version"
        ).fetchall()
    finally:
        conn.close()
    assert versions == [("1.0.0",), ("1.1.0",)]  # the old version's files are kept
