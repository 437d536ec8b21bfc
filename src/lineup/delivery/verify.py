"""Checking a release and its artifact, in memory, before anything is written.

``check_release`` runs before the artifact is fetched: the key is trusted and not
revoked, the Ed25519 signature verifies over the canonical release, the stated length
is within the bundle limit and the host is new enough. ``check_artifact`` then checks
the fetched bytes: exact length, SHA-256, a valid archive, a valid bundle, and a
bundle that is the release's (same id, version, permissions and minimum host version,
kind ``installed``). Only a ``Verified`` result may be written to the verified cache.
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass

from lineup.formats.bundle import AppBundle, BundleError, load_bundle
from lineup.formats.manifest import HOST_VERSION, ManifestError
from lineup.formats.semver import compare_semver

from .archive import unpack
from .errors import DeliveryError, DeliveryErrorCode
from .keys import PublicKey, verify_signature
from .release import MAX_ARTIFACT_BYTES, Release, sha256_hex

__all__ = ["Verified", "check_artifact", "check_release", "verify"]


@dataclass(frozen=True, slots=True)
class Verified:
    """A release whose artifact passed every check; the bytes stay out of ``repr``."""

    release: Release
    key: PublicKey
    artifact: bytes
    bundle: AppBundle

    def __repr__(self) -> str:
        return f"Verified({self.release!r}, key {self.key.key_id})"


def check_release(
    release: Release,
    trusted: Mapping[str, PublicKey],
    revoked_keys: Container[str] = (),
    *,
    host_version: str = HOST_VERSION,
) -> PublicKey:
    """The key that signed ``release``, once everything about the release itself
    holds. Raises ``DeliveryError``."""
    if not release.signed:
        raise DeliveryError(DeliveryErrorCode.SIGNATURE_INVALID, "the release is not signed")
    if release.key_id in revoked_keys:
        raise DeliveryError(DeliveryErrorCode.KEY_REVOKED, "the signing key was revoked")
    key = trusted.get(release.key_id)
    if key is None:
        raise DeliveryError(DeliveryErrorCode.KEY_UNKNOWN, "the signing key is not trusted")
    verify_signature(release, key)
    if release.length > MAX_ARTIFACT_BYTES:
        raise DeliveryError(
            DeliveryErrorCode.ARTIFACT_TOO_LARGE, f"more than {MAX_ARTIFACT_BYTES} bytes"
        )
    if compare_semver(release.min_host_version, host_version) > 0:
        raise DeliveryError(
            DeliveryErrorCode.HOST_TOO_OLD, f"the app needs a newer host than {host_version}"
        )
    return key


def check_artifact(release: Release, artifact: bytes) -> AppBundle:
    """The bundle in ``artifact`` if it is exactly the release's. Raises
    ``DeliveryError`` (bundle and manifest refusals keep their own codes)."""
    if len(artifact) != release.length:
        raise DeliveryError(
            DeliveryErrorCode.LENGTH_MISMATCH,
            f"the artifact is {len(artifact)} bytes, the release says {release.length}",
        )
    if sha256_hex(artifact) != release.sha256:
        raise DeliveryError(DeliveryErrorCode.DIGEST_MISMATCH, "the SHA-256 does not match")
    try:
        bundle = load_bundle(unpack(artifact))
    except (BundleError, ManifestError) as exc:
        raise DeliveryError(exc.code, exc.message) from None
    manifest = bundle.manifest
    if (manifest.id, manifest.version) != (release.app_id, release.version):
        raise DeliveryError(
            DeliveryErrorCode.RELEASE_MISMATCH, "the bundle is another app or version"
        )
    if manifest.kind != "installed":
        raise DeliveryError(
            DeliveryErrorCode.RELEASE_MISMATCH, "a delivered bundle must be of kind `installed`"
        )
    if sorted(manifest.permissions) != sorted(release.permissions):
        raise DeliveryError(
            DeliveryErrorCode.RELEASE_MISMATCH, "the bundle's permissions are not the release's"
        )
    if manifest.min_host_version != release.min_host_version:
        raise DeliveryError(
            DeliveryErrorCode.RELEASE_MISMATCH, "the bundle's min_host_version is not the release's"
        )
    if release.name and manifest.name != release.name:
        # What the person chose to install by its name is what gets installed.
        raise DeliveryError(
            DeliveryErrorCode.RELEASE_MISMATCH, "the bundle's name is not the release's"
        )
    return bundle


def verify(
    release: Release,
    artifact: bytes,
    trusted: Mapping[str, PublicKey],
    revoked_keys: Container[str] = (),
    *,
    host_version: str = HOST_VERSION,
) -> Verified:
    """Both checks, in order."""
    key = check_release(release, trusted, revoked_keys, host_version=host_version)
    return Verified(release, key, artifact, check_artifact(release, artifact))
