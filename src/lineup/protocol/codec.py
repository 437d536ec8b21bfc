"""Bytes in, typed envelopes out, and back: the only way envelopes cross a boundary.

``decode`` never raises on bad input. It returns a typed envelope, an
``Unsupported`` value for a well-formed envelope of a kind this version does not
know (safe fallback, spec 002 §9.1), or a ``Rejection`` with a stable code.
"""

from __future__ import annotations

import re
from typing import Any, Literal

import msgspec

from .envelope import KIND_BY_TYPE, TYPE_PREFIX, AnyEnvelope, Envelope, Sender, Target
from .errors import ErrorCode, Rejection, explain_validation_error
from .fields import MAX_ENVELOPE_BYTES, Id, Timestamp, TypeName

__all__ = ["DecodeResult", "Unsupported", "decode", "encode"]

_decoder = msgspec.json.Decoder(AnyEnvelope)
_encoder = msgspec.json.Encoder(order="sorted")
_VERSIONED_TYPE = re.compile(r"^lineup\.v([0-9]+)\.")
_MAX_MESSAGE_CHARS = 500


class Unsupported(msgspec.Struct, frozen=True, kw_only=True):
    """A well-formed envelope of a ``lineup.v1.*`` kind this version does not know.

    Hosts show it as an unsupported item or answer ``unsupported``; nothing in it is
    ever executed. The header is validated like any other; the payload is only
    checked to be a JSON object and kept as its size.
    """

    id: Id
    type: TypeName
    conversation_id: Id
    sender: Sender
    created_at: Timestamp
    target: Target | None = None
    payload_bytes: int = 0


class _LooseHeader(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The envelope header with an opaque payload, for kinds we do not know."""

    v: Literal[1] = 1
    id: Id
    type: TypeName
    conversation_id: Id
    sender: Sender
    created_at: Timestamp
    target: Target | None = None
    payload: msgspec.Raw


class _Probe(msgspec.Struct, frozen=True):
    """Just enough of an invalid envelope to tell a version or type problem apart."""

    v: Any = None
    type: Any = None


_loose_decoder = msgspec.json.Decoder(_LooseHeader)
_probe_decoder = msgspec.json.Decoder(_Probe)

DecodeResult = AnyEnvelope | Unsupported | Rejection


def decode(data: bytes | bytearray | memoryview | str) -> DecodeResult:
    """Decode and validate one envelope. Never raises for any input."""
    if isinstance(data, str):
        # Each character is at least one byte: refuse huge text before copying it.
        if len(data) > MAX_ENVELOPE_BYTES:
            return _too_large()
        raw = data.encode("utf-8", "surrogatepass")
    else:
        raw = bytes(data)
    if len(raw) > MAX_ENVELOPE_BYTES:
        return _too_large()
    try:
        envelope: AnyEnvelope = _decoder.decode(raw)
    except msgspec.ValidationError as exc:
        return _classify(raw, exc)
    except msgspec.DecodeError as exc:
        return Rejection(code=ErrorCode.MALFORMED_ENVELOPE, message=_first_line(str(exc)))
    except RecursionError:
        return _too_deep()
    # msgspec refuses lone surrogate escapes ("\ud800") while decoding, so whatever
    # is accepted here re-encodes; the fuzz test holds it to that.
    return envelope


def encode(envelope: Envelope) -> bytes:
    """Canonical bytes: sorted keys, no insignificant whitespace, defaults omitted
    except the version fields (``v``, a tool's ``version``), which are always written."""
    return _encoder.encode(envelope)


def _classify(raw: bytes, exc: msgspec.ValidationError) -> Rejection | Unsupported:
    """Slow path, taken only for invalid input: find the most useful code."""
    try:
        probe = _probe_decoder.decode(raw)
    except RecursionError:
        return _too_deep()
    except (msgspec.ValidationError, msgspec.DecodeError):
        # Not an object at all: the first error already says so.
        return _rejection_from(exc)
    version, kind = probe.v, probe.type
    if isinstance(version, int) and not isinstance(version, bool) and version != 1:
        return Rejection(
            code=ErrorCode.UNSUPPORTED_VERSION,
            message="this protocol version is not supported; this peer speaks 1",
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
    except msgspec.DecodeError as exc:
        return Rejection(code=ErrorCode.MALFORMED_ENVELOPE, message=_first_line(str(exc)))
    except RecursionError:
        return _too_deep()
    if not bytes(header.payload).startswith(b"{"):
        return Rejection(
            code=ErrorCode.MALFORMED_ENVELOPE,
            message="`payload` must be an object",
            path="$.payload",
        )
    return Unsupported(
        id=header.id,
        type=header.type,
        conversation_id=header.conversation_id,
        sender=header.sender,
        created_at=header.created_at,
        target=header.target,
        payload_bytes=len(header.payload),
    )


def _rejection_from(exc: msgspec.ValidationError) -> Rejection:
    text, path = explain_validation_error(exc)
    return Rejection(code=ErrorCode.MALFORMED_ENVELOPE, message=_first_line(text), path=path)


def _too_large() -> Rejection:
    return Rejection(
        code=ErrorCode.ENVELOPE_TOO_LARGE,
        message=f"envelope is larger than {MAX_ENVELOPE_BYTES} bytes",
    )


def _too_deep() -> Rejection:
    return Rejection(code=ErrorCode.MALFORMED_ENVELOPE, message="JSON nests too deeply")


def _first_line(text: str) -> str:
    lines = text.splitlines()
    return lines[0][:_MAX_MESSAGE_CHARS] if lines and lines[0] else "invalid envelope"
