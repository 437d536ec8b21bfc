"""Where an agent remembers how far it has handled each conversation."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path
from typing import Protocol
from urllib.parse import urlsplit


class CursorStore(Protocol):
    def load(self) -> dict[str, int]: ...

    def save(self, cursors: dict[str, int]) -> None: ...


class MemoryCursorStore:
    """Forgets on exit: the agent replays every conversation from the start."""

    def __init__(self) -> None:
        self._cursors: dict[str, int] = {}

    def load(self) -> dict[str, int]:
        return dict(self._cursors)

    def save(self, cursors: dict[str, int]) -> None:
        self._cursors = dict(cursors)


class FileCursorStore:
    """A small JSON file, replaced atomically (write, fsync, rename) on each save."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def load(self) -> dict[str, int]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        if not isinstance(data, dict):
            raise ValueError(f"{self.path} does not hold a cursor map")
        return {str(k): int(v) for k, v in data.items() if isinstance(v, int) and v >= 0}

    def save(self, cursors: dict[str, int]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".cursors-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(cursors, handle, sort_keys=True)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise


def default_cursor_path(server_url: str, agent_id: str) -> Path:
    """``$XDG_STATE_HOME/lineup/agents/<agent>@<server>.json`` (``~/.local/state`` by default).

    One file per agent and server, so two agents, or one agent on two servers, never
    share cursors.
    """
    state = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    server = re.sub(r"[^A-Za-z0-9._-]+", "_", urlsplit(server_url).netloc or server_url)
    return Path(state) / "lineup" / "agents" / f"{agent_id}@{server}.json"
