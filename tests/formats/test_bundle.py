"""MiniApp bundles (``lineup.formats.bundle``): every refusal has its stable code and
names no file's contents; the digest covers paths and bodies. Their storage in the
registry is tested in ``tests/runtime/apps/test_bundle_storage.py``."""

from __future__ import annotations

from pathlib import Path

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

BUNDLE = Path(__file__).parents[1] / "support" / "apps" / "test-app"


def files() -> dict[str, bytes]:
    return dict(load_bundle_dir(BUNDLE).files)


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
