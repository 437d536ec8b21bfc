"""Each documented install, from the wheel into a clean venv outside the repository:
the SDK alone (``pip install lineup``), the demo (``lineup[standard]``) and the
desktop host (``lineup[desktop]``). Each checks what was installed and runs the
command it is for (docs/decisions.md, "Install profiles: a small core, extras for the
rest"; the sizes and times are benchmarks/first_run.py's).

The installs resolve against PyPI like a user's, with pip's own cache (the test
command's bootstrap has just filled it), so they are downloads only the first time."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.appserver import AppServerProcess, free_port

ROOT = Path(__file__).resolve().parents[2]
DEMO_DISTRIBUTIONS = 30  # the budget for the demo install, pip and setuptools in

# What each install may hold besides lineup itself (normalised names): the extra's
# requirements and theirs. A new dependency must be added here on purpose.
SDK = {"msgspec", "httpx", "websockets", "google-re2", "anyio", "certifi", "httpcore", "h11",
       "idna", "typing-extensions"}  # fmt: skip
STANDARD = SDK | {"starlette", "uvicorn", "uvloop", "httptools", "click", "markdown-it-py",
                  "mdurl", "nh3", "jsonschema-rs", "cryptography", "cffi", "pycparser"}  # fmt: skip
DESKTOP = STANDARD | {"pyside6-addons", "pyside6-essentials", "pyside6-webengine", "shiboken6"}
BARE = {"pip", "setuptools"}  # what `python -m venv` puts in


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--disable-pip-version-check",
         "--no-deps", "--wheel-dir", str(out), str(ROOT)],
        check=True,
    )  # fmt: skip
    (built,) = out.glob("lineup-*.whl")
    return built


def _venv(where: Path, requirement: str) -> Path:
    """A clean venv at ``where`` with ``requirement`` installed; its ``bin``."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    bin_dir = where / "bin"
    subprocess.run(
        [str(bin_dir / "python"), "-m", "pip", "install", "--quiet",
         "--disable-pip-version-check", requirement],
        check=True,
        cwd=where,  # never the repository: nothing of it may be on the path
    )  # fmt: skip
    return bin_dir


def _installed(bin_dir: Path) -> dict[str, list[str]]:
    """Every distribution in the venv and the files it installed."""
    script = (
        "import json, importlib.metadata as m;"
        "print(json.dumps({d.metadata['Name']: [str(f) for f in d.files or []]"
        " for d in m.distributions()}))"
    )
    out = subprocess.run(
        [str(bin_dir / "python"), "-c", script], check=True, capture_output=True, text=True
    ).stdout
    return {_normal(name): files for name, files in json.loads(out).items()}


def _check_lineup_files(files: list[str]) -> None:
    assert "lineup/py.typed" in files  # a user's mypy sees the SDK as typed
    assert any(f.endswith(".dist-info/licenses/LICENSE") for f in files)


def test_the_sdk_installs_alone_typed_licensed_and_connects(wheel: Path, tmp_path: Path) -> None:
    bin_dir = _venv(tmp_path / "venv", str(wheel))
    installed = _installed(bin_dir)
    assert set(installed) - BARE == SDK | {"lineup"}
    _check_lineup_files(installed["lineup"])
    server = AppServerProcess(tmp_path / "server", tmp_path / "server.log")
    server.start()
    try:
        key = server.add_agent("sdk-only")
        agent = (
            "import asyncio, sys\n"
            "from lineup.agent import Agent, MessageEnvelope\n"
            "async def main():\n"
            "    agent = Agent(sys.argv[1], api_key=sys.argv[2], cursor_path=sys.argv[3])\n"
            "    task = asyncio.create_task(agent.run(handle_signals=False))\n"
            "    await agent.connection.connected.wait()\n"
            "    print('connected', flush=True)\n"
            "    await agent.stop(); await task\n"
            "asyncio.run(asyncio.wait_for(main(), 30))\n"
        )
        done = subprocess.run(
            [str(bin_dir / "python"), "-c", agent, server.url, key, str(tmp_path / "c.json")],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    finally:
        server.stop()
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "connected"
    # The command line is not part of the SDK: one line says which extra it needs.
    cli = subprocess.run([str(bin_dir / "lineup"), "demo"], capture_output=True, text=True)
    assert cli.returncode == 1
    assert cli.stderr.strip().splitlines() == [
        "lineup: the command line needs LineUp's standard parts: pip install 'lineup[standard]'"
    ]


@pytest.fixture
def stopped_on_exit() -> Iterator[list[subprocess.Popen[str]]]:
    started: list[subprocess.Popen[str]] = []
    yield started
    for process in started:
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()


def test_the_demo_install_is_small_and_serves_its_login_page(
    wheel: Path, tmp_path: Path, stopped_on_exit: list[subprocess.Popen[str]]
) -> None:
    bin_dir = _venv(tmp_path / "venv", f"lineup[standard] @ {wheel.as_uri()}")
    installed = _installed(bin_dir)
    assert set(installed) - BARE == STANDARD | {"lineup"}
    assert len(installed) <= DEMO_DISTRIBUTIONS
    assert not {"asyncpg", "pyside6-addons", "rich", "pytest"} & set(installed)
    _check_lineup_files(installed["lineup"])
    ports = [str(free_port()) for _ in range(3)]
    demo = subprocess.Popen(
        [str(bin_dir / "lineup"), "demo", "--data-dir", str(tmp_path / "demo"),
         "--port", ports[0], "--web-port", ports[1], "--surface-port", ports[2]],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": ""},
    )  # fmt: skip
    stopped_on_exit.append(demo)
    assert demo.stdout is not None
    link = None
    for line in demo.stdout:
        if line.strip().startswith("Open"):
            link = line.split()[-1]
            break
    assert link is not None, "the demo printed no link"
    with urllib.request.urlopen(f"http://127.0.0.1:{ports[1]}/login", timeout=10) as page:
        assert page.status == 200
        assert b"LineUp" in page.read()
    demo.send_signal(signal.SIGINT)
    assert demo.wait(timeout=10) == 0


def test_the_desktop_install_brings_qtwebengine_and_its_command(
    wheel: Path, tmp_path: Path
) -> None:
    bin_dir = _venv(tmp_path / "venv", f"lineup[desktop] @ {wheel.as_uri()}")
    installed = _installed(bin_dir)
    assert set(installed) - BARE == DESKTOP | {"lineup"}
    check = subprocess.run(
        [str(bin_dir / "python"), "-c", "import PySide6.QtWebEngineWidgets"],
        capture_output=True, text=True, cwd=tmp_path,
        env={**os.environ, "QT_QPA_PLATFORM": "offscreen"},
    )  # fmt: skip
    assert check.returncode == 0, check.stderr[-2000:]
    # Its command is installed and answers (tests/desktop runs the window itself).
    desktop = subprocess.run(
        [str(bin_dir / "lineup"), "desktop", "-h"], capture_output=True, text=True, cwd=tmp_path
    )
    assert desktop.returncode == 0
    assert "desktop window" in desktop.stdout
