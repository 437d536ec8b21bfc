"""``lineup desktop`` for the desktop tests: the same ``desktop_client`` the command
runs, with two test seams: the OS's dialogs replaced (the edge of the world) and the
DevTools protocol open so Playwright can drive the window's page.

Usage: python -m tests.support.desktop_child SERVER_URL DATA_DIR DEBUG_PORT PICKED_FILE LOG

``PICKED_FILE`` is what the file dialog "picks"; every dialog and opened link is
written to ``LOG`` (one JSON line each), so the test sees what the desktop asked the OS.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

from lineup import logs
from lineup.desktop.launch import desktop_client
from lineup.desktop.providers import Dialogs


def stub_dialogs(picked: Path, log: Path) -> type[Dialogs]:
    def note(**entry: object) -> None:
        with log.open("a", encoding="utf-8") as out:
            out.write(json.dumps(entry) + "\n")

    class StubDialogs(Dialogs):
        def pick_file(self, accept: Sequence[str]) -> str | None:
            note(dialog="pick_file", accept=list(accept))
            return str(picked)

        def save_file(self, name: str) -> str | None:
            target = log.parent / f"saved-{name}"
            note(dialog="save_file", name=name, path=str(target))
            return str(target)

        def open_url(self, url: str) -> bool:
            note(service="open_url", url=url)
            return True

        def write_clipboard(self, text: str) -> None:
            note(service="clipboard", text=text)

        def notify(self, title: str, body: str) -> bool:
            note(service="notify", title=title)
            return False  # no tray here: the shell's own notice shows it

    return StubDialogs


def main(argv: list[str]) -> int:
    server_url, data_dir, debug_port, picked, log = argv
    logs.configure("INFO")  # as the command line does
    dialogs = stub_dialogs(Path(picked), Path(log))
    return desktop_client(
        Path(data_dir),
        server_url=server_url,
        port=None,
        surface_port=None,
        agent_id="demo-agent",
        trusted_keys=(),
        dialogs_factory=dialogs,
        remote_debugging=f"127.0.0.1:{debug_port}",
    )


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
