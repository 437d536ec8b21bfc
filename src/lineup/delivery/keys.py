"""Publisher keys: Ed25519 key pairs, their ids, signing and verifying releases.

A key's id is ``ed25519:`` and the first 16 bytes (hex) of the SHA-256 of its raw
32-byte public key, so an id names exactly one key and cannot be claimed by another.
The private key is a PKCS#8 PEM file written with mode 0600; the public key is a small
JSON file (``{"key_id", "public_key": base64 of the raw key, "name"}``) that a
Runtime adds to its trusted keys.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

import msgspec
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from .errors import DeliveryError, DeliveryErrorCode
from .release import Release, canonical_bytes

__all__ = [
    "PublicKey",
    "generate_key",
    "key_id_of",
    "load_private_key",
    "load_public_key",
    "public_key_of",
    "sign_release",
    "verify_signature",
    "write_key_pair",
]


@dataclass(frozen=True, slots=True)
class PublicKey:
    """A publisher's public key as a Runtime trusts it."""

    key_id: str
    raw: bytes
    name: str = ""

    def encode(self) -> bytes:
        return msgspec.json.encode(
            {"key_id": self.key_id, "name": self.name, "public_key": _b64(self.raw)},
            order="sorted",
        )

    @classmethod
    def decode(cls, data: bytes | str) -> PublicKey:
        """Parse a public key file; its id must be the id of its key."""
        try:
            document = msgspec.json.decode(data, type=dict[str, str])
            raw = base64.b64decode(document["public_key"], validate=True)
        except (msgspec.DecodeError, KeyError, binascii.Error):
            raise ValueError("not a LineUp public key file") from None
        if len(raw) != 32:
            raise ValueError("not an Ed25519 public key")
        key = cls(key_id_of(raw), raw, document.get("name", "")[:80])
        if document.get("key_id", key.key_id) != key.key_id:
            raise ValueError("the key id does not match the key")
        return key


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def key_id_of(raw_public: bytes) -> str:
    return "ed25519:" + hashlib.sha256(raw_public).hexdigest()[:32]


def generate_key() -> Ed25519PrivateKey:
    return Ed25519PrivateKey.generate()


def public_key_of(private: Ed25519PrivateKey, name: str = "") -> PublicKey:
    raw = private.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    return PublicKey(key_id_of(raw), raw, name)


def write_key_pair(private: Ed25519PrivateKey, stem: Path, name: str = "") -> PublicKey:
    """Write ``STEM.key`` (PKCS#8 PEM, mode 0600) and ``STEM.pub.json``, both created
    exclusively: an existing key file is never overwritten. Returns the public key."""
    pem = private.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    key_path = stem.with_name(stem.name + ".key")
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(pem)
    public = public_key_of(private, name)
    fd = os.open(
        stem.with_name(stem.name + ".pub.json"), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644
    )
    with os.fdopen(fd, "wb") as out:
        out.write(public.encode() + b"\n")
    return public


def load_private_key(path: Path) -> Ed25519PrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, Ed25519PrivateKey):
        raise ValueError("not an Ed25519 private key")
    return key


def load_public_key(path: Path) -> PublicKey:
    return PublicKey.decode(path.read_bytes())


def sign_release(release: Release, private: Ed25519PrivateKey) -> Release:
    """``release`` with ``key_id`` set to the key's id and signed over its canonical
    bytes."""
    public = public_key_of(private)
    unsigned = msgspec.structs.replace(release, key_id=public.key_id, signature="")
    signature = private.sign(canonical_bytes(unsigned))
    return msgspec.structs.replace(unsigned, signature=_b64(signature))


def verify_signature(release: Release, key: PublicKey) -> None:
    """Raise ``signature_invalid`` unless ``key`` signed ``release``."""
    if not release.signed or release.key_id != key.key_id:
        raise DeliveryError(DeliveryErrorCode.SIGNATURE_INVALID, "the release is not signed")
    try:
        Ed25519PublicKey.from_public_bytes(key.raw).verify(
            release.signature_bytes, canonical_bytes(release)
        )
    except InvalidSignature:
        raise DeliveryError(
            DeliveryErrorCode.SIGNATURE_INVALID, "the signature does not verify"
        ) from None
