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
import os
import secrets
import sys
from pathlib import Path

DEFAULT_LEVEL = "WARNING"
"""Long-running commands are quiet unless asked (``--log-level``, ``$LINEUP_LOG_LEVEL``)."""
KEY_FILE = "log-pseudonym.key"
"""``<data dir>/log-pseudonym.key`` (0600): the key of ``pseudonym`` for that data dir."""

_PSEUDONYM_KEY = secrets.token_bytes(32)
"""This process's key: the same identity reads the same in one process's log (lines
can be followed), and nothing in the log can be matched to an identity without it.
``use_data_dir`` replaces it with the data dir's own key, so the hashes stay the same
across restarts of the command that opens that data dir."""


def use_data_dir(data_dir: Path) -> None:
    """Load (or make, on first use) the pseudonym key kept in ``data_dir``."""
    global _PSEUDONYM_KEY
    path = data_dir / KEY_FILE
    try:
        _PSEUDONYM_KEY = path.read_bytes()
        return
    except FileNotFoundError:
        pass
    data_dir.mkdir(parents=True, exist_ok=True)
    key = secrets.token_bytes(32)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first
        _PSEUDONYM_KEY = path.read_bytes()
        return
    with os.fdopen(fd, "wb") as handle:
        handle.write(key)
    _PSEUDONYM_KEY = key


def pseudonym(identity: str) -> str:
    """A keyed hash of a user, agent or conversation id, for a log line."""
    digest = hmac.new(_PSEUDONYM_KEY, identity.encode(), hashlib.sha256).hexdigest()
    return f"h:{digest[:16]}"


_STANDARD = set(logging.LogRecord("x", 0, "x", 0, "x", None, None).__dict__) | {
    "message",
    "asctime",
    "color_message",
}


SPEAKERS = {"uvicorn.error": "lineup.http", "uvicorn.error.lifespan": "lineup.http"}
"""uvicorn's server lines say who speaks: LineUp's HTTP listeners."""


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        speaker = SPEAKERS.get(record.name)
        if speaker is not None:
            record = logging.makeLogRecord({**record.__dict__, "name": speaker})
        base = super().format(record)
        fields = {k: v for k, v in record.__dict__.items() if k not in _STANDARD}
        if not fields:
            return base
        return base + " " + " ".join(f"{k}={v}" for k, v in sorted(fields.items()))


def configure(level: str = DEFAULT_LEVEL) -> None:
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
    logging.getLogger("uvicorn.error.lifespan").setLevel(logging.NOTSET)
