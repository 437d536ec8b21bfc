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
        sys.exit(130)
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
        code = 130
    sys.exit(code)
