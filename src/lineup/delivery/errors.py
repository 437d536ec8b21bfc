"""Why a release, an artifact or a catalog is refused: one stable code each."""

from __future__ import annotations

from enum import StrEnum

__all__ = ["DeliveryError", "DeliveryErrorCode"]


class DeliveryErrorCode(StrEnum):
    """Stable reasons signed delivery refuses something. Never renamed or reused.

    The bundle's own checks (``bundle_*``) and the manifest's (``manifest_*``) keep
    their codes; a ``DeliveryError`` carries those through unchanged."""

    RELEASE_INVALID = "release_invalid"
    """The release manifest is not a valid ``lineup.release.v1`` document."""
    RELEASE_FIELD_FORBIDDEN = "release_field_forbidden"
    """The release manifest carries a field it must not (a URL, HTML, CSS, JS, source)."""
    KEY_UNKNOWN = "key_unknown"
    """The release is signed with a key this Runtime does not trust."""
    KEY_REVOKED = "key_revoked"
    """The release is signed with a key that was revoked."""
    SIGNATURE_INVALID = "signature_invalid"
    """The Ed25519 signature does not verify over the canonical release."""
    ARTIFACT_TOO_LARGE = "artifact_too_large"
    """The artifact is (or says it is) larger than a bundle may be."""
    LENGTH_MISMATCH = "length_mismatch"
    """The artifact's byte length is not the one the release states."""
    DIGEST_MISMATCH = "digest_mismatch"
    """The artifact's SHA-256 is not the one the release states."""
    ARCHIVE_INVALID = "archive_invalid"
    """The artifact is not a LineUp bundle archive (plain ustar, regular files only)."""
    RELEASE_MISMATCH = "release_mismatch"
    """The bundle inside does not match its release (id, version, permissions, kind)."""
    HOST_TOO_OLD = "host_too_old"
    """The release needs a newer host than this one."""
    VERSION_DOWNGRADE = "version_downgrade"
    """The release is older than the version in use; only a rollback goes back."""
    VERSION_REVOKED = "version_revoked"
    """This version of the app was revoked."""
    VERSION_CONFLICT = "app_version_conflict"
    """This version is already installed with other content (a new artifact needs a
    new version)."""
    ARTIFACT_CONFLICT = "artifact_conflict"
    """The artifact id is already used by another release."""
    NOT_IN_CATALOG = "not_in_catalog"
    """The catalog has no such app or version."""
    CATALOG_INSECURE = "catalog_insecure"
    """The catalog is neither HTTPS nor plain HTTP on a loopback address."""
    CATALOG_UNAVAILABLE = "catalog_unavailable"
    """The catalog or the artifact could not be fetched (network, HTTP status)."""
    CACHE_UNAVAILABLE = "cache_unavailable"
    """The verified cache could not be written or read back."""


class DeliveryError(Exception):
    """A refusal with a stable ``code``; the message names the rule, never content,
    URLs or paths."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = str(code)
        self.message = message
