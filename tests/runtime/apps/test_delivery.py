"""Signed delivery in the Runtime (``runtime.apps.installer``/``releases``) on a real
store and a real verified cache: install only after every check, refusals that write
nothing and keep the active version, updates that never move by themselves,
revocation with rollback to a verified predecessor (or unavailable), removal, and
audit rows with metadata only."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lineup.delivery.errors import DeliveryError
from lineup.runtime import Runtime
from lineup.runtime.apps.registry import RegistryError
from lineup.runtime.runtime import STORE_FILE, VERIFIED_CACHE_DIR
from tests.support.releases import APP_ID, Publisher, bundle_dir, release, sign


@pytest.fixture
async def runtime(tmp_path: Path) -> AsyncIterator[Runtime]:
    rt = Runtime(tmp_path / "rt", catalog_interval=None)
    await rt.open()
    yield rt
    await rt.close()


@pytest.fixture
def publisher() -> Publisher:
    return Publisher.new()


def cached(rt: Runtime) -> list[str]:
    directory = rt.data_dir / VERIFIED_CACHE_DIR
    return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def audit_rows(rt: Runtime) -> list[tuple[str, str, str, str | None]]:
    with sqlite3.connect(rt.data_dir / STORE_FILE) as conn:
        return conn.execute(
            "SELECT action, subject, outcome, code FROM audit WHERE action LIKE 'app.%'"
            " OR action LIKE 'key.%' ORDER BY rowid"
        ).fetchall()


async def test_install_after_every_check(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    await runtime.delivery.trust_key(publisher.public)
    good = release(publisher, tmp_path, "1.0.0")
    result = await runtime.delivery.install_release(good.body, good.artifact)
    assert (result.entry.app_id, result.entry.version, result.entry.enabled) == (
        APP_ID,
        "1.0.0",
        True,
    )
    assert cached(runtime) == [f"{good.release.sha256}.tar"]
    surface = await runtime.registry.surface_version(APP_ID, "1.0.0", None)
    assert surface is not None and "build 1.0.0" in surface.html
    assert any(a.id == APP_ID for a in runtime.inventory.applications)
    assert ("app.release", f"{APP_ID}@1.0.0", "verified", publisher.public.key_id) in audit_rows(
        runtime
    )


async def test_untrusted_key_writes_nothing(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    good = release(publisher, tmp_path, "1.0.0")
    with pytest.raises(DeliveryError) as caught:
        await runtime.delivery.install_release(good.body, good.artifact)
    assert caught.value.code == "key_unknown"
    assert cached(runtime) == []
    assert await runtime.registry.apps() == []
    assert audit_rows(runtime)[-1] == ("app.release", f"{APP_ID}@1.0.0", "refused", "key_unknown")


async def test_failed_candidate_keeps_the_active_version(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    await runtime.delivery.trust_key(publisher.public)
    good = release(publisher, tmp_path, "1.0.0")
    await runtime.delivery.install_release(good.body, good.artifact)
    candidate = release(publisher, tmp_path, "1.1.0")
    tampered = bytearray(candidate.artifact)
    tampered[600] ^= 1
    with pytest.raises(DeliveryError) as caught:
        await runtime.delivery.install_release(candidate.body, bytes(tampered))
    assert caught.value.code == "digest_mismatch"
    with pytest.raises(DeliveryError) as short:
        await runtime.delivery.install_release(candidate.body, candidate.artifact[:-1])
    assert short.value.code == "length_mismatch"
    (entry,) = await runtime.registry.apps()
    assert (entry.version, entry.versions) == ("1.0.0", ("1.0.0",))
    assert cached(runtime) == [f"{good.release.sha256}.tar"]


async def test_update_needs_an_exact_newer_version(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    await runtime.delivery.trust_key(publisher.public)
    v1 = release(publisher, tmp_path, "1.0.0")
    v2 = release(publisher, tmp_path, "1.1.0")
    old = release(publisher, tmp_path, "0.9.0")
    await runtime.delivery.install_release(v1.body, v1.artifact)
    await runtime.delivery.install_release(v2.body, v2.artifact)
    with pytest.raises(DeliveryError) as caught:
        await runtime.delivery.install_release(old.body, old.artifact)
    assert caught.value.code == "version_downgrade"
    (entry,) = await runtime.registry.apps()
    assert (entry.version, entry.versions) == ("1.1.0", ("1.0.0", "1.1.0"))


async def test_same_version_other_bytes_is_a_conflict(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    await runtime.delivery.trust_key(publisher.public)
    first = release(publisher, tmp_path, "1.0.0")
    other = release(publisher, tmp_path, "1.0.0", marker="b")
    await runtime.delivery.install_release(first.body, first.artifact)
    again = await runtime.delivery.install_release(first.body, first.artifact)
    assert again.installed is False
    with pytest.raises(DeliveryError) as caught:
        await runtime.delivery.install_release(other.body, other.artifact)
    assert caught.value.code == "app_version_conflict"


async def test_revoking_the_active_version_rolls_back(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    await runtime.delivery.trust_key(publisher.public)
    for version in ("1.0.0", "1.1.0", "1.2.0"):
        signed = release(publisher, tmp_path, version)
        await runtime.delivery.install_release(signed.body, signed.artifact)
    await runtime.delivery.revoke_version(APP_ID, "1.1.0")  # not in use: only recorded
    (entry,) = await runtime.registry.apps()
    assert entry.version == "1.2.0"
    (fallback,) = await runtime.delivery.revoke_version(APP_ID, "1.2.0")
    assert (fallback.outcome, fallback.to_version, fallback.reason) == (
        "rolled_back",
        "1.0.0",  # 1.1.0 is revoked too: the newest verified, unrevoked predecessor
        "version_revoked",
    )
    (entry,) = await runtime.registry.apps()
    assert (entry.version, entry.enabled, entry.unavailable) == ("1.0.0", True, None)
    assert await runtime.registry.surface_version(APP_ID, "1.2.0", None) is None
    assert await runtime.registry.surface_version(APP_ID, "1.0.0", None) is not None
    assert (
        "app.rollback",
        f"{APP_ID}@1.2.0",
        "rolled_back",
        "version_revoked",
    ) in audit_rows(runtime)


async def test_rollback_skips_a_predecessor_whose_cached_bytes_changed(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    await runtime.delivery.trust_key(publisher.public)
    v1 = release(publisher, tmp_path, "1.0.0")
    v2 = release(publisher, tmp_path, "1.1.0")
    await runtime.delivery.install_release(v1.body, v1.artifact)
    await runtime.delivery.install_release(v2.body, v2.artifact)
    path = runtime.data_dir / VERIFIED_CACHE_DIR / f"{v1.release.sha256}.tar"
    path.write_bytes(path.read_bytes()[:-1] + b"x")
    (fallback,) = await runtime.delivery.revoke_version(APP_ID, "1.1.0")
    assert (fallback.outcome, fallback.reason) == ("unavailable", "version_revoked")
    (entry,) = await runtime.registry.apps()
    assert (entry.enabled, entry.unavailable) == (False, "version_revoked")
    assert all(a.id != APP_ID for a in runtime.inventory.applications)
    with pytest.raises(RegistryError) as caught:
        await runtime.registry.enable(APP_ID)
    assert caught.value.code == "app_unavailable"


async def test_revoking_a_key_rolls_back_what_it_signed(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    other = Publisher.new("Other")
    await runtime.delivery.trust_key(publisher.public)
    await runtime.delivery.trust_key(other.public)
    v1 = release(publisher, tmp_path, "1.0.0")
    v2 = sign(other, bundle_dir(tmp_path, "1.1.0"))
    await runtime.delivery.install_release(v1.body, v1.artifact)
    await runtime.delivery.install_release(v2.body, v2.artifact)
    (fallback,) = await runtime.delivery.revoke_key(other.public.key_id)
    assert (fallback.outcome, fallback.to_version, fallback.reason) == (
        "rolled_back",
        "1.0.0",
        "key_revoked",
    )
    v3 = sign(other, bundle_dir(tmp_path, "1.2.0"))
    with pytest.raises(DeliveryError) as caught:
        await runtime.delivery.install_release(v3.body, v3.artifact)
    assert caught.value.code == "key_revoked"
    with pytest.raises(DeliveryError) as again:
        await runtime.delivery.trust_key(other.public)
    assert again.value.code == "key_revoked"


async def test_a_new_verified_version_makes_an_unavailable_app_available(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    await runtime.delivery.trust_key(publisher.public)
    v1 = release(publisher, tmp_path, "1.0.0")
    await runtime.delivery.install_release(v1.body, v1.artifact)
    (fallback,) = await runtime.delivery.revoke_version(APP_ID, "1.0.0")
    assert fallback.outcome == "unavailable"
    v2 = release(publisher, tmp_path, "1.0.1")
    result = await runtime.delivery.install_release(v2.body, v2.artifact)
    assert (result.entry.version, result.entry.enabled, result.entry.unavailable) == (
        "1.0.1",
        True,
        None,
    )


async def test_remove_deletes_versions_and_cache(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    await runtime.delivery.trust_key(publisher.public)
    v1 = release(publisher, tmp_path, "1.0.0")
    await runtime.delivery.install_release(v1.body, v1.artifact)
    await runtime.delivery.remove(APP_ID)
    assert await runtime.registry.apps() == []
    assert cached(runtime) == []
    assert ("app.remove", APP_ID, "removed", None) in audit_rows(runtime)


async def test_built_in_apps_cannot_be_removed_or_installed_unsigned(
    runtime: Runtime, tmp_path: Path
) -> None:
    from tests.support.releases import TEST_APP

    await runtime.registry.install_bundle(TEST_APP, enable=True)
    with pytest.raises(RegistryError) as caught:
        await runtime.delivery.remove(APP_ID)
    assert caught.value.code == "app_not_removable"
    with pytest.raises(RegistryError) as unsigned:
        await runtime.registry.install_bundle(bundle_dir(tmp_path, "2.0.0"))
    assert unsigned.value.code in {"app_unsigned", "app_kind_conflict"}


async def test_unsigned_installed_bundle_is_refused(runtime: Runtime, tmp_path: Path) -> None:
    with pytest.raises(RegistryError) as caught:
        await runtime.registry.install_bundle(bundle_dir(tmp_path, "1.0.0"))
    assert caught.value.code == "app_unsigned"
    assert await runtime.registry.apps() == []


async def test_audit_holds_metadata_only(
    runtime: Runtime, publisher: Publisher, tmp_path: Path
) -> None:
    await runtime.delivery.trust_key(publisher.public)
    v1 = release(publisher, tmp_path, "1.0.0")
    await runtime.delivery.install_release(v1.body, v1.artifact)
    await runtime.delivery.revoke_version(APP_ID, "1.0.0")
    with sqlite3.connect(runtime.data_dir / STORE_FILE) as conn:
        rows = conn.execute("SELECT * FROM audit").fetchall()
    text = repr(rows)
    for secret in (v1.release.signature, v1.release.sha256, str(tmp_path), "http", "<"):
        assert secret not in text


async def test_one_runtime_per_data_directory(runtime: Runtime) -> None:
    from lineup.runtime.runtime import DataDirInUse

    second = Runtime(runtime.data_dir, catalog_interval=None)
    with pytest.raises(DataDirInUse):
        await second.open()
