"""AppServer ingest and scale-out benchmark: SQLite and PostgreSQL, one process or more.

Run: ``.venv/bin/python benchmarks/appserver_ingest.py`` (about 2 minutes; see
``--help``, docs/benchmarks.md and benchmarks/appserver_scaleout.md). Everything
runs on 127.0.0.1 inside a temporary directory that is removed at the end
(``--keep`` keeps it); PostgreSQL is a private throwaway cluster started here
(``tests/support/postgres.py``, with ``fsync=on``: every figure is durable rows).

For each configuration (SQLite x 1 process; PostgreSQL x each of ``--processes``):

1. Delivery latency: one user stream (``stream_clients.py latency``) subscribed to a
   conversation on the first AppServer process, the agent sending ``--rate``
   envelopes/s over WebSocket to the last one (another process when there are
   two); p50/p99 from the agent's write to the user's read.
2. Held streams (one process only): ``--streams`` WebSocket streams of one user
   (one token, many connections) held by one AppServer process
   (``stream_clients.py hold``); the server's RSS before and after, so memory per
   connection, then ``--fanout`` envelopes POSTed one by one to the conversation
   they all follow: time until each stream has each one.
3. AppServer, WebSocket: ``--connections`` agent connections (32), split over
   ``--loaders`` processes (2, see ``ws_loader.py``) and over the AppServer
   processes, each keeping ``--window`` pipelined sends in flight; envelopes
   acknowledged per second from the first send to the last ack, with p50/p99 ack
   latency.

SQLite only, the figures of the ingest benchmark:

4. AppServer, HTTP: ``wrk`` with the same number of connections POSTs a new
   envelope per request (``post_envelope.lua``) for ``--duration`` seconds.
5. Raw ``sqlite3``: the rows the AppServer stored in (3), inserted again into a
   fresh copy of its schema in batches of 100, one commit per batch.
6. Bare endpoint: ``bare_app.py`` (uvicorn + Starlette, same uvicorn settings,
   one commit per request) under the same ``wrk`` command.

(4) and (6) are skipped when ``wrk`` is missing. Every acknowledgement is checked
against the database afterwards. SQLite runs in WAL mode with
``synchronous=FULL`` everywhere.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import json
import math
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

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ws_loader import envelope_body

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WS_LOADER = HERE / "ws_loader.py"
STREAM_CLIENTS = HERE / "stream_clients.py"
BARE_APP = HERE / "bare_app.py"
WRK_SCRIPT = HERE / "post_envelope.lua"

AGENT_ID = "bench-agent"
USER_NAME = "bench-user"
USER_PASSWORD = "bench-password"
CONVERSATION_PREFIX = "bench-c"
LATENCY_PREFIX = "bench-lat"
FANOUT_CONVERSATION = "bench-fan"
HTTP_ID_PREFIX = "h"
RAW_BATCH = 100
POOL_SIZE = 10  # lineup server --pool-size (its default)

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


def lineup(data_dir: Path, database: str | None, *args: str) -> str:
    cmd = [sys.executable, "-m", "lineup", "server", "--data-dir", str(data_dir)]
    cmd += ["--database", database] if database else []
    cmd += args
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)
    if done.returncode != 0:
        raise BenchmarkError(f"{' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


@dataclass
class Principals:
    user_id: str
    agent_key: str


def create_principals(data_dir: Path, database: str | None) -> Principals:
    out = lineup(data_dir, database, "user", "add", USER_NAME, "--password", USER_PASSWORD)
    match = re.search(r"\(id (\S+)\)", out)
    if match is None:
        raise BenchmarkError(f"cannot find the user id in {out!r}")
    key = lineup(data_dir, database, "agent", "add", AGENT_ID).strip().splitlines()[-1].strip()
    return Principals(match.group(1), key)


def login(base_url: str) -> str:
    """A user token (one scrypt check on the server)."""
    reply = httpx.post(
        f"{base_url}/v1/login",
        json={"username": USER_NAME, "password": USER_PASSWORD},
        timeout=30,
    )
    if reply.status_code != 200:
        raise BenchmarkError(f"login failed: {reply.text}")
    return str(reply.json()["token"])


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


def create_conversations(base_url: str, principals: Principals, ids: list[str]) -> list[str]:
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
    db_cores: float
    wall: float
    samples: list[str]

    @property
    def rate(self) -> float:
        return self.acked / self.seconds if self.seconds > 0 else 0.0

    @property
    def server_us(self) -> float:
        """AppServer CPU (all its processes) per acknowledged envelope, µs."""
        return self.server_cores * self.wall / max(self.acked, 1) * 1e6

    @property
    def db_us(self) -> float:
        """PostgreSQL CPU per acknowledged envelope, µs."""
        return self.db_cores * self.wall / max(self.acked, 1) * 1e6


def run_ws(
    args: argparse.Namespace,
    ports: list[int],
    principals: Principals,
    conversations: list[str],
    meter: CpuMeter,
    work: Path,
    profiler: Profiler,
) -> WsResult:
    loaders: list[subprocess.Popen[str]] = []
    latency_files: list[Path] = []
    count = max(args.loaders, len(ports))
    per_loader = args.messages // count
    try:
        for index in range(count):
            mine = conversations[index::count]
            latency_files.append(work / f"latency-{index}.bin")
            port = ports[index % len(ports)]  # loader i talks to process i
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
        for pid in meter.server_pids:
            profiler.start(f"appserver-ws-{pid}", pid, args.duration)
        meter.start()
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
        server_cores, db_cores = meter.cores()
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
        server_cores=server_cores,
        db_cores=db_cores,
        wall=wall,
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


# --- CPU, memory, PostgreSQL -----------------------------------------------------------------


def children_of(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        with contextlib.suppress(OSError), open(f"/proc/{entry}/stat") as stat:
            if int(stat.read().rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry))
    return found


def rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise BenchmarkError(f"no VmRSS for {pid}")


@dataclass
class CpuMeter:
    """Cores used by the AppServer processes and by PostgreSQL (the postmaster and
    its children: backends, WAL writer, checkpointer) during one phase."""

    server_pids: list[int]
    postmaster: int | None = None
    _server0: float = 0.0
    _db0: float = 0.0
    _wall0: float = 0.0

    def _db_pids(self) -> list[int]:
        if self.postmaster is None:
            return []
        return [self.postmaster, *children_of(self.postmaster)]

    def _sum(self, pids: list[int]) -> float:
        total = 0.0
        for pid in pids:
            with contextlib.suppress(OSError):
                total += process_cpu(pid)
        return total

    def start(self) -> None:
        self._server0 = self._sum(self.server_pids)
        self._db0 = self._sum(self._db_pids())
        self._wall0 = time.monotonic()

    def cores(self) -> tuple[float, float]:
        wall = max(time.monotonic() - self._wall0, 1e-9)
        server = (self._sum(self.server_pids) - self._server0) / wall
        db = (self._sum(self._db_pids()) - self._db0) / wall if self.postmaster else 0.0
        return server, db


def postgres_available() -> str | None:
    """Why PostgreSQL cannot be used here, or None when it can."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.support import postgres as support

    if os.environ.get(support.ENV_DSN):
        return None
    try:
        support.find_pg_bin()
    except support.PostgresUnavailable as exc:
        return str(exc)
    return None


