"""Bytes in, typed envelopes out, and back: the only way envelopes cross a boundary.

``decode`` never raises on bad input. It returns a typed envelope, an
``Unsupported`` value for a well-formed envelope of a kind this version does not
know (safe fallback, spec 002 §9.1), or a ``Rejection`` with a stable code.
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from .envelope import KIND_BY_TYPE, TYPE_PREFIX, AnyEnvelope, Envelope, Sender, Target
from .errors import ErrorCode, Rejection
from .fields import MAX_ENVELOPE_BYTES, Id, Timestamp

__all__ = ["Unsupported", "decode", "encode", "DecodeResult"]

_decoder = msgspec.json.Decoder(AnyEnvelope)
_encoder = msgspec.json.Encoder(order="sorted")
_PATH = re.compile(r" - at `(\$[^`]*)`$")
_VERSIONED_TYPE = re.compile(r"^lineup\.v([0-9]+)\.")


class Unsupported(msgspec.Struct, frozen=True, kw_only=True):
    """A well-formed envelope of a ``lineup.v1.*`` kind this version does not know.

    Hosts show it as an unsupported item or answer ``unsupported``; nothing in it is
    ever executed. The payload is kept only as its size.
    """

    id: Id
    type: str
    conversation_id: Id
    sender: Sender
    created_at: Timestamp
    target: Target | None = None
    payload_bytes: int = 0


class _LooseHeader(msgspec.Struct, frozen=True, kw_only=True):
    v: int
    id: Id
    type: str
    conversation_id: Id
    sender: Sender
    created_at: Timestamp
    target: Target | None = None
    payload: msgspec.Raw


_loose_decoder = msgspec.json.Decoder(_LooseHeader)

DecodeResult = AnyEnvelope | Unsupported | Rejection


def decode(data: bytes | bytearray | memoryview | str) -> DecodeResult:
    """Decode and validate one envelope. Never raises for any input."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else bytes(data)
    if len(raw) > MAX_ENVELOPE_BYTES:
        return Rejection(
            code=ErrorCode.ENVELOPE_TOO_LARGE,
            message=f"envelope is {len(raw)} bytes; the limit is {MAX_ENVELOPE_BYTES}",
        )
    try:
        envelope: AnyEnvelope = _decoder.decode(raw)
    except msgspec.ValidationError as exc:
        return _classify(raw, exc)
    except msgspec.DecodeError as exc:
        return Rejection(code=ErrorCode.MALFORMED_ENVELOPE, message=_first_line(str(exc)))
    except RecursionError:
        return Rejection(code=ErrorCode.MALFORMED_ENVELOPE, message="JSON nests too deeply")
    try:
        # Lone surrogates decode from "\ud800" escapes but are not text; refuse them
        # here so that nothing downstream fails to encode what we accepted.
        _encoder.encode(envelope)
    except (UnicodeEncodeError, msgspec.EncodeError):
        return Rejection(code=ErrorCode.MALFORMED_ENVELOPE, message="strings must be valid Unicode")
    return envelope


def encode(envelope: Envelope) -> bytes:
    """Canonical bytes: sorted keys, no insignificant whitespace, defaults omitted."""
    return _encoder.encode(envelope)


def _classify(raw: bytes, exc: msgspec.ValidationError) -> Rejection | Unsupported:
    """Slow path, taken only for invalid input: find the most useful code."""
    try:
        loose: Any = msgspec.json.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        loose = None
    if isinstance(loose, dict):
        version = loose.get("v")
        kind = loose.get("type")
        if isinstance(version, int) and not isinstance(version, bool) and version != 1:
            return Rejection(
                code=ErrorCode.UNSUPPORTED_VERSION,
                message=f"protocol version {version} is not supported; this peer speaks 1",
                path="$.v",
            )
        if isinstance(kind, str):
            match = _VERSIONED_TYPE.match(kind)
            if match and match.group(1) != "1":
                return Rejection(
                    code=ErrorCode.UNSUPPORTED_VERSION,
                    message="envelope type belongs to another major protocol version",
                    path="$.type",
                )
            if kind not in KIND_BY_TYPE:
                return _unsupported(raw, kind)
    return _rejection_from(exc)


def _unsupported(raw: bytes, kind: str) -> Unsupported | Rejection:
    if not kind.startswith(TYPE_PREFIX):
        return Rejection(
            code=ErrorCode.UNSUPPORTED_TYPE,
            message="envelope type is not a lineup.v1 type",
            path="$.type",
        )
    try:
        header = _loose_decoder.decode(raw)
    except msgspec.ValidationError as exc:
        return _rejection_from(exc)
    except (msgspec.DecodeError, RecursionError):
        return Rejection(code=ErrorCode.MALFORMED_ENVELOPE, message="malformed JSON")
    if not bytes(header.payload).lstrip().startswith(b"{"):
        return Rejection(
            code=ErrorCode.MALFORMED_ENVELOPE, message="`payload` must be an object", path="$.payload"
        )
    return Unsupported(
        id=header.id,
        type=header.type[:128],
        conversation_id=header.conversation_id,
        sender=header.sender,
        created_at=header.created_at,
        target=header.target,
        payload_bytes=len(header.payload),
    )


def _rejection_from(exc: msgspec.ValidationError) -> Rejection:
    text = _first_line(str(exc))
    match = _PATH.search(text)
    if match:
        return Rejection(
            code=ErrorCode.MALFORMED_ENVELOPE, message=text[: match.start()], path=match.group(1)
        )
    return Rejection(code=ErrorCode.MALFORMED_ENVELOPE, message=text, path="$")


def _first_line(text: str) -> str:
    return text.splitlines()[0][:500] if text else "invalid envelope"
