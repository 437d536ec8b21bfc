"""The desktop window's language, for tests/desktop/test_desktop_language.py: the real
``ShellWindow``, ``Dialogs`` and ``DesktopHost`` following a real Runtime (on a fresh
data dir) as ``run_desktop`` wires them: Qt on the main thread, the Runtime's loop on a
second one. The person's choice is made in the Runtime as the shell makes it
(``Runtime.choose_locale``); after each step the window's words, the file dialog's
filter and the engine's ``Accept-Language`` are read on the GUI thread.

Usage: python -m tests.support.desktop_language_child DATA_DIR
Prints one JSON line: {"steps": {step: what the window shows}}.
"""

from __future__ import annotations

import asyncio
import json
import sys
import threading
from pathlib import Path
from typing import Any

from lineup.desktop.engine import prepare_environment


def main(argv: list[str]) -> int:
    (data_dir,) = argv
    prepare_environment()
    from PySide6.QtWebEngineCore import QWebEngineProfile
    from PySide6.QtWidgets import QApplication

    from lineup.desktop.app import DesktopHost
    from lineup.desktop.providers import Dialogs, GuiThread, file_filter
    from lineup.desktop.window import ShellWindow
    from lineup.runtime import Runtime

    app = QApplication(sys.argv[:1])
    profile = QWebEngineProfile(app)
    dialogs = Dialogs()
    window = ShellWindow(Path(data_dir), profile, dialogs)
    gui = GuiThread()
    followed = threading.Event()  # the host applied the Runtime's choice (even none)

    def follow_choice(choice: str | None) -> None:
        window.follow_choice(choice)
        followed.set()

    host = DesktopHost(gui, dialogs, window.set_waiting, follow_choice)
    steps: dict[str, Any] = {}
    failed: list[BaseException] = []

    def seen() -> dict[str, Any]:
        return {
            "language": window.language,
            "title": window.windowTitle(),
            "accept_language": profile.httpAcceptLanguage(),
            "filter": file_filter([".txt"], dialogs.locale),
        }

    async def until(language: str, accept: str | None = None) -> dict[str, Any]:
        """What the window shows once it is in ``language`` (sending ``accept``)."""
        async with asyncio.timeout(20):
            while True:
                now = await gui.run(seen)
                if now["language"] == language and accept in (None, now["accept_language"]):
                    return now
                await asyncio.sleep(0.05)

    async def walk() -> None:
        runtime = Runtime(Path(data_dir))
        await runtime.open()
        following = asyncio.create_task(host.attach(runtime))
        try:
            steps["before"] = await gui.run(seen)
            # The host has read the Runtime's choice (none): the desktop's language stays.
            assert await asyncio.to_thread(followed.wait, 20)
            steps["system"] = await gui.run(seen)
            other = "en" if steps["system"]["language"] != "en" else "zh-CN"
            await runtime.choose_locale(other)
            steps["chosen"] = await until(other, other)
            await runtime.choose_locale("zh-CN")
            await until("zh-CN", "zh-CN")
            await gui.run(window.set_waiting, 2)
            steps["waiting"] = await gui.run(seen)
            await gui.run(window.set_waiting, 0)
            await runtime.choose_locale(None)
            system = steps["system"]
            steps["auto"] = await until(system["language"], system["accept_language"])
        finally:
            following.cancel()
            await asyncio.gather(following, return_exceptions=True)
            await runtime.close()

    def run() -> None:
        try:
            asyncio.run(walk())
        except BaseException as exc:
            failed.append(exc)
        finally:
            gui._job.emit(app.quit)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    app.exec()
    thread.join(30)
    import shiboken6

    shiboken6.delete(window)
    shiboken6.delete(profile)
    if failed:
        print(json.dumps({"error": repr(failed[0])}), flush=True)
        return 1
    print(json.dumps({"steps": steps}, ensure_ascii=False), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