def start_cluster(fsync: bool) -> Any:
    """A private PostgreSQL cluster (or $LINEUP_TEST_POSTGRES), durable unless asked."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.support import postgres as support

    class BenchCluster(support.PostgresCluster):
        # The test helper's own settings, with durability back on: the benchmark
        # compares durable rows with SQLite's synchronous=FULL.
        def _launch(
            self, bin_dir: Path, env: dict[str, str], run_as: dict[str, Any], deadline: float
        ) -> bool:
            real = subprocess.Popen

            def popen(args: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
                args = list(args)
                for key, value in _pg_settings(fsync).items():
                    args += ["-c", f"{key}={value}"]
                return real(args, **kwargs)

            # The helper starts postgres with subprocess.Popen (this same module):
            # append our -c options to that one call.
            subprocess.Popen = popen  # type: ignore[assignment,misc]
            try:
                return bool(super()._launch(bin_dir, env, run_as, deadline))
            finally:
                subprocess.Popen = real  # type: ignore[misc]

    cluster = BenchCluster.from_environment()
    cluster.start()
    return cluster


def _pg_settings(fsync: bool) -> dict[str, str]:
    """Appended after the test helper's ``-c`` options (the last one wins)."""
    on = "on" if fsync else "off"
    return {
        "fsync": on,
        "full_page_writes": on,
        "synchronous_commit": on,
        "shared_buffers": "128MB",
        "max_connections": "400",
    }


def pg_query(dsn: str, query: str, *params: Any) -> Any:
    async def go() -> Any:
        conn = await asyncpg.connect(dsn, timeout=10)
        try:
            return await conn.fetchval(query, *params)
        finally:
            await conn.close()

    return asyncio.run(go())


@dataclass
class Database:
    """Where one configuration stores: an SQLite file or a PostgreSQL DSN."""

    sqlite: Path | None = None
    dsn: str | None = None

    def count(self, pattern: str) -> int:
        if self.sqlite is not None:
            return count_rows(self.sqlite, pattern)
        query = "SELECT COUNT(*) FROM envelopes WHERE envelope_id LIKE $1"
        return int(pg_query(str(self.dsn), query, pattern))

    def body(self, envelope_id: str) -> bytes | None:
        if self.sqlite is not None:
            with contextlib.closing(sqlite3.connect(self.sqlite)) as conn:
                row = conn.execute(
                    "SELECT body FROM envelopes WHERE envelope_id = ?", (envelope_id,)
                ).fetchone()
            return None if row is None else bytes(row[0])
        query = "SELECT body FROM envelopes WHERE envelope_id = $1"
        value = pg_query(str(self.dsn), query, envelope_id)
        return None if value is None else bytes(value)


QUIET_APPEND = "bench_append_quiet"


async def _raw_pg(dsn: str, function: str, conversations: list[str], seconds: float) -> int:
    """``connections`` loops, each appending to its own conversation one envelope at
    a time with ``function`` (a prepared statement, one round trip and one commit per
    envelope: what the AppServer's batching saves, it does not get here)."""
    pool = await asyncpg.create_pool(dsn, min_size=POOL_SIZE, max_size=POOL_SIZE)
    done = [0]
    stop = time.monotonic() + seconds

    async def worker(index: int) -> None:
        conversation_id = conversations[index]
        async with pool.acquire() as conn:
            query = f"SELECT status, seq FROM {function}($1, $2, $3, $4, $5)"  # noqa: S608
            statement = await conn.prepare(query)
            i = 0
            while time.monotonic() < stop:
                envelope_id = f"raw-{function}-{index}-{i}"
                body = envelope_body(conversation_id, envelope_id, AGENT_ID)
                row = await statement.fetchrow(  # one envelope per call
                    conversation_id, [envelope_id], ["lineup.v1.message"], ["agent"], [body]
                )
                if row is None or row[0] != "stored":
                    raise BenchmarkError(f"{function} answered {row}")
                i += 1
                done[0] += 1

    try:
        await asyncio.gather(*(worker(i) for i in range(POOL_SIZE)))
    finally:
        await pool.close()
    return done[0]


