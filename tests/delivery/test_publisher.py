"""The publisher: packing, keys, signing and verifying, and `lineup miniapp`."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner, Result

from lineup.delivery import publisher
from lineup.delivery.archive import unpack
from lineup.delivery.commands import miniapp_group
from lineup.delivery.errors import DeliveryError
from lineup.delivery.keys import load_private_key, load_public_key, verify_signature
from lineup.delivery.release import decode_release, sha256_hex
from lineup.delivery.verify import check_artifact

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "tests" / "fixtures" / "delivery" / "source"
BUNDLED = ROOT / "tests" / "support" / "apps" / "test-app"


def copy_bundle(target: Path, *, reverse: bool = False, mtime: int = 0) -> Path:
    """The source bundle's files copied in sorted or reverse order, with ``mtime``."""
    files = sorted(p for p in SOURCE.rglob("*") if p.is_file())
    for path in reversed(files) if reverse else files:
        copy = target / path.relative_to(SOURCE)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes(path.read_bytes())
        os.utime(copy, (mtime, mtime))
    return target


# --- packing ----------------------------------------------------------------------------


def test_pack_is_deterministic_whatever_the_file_order_and_times(tmp_path: Path) -> None:
    one = copy_bundle(tmp_path / "one", mtime=1_000_000)
    other = copy_bundle(tmp_path / "other", reverse=True, mtime=1_700_000_000)
    (other / "card.js").chmod(0o600)
    artifact, release = publisher.pack_bundle(one)
    again, release_again = publisher.pack_bundle(other)
    assert artifact == again
    assert release == release_again
    assert publisher.pack_bundle(one) == (artifact, release)


def test_pack_states_the_bundle_exactly(tmp_path: Path) -> None:
    artifact, release = publisher.pack_bundle(SOURCE)
    manifest = json.loads((SOURCE / "manifest.json").read_bytes())
    assert (release.app_id, release.version) == (manifest["id"], manifest["version"])
    assert release.artifact_id == "dev.lineup.test-app-1.0.0.tar"
    assert release.length == len(artifact)
    assert release.sha256 == sha256_hex(artifact)
    assert release.min_host_version == manifest["min_host_version"]
    assert release.permissions == sorted(manifest["permissions"])
    assert release.name == manifest["name"]  # what the App centre shows before install
    assert not release.signed
    files = unpack(artifact)
    assert files == {
        p.relative_to(SOURCE).as_posix(): p.read_bytes() for p in SOURCE.rglob("*") if p.is_file()
    }
    _, named = publisher.pack_bundle(SOURCE, artifact_id="custom.tar")
    assert named.artifact_id == "custom.tar"


def test_a_release_whose_name_is_not_the_bundle_s_is_refused(tmp_path: Path) -> None:
    """Installed by the name the person saw: a release signed with another name than its
    bundle's manifest (an offer dressed up as another app) does not install; a release
    that names nothing (signed before names were) still does."""
    artifact, release = publisher.pack_bundle(SOURCE)
    check_artifact(release, artifact)
    check_artifact(msgspec.structs.replace(release, name=""), artifact)
    with pytest.raises(DeliveryError) as refused:
        check_artifact(msgspec.structs.replace(release, name="Task Dashboard"), artifact)
    assert refused.value.code == "release_mismatch"


def test_pack_refuses_a_bundle_that_is_not_installed_kind() -> None:
    with pytest.raises(DeliveryError) as refused:
        publisher.pack_bundle(BUNDLED)
    assert refused.value.code == "release_mismatch"


def test_pack_keeps_a_bundle_refusal_code(tmp_path: Path) -> None:
    bundle = copy_bundle(tmp_path / "bundle")
    (bundle / "index.html").unlink()
    with pytest.raises(DeliveryError) as refused:
        publisher.pack_bundle(bundle)
    assert refused.value.code == "bundle_missing_file"
    with pytest.raises(DeliveryError) as refused:
        publisher.pack_bundle(tmp_path / "nothing-here")
    assert refused.value.code == "bundle_no_manifest"


