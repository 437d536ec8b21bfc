"""The golden delivery fixtures: each case gives exactly its code, and the generator
reproduces them byte for byte."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from lineup.delivery import publisher
from lineup.delivery.errors import DeliveryError
from lineup.delivery.keys import PublicKey, load_public_key
from lineup.delivery.release import decode_release
from lineup.delivery.verify import check_artifact, check_release, verify
from lineup.formats.semver import compare_semver

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "delivery"
CASES: dict[str, dict[str, Any]] = json.loads((FIXTURES / "cases.json").read_bytes())
EXPECTED = {
    "good": None,
    "good-v2": None,
    "wrong-length": "length_mismatch",
    "wrong-hash": "digest_mismatch",
    "bad-signature": "signature_invalid",
    "unknown-key": "key_unknown",
    "revoked-key": "key_revoked",
    "downgrade": "version_downgrade",
    "url-field": "release_field_forbidden",
    "html-field": "release_field_forbidden",
    "oversized": "artifact_too_large",
    "mismatch": "release_mismatch",
}
GENERATED_ROOTS = ("cases.json", "publisher.pub.json", "unknown.pub.json", "revoked.pub.json")


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "delivery_make_fixtures", FIXTURES / "make_fixtures.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    return module


def keys(case: dict[str, Any]) -> tuple[dict[str, PublicKey], frozenset[str]]:
    trusted = {
        key.key_id: key for key in (load_public_key(FIXTURES / name) for name in case["trust"])
    }
    revoked = frozenset(load_public_key(FIXTURES / name).key_id for name in case["revoked"])
    return trusted, revoked


def test_the_cases_are_the_agreed_ones() -> None:
    assert {name: case["code"] for name, case in CASES.items()} == EXPECTED
    for case in CASES.values():
        assert case["stage"] in {"release", "artifact", "install"}
        assert case["note"]


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_case_gives_exactly_its_code(name: str) -> None:
    case = CASES[name]
    trusted, revoked = keys(case)
    directory = FIXTURES / name
    artifact = (directory / "artifact.tar").read_bytes()
    release_bytes = (directory / "release.json").read_bytes()
    expected = case["code"] if case["stage"] != "install" else None

    if expected is None:
        verified = verify(decode_release(release_bytes), artifact, trusted, revoked)
        assert verified.bundle.manifest.kind == "installed"
        assert verified.key.key_id == load_public_key(FIXTURES / "publisher.pub.json").key_id
    else:
        with pytest.raises(DeliveryError) as refused:
            verify(decode_release(release_bytes), artifact, trusted, revoked)
        assert refused.value.code == expected
        # At the stage the case names: an artifact case passes the release check.
        if case["stage"] == "artifact":
            release = decode_release(release_bytes)
            check_release(release, trusted, revoked)
            with pytest.raises(DeliveryError):
                check_artifact(release, artifact)

    # The publisher's verify says the same, in the same words.
    result = publisher.verify_files(
        directory / "artifact.tar",
        directory / "release.json",
        [FIXTURES / n for n in case["trust"]],
        sorted(revoked),
    )
    assert result.ok is (expected is None)
    assert (result.refusal.code if result.refusal else None) == expected


def test_the_install_stage_cases_are_older_than_good() -> None:
    good = decode_release((FIXTURES / "good" / "release.json").read_bytes())
    v2 = decode_release((FIXTURES / "good-v2" / "release.json").read_bytes())
    old = decode_release((FIXTURES / "downgrade" / "release.json").read_bytes())
    assert (good.version, v2.version, old.version) == ("1.0.0", "1.1.0", "0.9.0")
    assert good.app_id == v2.app_id == old.app_id
    assert compare_semver(old.version, good.version) < 0 < compare_semver(v2.version, good.version)
    assert len({good.sha256, v2.sha256, old.sha256}) == 3
    assert [name for name, case in CASES.items() if case["stage"] == "install"] == ["downgrade"]


def test_the_generator_reproduces_the_fixtures_byte_for_byte(tmp_path: Path) -> None:
    written = generator().generate(tmp_path)
    generated = {path.relative_to(tmp_path).as_posix() for path in written}
    checked_in = {
        path.relative_to(FIXTURES).as_posix()
        for path in FIXTURES.rglob("*")
        if path.is_file() and path.relative_to(FIXTURES).parts[0] in {*CASES, *GENERATED_ROOTS}
    }
    assert generated == checked_in
    for relative in sorted(generated):
        assert (tmp_path / relative).read_bytes() == (FIXTURES / relative).read_bytes(), relative


def test_the_fixtures_stay_small() -> None:
    total = sum(path.stat().st_size for path in FIXTURES.rglob("*") if path.is_file())
    assert total < 400 * 1024
    assert not list(FIXTURES.rglob("*.key"))  # no private key files, only the seeds
