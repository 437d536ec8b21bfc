"""Logging setup: one line per event, ``key=value`` fields from ``extra``.

Only types, codes, sizes, counts, technical ids and keyed hashes are ever passed as
fields; message bodies, payloads, arguments, answers, tokens and passwords never
are, and neither are the identities of users, agents and conversations: those are
logged as ``pseudonym(value)``.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import sys

_PSEUDONYM_KEY = secrets.token_bytes(32)
"""This process's key: the same identity reads the same in one process's log (lines
can be followed), and nothing in the log can be matched to an identity without it."""


def pseudonym(identity: str) -> str:
    """A keyed hash of a user, agent or conversation id, for a log line."""
    digest = hmac.new(_PSEUDONYM_KEY, identity.encode(), hashlib.sha256).hexdigest()
    return f"h:{digest[:16]}"


_STANDARD = set(logging.LogRecord("x", 0, "x", 0, "x", None, None).__dict__) | {
    "message",
    "asctime",
    "color_message",
}


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        base = super().format(record)
        fields = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        if not fields:
            return base
        return base + " " + " ".join(f"{k}={v}" for k, v in sorted(fields.items()))


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    quiet_libraries()


def quiet_libraries() -> None:
    """These libraries trace whole frames and requests at DEBUG, bodies included:
    keep them at INFO or above whatever our own level is."""
    for noisy in ("websockets", "httpx", "httpcore", "uvicorn.access", "markdown_it", "asyncio"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    logging.getLogger("uvicorn.error").setLevel(max(logging.INFO, logging.getLogger().level))