def test_pack_refuses_an_invalid_artifact_id() -> None:
    with pytest.raises(DeliveryError) as refused:
        publisher.pack_bundle(SOURCE, artifact_id="Upper Case.tar")
    assert refused.value.code == "release_invalid"


@pytest.mark.parametrize(
    ("app_id", "version", "expected"),
    [
        ("dev.lineup.test-app", "1.0.0", "dev.lineup.test-app-1.0.0.tar"),
        ("dev.lineup.test-app", "2.0.0-RC.1+Build.5", "dev.lineup.test-app-2.0.0-rc.1-build.5.tar"),
    ],
)
def test_default_artifact_id(app_id: str, version: str, expected: str) -> None:
    assert publisher.default_artifact_id(app_id, version) == expected


def test_default_artifact_id_refuses_when_too_long() -> None:
    with pytest.raises(DeliveryError) as refused:
        publisher.default_artifact_id("dev." + "a" * 130, "1.0.0")
    assert refused.value.code == "release_invalid"


# --- keys and signing -------------------------------------------------------------------


def test_keygen_writes_a_private_key_only_its_owner_reads(tmp_path: Path) -> None:
    key_path, pub_path, public = publisher.keygen("acme", tmp_path / "keys")
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert key_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    assert load_public_key(pub_path) == public
    assert json.loads(pub_path.read_bytes())["key_id"] == public.key_id
    assert b"PRIVATE" not in pub_path.read_bytes()
    assert load_private_key(key_path)  # a usable Ed25519 key


def test_keygen_never_overwrites(tmp_path: Path) -> None:
    key_path, pub_path, _ = publisher.keygen("acme", tmp_path)
    before = key_path.read_bytes(), pub_path.read_bytes()
    with pytest.raises(FileExistsError):
        publisher.keygen("acme", tmp_path)
    key_path.unlink()  # only the public key left: still refused
    with pytest.raises(FileExistsError):
        publisher.keygen("acme", tmp_path)
    assert pub_path.read_bytes() == before[1]


@pytest.mark.parametrize("name", ["", "../acme", ".hidden", "a/b", "acme.key", "acme.pub.json"])
def test_keygen_refuses_names_that_are_not_plain(tmp_path: Path, name: str) -> None:
    with pytest.raises(ValueError, match="key name"):
        publisher.keygen(name, tmp_path)


def test_sign_file_signs_in_place_or_to_out(tmp_path: Path) -> None:
    key_path, pub_path, public = publisher.keygen("acme", tmp_path)
    _, release = publisher.pack_bundle(SOURCE)
    release_path = tmp_path / "r.release.json"
    publisher.write_release(release, release_path)
    assert decode_release(release_path.read_bytes()) == release

    out = tmp_path / "signed.json"
    target, signed = publisher.sign_file(release_path, key_path, out)
    assert target == out
    assert decode_release(release_path.read_bytes()) == release  # untouched
    assert decode_release(out.read_bytes()) == signed
    verify_signature(signed, load_public_key(pub_path))
    assert signed.key_id == public.key_id

    target, in_place = publisher.sign_file(release_path, key_path)
    assert target == release_path
    assert in_place == signed  # Ed25519 is deterministic


# --- verify_files -----------------------------------------------------------------------


@pytest.fixture
def published(tmp_path: Path) -> dict[str, Path]:
    key_path, pub_path, _ = publisher.keygen("acme", tmp_path / "keys")
    artifact, release = publisher.pack_bundle(SOURCE)
    artifact_path = tmp_path / release.artifact_id
    artifact_path.write_bytes(artifact)
    release_path = tmp_path / publisher.release_file_name(release.artifact_id)
    publisher.write_release(release, release_path)
    publisher.sign_file(release_path, key_path)
    return {"key": key_path, "pub": pub_path, "artifact": artifact_path, "release": release_path}


