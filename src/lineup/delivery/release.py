r"""The production manifest of a MiniApp release (spec 002 §9.2), and its canonical form.

A release says exactly which bytes are the app: its id and exact version, its display
name (what the App centre shows before the app is installed; the bundle's manifest
must say the same), the artifact's id, byte length and SHA-256, the minimum host
version, the permissions the app may request, the id of the key that signed it, and
the Ed25519 signature. It
carries no URL, HTML, CSS, JS or source: a field of that kind is refused with
``release_field_forbidden``, any other unknown field with ``release_invalid``.

**Canonical form** (what is signed): the release without ``signature``, as JSON with
keys sorted by their UTF-8 bytes, no whitespace, ``permissions`` sorted and unique,
integers in decimal, ``name`` left out when empty (a release made before names were
signed verifies as it did). Every value but ``name`` is ASCII by its pattern, and a
name holds no control, line-separator or bidirectional-control character, so the
encoder escapes only ``"`` and ``\`` in it, as RFC 8785 (JCS) does: the form is
exactly JCS for these documents. The ``format`` field (``lineup.release.v1``) is part
of the signed bytes, which separates release signatures from anything else a key signs.
"""

from __future__ import annotations

import base64
import hashlib
import re
from typing import Annotated, Any, Literal

import msgspec

from lineup.formats.manifest import MAX_NAME_CHARS, MAX_PERMISSIONS, display_name_problem
from lineup.protocol.fields import APP_ID_PATTERN, SEMVER_PATTERN

from .errors import DeliveryError, DeliveryErrorCode

__all__ = [
    "ARTIFACT_ID_PATTERN",
    "FORMAT",
    "KEY_ID_PATTERN",
    "MAX_ARTIFACT_BYTES",
    "MAX_RELEASE_BYTES",
    "Release",
    "canonical_bytes",
    "decode_release",
    "encode_release",
    "sha256_hex",
]

FORMAT = "lineup.release.v1"
MAX_RELEASE_BYTES = 8 * 1024
MAX_ARTIFACT_BYTES = 3 * 1024 * 1024
"""A bundle may hold 2 MiB of files; the archive adds a 512-byte header per file."""

ARTIFACT_ID_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,127}\Z"
KEY_ID_PATTERN = r"^ed25519:[0-9a-f]{32}\Z"
_KEY_ID_OR_EMPTY = r"^(?:ed25519:[0-9a-f]{32})?\Z"
_SIGNATURE_OR_EMPTY = r"^(?:[A-Za-z0-9+/]{86}==)?\Z"
_CAPABILITY_PATTERN = r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+\Z"

_FORBIDDEN = frozenset(
    [
        "url",
        "uri",
        "urls",
        "href",
        "src",
        "link",
        "html",
        "css",
        "js",
        "javascript",
        "script",
        "scripts",
        "source",
        "sources",
        "code",
        "bundle",
        "entry",
        "file",
        "files",
        "path",
        "location",
        "download",
    ]
)
"""Words a release's field names must never contain (it names bytes by digest, not by
place, and carries no content): ``url``, ``source_url``, ``html`` and ``entryPoint``
are refused, ``description`` is not."""
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z0-9]+")

AppId = Annotated[str, msgspec.Meta(pattern=APP_ID_PATTERN, max_length=255)]
SemVer = Annotated[str, msgspec.Meta(pattern=SEMVER_PATTERN, max_length=128)]
ArtifactId = Annotated[str, msgspec.Meta(pattern=ARTIFACT_ID_PATTERN)]
KeyIdOrEmpty = Annotated[str, msgspec.Meta(pattern=_KEY_ID_OR_EMPTY)]
Sha256 = Annotated[str, msgspec.Meta(pattern=r"^[0-9a-f]{64}\Z")]
Length = Annotated[int, msgspec.Meta(ge=1)]
Capability = Annotated[str, msgspec.Meta(pattern=_CAPABILITY_PATTERN, max_length=255)]
DisplayName = Annotated[str, msgspec.Meta(max_length=MAX_NAME_CHARS)]
SignatureOrEmpty = Annotated[str, msgspec.Meta(pattern=_SIGNATURE_OR_EMPTY)]


