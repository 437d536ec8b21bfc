"""AppServer ingest benchmark: durable envelopes per second over WebSocket and HTTP.

Run: ``.venv/bin/python benchmarks/appserver_ingest.py`` (about 40 s; see
``--help`` and docs/benchmarks.md). Everything runs on 127.0.0.1 inside a temporary
directory that is removed at the end (``--keep`` keeps it).

Figures, all from one run:

1. AppServer, WebSocket: ``--connections`` agent connections (32), split over
   ``--loaders`` processes (2, see ``ws_loader.py``), each keeping ``--window``
   pipelined sends in flight; envelopes acknowledged per second from the first send
   to the last ack, with p50/p99 ack latency.
2. AppServer, HTTP: ``wrk`` with the same number of connections POSTs a new
   envelope per request (``post_envelope.lua``) for ``--duration`` seconds.
3. Raw ``sqlite3``: the rows the AppServer stored in (1), inserted again into a
   fresh copy of its schema in batches of 100, one commit per batch.
4. Bare endpoint: ``bare_app.py`` (uvicorn + Starlette, same uvicorn settings,
   one commit per request) under the same ``wrk`` command.

Every acknowledgement is checked against the SQLite files afterwards. SQLite runs
in WAL mode with ``synchronous=FULL`` everywhere, so every figure is durable rows.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import os
import platform
import re
import resource
import select
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import httpx

HERE = Path(__file__).resolve().parent
WS_LOADER = HERE / "ws_loader.py"
BARE_APP = HERE / "bare_app.py"
WRK_SCRIPT = HERE / "post_envelope.lua"

AGENT_ID = "bench-agent"
CONVERSATION_PREFIX = "bench-c"
HTTP_ID_PREFIX = "h"
RAW_BATCH = 100

WS_GOAL = 20_000.0
HTTP_GOAL_RATIO = 0.8

INSERT = (
    "INSERT INTO envelopes (conversation_id, seq, envelope_id, type, sender_kind, body,"
    " received_at) VALUES (?, ?, ?, ?, ?, ?, ?)"
)


class BenchmarkError(Exception):
    """The run could not be completed or a check failed."""


# --- small helpers -------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as info:
        for line in info:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def process_cpu(pid: int) -> float:
    """CPU seconds (user + system, all threads) used so far by a running process."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def read_line(stream: IO[str], timeout: float, what: str) -> str:
    ready, _, _ = select.select([stream], [], [], timeout)
    if not ready:
        raise BenchmarkError(f"{what}: no answer within {timeout:.0f} s")
    line = stream.readline()
    if not line:
        raise BenchmarkError(f"{what}: the process ended early")
    return line.strip()


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    if not sorted_values:
        return float("nan")
    index = min(len(sorted_values) - 1, max(0, round(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


def stop_process(proc: subprocess.Popen[Any], timeout: float = 20.0) -> None:
    if proc.poll() is not None:
        return
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)


def count_rows(db: Path, pattern: str) -> int:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        row = conn.execute(
            "SELECT COUNT(*) FROM envelopes WHERE envelope_id LIKE ?", (pattern,)
        ).fetchone()
    return int(row[0])


def clone_base(source: Path, target: Path) -> None:
    """A fresh database with ``source``'s schema and every row but the envelopes."""
    with contextlib.closing(sqlite3.connect(target, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("ATTACH DATABASE ? AS src", (str(source),))
        objects = conn.execute(
            "SELECT type, name, sql FROM src.sqlite_master"
            " WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%' ORDER BY rowid"
        ).fetchall()
        conn.execute("BEGIN")
        for _, _, sql in objects:
            conn.execute(sql)
        for kind, name, _ in objects:
            if kind == "table" and name != "envelopes":
                conn.execute(f'INSERT INTO main."{name}" SELECT * FROM src."{name}"')  # noqa: S608
        conn.execute("COMMIT")
        conn.execute("DETACH DATABASE src")


# --- profiling (optional) -----------------------------------------------------------------


@dataclass
class Profiler:
    """py-spy record on a server process for one phase, summarised afterwards."""

    directory: Path | None
    procs: list[tuple[str, subprocess.Popen[bytes], Path]] = field(default_factory=list)

    def start(self, name: str, pid: int, seconds: float) -> None:
        if self.directory is None:
            return
        py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
        if not Path(py_spy).exists():
            raise BenchmarkError("--profile needs py-spy: .venv/bin/pip install py-spy")
        out = self.directory / f"{name}.txt"
        cmd = [py_spy, "record", "--pid", str(pid), "--duration", str(max(1, int(seconds)))]
        cmd += ["--rate", "200", "--threads", "--nonblocking", "--format", "raw", "-o", str(out)]
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append((name, proc, out))

    def finish(self) -> list[str]:
        lines: list[str] = []
        for name, proc, out in self.procs:
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            if out.exists():
                lines += summarise_profile(name, out)
        self.procs.clear()
        return lines


def summarise_profile(name: str, path: Path, top: int = 12) -> list[str]:
    """Busy share per thread, and the lines with the most self time, from raw stacks."""
    per_thread: collections.Counter[str] = collections.Counter()
    per_line: collections.Counter[tuple[str, str]] = collections.Counter()
    total = 0
    with open(path) as stacks:
        for line in stacks:
            stack, _, text = line.rstrip("\n").rpartition(" ")
            if not text.isdigit():
                continue
            samples = int(text)
            frames = stack.split(";")
            thread = re.sub(r"^thread \(\d+\): ", "", frames[0])
            thread = re.sub(r"_\d+$", "", thread)
            per_thread[thread] += samples
            per_line[(thread, frames[-1])] += samples
            total += samples
    out = [f"profile {name}: {total} samples ({path})"]
    for thread, samples in per_thread.most_common():
        out.append(f"  {samples / max(total, 1):6.1%}  thread {thread}")
    out.append("  self time:")
    for (thread, frame), samples in per_line.most_common(top):
        out.append(f"  {samples / max(total, 1):6.1%}  [{thread}] {frame}")
    return out


# --- the AppServer -------------------------------------------------------------------------


def lineup(data_dir: Path, *args: str) -> str:
    cmd = [sys.executable, "-m", "lineup", "server", "--data-dir", str(data_dir), *args]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise BenchmarkError(f"{' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


@dataclass
class Principals:
    user_id: str
    agent_key: str


def create_principals(data_dir: Path) -> Principals:
    out = lineup(data_dir, "user", "add", "bench-user", "--password", "bench-password")
    match = re.search(r"\(id (\S+)\)", out)
    if match is None:
        raise BenchmarkError(f"cannot find the user id in {out!r}")
    key = lineup(data_dir, "agent", "add", AGENT_ID).strip().splitlines()[-1].strip()
    return Principals(match.group(1), key)


@contextlib.contextmanager
def server_process(
    cmd: list[str], log_path: Path, ready_url: str
) -> Iterator[subprocess.Popen[bytes]]:
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise BenchmarkError(f"{cmd[1]} exited at startup; see {log_path}")
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(ready_url, timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise BenchmarkError(f"{cmd[1]} did not become ready; see {log_path}")
            time.sleep(0.05)
        yield proc
    finally:
        stop_process(proc)


def create_conversations(base_url: str, principals: Principals, count: int) -> list[str]:
    ids = [f"{CONVERSATION_PREFIX}{i}" for i in range(count)]
    headers = {"Authorization": f"Bearer {principals.agent_key}"}
    with httpx.Client(base_url=base_url, headers=headers, timeout=10) as client:
        for conversation_id in ids:
            reply = client.post(
                "/v1/conversations", json={"user_id": principals.user_id, "id": conversation_id}
            )
            if reply.status_code not in (200, 201):
                raise BenchmarkError(f"cannot create a conversation: {reply.text}")
    return ids


# --- phases --------------------------------------------------------------------------------


@dataclass
class WsResult:
    sent: int
    acked: int
    failures: int
    seconds: float
    p50_ms: float
    p99_ms: float
    loader_cores: float
    server_cores: float
    samples: list[str]

    @property
    def rate(self) -> float:
        return self.acked / self.seconds if self.seconds > 0 else 0.0


def run_ws(
    args: argparse.Namespace,
    port: int,
    principals: Principals,
    conversations: list[str],
    server_pid: int,
    work: Path,
    profiler: Profiler,
) -> WsResult:
    loaders: list[subprocess.Popen[str]] = []
    latency_files: list[Path] = []
    per_loader = args.messages // args.loaders
    try:
        for index in range(args.loaders):
            mine = conversations[index :: args.loaders]
            latency_files.append(work / f"latency-{index}.bin")
            cmd = [sys.executable, str(WS_LOADER), "--port", str(port)]
            cmd += ["--key", principals.agent_key, "--agent", AGENT_ID]
            cmd += ["--conversations", ",".join(mine), "--messages", str(per_loader)]
            cmd += ["--window", str(args.window), "--duration", str(args.duration)]
            cmd += ["--tag", str(index), "--latency-out", str(latency_files[-1])]
            loaders.append(
                subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            )
        for index, proc in enumerate(loaders):
            assert proc.stdout is not None
            line = read_line(proc.stdout, 120, f"ws loader {index}")
            if line != "ready":
                raise BenchmarkError(f"ws loader {index} said {line!r}")
        profiler.start("appserver-ws", server_pid, args.duration)
        server_cpu0 = process_cpu(server_pid)
        wall0 = time.monotonic()
        for proc in loaders:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        results = []
        for index, proc in enumerate(loaders):
            assert proc.stdout is not None
            line = read_line(proc.stdout, args.duration + 60, f"ws loader {index}")
            results.append(json.loads(line))
        server_cpu = process_cpu(server_pid) - server_cpu0
        wall = time.monotonic() - wall0
        for proc in loaders:
            proc.wait(30)
    finally:
        for proc in loaders:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
    first = min(r["first_send"] for r in results)
    last = max(r["last_ack"] for r in results)
    latencies = array("d")
    for path in latency_files:
        with open(path, "rb") as data:
            latencies.frombytes(data.read())
    ordered = sorted(latencies)
    unfinished = sum(r["unfinished"] for r in results)
    samples = [s for r in results for s in r["failure_samples"]]
    if unfinished:
        samples.append(f"{unfinished} connections still had sends in flight at the end")
    return WsResult(
        sent=sum(r["sent"] for r in results),
        acked=sum(r["acked"] for r in results),
        failures=sum(r["failures"] for r in results) + unfinished,
        seconds=last - first,
        p50_ms=percentile(ordered, 0.50) * 1000,
        p99_ms=percentile(ordered, 0.99) * 1000,
        loader_cores=sum(r["cpu_seconds"] for r in results) / wall,
        server_cores=server_cpu / wall,
        samples=samples,
    )


@dataclass
class WrkResult:
    requests: int
    errors: dict[str, int]
    seconds: float
    p50_ms: float
    p99_ms: float
    wrk_cores: float
    server_cores: float

    @property
    def ok(self) -> int:
        return self.requests - self.errors["status"]

    @property
    def rate(self) -> float:
        return self.ok / self.seconds if self.seconds > 0 else 0.0


def run_wrk(
    args: argparse.Namespace,
    port: int,
    principals: Principals,
    server_pid: int,
    profiler: Profiler,
    name: str,
) -> WrkResult:
    wrk = shutil.which("wrk")
    if wrk is None:
        raise BenchmarkError("wrk is missing: apt-get install -y wrk")
    cmd = [wrk, "-t", str(args.wrk_threads), "-c", str(args.connections)]
    cmd += ["-d", f"{args.duration}s", "--timeout", "10s", "-s", str(WRK_SCRIPT)]
    cmd += [f"http://127.0.0.1:{port}", "--", HTTP_ID_PREFIX, AGENT_ID, principals.agent_key]
    cmd += [CONVERSATION_PREFIX, str(args.connections)]
    profiler.start(name, server_pid, args.duration)
    cpu0 = children_cpu()
    server_cpu0 = process_cpu(server_pid)
    wall0 = time.monotonic()
    done = subprocess.run(
        cmd, capture_output=True, text=True, timeout=args.duration + 60, check=False
    )
    wall = time.monotonic() - wall0
    server_cpu = process_cpu(server_pid) - server_cpu0
    wrk_cpu = children_cpu() - cpu0
    match = re.search(r"^WRK_RESULT (\{.*\})$", done.stdout, re.MULTILINE)
    if done.returncode != 0 or match is None:
        raise BenchmarkError(f"wrk failed: {done.stdout}{done.stderr}")
    result = json.loads(match.group(1))
    errors = {k: int(result[k]) for k in ("connect", "read", "write", "status", "timeout")}
    return WrkResult(
        requests=int(result["requests"]),
        errors=errors,
        seconds=result["duration_us"] / 1e6,
        p50_ms=result["p50_us"] / 1000,
        p99_ms=result["p99_us"] / 1000,
        wrk_cores=wrk_cpu / wall,
        server_cores=server_cpu / wall,
    )


@dataclass
class RawResult:
    rows: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def run_raw_sqlite(source: Path, target: Path) -> RawResult:
    """The AppServer's WebSocket rows again, 100 per transaction, one commit each."""
    with contextlib.closing(sqlite3.connect(source)) as src:
        rows = src.execute(
            "SELECT conversation_id, seq, envelope_id, type, sender_kind, body, received_at"
            " FROM envelopes WHERE envelope_id LIKE 'ws-%'"
            " ORDER BY received_at, conversation_id, seq"
        ).fetchall()
    clone_base(source, target)
    with contextlib.closing(sqlite3.connect(target, isolation_level=None)) as conn:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("PRAGMA foreign_keys=ON")
        start = time.perf_counter()
        for i in range(0, len(rows), RAW_BATCH):
            conn.execute("BEGIN")
            conn.executemany(INSERT, rows[i : i + RAW_BATCH])
            conn.execute("COMMIT")
        seconds = time.perf_counter() - start
    stored = count_rows(target, "ws-%")
    if stored != len(rows):
        raise BenchmarkError(f"raw sqlite3 stored {stored} of {len(rows)} rows")
    return RawResult(len(rows), seconds)


# --- report --------------------------------------------------------------------------------


@dataclass
class Report:
    ws: WsResult
    ws_stored: int
    http: WrkResult
    http_stored: int
    raw: RawResult
    bare: WrkResult
    bare_stored: int
    checks: list[tuple[str, bool]]
    load_before: float


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def wrk_errors(result: WrkResult) -> str:
    bad = {k: v for k, v in result.errors.items() if v}
    return ", ".join(f"{k} errors {v}" for k, v in bad.items()) if bad else "no errors"


def print_report(args: argparse.Namespace, report: Report) -> dict[str, Any]:
    ws, http, raw, bare = report.ws, report.http, report.raw, report.bare
    ws_vs_raw = ws.rate / raw.rate if raw.rate else 0.0
    http_vs_bare = http.rate / bare.rate if bare.rate else 0.0
    print()
    print(
        f"LineUp AppServer ingest: {os.cpu_count()} CPUs ({cpu_model()}), "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"load average {report.load_before:.2f} before the run"
    )
    print(
        f"{args.connections} connections; WebSocket: {args.loaders} loader processes, "
        f"window {args.window}, up to {args.messages:,} envelopes or {args.duration:g} s; "
        f"HTTP: wrk -t{args.wrk_threads} -c{args.connections} -d{args.duration:g}s"
    )
    print()
    rows = [
        (
            "AppServer WebSocket, durable envelopes/s",
            ws.rate,
            f"{ws.acked:,} acked / {report.ws_stored:,} stored in {ws.seconds:.2f} s; "
            f"ack p50 {ws.p50_ms:.1f} ms, p99 {ws.p99_ms:.1f} ms; "
            f"CPU server {ws.server_cores:.2f}, loaders {ws.loader_cores:.2f}",
        ),
        (
            "AppServer HTTP (wrk), durable envelopes/s",
            http.rate,
            f"{http.ok:,} 2xx / {report.http_stored:,} stored in {http.seconds:.2f} s; "
            f"p50 {http.p50_ms:.1f} ms, p99 {http.p99_ms:.1f} ms; {wrk_errors(http)}; "
            f"CPU server {http.server_cores:.2f}, wrk {http.wrk_cores:.2f}",
        ),
        (
            f"raw sqlite3, {RAW_BATCH} rows/commit, rows/s",
            raw.rate,
            f"{raw.rows:,} rows in {raw.seconds:.2f} s",
        ),
        (
            "bare uvicorn+Starlette, 1 commit/request",
            bare.rate,
            f"{bare.ok:,} 2xx / {report.bare_stored:,} stored in {bare.seconds:.2f} s; "
            f"p50 {bare.p50_ms:.1f} ms, p99 {bare.p99_ms:.1f} ms; {wrk_errors(bare)}; "
            f"CPU server {bare.server_cores:.2f}, wrk {bare.wrk_cores:.2f}",
        ),
    ]
    print(f"{'figure':<44} {'per s':>9}  detail")
    for label, rate, detail in rows:
        print(f"{label:<44} {rate:>9,.0f}  {detail}")
    print()
    print(f"WebSocket / raw batched sqlite3:  {ws_vs_raw:.2f}")
    print(f"HTTP / bare endpoint:             {http_vs_bare:.2f}")
    print()
    ws_ok = ws.rate >= WS_GOAL
    http_ok = http_vs_bare >= HTTP_GOAL_RATIO
    print(f"goal: WebSocket >= {WS_GOAL:,.0f} envelopes/s: {ws.rate:,.0f}  {verdict(ws_ok)}")
    print(
        f"goal: HTTP >= {HTTP_GOAL_RATIO}x the bare endpoint: "
        f"{http_vs_bare:.2f}x  {verdict(http_ok)}"
    )
    print()
    for label, ok in report.checks:
        print(f"check: {label}: {'ok' if ok else 'FAILED'}")
    for sample in ws.samples:
        print(f"  ws problem: {sample}")
    return {
        "ws": ws.__dict__ | {"rate": ws.rate, "stored": report.ws_stored},
        "http": http.__dict__ | {"rate": http.rate, "stored": report.http_stored},
        "raw_sqlite": raw.__dict__ | {"rate": raw.rate},
        "bare": bare.__dict__ | {"rate": bare.rate, "stored": report.bare_stored},
        "ws_vs_raw": ws_vs_raw,
        "http_vs_bare": http_vs_bare,
        "goals": {"ws": ws_ok, "http": http_ok},
        "checks": dict(report.checks),
        "machine": {
            "cpus": os.cpu_count(),
            "cpu": cpu_model(),
            "load_before": report.load_before,
            "python": platform.python_version(),
            "sqlite": sqlite3.sqlite_version,
        },
        "when": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "options": vars(args),
    }


# --- main ----------------------------------------------------------------------------------


def run(args: argparse.Namespace, work: Path) -> tuple[Report, list[str]]:
    profiler = Profiler(args.profile)
    data_dir = work / "appserver"
    checks: list[tuple[str, bool]] = []
    load_before = os.getloadavg()[0]
    log(f"work dir {work}; load average {load_before:.2f}")
    if load_before > 0.5:
        log("other work (or a run that just ended) may share the CPUs: figures will be noisier")
    principals = create_principals(data_dir)
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    server_cmd = [sys.executable, "-m", "lineup", "server", "--data-dir", str(data_dir)]
    server_cmd += ["--port", str(port)]
    with server_process(server_cmd, work / "appserver.log", f"{base}/readyz") as server:
        conversations = create_conversations(base, principals, args.connections)
        log(f"WebSocket: {args.connections} connections, {args.loaders} loaders")
        ws = run_ws(args, port, principals, conversations, server.pid, work, profiler)
        log(f"WebSocket: {ws.acked:,} acked, {ws.rate:,.0f}/s")
        log(f"HTTP: wrk for {args.duration:g} s")
        http = run_wrk(args, port, principals, server.pid, profiler, "appserver-http")
        log(f"HTTP: {http.ok:,} answered 2xx, {http.rate:,.0f}/s")
    db = data_dir / "appserver.sqlite3"
    ws_stored = count_rows(db, "ws-%")
    http_stored = count_rows(db, f"{HTTP_ID_PREFIX}-%")
    checks.append((f"WebSocket stored {ws_stored:,} == acked {ws.acked:,}", ws_stored == ws.acked))
    checks.append((f"WebSocket sends refused or lost: {ws.failures}", ws.failures == 0))
    checks.append(http_check("AppServer HTTP", http, http_stored, args.connections))
    checks.append(same_bytes_check(db))

    log(f"raw sqlite3: the {ws_stored:,} WebSocket rows, {RAW_BATCH} per commit")
    raw = run_raw_sqlite(db, work / "raw.sqlite3")

    bare_db = work / "bare.sqlite3"
    clone_base(db, bare_db)
    bare_port = free_port()
    bare_cmd = [sys.executable, str(BARE_APP), "--db", str(bare_db), "--port", str(bare_port)]
    ready = f"http://127.0.0.1:{bare_port}/healthz"
    log(f"bare endpoint: wrk for {args.duration:g} s")
    with server_process(bare_cmd, work / "bare.log", ready) as bare_server:
        bare = run_wrk(args, bare_port, principals, bare_server.pid, profiler, "bare-http")
    bare_stored = count_rows(bare_db, f"{HTTP_ID_PREFIX}-%")
    checks.append(http_check("bare endpoint", bare, bare_stored, args.connections))
    report = Report(ws, ws_stored, http, http_stored, raw, bare, bare_stored, checks, load_before)
    return report, profiler.finish()


def http_check(name: str, result: WrkResult, stored: int, connections: int) -> tuple[str, bool]:
    # wrk stops counting at the deadline: up to one request per connection may be
    # stored without its answer having been counted.
    extra = stored - result.ok
    ok = 0 <= extra <= connections and result.errors["status"] == 0
    return (
        f"{name} stored {stored:,} == {result.ok:,} answered 2xx"
        f" + {extra} in flight at wrk's deadline (<= {connections}), no non-2xx",
        ok,
    )


def same_bytes_check(db: Path) -> tuple[str, bool]:
    sys.path.insert(0, str(HERE))
    from ws_loader import envelope_body

    conversation_id = f"{CONVERSATION_PREFIX}0"
    with contextlib.closing(sqlite3.connect(db)) as conn:
        row = conn.execute(
            "SELECT body FROM envelopes WHERE envelope_id = 'ws-0-0-0'",
        ).fetchone()
    expected = envelope_body(conversation_id, "ws-0-0-0", AGENT_ID)
    return ("stored body bytes == sent body bytes", row is not None and bytes(row[0]) == expected)


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Durable envelopes/s accepted by the LineUp AppServer (WebSocket, HTTP)."
    )
    parser.add_argument(
        "--duration",
        type=int,
        default=10,
        help="seconds of each wrk run, and the most the WebSocket run sends for [10]",
    )
    parser.add_argument(
        "--messages",
        type=int,
        default=300_000,
        help="envelopes the WebSocket run sends (fewer if --duration ends it first) [300000]",
    )
    parser.add_argument("--connections", type=int, default=32, help="WebSocket and HTTP [32]")
    parser.add_argument("--loaders", type=int, default=2, help="WebSocket loader processes [2]")
    parser.add_argument(
        "--window",
        type=int,
        default=128,
        help="pipelined sends in flight per WebSocket connection, at most 1024 [128]",
    )
    parser.add_argument("--wrk-threads", type=int, default=1, help="wrk -t [1]")
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        metavar="DIR",
        help="record the servers with py-spy into DIR and print where the time goes"
        " (slows the servers down a little)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    if args.connections % args.loaders:
        parser.error("--connections must be a multiple of --loaders")
    if not 1 <= args.window <= 1024:
        parser.error("--window must be between 1 and 1024")
    if args.messages < args.connections:
        parser.error("--messages must be at least --connections")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    if args.profile is not None:
        args.profile.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="lineup-ingest-"))
    try:
        report, profile_lines = run(args, work)
    except BenchmarkError as exc:
        print(f"benchmark failed: {exc}", file=sys.stderr)
        return 2
    finally:
        if args.keep:
            log(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    figures = print_report(args, report)
    if profile_lines:
        print()
        print("\n".join(profile_lines))
    if args.json is not None:
        args.json.write_text(json.dumps(figures, indent=2, default=str) + "\n")
    return 0 if all(ok for _, ok in report.checks) else 1


if __name__ == "__main__":
    sys.exit(main())
