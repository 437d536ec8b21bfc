"""Optional parts of LineUp and the one line that names the extra to install."""

from __future__ import annotations


class MissingExtra(Exception):
    """One line naming the extra to install."""
