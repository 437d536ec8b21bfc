"""Optional parts of LineUp (the extras in pyproject.toml) and the one-line error when
one is missing: ``require("asyncpg", "postgres", "a PostgreSQL database")``."""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["MissingExtra", "require"]


class MissingExtra(Exception):
    """An optional module is not installed; the message is one line naming the extra."""

    def __init__(self, module: str, extra: str, purpose: str) -> None:
        self.module = module
        self.extra = extra
        self.purpose = purpose
        super().__init__(
            f"{purpose} needs LineUp's {extra} parts: pip install 'lineup[{extra}]'"
            f" ({module} is not installed)"
        )


def require(module: str, extra: str, purpose: str) -> ModuleType:
    """Import ``module``, or raise ``MissingExtra`` naming ``lineup[extra]``."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtra(module, extra, purpose) from None
