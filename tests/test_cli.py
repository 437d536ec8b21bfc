"""The command line and the main job (`lineup demo`), run as a user would."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import httpx

from tests.support.appserver import free_port
from tests.support.cli import lineup
from tests.support.demo_process import running_demo

PASSWORD = "long enough"
ROOT = Path(__file__).resolve().parent.parent


def test_user_and_agent_add_and_their_errors(tmp_path: Path) -> None:
    data = str(tmp_path)
    made = lineup("server", "--data-dir", data, "user", "add", "alice", "--password", PASSWORD)
    assert made.returncode == 0, made.stderr
    assert "user alice created" in made.stdout
    again = lineup(
        "server", "--data-dir", data, "user", "add", "alice", "--password", "long enough"
    )
    assert again.returncode == 1
    assert "already exists" in again.stderr
    bad = lineup(
        "server", "--data-dir", data, "user", "add", "no spaces", "--password", "long enough"
    )
    assert bad.returncode == 1
    agent = lineup("server", "--data-dir", data, "agent", "add", "helper")
    assert agent.returncode == 0, agent.stderr
    key = agent.stdout.strip().splitlines()[-1]
    assert re.fullmatch(r"lak_[A-Za-z0-9_-]{43}", key)
    assert lineup("server", "--data-dir", data, "agent", "add", "bad id!").returncode == 1


def test_demo_prints_how_to_talk_and_the_agent_answers(tmp_path: Path) -> None:
    port, web_port, surface_port = free_port(), free_port(), free_port()
    with running_demo(tmp_path, port, web_port, surface_port) as output:
        password = re.search(r"LINEUP_PASSWORD=(\S+)", output)
        assert password, output
        assert f"http://127.0.0.1:{port}" in output
        link = re.search(rf"http://127.0.0.1:{web_port}/login/link\?code=\S+", output)
        assert link, output
        # The one-time link logs a browser in once, with an HttpOnly session cookie.
        first = httpx.get(link.group(0))
        assert first.status_code == 303
        assert first.headers["location"] == "/"
        cookie = first.headers["set-cookie"]
        assert "HttpOnly" in cookie
        assert "SameSite=strict" in cookie
        again = httpx.get(link.group(0))
        assert again.headers["location"] == "/login?error=link"
        chat = lineup(
            "chat",
            "--server",
            f"http://127.0.0.1:{port}",
            "--user",
            "demo",
            input="hello demo\n/help\n",
            env={"LINEUP_PASSWORD": password.group(1)},
        )
        # The chat client exits on end of input; long-poll for what the agent said.
        texts = _agent_texts(port, password.group(1), wanted=3)
        assert chat.returncode == 0, chat.stderr
        assert texts[0].startswith("Hello!")
        assert texts[1] == "You said: hello demo"
        assert "/help" in texts[2]


def _agent_texts(port: int, password: str, *, wanted: int) -> list[str]:
    """The agent's messages in the demo user's chat, waiting (server-side) for ``wanted``."""
    base = f"http://127.0.0.1:{port}"
    token = httpx.post(base + "/v1/login", json={"username": "demo", "password": password})
    headers = {"Authorization": f"Bearer {token.json()['token']}"}
    conversations = httpx.get(base + "/v1/conversations", headers=headers).json()["conversations"]
    chat = next(c["id"] for c in conversations if c["id"].startswith("chat."))
    texts: list[str] = []
    since = 0
    deadline = time.monotonic() + 30
    while len(texts) < wanted and time.monotonic() < deadline:
        page = httpx.get(
            f"{base}/v1/conversations/{chat}/envelopes",
            params={"since": since, "wait": 5},
            headers=headers,
            timeout=10,
        ).json()
        since = page["next_since"]
        texts += [
            item["envelope"]["payload"]["text"]
            for item in page["envelopes"]
            if item["envelope"]["sender"]["kind"] == "agent"
        ]
    return texts


def test_readme_opens_with_the_two_commands_and_ci_runs_the_second() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = readme.split("```sh", 1)[1].split("```", 1)[0].strip().splitlines()
    commands = [line.split("#", 1)[0].strip() for line in block]
    assert commands == ["./lineup demo", "scripts/test"]
    assert "exec scripts/test" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for script in ("lineup", "scripts/test", "scripts/bootstrap", ".ci/run"):
        assert os.access(ROOT / script, os.X_OK), script
