"""The ``lineup`` console script: the command line, or one line when its parts are missing.

The core install may be the agent SDK alone (no click, no server): then this says
which extra to install instead of an ``ImportError`` traceback. Ctrl-C during the
imports exits 130 (SIGTERM 143) without a traceback.
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType
from typing import NoReturn

STANDARD = "lineup: the command line needs LineUp's standard parts: pip install 'lineup[standard]'"


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM before a command installs its own handlers: exit as the signal asks."""
    sys.exit(128 + signum)


def main() -> None:
    # Until a long-running command installs its handlers (lineup.stopping), SIGTERM
    # exits 143 and Ctrl-C 130, quietly, wherever the imports are.
    signal.signal(signal.SIGTERM, _terminated)
    debug = "--debug" in sys.argv[1:] or os.environ.get("LINEUP_DEBUG", "") not in ("", "0")
    from lineup.extras import MissingExtra

    try:
        from lineup.cli import main as run
    except KeyboardInterrupt:
        _quit_on_interrupt()
    except MissingExtra as exc:
        if debug:
            raise
        print(f"lineup: {exc}", file=sys.stderr)
        sys.exit(1)
    except ImportError as exc:
        if debug or (exc.name or "lineup").startswith("lineup"):
            raise
        print(STANDARD, file=sys.stderr)
        sys.exit(1)
    try:
        code = run()
    except KeyboardInterrupt:
        _quit_on_interrupt()
    sys.exit(code)


def _quit_on_interrupt() -> NoReturn:
    """Ctrl-C ended us: exit 130, and a second Ctrl-C pressed while we exit (a person
    presses it twice) changes nothing: no traceback from the interpreter's shutdown."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sys.exit(130)