def test_verify_files_runs_every_check(published: dict[str, Path]) -> None:
    seen: list[str] = []
    result = publisher.verify_files(
        published["artifact"],
        published["release"],
        [published["pub"]],
        on_check=lambda check: seen.append(check.name),
    )
    assert result.ok
    assert result.refusal is None
    assert [check.name for check in result.checks] == list(publisher.CHECKS) == seen
    assert all(check.ok and check.code is None and check.seconds >= 0 for check in result.checks)
    assert result.release is not None and result.release.app_id == "dev.lineup.test-app"
    assert result.bundle is not None and result.bundle.manifest.kind == "installed"


def test_verify_files_stops_at_the_first_refusal(
    published: dict[str, Path], tmp_path: Path
) -> None:
    data = bytearray(published["artifact"].read_bytes())
    data[-600] ^= 1  # a byte of the end-of-archive padding: same length, other digest
    published["artifact"].write_bytes(bytes(data))
    result = publisher.verify_files(published["artifact"], published["release"], [published["pub"]])
    assert not result.ok
    assert [check.name for check in result.checks] == list(publisher.CHECKS[:6])
    assert result.refusal is not None
    assert (result.refusal.name, result.refusal.code) == ("SHA-256", "digest_mismatch")
    assert result.release is None and result.bundle is None


def test_verify_files_refuses_an_unsigned_release(published: dict[str, Path]) -> None:
    _, release = publisher.pack_bundle(SOURCE)
    publisher.write_release(release, published["release"])
    result = publisher.verify_files(published["artifact"], published["release"], [published["pub"]])
    assert result.refusal is not None
    assert (result.refusal.name, result.refusal.code) == ("key trusted", "signature_invalid")


def test_verify_files_with_a_revoked_key(published: dict[str, Path]) -> None:
    key_id = load_public_key(published["pub"]).key_id
    result = publisher.verify_files(
        published["artifact"], published["release"], [published["pub"]], [key_id]
    )
    assert result.refusal is not None
    assert (result.refusal.name, result.refusal.code) == ("key trusted", "key_revoked")


# --- the command line -------------------------------------------------------------------


def run(*args: str | Path) -> Result:
    return CliRunner().invoke(miniapp_group, [str(arg) for arg in args], catch_exceptions=False)


def test_cli_keygen(tmp_path: Path) -> None:
    result = run("keygen", "acme", "--out", tmp_path / "keys")
    assert result.exit_code == 0, result.output
    public = load_public_key(tmp_path / "keys" / "acme.pub.json")
    assert public.key_id in result.stdout
    assert stat.S_IMODE((tmp_path / "keys" / "acme.key").stat().st_mode) == 0o600
    assert "PRIVATE KEY" not in result.output

    again = run("keygen", "acme", "--out", tmp_path / "keys")
    assert again.exit_code == 1
    assert "already exists" in again.stderr
    assert load_public_key(tmp_path / "keys" / "acme.pub.json") == public


def test_cli_pack_sign_verify(tmp_path: Path) -> None:
    assert run("keygen", "acme", "--out", tmp_path).exit_code == 0
    out = tmp_path / "dist"
    packed = run("pack", SOURCE, "--out", out)
    assert packed.exit_code == 0, packed.output
    artifact = out / "dev.lineup.test-app-1.0.0.tar"
    release_path = out / "dev.lineup.test-app-1.0.0.release.json"
    release = decode_release(release_path.read_bytes())
    for shown in ("dev.lineup.test-app", "1.0.0", str(release.length), release.sha256):
        assert shown in packed.stdout
    assert artifact.read_bytes() == publisher.pack_bundle(SOURCE)[0]
    assert run("pack", SOURCE, "--out", out).exit_code == 0  # same bytes again: fine

    signed = run("sign", release_path, "--key", tmp_path / "acme.key")
    assert signed.exit_code == 0, signed.output
    release = decode_release(release_path.read_bytes())
    assert release.signed
    assert release.key_id in signed.stdout

    verified = run("verify", artifact, release_path, "--trust", tmp_path / "acme.pub.json")
    assert verified.exit_code == 0, verified.output
    for name in publisher.CHECKS:
        assert name in verified.stdout
    assert "refused" not in verified.stdout
    assert "verified dev.lineup.test-app 1.0.0" in verified.stdout
    assert verified.stderr == ""
    # Never a whole signature, nor the files' contents.
    for result in (packed, signed, verified):
        assert release.signature not in result.output
        assert release.signature[:20] not in result.output
        assert "LineUpApp" not in result.output


