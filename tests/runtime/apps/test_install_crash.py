"""A SIGKILL during a signed install never leaves a half-written or unverified file
active: real child processes (``tests.support.install_child``) killed at each step of
``AppDelivery.install_release`` (mid-write, temp file written, renamed, committed) and
at random points of a loop of installs, then a real reopen on the same SQLite store
and verified cache directory.

After every kill the reopened Runtime has the old version in use (killed before the
commit) or the new one (after), never anything else; its cache directory holds only
``<sha256>.tar`` files whose bytes hash to their name and that a release row names
(``open()`` swept the rest); every release row's cached artifact verifies against its
signed release; the active version's surface loads; audit rows hold no paths or bytes;
and the interrupted install, tried again, succeeds."""

from __future__ import annotations

import asyncio
import hashlib
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from lineup.delivery.keys import PublicKey
from lineup.delivery.release import decode_release
from lineup.delivery.verify import verify
from lineup.formats.semver import compare_semver
from lineup.runtime import Runtime
from lineup.runtime.runtime import STORE_FILE, VERIFIED_CACHE_DIR
from tests.support.releases import APP_ID, Publisher, Signed, release

ROOT = Path(__file__).resolve().parents[3]
TIMEOUT = 30.0
SEED = 26  # kill points 12, 4, 11, 4, 7, 10, 9, 1, 3, 13 of 13 lines
LOOP_VERSIONS = ("1.1.0", "1.2.0", "1.3.0", "1.4.0")
_FINAL = re.compile(r"[0-9a-f]{64}\.tar")
_TEMP_PREFIX = ".incoming-"


@dataclass(frozen=True)
class Files:
    """A release written out for the child: its signed document and artifact."""

    signed: Signed
    body: Path
    artifact: Path


def write_release(root: Path, signed: Signed) -> Files:
    stem = root / f"release-{signed.release.version}"
    body, artifact = stem.with_suffix(".json"), stem.with_suffix(".tar")
    body.write_bytes(signed.body)
    artifact.write_bytes(signed.artifact)
    return Files(signed, body, artifact)


async def installed_v1(data_dir: Path, publisher: Publisher, v1: Signed) -> None:
    """A Runtime at ``data_dir`` with a verified v1.0.0 active, closed again."""
    rt = Runtime(data_dir, catalog_interval=None)
    await rt.open()
    try:
        await rt.delivery.trust_key(publisher.public)
        result = await rt.delivery.install_release(v1.body, v1.artifact)
        assert result.entry.version == "1.0.0"
    finally:
        await rt.close()


