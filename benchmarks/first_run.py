"""The first run, as a new user meets it, against Chainlit in the same run.

    python benchmarks/first_run.py [--skip-chainlit]

Every install is cold (an empty pip cache of its own), as on a fresh machine:

- demo: a fresh clone of this repository, then ``./lineup demo`` until its login page
  is served: the time from the clone to that page, the venv's size and the number of
  distributions in it;
- SDK alone: ``pip install <clone>`` (the core, no extras) into a new venv;
- Chainlit: ``pip install chainlit`` into a new venv, and the time to it.

Goals (issue 22): demo ≤ 120 MB, ≤ 30 distributions, clone → login page ≤ 20 s;
SDK alone ≤ 40 MB. Record the figures in docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _size_mb(path: Path) -> float:
    total = sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())
    return total / 1e6


def _distributions(venv: Path) -> int:
    count = "import importlib.metadata as m; print(len({d.name for d in m.distributions()}))"
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", count], check=True, capture_output=True, text=True
    ).stdout
    return int(out)


def _cold_env(cache: Path) -> dict[str, str]:
    return {**os.environ, "PIP_CACHE_DIR": str(cache), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def demo(work: Path) -> tuple[float, float, int]:
    """Clone → login page served: seconds, venv MB, distributions."""
    clone = work / "lineup"
    env = _cold_env(work / "pip-cache-demo")
    env["LINEUP_DATA_DIR"] = str(work / "data")
    ports = [str(_free_port()) for _ in range(3)]
    start = time.perf_counter()
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    process = subprocess.Popen(
        [str(clone / "lineup"), "demo", "--port", ports[0], "--web-port", ports[1],
         "--surface-port", ports[2]],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=clone,
    )  # fmt: skip
    try:
        while True:
            if process.poll() is not None:
                raise SystemExit(f"lineup demo exited with {process.returncode}")
            try:
                with urllib.request.urlopen(
                    f"http://127.0.0.1:{ports[1]}/login", timeout=2
                ) as page:
                    if page.status == 200:
                        break
            except OSError:
                time.sleep(0.05)
        elapsed = time.perf_counter() - start
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=10)
    venv = clone / ".venv"
    return elapsed, _size_mb(venv), _distributions(venv)


def pip_install(work: Path, name: str, requirement: str) -> tuple[float, float, int]:
    """A new venv with ``requirement``, cold: install seconds, venv MB, distributions."""
    venv = work / f"venv-{name}"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    start = time.perf_counter()
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", requirement],
        check=True, env=_cold_env(work / f"pip-cache-{name}"), cwd=work,
    )  # fmt: skip
    return time.perf_counter() - start, _size_mb(venv), _distributions(venv)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-chainlit", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="lineup-first-run-") as tmp:
        work = Path(tmp)
        bare = work / "venv-bare"
        subprocess.run([sys.executable, "-m", "venv", str(bare)], check=True)
        rows = [("bare venv (pip, setuptools)", None, _size_mb(bare), _distributions(bare))]
        rows.append(("lineup demo: clone → login page", *demo(work)))
        rows.append(
            ("lineup SDK alone: pip install", *pip_install(work, "sdk", str(work / "lineup")))
        )
        if not args.skip_chainlit:
            rows.append(("chainlit: pip install", *pip_install(work, "chainlit", "chainlit")))
    print(f"{'':36} {'seconds':>8} {'venv MB':>8} {'dists':>6}")
    for label, seconds, size, count in rows:
        shown = "" if seconds is None else f"{seconds:.1f}"
        print(f"{label:36} {shown:>8} {size:8.0f} {count:6d}")
    print("goals: demo ≤ 20 s, ≤ 120 MB, ≤ 30 distributions; SDK alone ≤ 40 MB")
    demo_row, sdk_row = rows[1], rows[2]
    if len(rows) > 3:
        chainlit = rows[3]
        print(
            f"ratios to chainlit: venv {demo_row[2] / chainlit[2]:.2f}, "
            f"distributions {demo_row[3] / chainlit[3]:.2f}, "
            f"install time {demo_row[1] / chainlit[1]:.2f} (the demo's includes its start)"
        )
    print(f"SDK alone: {sdk_row[2]:.0f} MB, {sdk_row[3]} distributions")


if __name__ == "__main__":
    main()