def quiet_function_sql() -> str:
    """``lineup_append`` from the migration, renamed and without its ``pg_notify``:
    created in the benchmark's throwaway database only, to show what NOTIFY costs."""
    sql = (ROOT / "src/lineup/server/storage/migrations/postgres/0001_init.sql").read_text(
        encoding="utf-8"
    )
    start = sql.index("CREATE FUNCTION lineup_append(")
    function = sql[start : sql.index("$$;", start) + 3]
    function = function.replace("lineup_append(", f"{QUIET_APPEND}(", 1)
    quiet = re.sub(r"\n\s*PERFORM pg_notify\(.*?\);", "", function, flags=re.DOTALL)
    if "pg_notify" in quiet or quiet == function:
        raise BenchmarkError("cannot find lineup_append's pg_notify in the migration")
    return quiet


@dataclass
class RawPgResult:
    function: str
    rows: int
    seconds: float

    @property
    def rate(self) -> float:
        return self.rows / self.seconds if self.seconds > 0 else 0.0


def run_raw_pg(dsn: str, conversations: list[str], seconds: float) -> list[RawPgResult]:
    """The PostgreSQL reference: ``lineup_append`` straight from asyncpg on as many
    connections as the AppServer's pool, then the same without its NOTIFY."""
    results = []
    pg_query(dsn, quiet_function_sql())
    for function in ("lineup_append", QUIET_APPEND):
        start = time.monotonic()
        rows = asyncio.run(_raw_pg(dsn, function, conversations, seconds))
        results.append(RawPgResult(function, rows, time.monotonic() - start))
        stored = Database(dsn=dsn).count(f"raw-{function}-%")
        if stored != rows:
            raise BenchmarkError(f"raw {function}: {stored} stored, {rows} answered")
    return results


# --- delivery latency and held streams --------------------------------------------------------


@dataclass
class LatencyResult:
    rate: float
    sent: int
    received: int
    acked: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    max_behind_ms: float
    server_cores: float
    db_cores: float
    problems: list[str]
    ok: bool


