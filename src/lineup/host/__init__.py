"""The Web Reference Host: login page, shell, host channel, served by the Runtime."""

from .app import WebHost, csp

__all__ = ["WebHost", "csp"]
