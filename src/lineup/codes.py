"""Every code LineUp sends, registered in one place.

A code travels on the wire (an ``error`` payload, the ``error`` of a ``tool.result``
or an ``app.result``), in a receipt to a host or an app, on the host channel, or in
a refusal of signed delivery. Each is a member of one of the enums below:
``ErrorCode`` is the protocol's vocabulary; the others are one domain's refusals
(a manifest, a bundle, a schema, a release, a surface document). Codes are never
renamed or reused, and a value means one thing wherever it appears.

This module sits above every layer so that it may import them all; nothing in
``lineup`` imports it (tests and tools do).
"""

from __future__ import annotations

from enum import StrEnum

from lineup.delivery.errors import DeliveryErrorCode
from lineup.formats.bundle import BundleErrorCode
from lineup.formats.manifest import ManifestErrorCode
from lineup.formats.schemas import SchemaErrorCode
from lineup.host.surface.document import SurfaceRejectionCode
from lineup.protocol.errors import ErrorCode
from lineup.runtime.dev_surfaces import DevSurfaceCode

__all__ = ["CODE_ENUMS", "INTERNAL_CODE_ENUMS", "SENT_CODE_ENUMS", "SHARED_CODES", "code_values"]

SENT_CODE_ENUMS: tuple[type[StrEnum], ...] = (
    ErrorCode,
    ManifestErrorCode,
    BundleErrorCode,
    DeliveryErrorCode,
    SurfaceRejectionCode,
)
"""The enums whose codes leave the process that decides them (a manifest's or a
bundle's refusal reaches the App centre through signed delivery)."""

INTERNAL_CODE_ENUMS: tuple[type[StrEnum], ...] = (SchemaErrorCode, DevSurfaceCode)
"""Codes that never leave: the manifest loader turns each ``SchemaErrorCode`` into
its ``manifest_schema_*`` code; a ``DevSurfaceCode`` is only logged."""

CODE_ENUMS: tuple[type[StrEnum], ...] = SENT_CODE_ENUMS + INTERNAL_CODE_ENUMS

SHARED_CODES: dict[str, tuple[StrEnum, ...]] = {
    ErrorCode.ARTIFACT_TOO_LARGE.value: (
        ErrorCode.ARTIFACT_TOO_LARGE,
        DeliveryErrorCode.ARTIFACT_TOO_LARGE,
    ),
    ErrorCode.SURFACE_INVALID.value: (
        ErrorCode.SURFACE_INVALID,
        SurfaceRejectionCode.SURFACE_INVALID,
    ),
    ErrorCode.APP_VERSION_CONFLICT.value: (
        ErrorCode.APP_VERSION_CONFLICT,
        DeliveryErrorCode.VERSION_CONFLICT,
    ),
}
"""Values two enums hold on purpose, with one meaning. ``artifact_too_large``: an
artifact is larger than its limit (a capability call's file; a release's bundle
archive). ``surface_invalid``: a surface that cannot be served as it is (the
Runtime's answer to ``ui.open``; the surface origin's refusal at mount time).
``app_version_conflict``: this version of the app is already stored with other
contents (the registry's refusal, which signed delivery passes on)."""


def code_values() -> frozenset[str]:
    """Every registered code."""
    return frozenset(member.value for enum in CODE_ENUMS for member in enum)