def run_latency(
    args: argparse.Namespace,
    receive_port: int,
    send_port: int,
    principals: Principals,
    token: str,
    meter: CpuMeter,
    work: Path,
    name: str,
) -> LatencyResult:
    out = work / f"delivery-{name}.bin"
    cmd = [sys.executable, str(STREAM_CLIENTS), "latency", "--receive-port", str(receive_port)]
    cmd += ["--send-port", str(send_port), "--user-token", token]
    cmd += ["--agent-key", principals.agent_key, "--agent", AGENT_ID]
    conversations = [f"{LATENCY_PREFIX}{i}" for i in range(args.latency_conversations)]
    cmd += ["--conversation", ",".join(conversations), "--rate", str(args.rate)]
    cmd += ["--duration", str(args.latency_seconds + args.latency_warmup)]
    cmd += ["--tag", name, "--out", str(out)]
    proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdin is not None
        assert proc.stdout is not None
        line = read_line(proc.stdout, 60, "latency client")
        if line != "ready":
            raise BenchmarkError(f"latency client said {line!r}")
        meter.start()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        seconds = args.latency_seconds + args.latency_warmup
        result = json.loads(read_line(proc.stdout, seconds + 60, "latency client"))
        server_cores, db_cores = meter.cores()
        proc.wait(30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(5)
    samples = array("d")
    with open(out, "rb") as data:
        samples.frombytes(data.read())
    # The first --latency-warmup seconds are not counted (first connections, caches).
    skip = int(args.rate * args.latency_warmup)
    ordered = sorted(x for x in samples[skip:] if not math.isnan(x))
    total = int(args.rate * (args.latency_seconds + args.latency_warmup))
    ok = (
        result["received"] == total
        and result["acked"] == total
        and not result["duplicates"]
        and not result["out_of_order"]
        and not result["errors"]
    )
    problems = list(result["problems"])
    for key in ("duplicates", "out_of_order", "errors"):
        if result[key]:
            problems.append(f"{key}: {result[key]}")
    return LatencyResult(
        rate=result["rate"],
        sent=result["sent"],
        received=result["received"],
        acked=result["acked"],
        p50_ms=percentile(ordered, 0.50) * 1000,
        p99_ms=percentile(ordered, 0.99) * 1000,
        max_ms=(ordered[-1] if ordered else math.nan) * 1000,
        max_behind_ms=result["max_behind_s"] * 1000,
        server_cores=server_cores,
        db_cores=db_cores,
        problems=problems,
        ok=ok,
    )


@dataclass
class HoldResult:
    streams: int
    setup_seconds: float
    rss_before_kib: int
    rss_after_kib: int
    envelopes: int
    delivered: int
    p50_ms: float
    p99_ms: float
    max_ms: float
    last_p50_ms: float
    server_cpu_s: float
    problems: list[str]
    ok: bool

    @property
    def us_per_delivery(self) -> float:
        """Server CPU per envelope frame written to a stream (includes the sends)."""
        return self.server_cpu_s / max(self.delivered, 1) * 1e6

    @property
    def kib_per_stream(self) -> float:
        return (self.rss_after_kib - self.rss_before_kib) / max(self.streams, 1)


def run_hold(
    args: argparse.Namespace,
    port: int,
    principals: Principals,
    token: str,
    server_pid: int,
    work: Path,
    name: str,
) -> HoldResult:
    base = f"http://127.0.0.1:{port}"
    count = args.hold_loaders
    rss_before = rss_kib(server_pid)
    procs: list[subprocess.Popen[str]] = []
    outs: list[Path] = []
    per = [args.streams // count + (1 if i < args.streams % count else 0) for i in range(count)]
    try:
        started = time.monotonic()
        for index in range(count):
            outs.append(work / f"fanout-{name}-{index}.bin")
            cmd = [sys.executable, str(STREAM_CLIENTS), "hold", "--receive-port", str(port)]
            cmd += ["--user-token", token, "--conversation", FANOUT_CONVERSATION]
            cmd += ["--connections", str(per[index]), "--out", str(outs[-1])]
            procs.append(
                subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            )
        for index, proc in enumerate(procs):
            assert proc.stdout is not None
            line = read_line(proc.stdout, 180, f"hold client {index}")
            if line != "ready":
                raise BenchmarkError(f"hold client {index} said {line!r}")
        setup = time.monotonic() - started
        time.sleep(1.0)  # let the server settle (frees, late tasks)
        rss_after = rss_kib(server_pid)
        sent_at: dict[int, float] = {}
        cpu0 = process_cpu(server_pid)
        headers = {"Authorization": f"Bearer {principals.agent_key}"}
        path = f"/v1/conversations/{FANOUT_CONVERSATION}/envelopes"
        with httpx.Client(base_url=base, headers=headers, timeout=30) as client:
            for i in range(args.fanout):
                body = envelope_body(FANOUT_CONVERSATION, f"fan-{name}-{i}", AGENT_ID)
                t0 = time.monotonic()
                reply = client.post(path, content=body)
                if reply.status_code != 201:
                    raise BenchmarkError(f"fan-out send refused: {reply.text}")
                seq = int(reply.json()["seq"])
                sent_at[seq] = t0
                for index, proc in enumerate(procs):
                    assert proc.stdout is not None
                    line = read_line(proc.stdout, 30, f"hold client {index}")
                    if line != f"got {seq}":
                        raise BenchmarkError(f"hold client {index} said {line!r}")
                time.sleep(0.05)
        fanout_cpu = process_cpu(server_pid) - cpu0
        results = []
        for index, proc in enumerate(procs):
            assert proc.stdin is not None
            assert proc.stdout is not None
            proc.stdin.write("report\n")
            proc.stdin.flush()
            results.append(json.loads(read_line(proc.stdout, 60, f"hold client {index}")))
            proc.wait(30)
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(5)
    times: list[float] = []
    last: list[float] = []
    delivered = 0
    per_seq_last: dict[int, float] = {}
    for index, (result, out) in enumerate(zip(results, outs, strict=True)):
        data = array("d")
        with open(out, "rb") as f:
            data.frombytes(f.read())
        width = per[index]
        for row, seq in enumerate(result["seqs"]):
            if seq not in sent_at:
                continue
            arrivals = data[row * width : (row + 1) * width]
            got = [t - sent_at[seq] for t in arrivals if not math.isnan(t)]
            delivered += len(got)
            times += got
            per_seq_last[seq] = max(per_seq_last.get(seq, 0.0), max(got, default=0.0))
    last = sorted(per_seq_last.values())
    times.sort()
    problems = [p for r in results for p in r["problems"]]
    lost = sum(r["lost_connections"] for r in results)
    dupes = sum(r["duplicates"] for r in results)
    if lost:
        problems.append(f"{lost} streams closed before the end")
    if dupes:
        problems.append(f"{dupes} envelopes read twice")
    expected = args.streams * args.fanout
    return HoldResult(
        streams=args.streams,
        setup_seconds=setup,
        rss_before_kib=rss_before,
        rss_after_kib=rss_after,
        envelopes=args.fanout,
        delivered=delivered,
        p50_ms=percentile(times, 0.50) * 1000,
        p99_ms=percentile(times, 0.99) * 1000,
        max_ms=(times[-1] if times else math.nan) * 1000,
        last_p50_ms=percentile(last, 0.50) * 1000,
        server_cpu_s=fanout_cpu,
        problems=problems,
        ok=delivered == expected and not lost and not dupes,
    )


# --- configurations --------------------------------------------------------------------------


@dataclass
class ConfigResult:
    name: str
    engine: str
    processes: int
    layout: str
    ws: WsResult
    ws_stored: int
    latency: LatencyResult | None
    hold: HoldResult | None
    checks: list[tuple[str, bool]]
    http: WrkResult | None = None
    http_stored: int = 0

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "engine": self.engine,
            "processes": self.processes,
            "layout": self.layout,
            "ws": self.ws.__dict__
            | {
                "rate": self.ws.rate,
                "stored": self.ws_stored,
                "server_us": self.ws.server_us,
                "db_us": self.ws.db_us,
            },
            "delivery": None if self.latency is None else self.latency.__dict__,
            "streams": None
            if self.hold is None
            else self.hold.__dict__
            | {
                "kib_per_stream": self.hold.kib_per_stream,
                "us_per_delivery": self.hold.us_per_delivery,
            },
            "checks": dict(self.checks),
        }
        if self.http is not None:
            out["http"] = self.http.__dict__ | {"rate": self.http.rate, "stored": self.http_stored}
        return out


@contextlib.contextmanager
def appservers(
    data_dir: Path, database: str | None, processes: int, layout: str, work: Path, name: str
) -> Iterator[tuple[list[int], list[int]]]:
    """Start the AppServer: ``processes`` separate ``lineup server`` processes on
    their own ports (``ports``), or one ``lineup server --workers N`` on one port
    (``workers``). Yields (ports, server pids)."""
    with contextlib.ExitStack() as stack:
        base_cmd = [sys.executable, "-m", "lineup", "server", "--data-dir", str(data_dir)]
        base_cmd += ["--database", database] if database else []
        if processes == 1 or layout == "ports":
            ports, pids = [], []
            for index in range(processes):
                port = free_port()
                cmd = [*base_cmd, "--port", str(port)]
                if database:
                    cmd += ["--pool-size", str(POOL_SIZE)]
                log_path = work / f"appserver-{name}-{index}.log"
                proc = stack.enter_context(
                    server_process(cmd, log_path, f"http://127.0.0.1:{port}/readyz")
                )
                ports.append(port)
                pids.append(proc.pid)
            yield ports, pids
            return
        port = free_port()
        cmd = [*base_cmd, "--port", str(port), "--workers", str(processes)]
        cmd += ["--pool-size", str(POOL_SIZE)]
        log_path = work / f"appserver-{name}.log"
        supervisor = stack.enter_context(
            server_process(cmd, log_path, f"http://127.0.0.1:{port}/readyz")
        )
        deadline = time.monotonic() + 30
        while True:
            workers = [
                pid
                for pid in children_of(supervisor.pid)
                if b"multiprocessing" in Path(f"/proc/{pid}/cmdline").read_bytes()
                and b"resource_tracker" not in Path(f"/proc/{pid}/cmdline").read_bytes()
            ]
            if len(workers) >= processes:
                break
            if time.monotonic() > deadline:
                raise BenchmarkError(f"{processes} workers did not start; see {log_path}")
            time.sleep(0.1)
        time.sleep(1.0)  # every worker has opened its storage
        yield [port], workers


def run_config(
    args: argparse.Namespace,
    engine: str,
    processes: int,
    layout: str,
    database: str | None,
    postmaster: int | None,
    work: Path,
    profiler: Profiler,
) -> ConfigResult:
    layout = "ports" if processes == 1 else layout
    name = f"{engine}-x{processes}" + (f"-{layout}" if processes > 1 else "")
    data_dir = work / name
    log(f"{name}: principals, servers")
    principals = create_principals(data_dir, database)
    checks: list[tuple[str, bool]] = []
    with appservers(data_dir, database, processes, layout, work, name) as (ports, pids):
        meter = CpuMeter(pids, postmaster)
        base = f"http://127.0.0.1:{ports[0]}"
        conversations = [f"{CONVERSATION_PREFIX}{i}" for i in range(args.connections)]
        latency_ids = [f"{LATENCY_PREFIX}{i}" for i in range(args.latency_conversations)]
        create_conversations(base, principals, [*conversations, *latency_ids, FANOUT_CONVERSATION])
        token = login(base)
        latency = None
        if args.rate > 0:
            receive, send = ports[0], ports[-1]
            where = "same process" if len(ports) == 1 else "receiver and sender on two processes"
            if layout == "workers":
                where = "one port: the kernel picks each connection's worker"
            log(f"{name}: delivery at {args.rate:g}/s, {args.latency_seconds:g} s ({where})")
            latency = run_latency(args, receive, send, principals, token, meter, work, name)
            log(f"{name}: delivery p50 {latency.p50_ms:.1f} ms, p99 {latency.p99_ms:.1f} ms")
            checks.append(
                (
                    f"{name} delivery: {latency.received:,} of {latency.sent:,} received in order,"
                    f" {latency.acked:,} acked, no duplicates or errors",
                    latency.ok,
                )
            )
        hold = None
        if args.streams > 0 and len(pids) == 1:
            log(f"{name}: {args.streams:,} streams held by one process, {args.fanout} fan-outs")
            hold = run_hold(args, ports[0], principals, token, pids[0], work, name)
            log(
                f"{name}: {hold.kib_per_stream:.1f} KiB per stream,"
                f" fan-out p99 {hold.p99_ms:.1f} ms"
            )
            checks.append(
                (
                    f"{name} streams: {hold.delivered:,} of {hold.streams * hold.envelopes:,}"
                    " envelope deliveries, none twice, no stream lost",
                    hold.ok,
                )
            )
        log(f"{name}: WebSocket ingest, {args.connections} connections")
        ws = run_ws(args, ports, principals, conversations, meter, work, profiler)
        log(f"{name}: {ws.acked:,} acked, {ws.rate:,.0f}/s")
        http = None
        if engine == "sqlite" and shutil.which("wrk") and not args.no_http:
            log(f"{name}: HTTP, wrk for {args.duration:g} s")
            http = run_wrk(args, ports[0], principals, pids[0], profiler, "appserver-http")
            log(f"{name}: HTTP {http.ok:,} answered 2xx, {http.rate:,.0f}/s")
    db = (
        Database(sqlite=data_dir / "appserver.sqlite3")
        if database is None
        else Database(dsn=database)
    )
    ws_stored = db.count("ws-%")
    checks.append(
        (f"{name} WebSocket stored {ws_stored:,} == acked {ws.acked:,}", ws_stored == ws.acked)
    )
    checks.append((f"{name} WebSocket sends refused or lost: {ws.failures}", ws.failures == 0))
    expected = envelope_body(f"{CONVERSATION_PREFIX}0", "ws-0-0-0", AGENT_ID)
    checks.append((f"{name} stored body bytes == sent body bytes", db.body("ws-0-0-0") == expected))
    http_stored = 0
    if http is not None:
        http_stored = db.count(f"{HTTP_ID_PREFIX}-%")
        checks.append(http_check(f"{name} HTTP", http, http_stored, args.connections))
    return ConfigResult(
        name, engine, processes, layout, ws, ws_stored, latency, hold, checks, http, http_stored
    )


# --- report ----------------------------------------------------------------------------------


@dataclass
class Report:
    configs: list[ConfigResult]
    raw: RawResult | None
    bare: WrkResult | None
    bare_stored: int
    checks: list[tuple[str, bool]]
    load_before: float
    notes: list[str]
    raw_pg: list[RawPgResult] = field(default_factory=list)


def verdict(ok: bool) -> str:
    return "met" if ok else "NOT MET"


def wrk_errors(result: WrkResult) -> str:
    bad = {k: v for k, v in result.errors.items() if v}
    return ", ".join(f"{k} errors {v}" for k, v in bad.items()) if bad else "no errors"


def label(config: ConfigResult) -> str:
    engine = "SQLite" if config.engine == "sqlite" else "PostgreSQL"
    extra = "" if config.processes == 1 else f" ({config.layout})"
    return f"{engine} x {config.processes}{extra}"


def ratio(a: float, b: float) -> float:
    return a / b if b and not math.isnan(b) else math.nan


def print_report(args: argparse.Namespace, report: Report) -> dict[str, Any]:
    print()
    print(
        f"LineUp AppServer ingest: {os.cpu_count()} CPUs ({cpu_model()}), "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"load average {report.load_before:.2f} before the run"
    )
    print(
        f"WebSocket ingest: {args.connections} agent connections, window {args.window},"
        f" {args.duration:g} s; delivery: {args.rate:g} envelopes/s over"
        f" {args.latency_conversations} conversations for"
        f" {args.latency_seconds:g} s (+{args.latency_warmup:g} s warm-up);"
        f" streams: {args.streams:,} on one process, {args.fanout} fan-outs"
    )
    for note in report.notes:
        print(f"note: {note}")
    print()
    head = f"{'configuration':<28} {'WS env/s':>9} {'ack p50/p99 ms':>15} {'CPU srv/db':>11}"
    head += f" {'deliv p50/p99 ms':>17} {'KiB/stream':>10} {'fan-out p50/p99 ms':>19}"
    print(head)
    for c in report.configs:
        line = f"{label(c):<28} {c.ws.rate:>9,.0f} {c.ws.p50_ms:>7.0f}/{c.ws.p99_ms:<7.0f}"
        line += f" {c.ws.server_cores:>5.2f}/{c.ws.db_cores:<5.2f}"
        if c.latency is not None:
            line += f" {c.latency.p50_ms:>8.2f}/{c.latency.p99_ms:<8.2f}"
        else:
            line += f" {'-':>17}"
        if c.hold is not None:
            line += f" {c.hold.kib_per_stream:>10.1f} {c.hold.p50_ms:>9.1f}/{c.hold.p99_ms:<9.1f}"
        print(line)
    print()
    for c in report.configs:
        details = [
            f"  WebSocket: {c.ws.acked:,} acked / {c.ws_stored:,} stored in {c.ws.seconds:.2f} s;"
            f" CPU server {c.ws.server_cores:.2f} (all its processes), PostgreSQL"
            f" {c.ws.db_cores:.2f}, loaders {c.ws.loader_cores:.2f}; per envelope: server"
            f" {c.ws.server_us:.0f} µs, PostgreSQL {c.ws.db_us:.0f} µs"
        ]
        if c.latency is not None:
            lat = c.latency
            details.append(
                f"  delivery: {lat.received:,}/{lat.sent:,} at {lat.rate:,.0f}/s; max"
                f" {lat.max_ms:.1f} ms; sender at most {lat.max_behind_ms:.1f} ms behind;"
                f" CPU server {lat.server_cores:.2f}, PostgreSQL {lat.db_cores:.2f}"
            )
        if c.hold is not None:
            h = c.hold
            details.append(
                f"  streams: {h.streams:,} opened and synced in {h.setup_seconds:.1f} s; RSS"
                f" {h.rss_before_kib / 1024:.1f} -> {h.rss_after_kib / 1024:.1f} MiB;"
                f" {h.delivered:,} deliveries, server CPU {h.us_per_delivery:.1f} µs each;"
                f" last stream per envelope p50 {h.last_p50_ms:.1f} ms, max {h.max_ms:.1f} ms"
            )
        if c.http is not None:
            details.append(
                f"  HTTP (wrk): {c.http.rate:,.0f}/s; {c.http.ok:,} 2xx / {c.http_stored:,}"
                f" stored; p50 {c.http.p50_ms:.1f} ms, p99 {c.http.p99_ms:.1f} ms;"
                f" {wrk_errors(c.http)}; CPU server {c.http.server_cores:.2f}"
            )
        print(f"{label(c)}:")
        print("\n".join(details))
    if report.raw is not None:
        print(f"raw sqlite3, {RAW_BATCH} rows/commit: {report.raw.rate:,.0f} rows/s")
    if report.bare is not None:
        bare = report.bare
        print(
            f"bare uvicorn+Starlette, 1 commit/request: {bare.rate:,.0f}/s; {bare.ok:,} 2xx /"
            f" {report.bare_stored:,} stored; p50 {bare.p50_ms:.1f} ms, p99 {bare.p99_ms:.1f} ms"
        )
    for raw_pg in report.raw_pg:
        what = "lineup_append" if raw_pg.function == "lineup_append" else "the same without NOTIFY"
        print(
            f"raw asyncpg, {what}, {POOL_SIZE} connections, 1 envelope/round trip:"
            f" {raw_pg.rate:,.0f}/s"
        )
    print()
    by_name = {(c.engine, c.processes, c.layout): c for c in report.configs}
    ratios: dict[str, float] = {}
    sqlite1 = by_name.get(("sqlite", 1, "ports"))
    pg1 = by_name.get(("postgres", 1, "ports"))
    pairs = []
    if sqlite1 and pg1:
        pairs.append(("PG x 1 / SQLite x 1", pg1, sqlite1))
    for (engine, n, layout), c in by_name.items():
        if engine == "postgres" and n > 1 and pg1:
            pairs.append((f"PG x {n} ({layout}) / PG x 1", c, pg1))
    for title, a, b in pairs:
        values = {
            "ws_rate": ratio(a.ws.rate, b.ws.rate),
            "delivery_p50": ratio(
                a.latency.p50_ms if a.latency else math.nan,
                b.latency.p50_ms if b.latency else math.nan,
            ),
            "delivery_p99": ratio(
                a.latency.p99_ms if a.latency else math.nan,
                b.latency.p99_ms if b.latency else math.nan,
            ),
        }
        if a.hold and b.hold:
            values["kib_per_stream"] = ratio(a.hold.kib_per_stream, b.hold.kib_per_stream)
            values["fanout_p99"] = ratio(a.hold.p99_ms, b.hold.p99_ms)
        text = ", ".join(f"{k} {v:.2f}" for k, v in values.items())
        print(f"{title + ':':<24} {text}")
        for k, v in values.items():
            ratios[f"{title}: {k}"] = v
    if pg1 is not None and report.raw_pg:
        ws_vs_raw_pg = ratio(pg1.ws.rate, report.raw_pg[0].rate)
        ratios["PG x 1 WebSocket / raw lineup_append"] = ws_vs_raw_pg
        print(f"PG x 1 WebSocket / raw lineup_append: {ws_vs_raw_pg:.2f}")
        if len(report.raw_pg) > 1:
            quiet = ratio(report.raw_pg[1].rate, report.raw_pg[0].rate)
            ratios["raw without NOTIFY / with NOTIFY"] = quiet
            print(f"raw lineup_append without NOTIFY / with NOTIFY: {quiet:.2f}")
    goals: dict[str, bool] = {}
    if sqlite1 is not None:
        if report.raw is not None:
            ws_vs_raw = ratio(sqlite1.ws.rate, report.raw.rate)
            ratios["SQLite WebSocket / raw batched sqlite3"] = ws_vs_raw
            print(f"SQLite WebSocket / raw batched sqlite3: {ws_vs_raw:.2f}")
        goals["ws"] = sqlite1.ws.rate >= WS_GOAL
        print(
            f"goal: SQLite WebSocket >= {WS_GOAL:,.0f} envelopes/s: {sqlite1.ws.rate:,.0f}"
            f"  {verdict(goals['ws'])}"
        )
        if sqlite1.http is not None and report.bare is not None:
            http_vs_bare = ratio(sqlite1.http.rate, report.bare.rate)
            ratios["HTTP / bare endpoint"] = http_vs_bare
            goals["http"] = http_vs_bare >= HTTP_GOAL_RATIO
            print(
                f"goal: HTTP >= {HTTP_GOAL_RATIO}x the bare endpoint: {http_vs_bare:.2f}x"
                f"  {verdict(goals['http'])}"
            )
    print()
    checks = [check for c in report.configs for check in c.checks] + report.checks
    for text, ok in checks:
        print(f"check: {text}: {'ok' if ok else 'FAILED'}")
    for c in report.configs:
        for sample in c.ws.samples:
            print(f"  {c.name} ws problem: {sample}")
        for sample in (c.latency.problems if c.latency else []) + (
            c.hold.problems if c.hold else []
        ):
            print(f"  {c.name} stream problem: {sample}")
    return {
        "configs": [c.as_json() for c in report.configs],
        "raw_sqlite": None
        if report.raw is None
        else report.raw.__dict__ | {"rate": report.raw.rate},
        "bare": None
        if report.bare is None
        else report.bare.__dict__ | {"rate": report.bare.rate, "stored": report.bare_stored},
        "raw_postgres": [r.__dict__ | {"rate": r.rate} for r in report.raw_pg],
        "ratios": ratios,
        "goals": goals,
        "checks": dict(checks),
        "notes": report.notes,
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


# --- main ------------------------------------------------------------------------------------


def raise_fd_limit(wanted: int) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < wanted:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(wanted, hard), hard))


