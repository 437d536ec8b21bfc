"""The release manifest: its canonical (signed) form, decoding rules and signatures."""

from __future__ import annotations

import base64
import json

import msgspec
import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.delivery.errors import DeliveryError
from lineup.delivery.keys import public_key_of, sign_release, verify_signature
from lineup.delivery.release import (
    MAX_ARTIFACT_BYTES,
    Release,
    canonical_bytes,
    decode_release,
    encode_release,
)

KEY = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
PUBLIC = public_key_of(KEY)


def make(**changes: object) -> Release:
    document: dict[str, object] = {
        "app_id": "dev.lineup.test-app",
        "version": "1.0.0",
        "artifact_id": "dev.lineup.test-app-1.0.0.tar",
        "length": 20480,
        "sha256": "ab" * 32,
        "min_host_version": "0.1.0",
        "permissions": ["clipboard.write", "artifact.save"],
    }
    document.update(changes)
    return msgspec.convert(document, Release)


def signed_document(**extra: object) -> dict[str, object]:
    document: dict[str, object] = json.loads(encode_release(sign_release(make(), KEY)))
    document.update(extra)
    return document


def test_canonical_form_is_sorted_compact_json_without_the_signature() -> None:
    release = sign_release(make(), KEY)
    canonical = canonical_bytes(release)
    expected = {
        "app_id": "dev.lineup.test-app",
        "artifact_id": "dev.lineup.test-app-1.0.0.tar",
        "format": "lineup.release.v1",
        "key_id": PUBLIC.key_id,
        "length": 20480,
        "min_host_version": "0.1.0",
        "permissions": ["artifact.save", "clipboard.write"],
        "sha256": "ab" * 32,
        "version": "1.0.0",
    }
    assert canonical == json.dumps(expected, sort_keys=True, separators=(",", ":")).encode()
    assert b"signature" not in canonical
    # The file is the canonical fields plus the signature, also sorted and compact.
    on_file = json.loads(encode_release(release))
    assert on_file == {**expected, "signature": release.signature}
    assert list(on_file) == sorted(on_file)
    assert b" " not in encode_release(release)


def test_permission_order_does_not_change_the_signature() -> None:
    one = sign_release(make(permissions=["clipboard.write", "artifact.save"]), KEY)
    other = sign_release(make(permissions=["artifact.save", "clipboard.write"]), KEY)
    assert one.signature == other.signature
    assert canonical_bytes(one) == canonical_bytes(other)
    verify_signature(msgspec.structs.replace(other, signature=one.signature), PUBLIC)


def test_round_trip() -> None:
    release = sign_release(make(permissions=["artifact.save", "clipboard.write"]), KEY)
    decoded = decode_release(encode_release(release))
    assert decoded == release
    assert decode_release(encode_release(release).decode()) == release
    verify_signature(decoded, PUBLIC)


def test_unsigned_round_trip() -> None:
    unsigned = make(permissions=[])
    assert decode_release(encode_release(unsigned)) == unsigned
    assert not decode_release(encode_release(unsigned)).signed


FORBIDDEN = [
    "url",
    "uri",
    "href",
    "src",
    "link",
    "html",
    "css",
    "js",
    "javascript",
    "script",
    "source",
    "code",
    "bundle",
    "entry",
    "file",
    "files",
    "path",
    # in other words and spellings
    "artifact_url",
    "downloadURL",
    "HTML",
    "source_code",
    "entry_point",
    "icon_path",
]


@pytest.mark.parametrize("name", FORBIDDEN)
def test_every_forbidden_field_is_refused(name: str) -> None:
    for value in ("https://example.invalid/app.tar", "<p>hi</p>", 1, None):
        with pytest.raises(DeliveryError) as refused:
            decode_release(json.dumps(signed_document(**{name: value})))
        assert refused.value.code == "release_field_forbidden"
        # The message names the rule, never the value.
        assert "example.invalid" not in str(refused.value)
        assert "<p>" not in str(refused.value)


@pytest.mark.parametrize("name", ["channel", "publisher_note", "tags", "signature2"])
def test_an_unknown_harmless_field_is_invalid(name: str) -> None:
    with pytest.raises(DeliveryError) as refused:
        decode_release(json.dumps(signed_document(**{name: "x"})))
    assert refused.value.code == "release_invalid"


