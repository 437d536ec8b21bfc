"""The AppServer's catalog of signed MiniApp releases: files on disk, the two HTTP
routes on a real AppServer over loopback, and the ``catalog`` operator commands."""

from __future__ import annotations

import json
import logging
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import msgspec
import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.applications import Starlette

from lineup.delivery.archive import pack
from lineup.delivery.catalog import CatalogClient
from lineup.delivery.errors import DeliveryError
from lineup.delivery.keys import generate_key, public_key_of, sign_release
from lineup.delivery.release import Release, decode_release, encode_release, sha256_hex
from lineup.delivery.verify import verify
from lineup.formats.bundle import load_bundle_dir
from lineup.server import admin, create_app
from lineup.server.catalog import Catalog, catalog_for, empty_document
from lineup.server.catalog_commands import catalog_group
from lineup.server.runner import storage_for
from tests.conftest import Pair
from tests.support.appserver import AppServerProcess

TEST_APP = Path(__file__).resolve().parents[1] / "support" / "apps" / "test-app"


@dataclass
class Built:
    release: Release
    release_bytes: bytes
    artifact: bytes


def new_app_id() -> str:
    return f"dev.lineup.c{uuid.uuid4().hex[:10]}"


def build(
    root: Path,
    key: Ed25519PrivateKey,
    app_id: str,
    version: str = "1.0.0",
    *,
    artifact_id: str | None = None,
    kind: str = "installed",
    text: str = "",
    length_delta: int = 0,
) -> Built:
    """A signed release of the test app (as ``app_id`` at ``version``) and its artifact."""
    directory = root / f"bundle-{uuid.uuid4().hex[:8]}"
    shutil.copytree(TEST_APP, directory)
    manifest_path = directory / "manifest.json"
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    manifest.update(id=app_id, version=version, kind=kind)
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    if text:
        (directory / "index.js").write_text(text, encoding="utf-8")
    bundle = load_bundle_dir(directory)
    artifact = pack(bundle.files)
    release = Release(
        app_id=app_id,
        version=version,
        artifact_id=artifact_id or f"{app_id}-{version}",
        length=len(artifact) + length_delta,
        sha256=sha256_hex(artifact),
        min_host_version=bundle.manifest.min_host_version,
        permissions=sorted(bundle.manifest.permissions),
    )
    signed = sign_release(release, key)
    return Built(signed, encode_release(signed), artifact)


def files_under(directory: Path) -> dict[str, bytes]:
    if not directory.exists():
        return {}
    return {
        p.relative_to(directory).as_posix(): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file() and p.name != ".lock"
    }


def refused(code: str, action: Callable[[], object]) -> DeliveryError:
    with pytest.raises(DeliveryError) as caught:
        action()
    assert caught.value.code == code, caught.value
    return caught.value


def expect_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    body = response.json()
    assert set(body) == {"error"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]


@pytest.fixture
def key() -> Ed25519PrivateKey:
    return generate_key()


# --- on disk ---------------------------------------------------------------------------------


