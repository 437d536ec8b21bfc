"""The desktop window speaks the person's language: the one chosen in the shell (the
Runtime's), else the desktop's own preferred languages; its title, the file dialog's
filter and the web engine's ``Accept-Language`` follow the choice as it changes.

The window runs in a child process (Qt owns its main thread) on Qt's offscreen
platform; the desktop's languages are set the way a Linux session sets them
(``LANGUAGE``, ``LANG``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from lineup.desktop.language import accept_language, desktop_locale

try:
    import PySide6.QtWebEngineWidgets  # noqa: F401
except ImportError as missing:  # pragma: no cover - the test command installs it
    pytest.skip(
        f"the desktop extra (PySide6 with QtWebEngine) is not installed: {missing}",
        allow_module_level=True,
    )

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("choice", "preferred", "locale", "header"),
    [
        (None, ["zh-Hans-CN", "zh-CN", "en-US"], "zh-CN", "zh-Hans-CN,zh-CN;q=0.9,en-US;q=0.8"),
        (None, ["en-GB", "zh-CN"], "en", "en-GB,zh-CN;q=0.9"),
        (None, ["fr-FR", "de"], "en", "fr-FR,de;q=0.9"),
        (None, [], "en", "en"),
        ("zh-CN", ["en-US"], "zh-CN", "zh-CN"),
        ("en", ["zh-CN"], "en", "en"),
        ("klingon", ["zh-CN"], "zh-CN", "zh-CN"),  # not a shipped language: ignored
    ],
)
def test_the_window_s_language_is_the_choice_else_the_desktop_s(
    choice: str | None, preferred: list[str], locale: str, header: str
) -> None:
    assert desktop_locale(choice, preferred) == locale
    assert accept_language(choice, preferred) == header


def window_steps(data_dir: Path, language: str) -> dict[str, Any]:
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "QTWEBENGINE_CHROMIUM_FLAGS": "--disable-gpu",
        "LANGUAGE": language,
        "LANG": f"{language}.UTF-8",
        "LC_ALL": "",
        "LC_MESSAGES": "",
    }
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.desktop_language_child", str(data_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    assert done.returncode == 0 and lines, done.stdout + done.stderr
    result = json.loads(lines[-1])
    steps = result["steps"]
    assert isinstance(steps, dict)
    return steps


def test_the_window_follows_the_runtime_s_choice_on_a_chinese_desktop(tmp_path: Path) -> None:
    steps = window_steps(tmp_path / "client", "zh_CN")
    system = steps["system"]
    assert steps["before"] == system
    assert system["language"] == "zh-CN"
    assert system["title"] == "LineUp"
    assert system["accept_language"].startswith("zh-Hans-CN,zh-CN;q=0.9")
    assert system["filter"] == "可选文件 (*.txt);;所有文件 (*)"
    chosen = steps["chosen"]  # English, chosen in the shell
    assert chosen["language"] == "en"
    assert chosen["accept_language"] == "en"
    assert chosen["filter"] == "Accepted files (*.txt);;All files (*)"
    assert steps["waiting"]["title"] == "LineUp（2 项待处理）"  # noqa: RUF001
    assert steps["waiting"]["accept_language"] == "zh-CN"
    assert steps["auto"] == system  # "as the browser says": the desktop's again


def test_an_english_desktop_shows_english_until_chinese_is_chosen(tmp_path: Path) -> None:
    steps = window_steps(tmp_path / "client", "en_US")
    assert steps["system"]["language"] == "en"
    assert steps["system"]["filter"] == "Accepted files (*.txt);;All files (*)"
    assert steps["chosen"]["language"] == "zh-CN"
    assert steps["chosen"]["accept_language"] == "zh-CN"
    assert steps["waiting"]["title"] == "LineUp（2 项待处理）"  # noqa: RUF001
    assert steps["auto"]["language"] == "en"
    assert steps["auto"]["title"] == "LineUp"