@pytest.mark.parametrize(
    "document",
    [
        b"[]",
        b"not json",
        b"{}",
        json.dumps(signed_document(length=0)).encode(),
        json.dumps(signed_document(sha256="AB" * 32)).encode(),
        json.dumps(signed_document(artifact_id="App.tar")).encode(),
        json.dumps(signed_document(permissions=["clipboard.write", "clipboard.write"])).encode(),
        json.dumps(signed_document(format="lineup.release.v2")).encode(),
        json.dumps(signed_document(key_id="ed25519:00")).encode(),
        b" " * 9000,
    ],
)
def test_an_invalid_release_is_refused(document: bytes) -> None:
    with pytest.raises(DeliveryError) as refused:
        decode_release(document)
    assert refused.value.code == "release_invalid"


# --- the property -----------------------------------------------------------------------

_segment = st.from_regex(r"[a-z][a-z0-9_-]{0,12}", fullmatch=True)
_semver = st.builds(
    lambda a, b, c, pre: f"{a}.{b}.{c}{pre}",
    st.integers(0, 999),
    st.integers(0, 999),
    st.integers(0, 999),
    st.sampled_from(["", "-alpha.1", "-rc.2", "+build.7"]),
)
_permission = st.from_regex(r"[a-z][a-z0-9_]{0,10}(\.[a-z][a-z0-9_]{0,10}){1,2}", fullmatch=True)

releases = st.builds(
    lambda app, version, artifact, length, digest, host, permissions: msgspec.convert(
        {
            "app_id": app,
            "version": version,
            "artifact_id": artifact,
            "length": length,
            "sha256": digest.hex(),
            "min_host_version": host,
            "permissions": permissions,
        },
        Release,
    ),
    st.lists(_segment, min_size=2, max_size=4).map(".".join),
    _semver,
    st.from_regex(r"[a-z0-9][a-z0-9._-]{0,40}", fullmatch=True),
    st.integers(1, MAX_ARTIFACT_BYTES),
    st.binary(min_size=32, max_size=32),
    _semver,
    st.lists(_permission, unique=True, max_size=6),
)


@settings(max_examples=150, deadline=None)
@given(
    release=releases,
    seed=st.binary(min_size=32, max_size=32),
    data=st.data(),
)
def test_a_signed_release_verifies_and_any_flipped_byte_breaks_it(
    release: Release, seed: bytes, data: st.DataObject
) -> None:
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = public_key_of(private)
    signed = sign_release(release, private)
    decoded = decode_release(encode_release(signed))
    verify_signature(decoded, public)

    canonical = canonical_bytes(signed)
    index = data.draw(st.integers(0, len(canonical) - 1), label="index")
    flip = data.draw(st.integers(1, 255), label="xor")
    mutated = bytearray(canonical)
    mutated[index] ^= flip
    mutated_bytes = bytes(mutated)

    # The signature never covers the changed bytes...
    with pytest.raises(InvalidSignature):
        Ed25519PublicKey.from_public_bytes(public.raw).verify(
            base64.b64decode(signed.signature), mutated_bytes
        )
    # ...and a release file carrying them is refused, at decoding or at the signature.
    if index < len(canonical) - 1:  # the last byte is the closing brace
        document = mutated_bytes[:-1] + b',"signature":"' + signed.signature.encode() + b'"}'
        with pytest.raises(DeliveryError) as refused:
            verify_signature(decode_release(document), public)
        assert refused.value.code in {
            "release_invalid",
            "release_field_forbidden",
            "signature_invalid",
        }


def test_the_name_is_signed_and_left_out_when_empty() -> None:
    """A release names its app for people; the name is part of the signed bytes, and a
    release made before names were (no ``name``) keeps its canonical bytes."""
    unnamed = sign_release(make(), KEY)
    assert b'"name"' not in canonical_bytes(unnamed)
    named = sign_release(make(name="Notes \u00e0 faire \u2014 \u4efb\u52a1"), KEY)
    canonical = canonical_bytes(named)
    # RFC 8785: UTF-8 as is, keys sorted, nothing else escaped.
    fields = json.loads(canonical)
    jcs = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    assert canonical == jcs.encode("utf-8")
    assert fields["name"] == "Notes \u00e0 faire \u2014 \u4efb\u52a1"
    verify_signature(named, PUBLIC)
    decoded = decode_release(encode_release(named))
    assert (decoded.name, canonical_bytes(decoded)) == (named.name, canonical)
    renamed = msgspec.structs.replace(named, name="Task Dashboard")
    with pytest.raises(DeliveryError) as refused:
        verify_signature(renamed, PUBLIC)
    assert refused.value.code == "signature_invalid"


@pytest.mark.parametrize("name", [" Notes", "Notes\n", "No\u202etes", "N\u2028otes", "x" * 65])
def test_a_name_people_could_be_misled_by_is_invalid(name: str) -> None:
    with pytest.raises(DeliveryError) as refused:
        decode_release(json.dumps(signed_document(name=name)).encode())
    assert refused.value.code == "release_invalid"
