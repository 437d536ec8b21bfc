"""SemVer 2.0.0 precedence: which of two exact versions is newer.

Manifests (``min_host_version``), releases, the verified cache and the AppServer
catalog all order versions the same way, so the rule lives in one small module that
any layer may import without loading the manifest format.
"""

from __future__ import annotations

import re

from lineup.protocol.fields import SEMVER_PATTERN

__all__ = ["compare_semver"]


def compare_semver(left: str, right: str) -> int:
    """-1, 0 or 1 as ``left`` has lower, equal or higher SemVer 2.0.0 precedence
    than ``right`` (build metadata is ignored, a pre-release sorts before its release)."""
    a, b = _precedence(left), _precedence(right)
    return (a > b) - (a < b)


def _precedence(version: str) -> tuple[int, int, int, int, tuple[tuple[int, int, str], ...]]:
    match = re.match(SEMVER_PATTERN, version)
    if match is None:
        raise ValueError("not a SemVer version")
    major, minor, patch, prerelease = (
        int(match.group(1)),
        int(match.group(2)),
        int(match.group(3)),
        match.group(4),
    )
    if prerelease is None:
        return (major, minor, patch, 1, ())
    # Numeric identifiers sort before alphanumeric ones and compare as numbers.
    parts = tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part) for part in prerelease.split(".")
    )
    return (major, minor, patch, 0, parts)