class Child:
    """``tests.support.install_child`` with stdout read line by line (with a timeout)
    and stdin held open, so that a halted child stays blocked until it is killed."""

    def __init__(self, data_dir: Path, pubkey: Path, stage: str, files: list[Files]) -> None:
        args = [str(data_dir)]
        args += [str(files[0].body), str(files[0].artifact), str(pubkey), stage]
        for more in files[1:]:
            args += [str(more.body), str(more.artifact)]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.support.install_child", *args],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    async def readline(self) -> str:
        assert self.process.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(self.process.stdout.readline), TIMEOUT)
        assert line, f"the child ended early (exit {self.process.poll()})"
        return line.strip()

    async def kill(self) -> None:
        os.kill(self.process.pid, signal.SIGKILL)
        assert await asyncio.to_thread(self.process.wait, TIMEOUT) == -signal.SIGKILL

    def reap(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for stream in (self.process.stdin, self.process.stdout):
            if stream is not None:
                stream.close()


def cache_files(data_dir: Path) -> dict[str, bytes]:
    directory = data_dir / VERIFIED_CACHE_DIR
    return {p.name: p.read_bytes() for p in directory.iterdir()} if directory.exists() else {}


async def check_invariants(
    rt: Runtime, publisher: Publisher, allowed: set[str], *secrets: str
) -> str:
    """Everything a crash must never break, on a reopened Runtime; returns the version
    in use."""
    (entry,) = await rt.registry.apps()
    assert entry.app_id == APP_ID
    assert entry.version in allowed, f"{entry.version} in use, expected one of {allowed}"
    assert (entry.enabled, entry.unavailable) == (True, None)

    with sqlite3.connect(rt.data_dir / STORE_FILE) as conn:
        rows = conn.execute(
            "SELECT version, sha256, release FROM app_releases WHERE app_id = ?", (APP_ID,)
        ).fetchall()
        audit = conn.execute(
            "SELECT at, actor, action, subject, outcome, code FROM audit"
            " WHERE subject LIKE ? ORDER BY id",
            (f"{APP_ID}%",),
        ).fetchall()
    conn.close()
    named = {str(sha256) for _, sha256, _ in rows}

    # Only whole verified artifacts that a row names: no temp file, no orphan.
    on_disk = cache_files(rt.data_dir)
    for name, data in on_disk.items():
        assert _FINAL.fullmatch(name), f"stray file in the verified cache: {name}"
        digest = name.removesuffix(".tar")
        assert hashlib.sha256(data).hexdigest() == digest, f"{name} is not its digest"
        assert digest in named, f"{name} is named by no release row"

    # Every recorded version: its artifact is cached and verifies against its release.
    trusted = {publisher.public.key_id: publisher.public}
    assert sorted(str(r[0]) for r in rows) == sorted(entry.versions)
    assert entry.version in entry.versions
    for version, sha256, body in rows:
        assert f"{sha256}.tar" in set(on_disk), f"{version}: cached artifact missing"
        artifact = rt.delivery.cache.read(str(sha256))
        assert artifact is not None
        verified = verify(decode_release(bytes(body)), artifact, trusted)
        assert (verified.release.version, verified.release.sha256) == (version, sha256)

    surface = await rt.registry.surface_version(APP_ID, entry.version, None)
    assert surface is not None
    assert f"build {entry.version}" in surface.html

    # Audit rows: ids, versions, key ids and codes; never paths or bytes.
    assert audit
    for row in audit:
        assert all(isinstance(v, str | None) for v in row), row
    text = repr(audit)
    for secret in (str(rt.data_dir), "/", ".tar", _TEMP_PREFIX, *named, *secrets):
        assert secret not in text, f"{secret!r} in the audit rows"
    return entry.version


@dataclass(frozen=True)
class Setup:
    publisher: Publisher
    pubkey: Path
    v1: Signed
    template: Path
    """A closed data dir with v1.0.0 installed."""


async def setup(tmp_path: Path) -> Setup:
    publisher = Publisher.new()
    pubkey = tmp_path / "publisher.pub.json"
    pubkey.write_bytes(publisher.public.encode())
    assert PublicKey.decode(pubkey.read_bytes()) == publisher.public
    v1 = release(publisher, tmp_path, "1.0.0")
    template = tmp_path / "template"
    await installed_v1(template, publisher, v1)
    return Setup(publisher, pubkey, v1, template)


def signatures(*signed: Signed) -> tuple[str, ...]:
    return tuple(s.release.signature for s in signed)


# --- a kill at each step ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("stage", "active"),
    [
        ("mid-write", "1.0.0"),
        ("written", "1.0.0"),
        ("renamed", "1.0.0"),
        ("committed", "1.1.0"),
    ],
)
async def test_a_kill_at_each_install_step_keeps_a_verified_version_active(
    tmp_path: Path, stage: str, active: str
) -> None:
    s = await setup(tmp_path)
    data_dir = s.template
    v11 = write_release(tmp_path, release(s.publisher, tmp_path, "1.1.0"))
    v1_name, v11_name = f"{s.v1.release.sha256}.tar", f"{v11.signed.release.sha256}.tar"

    child = Child(data_dir, s.pubkey, stage, [v11])
    try:
        assert await child.readline() == stage
        await child.kill()
    finally:
        child.reap()

    # What the crash left, before anything tidies up.
    left = cache_files(data_dir)
    temps = {n: d for n, d in left.items() if n.startswith(_TEMP_PREFIX)}
    artifact = v11.signed.artifact
    assert left[v1_name] == s.v1.artifact
    if stage == "mid-write":
        assert list(temps.values()) == [artifact[: len(artifact) // 2]]  # torn
        assert v11_name not in left
    elif stage == "written":
        assert list(temps.values()) == [artifact]  # whole, under a temporary name
        assert v11_name not in left
    else:
        assert temps == {}
        assert left[v11_name] == artifact

    rt = Runtime(data_dir, catalog_interval=None)
    await rt.open()
    try:
        assert await check_invariants(rt, s.publisher, {active}, *signatures(s.v1, v11.signed)) == (
            active
        )
        expected = {v1_name} if active == "1.0.0" else {v1_name, v11_name}
        assert set(cache_files(data_dir)) == expected

        # The interrupted install, tried again, goes through (a no-op once committed).
        again = await rt.delivery.install_release(v11.signed.body, artifact)
        assert again.entry.version == "1.1.0"
        assert again.installed is (active == "1.0.0")
        await check_invariants(rt, s.publisher, {"1.1.0"}, *signatures(s.v1, v11.signed))
        assert set(cache_files(data_dir)) == {v1_name, v11_name}
    finally:
        await rt.close()

    rt = Runtime(data_dir, catalog_interval=None)  # and it stays so across a restart
    await rt.open()
    try:
        await check_invariants(rt, s.publisher, {"1.1.0"})
        assert set(cache_files(data_dir)) == {v1_name, v11_name}
    finally:
        await rt.close()


# --- kills at random points of a loop of installs ----------------------------------------------


async def test_kills_at_random_points_of_repeated_installs(tmp_path: Path) -> None:
    s = await setup(tmp_path)
    loop = [write_release(tmp_path, release(s.publisher, tmp_path, v)) for v in LOOP_VERSIONS]
    every = signatures(s.v1, *(f.signed for f in loop))
    lines = 3 * len(loop) + 1  # written, renamed, installed per version; then done
    rng = random.Random(SEED)

    for iteration in range(10):
        where = f"seed {SEED}, iteration {iteration}"
        data_dir = tmp_path / f"run-{iteration}"
        shutil.copytree(s.template, data_dir)
        kill_after = rng.randint(1, lines)
        seen: list[str] = []
        child = Child(data_dir, s.pubkey, "loop", loop)
        try:
            for _ in range(kill_after):
                seen.append(await child.readline())
            await child.kill()
        finally:
            child.reap()

        done = [line.split()[1] for line in seen if line.startswith("installed ")]
        assert done == list(LOOP_VERSIONS[: len(done)]), where
        floor = done[-1] if done else "1.0.0"
        rt = Runtime(data_dir, catalog_interval=None)
        await rt.open()
        try:
            allowed = {"1.0.0", *LOOP_VERSIONS}
            active = await check_invariants(rt, s.publisher, allowed, *every)
            # Never behind what the child reported installed (committed is committed).
            assert compare_semver(active, floor) >= 0, where

            # The installs the kill interrupted, tried again, go through.
            for files in loop:
                if compare_semver(files.signed.release.version, active) > 0:
                    result = await rt.delivery.install_release(
                        files.signed.body, files.signed.artifact
                    )
                    assert result.entry.version == files.signed.release.version, where
            assert (
                await check_invariants(rt, s.publisher, {LOOP_VERSIONS[-1]}, *every)
                == (LOOP_VERSIONS[-1])
            ), where
        finally:
            await rt.close()
