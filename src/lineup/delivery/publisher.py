"""The publisher's side of signed delivery: key pairs, packing a bundle directory into
an artifact and its release, signing the release, and checking a release and artifact
exactly as a Runtime will.

No click here (``commands.py`` is the CLI). ``verify_files`` runs the checks one step
at a time so a publisher sees which one refused, but the verdict is always the
Runtime's: two of its steps *are* ``check_release`` and ``check_artifact``, and every
other step is a check those two make anyway, in the same order and with the same code,
so a step can only refuse earlier, never differently.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import msgspec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from lineup.formats.bundle import AppBundle, BundleError, load_bundle, load_bundle_dir
from lineup.formats.manifest import ManifestError

from .archive import pack, unpack
from .errors import DeliveryError, DeliveryErrorCode
from .keys import (
    PublicKey,
    generate_key,
    load_private_key,
    load_public_key,
    sign_release,
    verify_signature,
    write_key_pair,
)
from .release import (
    ARTIFACT_ID_PATTERN,
    MAX_ARTIFACT_BYTES,
    MAX_RELEASE_BYTES,
    Release,
    decode_release,
    encode_release,
    sha256_hex,
)
from .verify import check_artifact, check_release

__all__ = [
    "CHECKS",
    "Check",
    "VerifyResult",
    "default_artifact_id",
    "keygen",
    "load_trusted",
    "pack_bundle",
    "pack_files",
    "release_file_bytes",
    "release_file_name",
    "sign_file",
    "verify_files",
    "write_release",
]

CHECKS = (
    "release parsed",
    "key trusted",
    "signature",
    "stated size + host",
    "length",
    "SHA-256",
    "archive + bundle",
    "matches release",
)
"""The steps ``verify_files`` runs, in order."""

_KEY_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._-]{0,63}\Z")


# --- keys -------------------------------------------------------------------------------


def keygen(
    name: str, out_dir: Path, *, private: Ed25519PrivateKey | None = None
) -> tuple[Path, Path, PublicKey]:
    """Write ``NAME.key`` (mode 0600) and ``NAME.pub.json`` in ``out_dir``; refuses
    when either exists. Returns both paths and the public key."""
    if not _KEY_NAME.match(name) or name.endswith((".key", ".pub.json")):
        raise ValueError("a key name is letters, digits, `.`, `_` and `-` (without a suffix)")
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / name
    key_path = out_dir / f"{name}.key"
    pub_path = out_dir / f"{name}.pub.json"
    for path in (key_path, pub_path):
        if path.exists() or path.is_symlink():
            raise FileExistsError(f"{path} already exists; a key is never overwritten")
    public = write_key_pair(private or generate_key(), stem, name)
    return key_path, pub_path, public


# --- packing ----------------------------------------------------------------------------


def default_artifact_id(app_id: str, version: str) -> str:
    """``<app_id>-<version>.tar``, lower-cased, with any character an artifact id may
    not hold (``+`` of build metadata) replaced by ``-``."""
    artifact_id = re.sub(r"[^a-z0-9._-]", "-", f"{app_id}-{version}.tar".lower())
    if not re.match(ARTIFACT_ID_PATTERN, artifact_id):
        raise DeliveryError(
            DeliveryErrorCode.RELEASE_INVALID,
            "the app id and version are too long for an artifact id; give one",
        )
    return artifact_id


def release_file_name(artifact_id: str) -> str:
    """``app-1.0.0.tar`` → ``app-1.0.0.release.json``."""
    return f"{artifact_id.removesuffix('.tar')}.release.json"


def _bundle_error(exc: BundleError | ManifestError) -> DeliveryError:
    return DeliveryError(exc.code, exc.message)


def pack_files(
    files: Mapping[str, bytes], *, artifact_id: str | None = None
) -> tuple[bytes, Release]:
    """The artifact of a bundle given as ``{path: bytes}`` and its unsigned release."""
    try:
        bundle = load_bundle(files)
    except (BundleError, ManifestError) as exc:
        raise _bundle_error(exc) from None
    return _pack(bundle, artifact_id)


def pack_bundle(directory: Path, *, artifact_id: str | None = None) -> tuple[bytes, Release]:
    """The artifact of the bundle in ``directory`` and its unsigned release. Raises
    ``DeliveryError`` (a bundle or manifest refusal keeps its own code)."""
    try:
        bundle = load_bundle_dir(Path(directory))
    except (BundleError, ManifestError) as exc:
        raise _bundle_error(exc) from None
    return _pack(bundle, artifact_id)


def _pack(bundle: AppBundle, artifact_id: str | None) -> tuple[bytes, Release]:
    manifest = bundle.manifest
    if manifest.kind != "installed":
        raise DeliveryError(
            DeliveryErrorCode.RELEASE_MISMATCH, "a delivered bundle must be of kind `installed`"
        )
    artifact = pack(bundle.files)
    if len(artifact) > MAX_ARTIFACT_BYTES:
        raise DeliveryError(
            DeliveryErrorCode.ARTIFACT_TOO_LARGE, f"more than {MAX_ARTIFACT_BYTES} bytes"
        )
    document: dict[str, Any] = {
        "app_id": manifest.id,
        "version": manifest.version,
        "artifact_id": artifact_id or default_artifact_id(manifest.id, manifest.version),
        "length": len(artifact),
        "sha256": sha256_hex(artifact),
        "min_host_version": manifest.min_host_version,
        "permissions": sorted(manifest.permissions),
        "name": manifest.name,
    }
    try:
        # convert, not Release(...): only decoding checks the field grammars.
        release = msgspec.convert(document, Release)
    except (msgspec.ValidationError, ValueError) as exc:
        message = str(exc).splitlines()[0][:200]
        raise DeliveryError(DeliveryErrorCode.RELEASE_INVALID, message) from None
    return artifact, release


def release_file_bytes(release: Release) -> bytes:
    """The release as a file (``encode_release``). An unsigned release leaves out its
    empty ``key_id``: ``decode_release`` refuses ``"key_id": ""`` (the pattern wins
    over the ``Literal[""]`` alternative), and an absent one decodes as unsigned."""
    data = encode_release(release)
    if not release.key_id:
        document = msgspec.json.decode(data)
        document.pop("key_id", None)
        data = msgspec.json.encode(document, order="sorted")
    return data + b"\n"


def write_release(release: Release, path: Path) -> None:
    path.write_bytes(release_file_bytes(release))


# --- signing ----------------------------------------------------------------------------


def _read_release(path: Path) -> Release:
    with open(path, "rb") as source:
        data = source.read(MAX_RELEASE_BYTES + 1)
    return decode_release(data)


def sign_file(release_path: Path, key_path: Path, out: Path | None = None) -> tuple[Path, Release]:
    """Sign the release in ``release_path`` with the private key in ``key_path`` and
    write it to ``out`` (by default over ``release_path``). Returns where it went and
    the signed release."""
    release = _read_release(Path(release_path))
    signed = sign_release(release, load_private_key(Path(key_path)))
    target = Path(out) if out is not None else Path(release_path)
    write_release(signed, target)
    return target, signed


# --- verifying --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Check:
    """One step of ``verify_files``: its name, whether it held, how long it took and,
    when it did not, the stable code and message."""

    name: str
    ok: bool
    seconds: float
    code: str | None = None
    message: str = ""


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """Every step run (they stop at the first refusal) and, when all held, the
    release, the key that signed it and the bundle."""

    checks: tuple[Check, ...]
    release: Release | None = None
    key: PublicKey | None = None
    bundle: AppBundle | None = None

    @property
    def ok(self) -> bool:
        return len(self.checks) == len(CHECKS) and all(check.ok for check in self.checks)

    @property
    def refusal(self) -> Check | None:
        """The step that refused, if one did."""
        return next((check for check in self.checks if not check.ok), None)

    def __repr__(self) -> str:
        state = "verified" if self.ok else f"refused {self.refusal and self.refusal.code}"
        return f"VerifyResult({state}, {len(self.checks)} checks)"


def load_trusted(paths: Iterable[Path]) -> dict[str, PublicKey]:
    """Public key files by key id. Raises ``ValueError`` or ``OSError``."""
    trusted: dict[str, PublicKey] = {}
    for path in paths:
        key = load_public_key(Path(path))
        trusted[key.key_id] = key
    return trusted


def verify_files(
    artifact_path: Path,
    release_path: Path,
    trusted_key_paths: Iterable[Path],
    revoked_key_ids: Iterable[str] = (),
    *,
    on_check: Callable[[Check], None] | None = None,
) -> VerifyResult:
    """Check ``release_path`` and ``artifact_path`` as a Runtime would, step by step
    (``CHECKS``). A refusal is a failed ``Check`` with its stable code; files that
    cannot be read raise (``OSError``, and ``ValueError`` for a key file that is not
    one), since that is no verdict on the release.
    ``on_check`` is called after each step."""
    trusted = load_trusted(trusted_key_paths)
    revoked = frozenset(revoked_key_ids)
    checks: list[Check] = []
    state: dict[str, Any] = {}

    def parsed() -> None:
        state["release"] = _read_release(Path(release_path))

    def key_trusted() -> None:
        # check_release's first checks, in its order.
        release: Release = state["release"]
        if not release.signed:
            raise DeliveryError(DeliveryErrorCode.SIGNATURE_INVALID, "the release is not signed")
        if release.key_id in revoked:
            raise DeliveryError(DeliveryErrorCode.KEY_REVOKED, "the signing key was revoked")
        if release.key_id not in trusted:
            raise DeliveryError(DeliveryErrorCode.KEY_UNKNOWN, "the signing key is not trusted")

    def signature() -> None:
        release: Release = state["release"]
        verify_signature(release, trusted[release.key_id])

    def release_checked() -> None:
        state["key"] = check_release(state["release"], trusted, revoked)

    def length() -> None:
        # The release's length is at most MAX_ARTIFACT_BYTES by now; one byte more
        # than that is enough to tell a longer file.
        with open(artifact_path, "rb") as source:
            state["artifact"] = source.read(MAX_ARTIFACT_BYTES + 1)
        release: Release = state["release"]
        if len(state["artifact"]) != release.length:
            raise DeliveryError(
                DeliveryErrorCode.LENGTH_MISMATCH,
                f"the artifact is {len(state['artifact'])} bytes, "
                f"the release says {release.length}",
            )

    def digest() -> None:
        if sha256_hex(state["artifact"]) != state["release"].sha256:
            raise DeliveryError(DeliveryErrorCode.DIGEST_MISMATCH, "the SHA-256 does not match")

    def archive() -> None:
        try:
            load_bundle(unpack(state["artifact"]))
        except (BundleError, ManifestError) as exc:
            raise _bundle_error(exc) from None

    def matches() -> None:
        state["bundle"] = check_artifact(state["release"], state["artifact"])

    steps = (parsed, key_trusted, signature, release_checked, length, digest, archive, matches)
    for name, step in zip(CHECKS, steps, strict=True):
        started = time.perf_counter()
        try:
            step()
        except DeliveryError as exc:
            check = Check(name, False, time.perf_counter() - started, exc.code, exc.message)
        else:
            check = Check(name, True, time.perf_counter() - started)
        checks.append(check)
        if on_check is not None:
            on_check(check)
        if not check.ok:
            return VerifyResult(tuple(checks))
    return VerifyResult(tuple(checks), state["release"], state["key"], state["bundle"])
