"""Signed MiniApp delivery (spec 002 §9): releases, publisher keys, the artifact
archive, in-memory verification, the verified cache and the catalog client.

The publisher side (``lineup miniapp keygen/pack/sign/verify``) and the Runtime side
(``runtime.apps.installer``) share these modules, so what a publisher checks is
exactly what a Runtime checks.
"""

# The bundle and manifest formats live in ``lineup.runtime.apps``, whose package imports
# the Runtime, which imports this package's modules: load the Runtime first so the
# order is always runtime -> delivery, whichever is imported first.
import lineup.runtime  # noqa: F401  (isort: keep first)

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