def test_publish_writes_the_release_and_artifact_and_lists_them_by_semver(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    catalog = Catalog(tmp_path / "catalog")
    app_id = new_app_id()
    built = {v: build(tmp_path, key, app_id, v) for v in ("1.10.0", "1.2.0", "1.2.0-rc.1")}
    for item in built.values():
        assert catalog.publish(item.release_bytes, item.artifact) == item.release

    first = built["1.10.0"]
    assert (catalog.artifacts_dir / first.release.artifact_id).read_bytes() == first.artifact
    release_file = catalog.releases_dir / app_id / "1.10.0.json"
    assert release_file.read_bytes() == encode_release(first.release)
    assert not [p for p in catalog.directory.rglob(".incoming-*")]

    body, revision = catalog.document()
    document = json.loads(body)
    assert document["revision"] == revision
    assert [app["app_id"] for app in document["apps"]] == [app_id]
    versions = [r["version"] for r in document["apps"][0]["releases"]]
    assert versions == ["1.2.0-rc.1", "1.2.0", "1.10.0"]
    releases = [decode_release(json.dumps(r)) for r in document["apps"][0]["releases"]]
    assert releases == [built[v].release for v in versions]
    assert document["revoked"] == {"versions": [], "keys": []}


def test_the_document_is_deterministic_and_its_revision_is_its_content(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    directory = tmp_path / "catalog"
    apps = sorted(new_app_id() for _ in range(2))
    for app_id in reversed(apps):
        item = build(tmp_path, key, app_id)
        Catalog(directory).publish(item.release_bytes, item.artifact)
    Catalog(directory).revoke_key("ed25519:" + "b" * 32)
    Catalog(directory).revoke_key("ed25519:" + "a" * 32)
    Catalog(directory).revoke_version(apps[1], "2.0.0")
    Catalog(directory).revoke_version(apps[0], "10.0.0")
    Catalog(directory).revoke_version(apps[0], "9.0.0")

    body, revision = Catalog(directory).document()
    assert Catalog(directory).document() == (body, revision)
    document = json.loads(body)
    assert [a["app_id"] for a in document["apps"]] == apps
    assert document["revoked"] == {
        "versions": [
            {"app_id": apps[0], "version": "9.0.0"},
            {"app_id": apps[0], "version": "10.0.0"},
            {"app_id": apps[1], "version": "2.0.0"},
        ],
        "keys": ["ed25519:" + "a" * 32, "ed25519:" + "b" * 32],
    }
    content = {k: v for k, v in document.items() if k != "revision"}
    digest = sha256_hex(msgspec.json.encode(content, order="sorted"))
    assert revision == "cat-" + digest[:20]
    assert body == msgspec.json.encode(document, order="sorted")

    empty_body, empty_revision = empty_document()
    assert Catalog(tmp_path / "nothing").document() == (empty_body, empty_revision)
    assert json.loads(empty_body) == {
        "revision": empty_revision,
        "apps": [],
        "revoked": {"versions": [], "keys": []},
    }


def test_republishing_the_same_release_changes_nothing(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    catalog = Catalog(tmp_path / "catalog")
    item = build(tmp_path, key, new_app_id())
    catalog.publish(item.release_bytes, item.artifact)
    before = files_under(catalog.directory)
    # A hard link keeps each stored file's inode alive: a rewrite (a rename over the
    # name) would leave the link behind with a count of 1.
    stored = [p for p in catalog.directory.rglob("*") if p.is_file() and p.name != ".lock"]
    assert len(stored) == 2
    for n, path in enumerate(stored):
        os.link(path, tmp_path / f"link-{n}")
    revision = catalog.document()[1]

    # The same release, spelled differently (key order, whitespace), is the same release.
    respelled = json.dumps(dict(reversed(json.loads(item.release_bytes).items())), indent=2)
    for release_bytes in (item.release_bytes, respelled.encode()):
        assert catalog.publish(release_bytes, item.artifact) == item.release
    assert files_under(catalog.directory) == before
    assert [path.stat().st_nlink for path in stored] == [2, 2]
    assert catalog.document()[1] == revision


def test_a_published_version_and_artifact_id_cannot_be_reused(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    catalog = Catalog(tmp_path / "catalog")
    app_id = new_app_id()
    first = build(tmp_path, key, app_id, "1.0.0")
    catalog.publish(first.release_bytes, first.artifact)
    before = files_under(catalog.directory)

    changed = build(tmp_path, key, app_id, "1.0.0", artifact_id="other-id", text="// changed")
    refused(
        "app_version_conflict", lambda: catalog.publish(changed.release_bytes, changed.artifact)
    )
    same_id = build(tmp_path, key, app_id, "1.0.0", text="// changed")
    refused(
        "app_version_conflict", lambda: catalog.publish(same_id.release_bytes, same_id.artifact)
    )
    resigned = build(tmp_path, generate_key(), app_id, "1.0.0")
    refused(
        "app_version_conflict", lambda: catalog.publish(resigned.release_bytes, resigned.artifact)
    )
    reused = build(tmp_path, key, app_id, "1.1.0", artifact_id=first.release.artifact_id)
    refused("artifact_conflict", lambda: catalog.publish(reused.release_bytes, reused.artifact))
    elsewhere = build(tmp_path, key, new_app_id(), artifact_id=first.release.artifact_id)
    refused(
        "artifact_conflict", lambda: catalog.publish(elsewhere.release_bytes, elsewhere.artifact)
    )
    assert files_under(catalog.directory) == before

    # A new version with a new artifact id is fine.
    second = build(tmp_path, key, app_id, "1.1.0")
    catalog.publish(second.release_bytes, second.artifact)
    assert (catalog.artifacts_dir / second.release.artifact_id).read_bytes() == second.artifact


def test_a_release_that_is_not_exactly_its_artifact_is_refused_and_nothing_is_written(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    catalog = Catalog(tmp_path / "catalog")
    app_id = new_app_id()
    good = build(tmp_path, key, app_id)
    too_long = build(tmp_path, key, app_id, length_delta=1)
    corrupted = good.artifact[:-600] + b"x" + good.artifact[-599:]
    assert len(corrupted) == len(good.artifact)
    unsigned = msgspec.structs.replace(good.release, signature="")
    assert unsigned.key_id
    bundled = build(tmp_path, key, app_id, kind="bundled")

    refused("length_mismatch", lambda: catalog.publish(too_long.release_bytes, too_long.artifact))
    refused("length_mismatch", lambda: catalog.publish(good.release_bytes, good.artifact + b"\0"))
    refused("digest_mismatch", lambda: catalog.publish(good.release_bytes, corrupted))
    refused("release_invalid", lambda: catalog.publish(encode_release(unsigned), good.artifact))
    without_key = msgspec.structs.replace(good.release, key_id="", signature="")
    refused("release_invalid", lambda: catalog.publish(encode_release(without_key), good.artifact))
    refused("release_invalid", lambda: catalog.publish(b"{not json", good.artifact))
    refused(
        "release_field_forbidden",
        lambda: catalog.publish(
            json.dumps({**json.loads(good.release_bytes), "url": "https://x"}).encode(),
            good.artifact,
        ),
    )
    refused("release_mismatch", lambda: catalog.publish(bundled.release_bytes, bundled.artifact))
    assert not catalog.directory.exists()
    assert json.loads(catalog.document()[0])["apps"] == []


def test_revocations_are_idempotent_validated_and_listed(
    tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    catalog = Catalog(tmp_path / "catalog")
    item = build(tmp_path, key, new_app_id())
    catalog.publish(item.release_bytes, item.artifact)
    key_id = item.release.key_id
    unrevoked = catalog.document()[1]

    assert catalog.revoke_version(item.release.app_id, "1.0.0") is True
    assert catalog.revoke_version(item.release.app_id, "1.0.0") is False
    assert catalog.revoke_key(key_id) is True
    assert catalog.revoke_key(key_id) is False
    body, revision = catalog.document()
    assert revision != unrevoked
    assert json.loads(body)["revoked"] == {
        "versions": [{"app_id": item.release.app_id, "version": "1.0.0"}],
        "keys": [key_id],
    }
    stored = json.loads(catalog.revocations_path.read_bytes())
    assert stored == json.loads(body)["revoked"]
    [entry] = catalog.entries()
    assert (entry.version_revoked, entry.key_revoked) == (True, True)

    refused("release_invalid", lambda: catalog.revoke_version("../etc", "1.0.0"))
    refused("release_invalid", lambda: catalog.revoke_version(item.release.app_id, "1.0"))
    refused("release_invalid", lambda: catalog.revoke_key("ed25519:XYZ"))
    assert json.loads(catalog.revocations_path.read_bytes()) == stored


def test_unreadable_releases_are_skipped_and_logged_by_id_only(
    tmp_path: Path, key: Ed25519PrivateKey, caplog: pytest.LogCaptureFixture
) -> None:
    catalog = Catalog(tmp_path / "catalog")
    item = build(tmp_path, key, new_app_id())
    catalog.publish(item.release_bytes, item.artifact)
    app_dir = catalog.releases_dir / item.release.app_id
    (app_dir / "2.0.0.json").write_bytes(b'{"secret-content": "do not log me"}')
    (app_dir / "3.0.0.json").write_bytes(item.release_bytes)  # 1.0.0 filed as 3.0.0
    (app_dir / ".incoming-0123").write_bytes(b"half a file")

    with caplog.at_level(logging.WARNING, logger="lineup.server.catalog"):
        document = json.loads(catalog.document()[0])
    [app] = document["apps"]
    assert [r["version"] for r in app["releases"]] == ["1.0.0"]
    skipped = [r for r in caplog.records if r.getMessage() == "catalog release skipped"]
    assert sorted(getattr(r, "version", "") for r in skipped) == ["2.0.0", "3.0.0"]
    assert {getattr(r, "code", "") for r in skipped} == {"release_invalid", "release_misplaced"}
    assert "do not log me" not in caplog.text
    assert item.release.signature not in caplog.text


def test_the_document_is_cached_until_the_directory_changes(
    tmp_path: Path, key: Ed25519PrivateKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = tmp_path / "catalog"
    server_side = Catalog(directory)
    first = build(tmp_path, key, new_app_id())
    Catalog(directory).publish(first.release_bytes, first.artifact)
    cached = server_side.document()

    reads: list[int] = []
    original = Catalog._read_releases

    def counting(self: Catalog) -> list[tuple[Release, bytes]]:
        reads.append(1)
        return original(self)

    monkeypatch.setattr(Catalog, "_read_releases", counting)
    assert server_side.document() == cached
    assert server_side.artifact(first.release.artifact_id) is not None
    assert reads == []

    # Another process (a fresh instance) publishes and revokes: the next request sees it.
    second = build(tmp_path, key, new_app_id())
    Catalog(directory).publish(second.release_bytes, second.artifact)
    reads.clear()
    published = server_side.document()
    assert reads == [1]
    assert published != cached
    assert second.release.app_id in published[0].decode()
    Catalog(directory).revoke_key(first.release.key_id)
    revoked = server_side.document()
    assert revoked[1] != published[1]
    assert first.release.key_id in json.loads(revoked[0])["revoked"]["keys"]


def test_artifact_path_takes_checked_ids_only(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    catalog = Catalog(tmp_path / "data" / "catalog")
    item = build(tmp_path, key, new_app_id())
    catalog.publish(item.release_bytes, item.artifact)
    (tmp_path / "data" / "secret").write_bytes(b"not an artifact")
    assert catalog.artifact_path(item.release.artifact_id) == (
        catalog.artifacts_dir / item.release.artifact_id
    )
    for bad in ("", ".", "..", "../secret", "../../data/secret", "a/b", ".incoming-x", "A", "x\0"):
        assert catalog.artifact_path(bad) is None, bad
    assert catalog.artifact_path("unknown-id") is None


# --- over HTTP ---------------------------------------------------------------------------------


async def test_catalog_and_artifact_over_http_for_users_and_agents(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    catalog = catalog_for(appserver.data_dir)
    app_id = new_app_id()
    built = [build(tmp_path, key, app_id, v) for v in ("1.10.0", "1.9.0")]
    for item in built:
        catalog.publish(item.release_bytes, item.artifact)

    for api in (pair.user, pair.agent):
        response = await api.http.get("/v1/catalog")
        assert response.status_code == 200, response.text
        assert response.headers["content-type"] == "application/json"
        document = response.json()
        assert response.headers["etag"] == f'"{document["revision"]}"'
        [app] = [a for a in document["apps"] if a["app_id"] == app_id]
        assert [r["version"] for r in app["releases"]] == ["1.9.0", "1.10.0"]

        for item in built:
            got = await api.http.get(f"/v1/artifacts/{item.release.artifact_id}")
            assert got.status_code == 200, got.text
            assert got.content == item.artifact
            assert got.headers["content-type"] == "application/octet-stream"
            assert got.headers["content-length"] == str(len(item.artifact))
            assert got.headers["etag"] == f'"{item.release.sha256}"'
            assert got.headers["cache-control"] == "private, max-age=31536000, immutable"

    # What the Runtime's client fetches verifies with the publisher's key.
    client = CatalogClient(appserver.url, pair.user.secret)
    fetched = await client.fetch()
    assert fetched.skipped == 0
    release = fetched.find(app_id, "1.10.0")
    assert release == built[0].release
    trusted = {release.key_id: public_key_of(key)}
    verified = verify(release, await client.download(release), trusted)
    assert verified.bundle.manifest.version == "1.10.0"

    log = appserver.log_text()
    for secret in (pair.user.secret, pair.agent_key, release.signature, release.sha256):
        assert secret not in log


async def test_etags_answer_not_modified(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    catalog = catalog_for(appserver.data_dir)
    first = build(tmp_path, key, new_app_id())
    catalog.publish(first.release_bytes, first.artifact)
    http = pair.user.http

    etag = (await http.get("/v1/catalog")).headers["etag"]
    for header in (etag, f"W/{etag}", f'"cat-other", {etag}', "*"):
        unchanged = await http.get("/v1/catalog", headers={"If-None-Match": header})
        assert unchanged.status_code == 304, header
        assert unchanged.content == b""
        assert unchanged.headers["etag"] == etag
    stale = await http.get("/v1/catalog", headers={"If-None-Match": '"cat-other"'})
    assert stale.status_code == 200
    assert stale.headers["etag"] == etag

    second = build(tmp_path, key, new_app_id())
    catalog.publish(second.release_bytes, second.artifact)
    changed = await http.get("/v1/catalog", headers={"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag
    assert second.release.app_id in changed.text

    url = f"/v1/artifacts/{first.release.artifact_id}"
    artifact_etag = f'"{first.release.sha256}"'
    cached = await http.get(url, headers={"If-None-Match": artifact_etag})
    assert cached.status_code == 304
    assert cached.content == b""
    other = await http.get(url, headers={"If-None-Match": f'"{"0" * 64}"'})
    assert other.status_code == 200
    assert other.content == first.artifact


async def test_revocations_appear_in_the_served_catalog(
    appserver: AppServerProcess, pair: Pair, tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    catalog = catalog_for(appserver.data_dir)
    item = build(tmp_path, key, new_app_id())
    catalog.publish(item.release_bytes, item.artifact)
    revoked_key = public_key_of(generate_key()).key_id
    catalog.revoke_version(item.release.app_id, item.release.version)
    catalog.revoke_key(revoked_key)

    document = (await pair.agent.http.get("/v1/catalog")).json()
    assert {"app_id": item.release.app_id, "version": "1.0.0"} in document["revoked"]["versions"]
    assert revoked_key in document["revoked"]["keys"]
    fetched = await CatalogClient(appserver.url, pair.agent_key).fetch()
    assert (item.release.app_id, "1.0.0") in fetched.revoked_versions
    assert revoked_key in fetched.revoked_keys
    # A revoked version's bytes stay downloadable: the Runtime decides, and audits.
    got = await pair.agent.http.get(f"/v1/artifacts/{item.release.artifact_id}")
    assert got.content == item.artifact


async def test_the_routes_need_a_token(
    appserver: AppServerProcess, tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    item = build(tmp_path, key, new_app_id())
    catalog_for(appserver.data_dir).publish(item.release_bytes, item.artifact)
    paths = ("/v1/catalog", f"/v1/artifacts/{item.release.artifact_id}")
    async with httpx.AsyncClient(base_url=appserver.url) as http:
        for path in paths:
            expect_error(await http.get(path), 401, "unauthorized")
            wrong = {"Authorization": "Bearer lut_not-a-token"}
            expect_error(await http.get(path, headers=wrong), 401, "unauthorized")


async def test_unknown_and_malformed_artifact_ids_are_not_found(
    appserver: AppServerProcess, pair: Pair
) -> None:
    catalog = catalog_for(appserver.data_dir)
    # Bytes on disk that no release names are not served either.
    catalog.artifacts_dir.mkdir(parents=True, exist_ok=True)
    (catalog.artifacts_dir / "orphan-artifact").write_bytes(b"left by a crash")
    (appserver.data_dir / "outside").write_bytes(b"outside the catalog")
    for artifact_id in (
        "no-such-artifact",
        "orphan-artifact",
        "..%2Fetc%2Fpasswd",
        "..%2F..%2Foutside",
        "..%2Foutside",
        "%2e%2e",
        "UPPER",
        "a%00b",
        "x" * 200,
        "%20",
    ):
        response = await pair.user.http.get(f"/v1/artifacts/{artifact_id}")
        expect_error(response, 404, "not_found")
        assert b"outside" not in response.content


# --- in process: no catalog, and an unreadable one -------------------------------------------


@pytest.fixture
async def local_server(tmp_path: Path) -> tuple[Path, str]:
    """An AppServer data dir with one user, and that user's token."""
    data_dir = tmp_path / "server"
    data_dir.mkdir()
    await admin.add_user(data_dir, "operator", "pw")
    app = create_app(storage_for(data_dir))
    async with app.router.lifespan_context(app), _client(app) as http:
        login = await http.post("/v1/login", json={"username": "operator", "password": "pw"})
    assert login.status_code == 200, login.text
    return data_dir, login.json()["token"]


def _client(app: Starlette, token: str | None = None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://t", headers=headers
    )


async def test_without_a_catalog_the_catalog_is_empty(local_server: tuple[Path, str]) -> None:
    data_dir, token = local_server
    app = create_app(storage_for(data_dir))
    async with app.router.lifespan_context(app), _client(app, token) as http:
        response = await http.get("/v1/catalog")
        assert response.status_code == 200
        assert response.content == empty_document()[0]
        assert response.headers["etag"] == f'"{empty_document()[1]}"'
        expect_error(await http.get("/v1/artifacts/anything"), 404, "not_found")


async def test_an_unreadable_revocations_file_fails_closed(
    local_server: tuple[Path, str], tmp_path: Path, key: Ed25519PrivateKey
) -> None:
    data_dir, token = local_server
    catalog = catalog_for(data_dir)
    item = build(tmp_path, key, new_app_id())
    catalog.publish(item.release_bytes, item.artifact)
    catalog.revoke_version(item.release.app_id, "1.0.0")
    app = create_app(storage_for(data_dir), catalog=catalog_for(data_dir))
    async with app.router.lifespan_context(app), _client(app, token) as http:
        assert (await http.get("/v1/catalog")).status_code == 200
        catalog.revocations_path.write_bytes(b'{"versions": [')
        expect_error(await http.get("/v1/catalog"), 503, "unavailable")
        refused("catalog_unavailable", lambda: catalog.revoke_key(item.release.key_id))
        assert catalog.revocations_path.read_bytes() == b'{"versions": ['

        # An artifact whose bytes changed on disk is not served under the release's digest.
        catalog.revocations_path.unlink()
        path = catalog.artifacts_dir / item.release.artifact_id
        path.write_bytes(item.artifact[:-1] + b"!")
        expect_error(
            await http.get(f"/v1/artifacts/{item.release.artifact_id}"), 503, "unavailable"
        )


# --- the operator commands -----------------------------------------------------------------------


def test_catalog_commands(tmp_path: Path, key: Ed25519PrivateKey) -> None:
    data_dir = tmp_path / "server"
    runner = CliRunner()

    def run(*args: str) -> Any:
        return runner.invoke(catalog_group, list(args), obj=data_dir)

    app_id = new_app_id()
    item = build(tmp_path, key, app_id, "1.2.0")
    artifact_file = tmp_path / "app.tar"
    release_file = tmp_path / "app.release.json"
    artifact_file.write_bytes(item.artifact)
    release_file.write_bytes(item.release_bytes)

    assert run("list").output == "no releases published\n"
    for _ in range(2):
        published = run("publish", str(artifact_file), str(release_file))
        assert published.exit_code == 0, published.output
        assert published.output == (
            f"published {app_id}@1.2.0 (artifact {item.release.artifact_id})\n"
        )
    assert catalog_for(data_dir).artifact(item.release.artifact_id) is not None

    other = build(tmp_path, key, app_id, "1.2.0", artifact_id="x-other", text="// new")
    release_file.write_bytes(other.release_bytes)
    mismatch = run("publish", str(artifact_file), str(release_file))
    assert mismatch.exit_code == 1
    code = "length_mismatch" if len(other.artifact) != len(item.artifact) else "digest_mismatch"
    assert mismatch.output.startswith(f"Error: {code}: ")
    artifact_file.write_bytes(other.artifact)
    conflict = run("publish", str(artifact_file), str(release_file))
    assert conflict.exit_code == 1
    assert conflict.output.startswith("Error: app_version_conflict: ")

    listed = run("list")
    assert listed.exit_code == 0
    header, row = listed.output.splitlines()
    assert header.split() == ["APP", "VERSION", "ARTIFACT", "BYTES", "KEY", "STATUS"]
    assert row.split() == [
        app_id,
        "1.2.0",
        item.release.artifact_id,
        str(len(item.artifact)),
        item.release.key_id,
        "published",
    ]

    assert run("revoke", app_id, "1.2.0").output == f"{app_id}@1.2.0 revoked\n"
    assert run("revoke", app_id, "1.2.0").output == f"{app_id}@1.2.0 already revoked\n"
    assert run("revoke", app_id, "9.0.0").output == (
        f"{app_id}@9.0.0 revoked (not published here)\n"
    )
    assert run("revoke-key", item.release.key_id).output == f"key {item.release.key_id} revoked\n"
    again = run("revoke-key", item.release.key_id)
    assert again.output == f"key {item.release.key_id} already revoked\n"
    bad = run("revoke-key", "not-a-key")
    assert bad.exit_code == 1
    assert bad.output.startswith("Error: release_invalid: ")
    assert run("revoke", "../x", "1.0.0").exit_code == 1

    listed = run("list").output.splitlines()
    assert listed[1].split()[-1] == "revoked"
    assert listed[2:] == [
        f"revoked (not published here): {app_id}@9.0.0",
        f"revoked key: {item.release.key_id}",
    ]
    document = json.loads(catalog_for(data_dir).document()[0])
    assert {"app_id": app_id, "version": "9.0.0"} in document["revoked"]["versions"]

    huge = tmp_path / "huge.tar"
    with huge.open("wb") as out:
        out.truncate(4 * 1024 * 1024)
    too_large = run("publish", str(huge), str(release_file))
    assert too_large.exit_code == 1
    assert too_large.output.startswith("Error: artifact_too_large: ")
    assert os.path.getsize(huge) == 4 * 1024 * 1024
