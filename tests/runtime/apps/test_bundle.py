"""MiniApp bundles (``lineup.formats.bundle``) and their storage in the registry:
every refusal has its stable code and stores nothing; a stored version's files are
fixed; surfaces are built from the entry and the files of the same stem."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import msgspec
import pytest

from lineup.formats.bundle import (
    MAX_BUNDLE_FILES,
    BundleError,
    BundleErrorCode,
    files_digest,
    load_bundle,
    load_bundle_dir,
)
from lineup.formats.manifest import ManifestError
from lineup.protocol.fields import MAX_BUNDLE_BYTES
from lineup.runtime import RuntimeStore
from lineup.runtime.apps.registry import AppRegistry, RegistryError
from lineup.runtime.runtime import STORE_FILE
from tests.support.interactions import FrozenClock

BUNDLE = Path(__file__).parents[2] / "support" / "apps" / "test-app"


def files() -> dict[str, bytes]:
    return dict(load_bundle_dir(BUNDLE).files)


@pytest.fixture
async def reg(tmp_path: Path) -> AsyncIterator[AppRegistry]:
    store = RuntimeStore(tmp_path / STORE_FILE, clock=FrozenClock())
    await store.open()
    registry = AppRegistry(store, clock=FrozenClock())
    await registry.load()
    yield registry
    await store.close()


def test_the_test_app_bundle_loads() -> None:
    bundle = load_bundle_dir(BUNDLE)
    assert bundle.manifest.id == "dev.lineup.test-app"
    assert [s.id for s in bundle.manifest.surfaces] == ["main", "card"]
    assert {"manifest.json", "index.html", "index.js", "card.js"} <= set(bundle.files)


@pytest.mark.parametrize(
    ("change", "code"),
    [
        (lambda f: f.update({"../escape.js": b""}), BundleErrorCode.BAD_PATH),
        (lambda f: f.update({"/abs.js": b""}), BundleErrorCode.BAD_PATH),
        (lambda f: f.update({"Upper.js": b""}), BundleErrorCode.BAD_PATH),
        (lambda f: f.update({"a/b/c/d/e/f.js": b""}), BundleErrorCode.BAD_PATH),
        (lambda f: f.update({"index.html": b"\xff\xfe"}), BundleErrorCode.NOT_TEXT),
        (lambda f: f.pop("card.html"), BundleErrorCode.MISSING_FILE),
        (lambda f: f.pop("icons/test-app.svg"), BundleErrorCode.MISSING_FILE),
        (lambda f: f.pop("manifest.json"), BundleErrorCode.NO_MANIFEST),
        (
            lambda f: f.update({"card.js": b"x" * (MAX_BUNDLE_BYTES + 1)}),
            BundleErrorCode.SURFACE_TOO_LARGE,
        ),
        (
            lambda f: f.update({f"extra{n}.txt": b"" for n in range(MAX_BUNDLE_FILES)}),
            BundleErrorCode.TOO_LARGE,
        ),
        (
            lambda f: f.update({f"big{n}.png": b"\0" * 150_000 for n in range(15)}),
            BundleErrorCode.TOO_LARGE,
        ),
    ],
)
def test_bad_bundles_are_refused_with_a_stable_code(change: object, code: BundleErrorCode) -> None:
    bundle = files()
    change(bundle)  # type: ignore[operator]
    with pytest.raises(BundleError) as refused:
        load_bundle(bundle)
    assert refused.value.code is code
    assert "x" * 50 not in str(refused.value)  # no file contents in the message


def test_a_bad_manifest_is_the_manifest_s_error() -> None:
    bundle = files()
    bundle["manifest.json"] = b'{"id": "nope"}'
    with pytest.raises(ManifestError):
        load_bundle(bundle)


def test_a_symlink_in_a_bundle_directory_is_refused(tmp_path: Path) -> None:
    copy = tmp_path / "app"
    copy.mkdir()
    for path, body in files().items():
        target = copy / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(body)
    (copy / "secret.js").symlink_to("/etc/hostname")
    with pytest.raises(BundleError) as refused:
        load_bundle_dir(copy)
    assert refused.value.code is BundleErrorCode.BAD_PATH


def test_the_digest_covers_paths_and_bodies() -> None:
    base = files()
    renamed = {("other.txt" if k == "index.css" else k): v for k, v in base.items()}
    changed = {**base, "index.css": base["index.css"] + b" "}
    digests = {files_digest(base), files_digest(renamed), files_digest(changed)}
    assert len(digests) == 3
    assert files_digest(dict(reversed(list(base.items())))) == files_digest(base)


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