def test_cli_verify_refused(tmp_path: Path) -> None:
    assert run("keygen", "acme", "--out", tmp_path).exit_code == 0
    assert run("keygen", "other", "--out", tmp_path).exit_code == 0
    assert run("pack", SOURCE, "--out", tmp_path).exit_code == 0
    artifact = tmp_path / "dev.lineup.test-app-1.0.0.tar"
    release_path = tmp_path / "dev.lineup.test-app-1.0.0.release.json"
    assert run("sign", release_path, "--key", tmp_path / "acme.key").exit_code == 0

    unknown = run("verify", artifact, release_path, "--trust", tmp_path / "other.pub.json")
    assert unknown.exit_code == 1
    assert unknown.stderr.startswith("key_unknown: ")
    assert "not run" in unknown.stdout

    key_id = load_public_key(tmp_path / "acme.pub.json").key_id
    revoked = run(
        "verify",
        artifact,
        release_path,
        "--trust",
        tmp_path / "acme.pub.json",
        "--revoked-key",
        key_id,
    )
    assert revoked.exit_code == 1
    assert revoked.stderr.startswith("key_revoked: ")

    data = bytearray(artifact.read_bytes())
    data[100] ^= 1
    artifact.write_bytes(bytes(data))
    tampered = run(
        "verify",
        artifact,
        release_path,
        "--trust",
        tmp_path / "other.pub.json",
        "--trust",
        tmp_path / "acme.pub.json",
    )
    assert tampered.exit_code == 1
    assert tampered.stderr.startswith("digest_mismatch: ")
    assert "SHA-256" in tampered.stdout


def test_cli_pack_refused_and_bad_arguments(tmp_path: Path) -> None:
    bundled = run("pack", BUNDLED, "--out", tmp_path)
    assert bundled.exit_code == 1
    assert bundled.stderr.startswith("release_mismatch: ")
    assert list(tmp_path.iterdir()) == []

    bad_id = run("pack", SOURCE, "--artifact-id", "Bad Id")
    assert bad_id.exit_code == 2
    bad_revoked = run(
        "verify", SOURCE / "manifest.json", SOURCE / "manifest.json", "--trust",
        SOURCE / "manifest.json", "--revoked-key", "nope",
    )  # fmt: skip
    assert bad_revoked.exit_code == 2


def test_cli_pack_never_replaces_an_artifact(tmp_path: Path) -> None:
    bundle = copy_bundle(tmp_path / "bundle")
    assert run("pack", bundle, "--out", tmp_path / "dist").exit_code == 0
    artifact = tmp_path / "dist" / "dev.lineup.test-app-1.0.0.tar"
    before = artifact.read_bytes()
    (bundle / "index.css").write_text("body { margin: 1px; }\n")
    again = run("pack", bundle, "--out", tmp_path / "dist")
    assert again.exit_code == 1
    assert "new version" in again.stderr
    assert artifact.read_bytes() == before


def test_cli_sign_with_a_key_that_is_not_one(tmp_path: Path) -> None:
    _, release = publisher.pack_bundle(SOURCE)
    release_path = tmp_path / "r.release.json"
    publisher.write_release(release, release_path)
    shutil.copy(SOURCE / "manifest.json", tmp_path / "not.key")
    result = run("sign", release_path, "--key", tmp_path / "not.key")
    assert result.exit_code == 1
    assert "not an unencrypted Ed25519 private key" in result.stderr
    assert decode_release(release_path.read_bytes()) == release
