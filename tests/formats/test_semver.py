"""SemVer 2.0.0 precedence (``lineup.formats.semver``), as semver.org orders versions."""

from __future__ import annotations

import pytest

from lineup.formats.semver import compare_semver


def test_semver_precedence_follows_semver_org() -> None:
    # The chain from semver.org §11, lowest first.
    chain = [
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "2.0.0",
        "2.1.0",
        "2.1.1",
        "10.0.0",
    ]
    for index, low in enumerate(chain):
        assert compare_semver(low, low) == 0
        for high in chain[index + 1 :]:
            assert compare_semver(low, high) == -1, (low, high)
            assert compare_semver(high, low) == 1, (high, low)
    assert compare_semver("1.0.0+a", "1.0.0+b") == 0
    with pytest.raises(ValueError, match="SemVer"):
        compare_semver("1.0", "1.0.0")
