"""Signed releases of a small installed-kind app, made on the fly for tests: the test
app's bundle copied with ``kind: installed`` and a chosen version, packed, described
by a release and signed with a fresh key."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from lineup.delivery.keys import PublicKey, generate_key, public_key_of, sign_release
from lineup.delivery.publisher import pack_bundle
from lineup.delivery.release import Release, encode_release

TEST_APP = Path(__file__).parent / "apps" / "test-app"
APP_ID = "dev.lineup.test-app"


@dataclass
class Publisher:
    key: Ed25519PrivateKey
    public: PublicKey

    @classmethod
    def new(cls, name: str = "Test Publisher") -> Publisher:
        key = generate_key()
        return cls(key, public_key_of(key, name))


@dataclass(frozen=True)
class Signed:
    release: Release
    body: bytes
    artifact: bytes


def bundle_dir(root: Path, version: str, *, marker: str = "") -> Path:
    """The test app at ``version`` as an installed app (``marker`` lands in its main
    surface, so two builds of one version differ)."""
    target = root / f"test-app-{version}{marker}"
    if target.exists():
        return target
    shutil.copytree(TEST_APP, target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest.update(kind="installed", version=version)
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2))
    html = target / "index.html"
    html.write_text(html.read_text() + f"\n<!-- build {version}{marker} -->\n")
    card = target / "card.html"
    card.write_text(card.read_text() + f'\n<p id="build">{version}{marker}</p>\n')
    return target


def sign(publisher: Publisher, directory: Path) -> Signed:
    """Pack ``directory`` the way ``lineup miniapp pack`` does and sign it."""
    artifact, unsigned = pack_bundle(directory)
    signed = sign_release(unsigned, publisher.key)
    return Signed(signed, encode_release(signed), artifact)


def release(publisher: Publisher, root: Path, version: str, *, marker: str = "") -> Signed:
    return sign(publisher, bundle_dir(root, version, marker=marker))