def run(args: argparse.Namespace, work: Path) -> tuple[Report, list[str]]:
    profiler = Profiler(args.profile)
    checks: list[tuple[str, bool]] = []
    notes: list[str] = []
    load_before = os.getloadavg()[0]
    log(f"work dir {work}; load average {load_before:.2f}")
    if load_before > 0.5:
        log("other work (or a run that just ended) may share the CPUs: figures will be noisier")
    raise_fd_limit(args.streams + 4096)  # inherited by the servers and the clients
    engines = ["sqlite", "postgres"] if args.database == "both" else [args.database]
    if "postgres" in engines:
        why = postgres_available()
        if why is not None:
            if args.database == "postgres" or args.database_explicit:
                raise BenchmarkError(f"PostgreSQL is unavailable: {why}")
            notes.append(f"PostgreSQL skipped: {why}")
            engines.remove("postgres")
    configs: list[ConfigResult] = []
    raw = bare = None
    bare_stored = 0
    raw_pg: list[RawPgResult] = []
    if "sqlite" in engines:
        sqlite = run_config(args, "sqlite", 1, "ports", None, None, work, profiler)
        configs.append(sqlite)
        db = work / "sqlite-x1" / "appserver.sqlite3"
        log(f"raw sqlite3: the {sqlite.ws_stored:,} WebSocket rows, {RAW_BATCH} per commit")
        raw = run_raw_sqlite(db, work / "raw.sqlite3")
        if shutil.which("wrk") is None:
            notes.append("wrk is missing (apt-get install -y wrk): HTTP and bare endpoint skipped")
        elif not args.no_http:
            bare_db = work / "bare.sqlite3"
            clone_base(db, bare_db)
            bare_port = free_port()
            bare_cmd = [sys.executable, str(BARE_APP), "--db", str(bare_db)]
            bare_cmd += ["--port", str(bare_port)]
            ready = f"http://127.0.0.1:{bare_port}/healthz"
            log(f"bare endpoint: wrk for {args.duration:g} s")
            with server_process(bare_cmd, work / "bare.log", ready) as bare_server:
                principals = Principals("", "unused")
                bare = run_wrk(args, bare_port, principals, bare_server.pid, profiler, "bare-http")
            bare_stored = count_rows(bare_db, f"{HTTP_ID_PREFIX}-%")
            checks.append(http_check("bare endpoint", bare, bare_stored, args.connections))
    if "postgres" in engines:
        log("PostgreSQL: starting a private cluster" + ("" if args.pg_fsync else " (fsync off)"))
        cluster = start_cluster(args.pg_fsync)
        try:
            postmaster = cluster.process.pid if cluster.process is not None else None
            if postmaster is None:
                notes.append(
                    "PostgreSQL is external ($LINEUP_TEST_POSTGRES): its CPU is not measured"
                )
            fsync = pg_query(cluster.dsn("postgres"), "SHOW fsync")
            version = pg_query(cluster.dsn("postgres"), "SHOW server_version")
            notes.append(f"PostgreSQL {version}, fsync={fsync}")
            for n in args.processes:
                for layout in args.pg_layout if n > 1 else ["ports"]:
                    dsn = cluster.create_database()
                    configs.append(
                        run_config(args, "postgres", n, layout, dsn, postmaster, work, profiler)
                    )
                if n == 1 and args.raw_pg_seconds > 0:
                    log(f"raw lineup_append: {POOL_SIZE} connections, {args.raw_pg_seconds:g} s")
                    conversations = [f"{CONVERSATION_PREFIX}{i}" for i in range(POOL_SIZE)]
                    raw_pg = run_raw_pg(dsn, conversations, args.raw_pg_seconds)
        finally:
            cluster.stop()
    report = Report(configs, raw, bare, bare_stored, checks, load_before, notes, raw_pg)
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


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def process_list(text: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError("a list of process counts, e.g. 1,2") from None
    if not values or any(not 1 <= v <= 16 for v in values):
        raise argparse.ArgumentTypeError("process counts are 1-16")
    return values


def layout_list(text: str) -> list[str]:
    values = [part.strip() for part in text.split(",") if part.strip()]
    if not values or any(v not in ("ports", "workers") for v in values):
        raise argparse.ArgumentTypeError("ports, workers or ports,workers")
    return values


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Durable envelopes/s, delivery latency and held streams of the LineUp"
        " AppServer on SQLite and PostgreSQL, one process or more."
    )
    parser.add_argument(
        "--database",
        choices=["sqlite", "postgres", "both"],
        default=None,
        help="engines to measure [both when PostgreSQL is available, else sqlite]",
    )
    parser.add_argument(
        "--processes",
        type=process_list,
        default=[1, 2],
        help="PostgreSQL: AppServer processes per configuration, comma-separated [1,2]"
        " (SQLite always runs one)",
    )
    parser.add_argument(
        "--pg-layout",
        type=layout_list,
        default=["ports"],
        help="several PostgreSQL processes as separate `lineup server` processes on their"
        " own ports, so sender and receiver surely differ [ports], and/or one"
        " `lineup server --workers N` on one port (the kernel spreads connections):"
        " ports, workers or ports,workers",
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
    parser.add_argument("--no-http", action="store_true", help="skip the wrk runs")
    parser.add_argument(
        "--rate", type=float, default=500.0, help="delivery latency: envelopes/s [500; 0 skips]"
    )
    parser.add_argument(
        "--latency-seconds", type=float, default=10.0, help="delivery latency: seconds [10]"
    )
    parser.add_argument(
        "--latency-conversations",
        type=int,
        default=10,
        help="delivery latency: conversations the rate is spread over, round robin [10]",
    )
    parser.add_argument(
        "--latency-warmup",
        type=float,
        default=1.0,
        help="delivery latency: seconds sent first and not counted [1]",
    )
    parser.add_argument(
        "--streams",
        type=int,
        default=2000,
        help="WebSocket streams held by one process [2000; 0 skips]",
    )
    parser.add_argument(
        "--hold-loaders", type=int, default=2, help="processes holding the streams [2]"
    )
    parser.add_argument(
        "--fanout", type=int, default=20, help="envelopes sent to every held stream [20]"
    )
    parser.add_argument(
        "--raw-pg-seconds",
        type=float,
        default=4.0,
        help="seconds of each raw asyncpg lineup_append reference [4; 0 skips]",
    )
    parser.add_argument(
        "--no-pg-fsync",
        dest="pg_fsync",
        action="store_false",
        help="run the private PostgreSQL cluster with fsync=off (not durable)",
    )
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
    args.database_explicit = args.database is not None
    if args.database is None:
        args.database = "both"
    if args.connections % args.loaders:
        parser.error("--connections must be a multiple of --loaders")
    if max(args.processes) > args.loaders and args.connections % max(args.processes):
        parser.error("--connections must be a multiple of the process count")
    if not 1 <= args.window <= 1024:
        parser.error("--window must be between 1 and 1024")
    if args.messages < args.connections:
        parser.error("--messages must be at least --connections")
    if args.hold_loaders < 1:
        parser.error("--hold-loaders must be at least 1")
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
    checks = [ok for c in report.configs for _, ok in c.checks] + [ok for _, ok in report.checks]
    return 0 if all(checks) else 1


if __name__ == "__main__":
    sys.exit(main())
