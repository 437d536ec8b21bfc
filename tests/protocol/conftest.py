"""Fixtures shared by the protocol tests; the example data lives in ``examples.py``."""

from __future__ import annotations

from typing import Any

import pytest

from .examples import KINDS, envelope


@pytest.fixture(params=sorted(KINDS))
def kind(request: pytest.FixtureRequest) -> str:
    """Every ``lineup.v1`` kind, one test run each."""
    value: str = request.param
    return value


@pytest.fixture
def example(kind: str) -> dict[str, Any]:
    """A valid envelope of ``kind`` as a JSON-ready dict."""
    return envelope(kind)
