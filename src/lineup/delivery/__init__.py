"""Signed MiniApp delivery (spec 002 §9): releases, publisher keys, the artifact
archive, in-memory verification, the verified cache and the catalog client.

The publisher side (``lineup miniapp keygen/pack/sign/verify``) and the Runtime side
(``runtime.apps.installer``) share these modules, so what a publisher checks is
exactly what a Runtime checks. The bundle and manifest formats come from
``lineup.formats``; nothing here imports the Runtime or a host.
"""

from .errors import DeliveryError, DeliveryErrorCode
from .release import FORMAT, MAX_ARTIFACT_BYTES, Release, canonical_bytes, decode_release

__all__ = [
    "FORMAT",
    "MAX_ARTIFACT_BYTES",
    "DeliveryError",
    "DeliveryErrorCode",
    "Release",
    "canonical_bytes",
    "decode_release",
]