class Release(msgspec.Struct, frozen=True, forbid_unknown_fields=True, omit_defaults=True):
    """One signed release. ``key_id`` and ``signature`` are empty until signed."""

    app_id: AppId
    version: SemVer
    artifact_id: ArtifactId
    length: Length
    sha256: Sha256
    min_host_version: SemVer
    permissions: Annotated[list[Capability], msgspec.Meta(max_length=MAX_PERMISSIONS)] = []
    name: DisplayName = ""
    """The app's display name, as its manifest says (empty in releases signed before
    names were)."""
    key_id: KeyIdOrEmpty = ""
    signature: SignatureOrEmpty = ""
    format: Literal["lineup.release.v1"] = "lineup.release.v1"

    def __post_init__(self) -> None:
        if len(set(self.permissions)) != len(self.permissions):
            raise ValueError("permissions must be unique")
        problem = display_name_problem(self.name) if self.name else None
        if problem is not None:
            raise ValueError(problem)

    @property
    def signed(self) -> bool:
        return bool(self.key_id and self.signature)

    @property
    def signature_bytes(self) -> bytes:
        return base64.b64decode(self.signature) if self.signature else b""

    def __repr__(self) -> str:
        return f"Release({self.app_id}@{self.version}, {self.artifact_id}, {self.length} B)"


def _fields(release: Release) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "format": release.format,
        "app_id": release.app_id,
        "version": release.version,
        "artifact_id": release.artifact_id,
        "length": release.length,
        "sha256": release.sha256,
        "min_host_version": release.min_host_version,
        "permissions": sorted(release.permissions),
        "key_id": release.key_id,
    }
    if release.name:
        fields["name"] = release.name
    return fields


def canonical_bytes(release: Release) -> bytes:
    """The bytes an Ed25519 signature covers (see the module's docstring)."""
    return msgspec.json.encode(_fields(release), order="sorted")


def encode_release(release: Release) -> bytes:
    """The release as a file: its canonical fields plus ``signature``, sorted keys."""
    fields = _fields(release)
    if release.signature:
        fields["signature"] = release.signature
    return msgspec.json.encode(fields, order="sorted")


def decode_release(data: bytes | str) -> Release:
    """Parse and check a release document. Raises ``DeliveryError`` with
    ``release_invalid`` or ``release_field_forbidden``."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_RELEASE_BYTES:
        raise DeliveryError(
            DeliveryErrorCode.RELEASE_INVALID, f"larger than {MAX_RELEASE_BYTES} bytes"
        )
    try:
        document = msgspec.json.decode(raw)
    except msgspec.DecodeError:
        raise DeliveryError(DeliveryErrorCode.RELEASE_INVALID, "not JSON") from None
    if not isinstance(document, dict):
        raise DeliveryError(DeliveryErrorCode.RELEASE_INVALID, "not a JSON object")
    known = set(Release.__struct_fields__)
    for name in document:
        if name not in known and _FORBIDDEN.intersection(w.lower() for w in _WORDS.findall(name)):
            raise DeliveryError(
                DeliveryErrorCode.RELEASE_FIELD_FORBIDDEN,
                f"a release names its bytes by digest; the field `{name[:40]}` is not allowed",
            )
    try:
        return msgspec.convert(document, Release)
    except (msgspec.ValidationError, ValueError) as exc:
        raise DeliveryError(DeliveryErrorCode.RELEASE_INVALID, _explain(exc)) from None


def _explain(exc: Exception) -> str:
    # msgspec names the field and the rule, never the value.
    return str(exc).splitlines()[0][:200]


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()
