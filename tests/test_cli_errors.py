"""Every mistake on the command line ends in one line on stderr and a non-zero exit
(issue 22): real ``python -m lineup`` processes, real ports and servers."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.support.appserver import free_port
from tests.support.cli import lineup
from tests.support.demo_process import running_demo


def one_line(result: subprocess.CompletedProcess[str], code: int = 1) -> str:
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert "Traceback" not in result.stderr, result.stderr
    assert len(lines) == 1, result.stderr
    assert result.returncode == code, result.stderr
    return lines[0]


@contextmanager
def taken_port() -> Iterator[int]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        yield int(sock.getsockname()[1])


def test_client_with_its_port_in_use(tmp_path: Path) -> None:
    with taken_port() as port:
        result = lineup(
            "client", "--server", "http://127.0.0.1:1", "--data-dir", str(tmp_path),
            "--port", str(port), "--surface-port", str(free_port()),
        )  # fmt: skip
    assert f"127.0.0.1:{port}" in one_line(result)


def test_client_with_its_surface_port_in_use(tmp_path: Path) -> None:
    with taken_port() as port:
        result = lineup(
            "client", "--server", "http://127.0.0.1:1", "--data-dir", str(tmp_path),
            "--port", str(free_port()), "--surface-port", str(port),
        )  # fmt: skip
    assert f"127.0.0.1:{port}" in one_line(result)


def test_chat_with_the_server_down() -> None:
    port = free_port()
    result = lineup("chat", "--server", f"http://127.0.0.1:{port}", "--user", "x", input="pw\n")
    assert "cannot reach the AppServer" in one_line(result)


def test_postgres_with_nothing_listening(tmp_path: Path) -> None:
    url = f"postgresql://127.0.0.1:{free_port()}/lineup"
    result = lineup("server", "--data-dir", str(tmp_path), "--database", url, "--port", "0")
    assert "PostgreSQL is unavailable" in one_line(result)


def test_postgres_url_with_a_bad_port() -> None:
    result = lineup("server", "--database", "postgresql://localhost:notaport/x")
    assert "port" in one_line(result)


def test_a_second_demo_on_the_same_data_dir(tmp_path: Path) -> None:
    with running_demo(tmp_path, free_port(), free_port(), free_port()) as banner:
        assert banner.splitlines()[0] == "LineUp demo is running."  # the first stdout line
        result = lineup(
            "demo", "--data-dir", str(tmp_path), "--port", str(free_port()),
            "--web-port", str(free_port()), "--surface-port", str(free_port()),
        )  # fmt: skip
        assert "another --data-dir" in one_line(result)


def test_usage_errors_are_one_line() -> None:
    assert "No such command" in one_line(lineup("bogus"), 2)
    assert "--nope" in one_line(lineup("server", "--nope"), 2)


def test_debug_shows_the_traceback() -> None:
    args = ("server", "--database", f"postgresql://127.0.0.1:{free_port()}/x", "--port", "0")
    result = lineup("--debug", *args)
    assert result.returncode != 0
    assert "Traceback" in result.stderr
    assert "Traceback" in lineup(*args, env={"LINEUP_DEBUG": "1"}).stderr


def test_version_and_short_help() -> None:
    version = lineup("--version")
    assert version.returncode == 0
    assert version.stdout.startswith("lineup ")
    for command in ((), ("demo",), ("client",), ("server", "user", "add"), ("miniapp",)):
        shown = lineup(*command, "-h")
        assert shown.returncode == 0, shown.stderr
        assert "Usage:" in shown.stdout
        assert "--log-level" in shown.stdout


def test_user_add_asks_twice_and_wants_a_long_password(tmp_path: Path) -> None:
    data = str(tmp_path)
    base = ("server", "--data-dir", data, "user", "add")
    made = lineup(*base, "alice", input="long enough\nlong enough\n")
    assert made.returncode == 0, made.stderr
    assert "user alice created" in made.stdout
    assert "differ" in one_line(lineup(*base, "bob", input="long enough\nsomething else\n"))
    assert "at least 8 characters" in one_line(lineup(*base, "bob", input="short\nshort\n"))
    assert "at least 8" in one_line(lineup(*base, "bob", "--password", "pw"))
    assert "no input" in one_line(lineup(*base, "bob", input=""))


def test_user_and_agent_add_refuse_a_missing_data_dir(tmp_path: Path) -> None:
    missing = tmp_path / "mistyped"
    for command in (("user", "add", "alice", "--password", "long enough"), ("agent", "add", "a")):
        line = one_line(lineup("server", "--data-dir", str(missing), *command))
        assert "--create" in line
        assert not missing.exists()
    made = lineup("server", "--data-dir", str(missing), "agent", "add", "a", "--create")
    assert made.returncode == 0, made.stderr


@pytest.mark.parametrize("where", ["root", "subcommand", "env"])
def test_log_level_on_every_command(tmp_path: Path, where: str) -> None:
    url = f"postgresql://127.0.0.1:{free_port()}/x"
    command = ["server", "--data-dir", str(tmp_path), "--database", url, "--port", "0"]
    env: dict[str, str] = {}
    if where == "root":
        command = ["--log-level", "INFO", *command]
    elif where == "subcommand":
        command = [command[0], "--log-level", "info", *command[1:]]
    else:
        env = {"LINEUP_LOG_LEVEL": "INFO"}
    result = lineup(*command, env=env)
    assert result.returncode == 1
    assert " INFO lineup.http: Waiting for application startup." in result.stderr
    quiet = lineup(*[c for c in command if c.lower() not in ("--log-level", "info")])
    assert " INFO " not in quiet.stderr


def test_ctrl_c_during_the_imports_exits_130_without_a_traceback(tmp_path: Path) -> None:
    """SIGINT once ``lineup.cli`` is imported, while ``lineup demo`` imports the rest
    (``-X importtime`` says where the imports are)."""
    demo = subprocess.Popen(
        [sys.executable, "-X", "importtime", "-m", "lineup", "demo", "--data-dir", str(tmp_path),
         "--port", str(free_port()), "--web-port", str(free_port()),
         "--surface-port", str(free_port())],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert demo.stderr is not None
    for line in demo.stderr:
        if line.rstrip().endswith("| lineup.cli"):
            demo.send_signal(signal.SIGINT)
            break
    out, err = demo.communicate(timeout=20)
    said = [line for line in err.splitlines() if line.strip() and "import time:" not in line]
    assert "Traceback" not in err
    assert len(said) <= 1, said
    assert demo.returncode == 130, err
    assert "LineUp demo is running" not in out


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ('{"mcpServers": {"x": {"command": "node"', "line 1"),  # not JSON: where
        ('{"mcpServers": {"x": {"command": "a\nb"}}}', "character at line 1"),  # not "at at"
        ('{"mcpServers": {"x": {}}}', '"command" or "url"'),
        ('{"mcpServers": {"x": {"url": "ftp://example.invalid/mcp"}}}', "http"),
    ],
)
def test_a_demo_with_an_mcp_config_it_cannot_use(tmp_path: Path, config: str, said: str) -> None:
    path = tmp_path / "mcp.json"
    path.write_text(config)
    result = lineup(
        "demo", "--data-dir", str(tmp_path / "demo"), "--mcp-config", str(path),
        "--port", str(free_port()), "--web-port", str(free_port()),
    )  # fmt: skip
    line = one_line(result)
    assert str(path) in line and said in line, line
    assert not (tmp_path / "demo").exists()  # refused before anything is created


def test_a_client_with_an_mcp_config_that_is_not_there(tmp_path: Path) -> None:
    result = lineup(
        "client", "--server", "http://127.0.0.1:1", "--data-dir", str(tmp_path),
        "--mcp-config", str(tmp_path / "nowhere.json"),
    )  # fmt: skip
    assert "nowhere.json" in one_line(result, code=2)
