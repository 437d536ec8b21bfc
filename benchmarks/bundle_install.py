"""Signed MiniApp delivery: verify + install of a ~160 KiB bundle, step by step.

Builds one installed-kind bundle from ``tests/support/apps/test-app`` whose main
surface (``index.html`` + ``index.css`` + ``index.js``) is just under the surface
limit (``lineup.protocol.fields.MAX_BUNDLE_BYTES``, 160 KiB): ``index.js`` is padded
with a comment of seeded random printable text, so nothing compresses or repeats
trivially. It is packed with ``lineup.delivery.publisher.pack_bundle`` and signed with
a fresh Ed25519 key. Everything is prepared before a clock starts; each figure is the
median and p95 of ``--iterations`` single timed calls (``time.perf_counter_ns``) after
a short warm-up, and ops/s = 1 / median.

References, measured in the same run:

- ``ed25519 verify (300 B)``: ``cryptography``'s raw Ed25519 verify of a 300-byte
  message, public key object built once;
- ``sha256 (160 KiB)``: ``hashlib.sha256`` of 160 KiB;
- ``file write + fsync + rename + dir fsync (160 KiB)``: a temporary file created,
  written, fsynced and closed, renamed to a new name, and its directory fsynced, in
  the same temporary directory tree as the Runtime's (what ``VerifiedCache.write``
  does to the disk, without its checks).

LineUp's steps, in the order an install runs them:

- ``decode_release``: the release document (JSON, msgspec) into a ``Release``;
- ``check_release``: key trusted, not revoked, the Ed25519 signature over the
  canonical release, the stated length and host version;
- ``check_artifact``, and separately its parts: ``sha256`` of the artifact,
  ``archive.unpack`` (ustar from memory) and ``load_bundle`` (manifest and bundle
  checks);
- ``VerifiedCache.write``: a *new* digest every call (the cache is idempotent per
  digest): ``--iterations`` distinct artifacts of the same length are made
  beforehand (the bundle with its last 8 bytes replaced by a counter; the cache does
  not look inside);
- ``install_release``: ``runtime.delivery.install_release`` end to end into a real
  ``Runtime`` on a temporary directory (SQLite WAL, ``synchronous=FULL``), each call a
  new version (1.0.0, 1.0.1, ...), each its own bundle, release and signature, all
  made before timing. Installs are sequential: one install at a time, as the
  Runtime's delivery lock allows anyway.

The four rows that touch the disk (the reference file write, the cache write and the
plain and instrumented installs) run interleaved, one of each per round, because
fsync time on a shared VM drifts by several times within a minute; interleaved, their
ratios hold even when the absolute figures move.

**Where the time goes.** Every other install is run with light instrumentation: the
functions an install calls (decode, the signature, each SHA-256 pass, unpack,
load_bundle, the cache write, the database reads, the SQLite transaction function,
its inventory refresh, and the write that waits for the commit) are wrapped with a
timer for that install only. The medians of those parts are given as percentages of
the median plain (uninstrumented) install, grouped as cryptography (the signature and
every SHA-256 pass: check_artifact's, the cache's own and the registry's
``files_digest``), I/O (the cache file's write + fsync + rename + directory fsync, and
the SQLite commit with its hop to and from the writer thread), parsing and checks
(msgspec, unpack, load_bundle, the release checks), database work (the two reads
before the checks, the transaction's rows and file bodies, its inventory refresh),
and the rest (the event loop, ``asyncio.to_thread``, telling the registry). Medians
do not add up exactly; "other" is what is left, and can come out slightly negative.

Prints figures, not a verdict. ``--json`` prints the same figures as JSON instead.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import gc
import hashlib
import json
import os
import platform
import random
import shutil
import sqlite3
import string
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from importlib.metadata import version as dist_version
from pathlib import Path
from typing import Any

from cryptography.hazmat.backends.openssl import backend as openssl_backend
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import lineup.delivery.cache as cache_module
import lineup.delivery.verify as verify_module
import lineup.protocol.interactions as interactions_module
import lineup.runtime.apps.installer as installer_module
import lineup.runtime.apps.registry as registry_module
from lineup.delivery.archive import unpack
from lineup.delivery.cache import VerifiedCache
from lineup.delivery.keys import generate_key, public_key_of, sign_release
from lineup.delivery.publisher import pack_bundle
from lineup.delivery.release import canonical_bytes, decode_release, encode_release, sha256_hex
from lineup.delivery.verify import check_artifact, check_release
from lineup.formats.bundle import load_bundle
from lineup.protocol.fields import MAX_BUNDLE_BYTES
from lineup.runtime import Runtime

REPO = Path(__file__).resolve().parent.parent
TEST_APP = REPO / "tests" / "support" / "apps" / "test-app"
SURFACE_MARGIN = 256
"""Bytes left under the surface limit (html + css + js of the main surface)."""
WARMUP = 5

# --- measuring ------------------------------------------------------------------------------


def summary(samples_ns: list[int]) -> dict[str, float]:
    ordered = sorted(samples_ns)
    n = len(ordered)
    median = (ordered[(n - 1) // 2] + ordered[n // 2]) / 2
    p95 = ordered[min(n - 1, max(0, -(-95 * n // 100) - 1))]  # nearest rank
    return {
        "n": n,
        "median_us": median / 1000,
        "p95_us": p95 / 1000,
        "ops_per_s": 1e9 / median if median else float("inf"),
    }


def timed(function: Callable[[int], object], iterations: int, warmup: int = WARMUP) -> list[int]:
    """``function(i)`` once per sample; returns the nanoseconds of each timed call."""
    for i in range(warmup):
        function(-1 - i)
    gc.collect()
    samples: list[int] = []
    clock = time.perf_counter_ns
    for i in range(iterations):
        start = clock()
        function(i)
        samples.append(clock() - start)
    return samples


# --- the bundle -----------------------------------------------------------------------------


def padding(size: int, seed: int = 160) -> str:
    """``size`` characters of seeded random printable text in a JS block comment
    (lines of 100 characters; no ``*``, so the comment cannot end early)."""
    alphabet = string.ascii_letters + string.digits + " .,;:=+-_()[]{}<>!?#%&|~^"
    rng = random.Random(seed)
    inner = size - len("/*\n") - len("*/\n")
    body = "".join("\n" if i % 100 == 99 else rng.choice(alphabet) for i in range(inner - 1))
    text = "/*\n" + body + "\n*/\n"
    assert len(text) == size
    return text


def build_bundle(root: Path) -> tuple[Path, int]:
    """The test app as an installed app whose main surface is just under the limit.
    Returns its directory and the main surface's size."""
    target = root / "bundle"
    shutil.copytree(TEST_APP, target)
    manifest = json.loads((target / "manifest.json").read_text())
    manifest.update(kind="installed", version="1.0.0")
    (target / "manifest.json").write_text(json.dumps(manifest, indent=2))
    surface = [target / name for name in ("index.html", "index.css", "index.js")]
    current = sum(len(path.read_bytes()) for path in surface)
    pad = MAX_BUNDLE_BYTES - SURFACE_MARGIN - current
    js = target / "index.js"
    js.write_bytes(js.read_bytes() + b"\n" + padding(pad - 1).encode("ascii"))
    size = sum(len(path.read_bytes()) for path in surface)
    assert MAX_BUNDLE_BYTES - SURFACE_MARGIN - 1 <= size < MAX_BUNDLE_BYTES
    return target, size


def set_version(directory: Path, version: str) -> None:
    path = directory / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["version"] = version
    path.write_text(json.dumps(manifest, indent=2))


def signed_release(directory: Path, key: Ed25519PrivateKey) -> tuple[bytes, bytes]:
    """(release file bytes, artifact) of the bundle in ``directory``."""
    artifact, unsigned = pack_bundle(directory)
    return encode_release(sign_release(unsigned, key)), artifact


# --- references -----------------------------------------------------------------------------


def reference_rows(iterations: int) -> dict[str, list[int]]:
    key = Ed25519PrivateKey.generate()
    message = os.urandom(300)
    signature = key.sign(message)
    public = key.public_key()
    block = os.urandom(160 * 1024)
    return {
        "ref: ed25519 verify (300 B)": timed(
            lambda _: public.verify(signature, message), iterations
        ),
        "ref: sha256 (160 KiB)": timed(lambda _: hashlib.sha256(block).digest(), iterations),
    }


def reference_write(directory: Path, name: str, block: bytes) -> None:
    """What ``VerifiedCache.write`` does to the disk, without its checks."""
    temp = directory / f".incoming-{name}"
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(block)
        out.flush()
        os.fsync(out.fileno())
    os.replace(temp, directory / f"{name}.bin")
    dir_fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(dir_fd)
    finally:
        os.close(dir_fd)


# --- our steps, one at a time ---------------------------------------------------------------


def step_rows(
    iterations: int, release_bytes: bytes, artifact: bytes, key: Ed25519PrivateKey
) -> dict[str, list[int]]:
    public = public_key_of(key)
    trusted = {public.key_id: public}
    release = decode_release(release_bytes)
    check_release(release, trusted)
    check_artifact(release, artifact)
    files = unpack(artifact)
    return {
        "decode_release": timed(lambda _: decode_release(release_bytes), iterations),
        "check_release (signature etc.)": timed(
            lambda _: check_release(release, trusted), iterations
        ),
        "check_artifact (all)": timed(lambda _: check_artifact(release, artifact), iterations),
        "  sha256 of the artifact": timed(lambda _: sha256_hex(artifact), iterations),
        "  archive.unpack": timed(lambda _: unpack(artifact), iterations),
        "  load_bundle": timed(lambda _: load_bundle(files), iterations),
    }


# --- full installs --------------------------------------------------------------------------

Parts = dict[str, int]


class Instrument:
    """Wraps the functions an install calls with timers while ``active``; each call's
    nanoseconds are added to ``parts[name]``. Installs are sequential, so one dict
    will do even though the parts run on three threads."""

    def __init__(self, runtime: Runtime) -> None:
        self.parts: Parts = {}
        self._runtime = runtime
        self._saved: list[tuple[Any, str, Any]] = []

    def _wrap(self, owner: Any, attribute: str, name: str) -> None:
        original = getattr(owner, attribute)
        parts = self.parts
        clock = time.perf_counter_ns

        @functools.wraps(original)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return original(*args, **kwargs)
            finally:
                parts[name] = parts.get(name, 0) + clock() - start

        self._saved.append((owner, attribute, owner.__dict__.get(attribute, _ABSENT)))
        setattr(owner, attribute, wrapper)

    def _wrap_async(self, owner: Any, attribute: str, name: str) -> None:
        """An ``async def method(fn, *args)`` of the database: timed per ``fn``."""
        original = getattr(owner, attribute)
        parts = self.parts
        clock = time.perf_counter_ns

        async def wrapper(fn: Any, *args: Any) -> Any:
            start = clock()
            try:
                return await original(fn, *args)
            finally:
                key = f"{name}:{getattr(fn, '__name__', '?')}"
                parts[key] = parts.get(key, 0) + clock() - start

        self._saved.append((owner, attribute, owner.__dict__.get(attribute, _ABSENT)))
        setattr(owner, attribute, wrapper)

    @contextmanager
    def active(self) -> Iterator[Parts]:
        self.parts.clear()
        runtime = self._runtime
        self._wrap(installer_module, "decode_release", "decode_release")
        self._wrap(installer_module, "check_release", "check_release")
        self._wrap(verify_module, "verify_signature", "signature")
        self._wrap(installer_module, "check_artifact", "check_artifact")
        self._wrap(verify_module, "sha256_hex", "sha256_check")
        self._wrap(verify_module, "unpack", "unpack")
        self._wrap(verify_module, "load_bundle", "load_bundle")
        self._wrap(runtime.delivery.cache, "write", "cache_write")
        self._wrap(cache_module, "sha256_hex", "sha256_cache")
        self._wrap(registry_module, "files_digest", "sha256_registry")
        self._wrap(installer_module, "_record_txn", "txn_body")
        self._wrap(registry_module, "refresh_inventory", "inventory")
        self._wrap(interactions_module, "interactive_tools", "interactive_tools")
        self._wrap_async(runtime.store.db, "write", "db_write")
        self._wrap_async(runtime.store.db, "read", "db_read")
        try:
            yield self.parts
        finally:
            while self._saved:
                owner, attribute, previous = self._saved.pop()
                if previous is _ABSENT:
                    delattr(owner, attribute)
                else:
                    setattr(owner, attribute, previous)


_ABSENT = object()


async def io_rows(
    iterations: int, scratch: Path, bundle: Path, key: Ed25519PrivateKey, artifact: bytes
) -> tuple[dict[str, list[int]], list[Parts], dict[str, Any]]:
    """The rows that touch the disk, interleaved so that they see the same disk (a
    shared VM's fsync time drifts): per round, a plain install, the reference file
    write, an instrumented install and a ``VerifiedCache.write`` of a new digest.
    Every install is a new version."""
    rounds = WARMUP + iterations
    prepared = []
    for patch in range(2 * rounds):
        set_version(bundle, f"1.0.{patch}")
        prepared.append(signed_release(bundle, key))
    set_version(bundle, "1.0.0")
    # Distinct artifacts of the same length, so every cache write is a new digest
    # (the cache does not look inside; it checks the digest and writes).
    variants = [artifact[:-8] + n.to_bytes(8, "big") for n in range(1, rounds + 1)]
    digests = [sha256_hex(data) for data in variants]
    block = os.urandom(160 * 1024)
    cache = VerifiedCache(scratch / "steps-cache")
    writes = scratch / "reference-writes"
    writes.mkdir()

    runtime = Runtime(scratch / "runtime", catalog_interval=None)
    await runtime.open()
    samples: dict[str, list[int]] = {
        "ref: file write + fsync + rename + dir fsync (160 KiB)": [],
        "VerifiedCache.write (new digest)": [],
        "install_release (end to end)": [],
        "install_release (instrumented)": [],
    }
    ref_row, cache_row, plain, instrumented = samples.values()
    parts: list[Parts] = []
    clock = time.perf_counter_ns
    try:
        await runtime.delivery.trust_key(public_key_of(key, "Benchmark Publisher"))
        instrument = Instrument(runtime)
        gc.collect()
        for n in range(rounds):
            keep = n >= WARMUP
            release_bytes, artifact_n = prepared[2 * n]
            start = clock()
            await runtime.delivery.install_release(release_bytes, artifact_n)
            elapsed = clock() - start
            if keep:
                plain.append(elapsed)

            start = clock()
            reference_write(writes, str(n), block)
            elapsed = clock() - start
            if keep:
                ref_row.append(elapsed)

            release_bytes, artifact_n = prepared[2 * n + 1]
            with instrument.active() as current:
                start = clock()
                await runtime.delivery.install_release(release_bytes, artifact_n)
                elapsed = clock() - start
                if keep:
                    instrumented.append(elapsed)
                    parts.append(dict(current))

            start = clock()
            cache.write(digests[n], variants[n])
            elapsed = clock() - start
            if keep:
                cache_row.append(elapsed)
        (entry,) = await runtime.registry.apps()
        count = 2 * rounds
        assert entry.version == f"1.0.{count - 1}"
        assert len(entry.versions) == count
        facts = {
            "installed_versions": count,
            "cached_files": sum(1 for _ in runtime.delivery.cache.directory.iterdir()),
            "db_mib": sum(
                p.stat().st_size for p in runtime.store.db.path.parent.glob("runtime.sqlite3*")
            )
            / 2**20,
        }
    finally:
        await runtime.close()
    return samples, parts, facts


def breakdown(plain_median_ns: float, parts: list[Parts]) -> dict[str, Any]:
    def med(name: str) -> float:
        values = sorted(p.get(name, 0) for p in parts)
        n = len(values)
        return (values[(n - 1) // 2] + values[n // 2]) / 2

    signature = med("signature")
    sha_check, sha_cache, sha_registry = (
        med("sha256_check"),
        med("sha256_cache"),
        med("sha256_registry"),
    )
    cache_write = med("cache_write")
    db_write = med("db_write:_record_txn")
    txn_body = med("txn_body")
    inventory = med("inventory")
    check_release_ = med("check_release")
    check_artifact_ = med("check_artifact")
    unpack_, load_bundle_ = med("unpack"), med("load_bundle")
    decode = med("decode_release")
    reads = med("db_read:check_installable") + med("db_read:trust")

    detail = {
        "crypto: Ed25519 signature verify": signature,
        "crypto: SHA-256 in check_artifact": sha_check,
        "crypto: SHA-256 in VerifiedCache.write": sha_cache,
        "crypto: SHA-256 of the files in the registry (files_digest)": sha_registry,
        "io: cache file write + fsync + rename + dir fsync": cache_write - sha_cache,
        "io: SQLite commit + writer-thread hop": db_write - txn_body,
        "parse: decode_release": decode,
        "parse: check_release without the signature": check_release_ - signature,
        "parse: archive.unpack": unpack_,
        "parse: load_bundle": load_bundle_,
        "parse: rest of check_artifact": check_artifact_ - sha_check - unpack_ - load_bundle_,
        "db: inventory refresh in the transaction": inventory,
        "db: rest of the transaction (rows, files, audit)": txn_body - sha_registry - inventory,
        "db: reads before the checks (check_installable, trust)": reads,
    }
    of_which = {
        "interaction tools' JSON schemas (inside the inventory refresh)": med("interactive_tools"),
    }
    groups: dict[str, float] = {}
    for name, value in detail.items():
        group = name.split(":")[0]
        groups[group] = groups.get(group, 0.0) + value
    groups["other"] = plain_median_ns - sum(groups.values())
    labels = {
        "crypto": "cryptography (signature + SHA-256 passes)",
        "io": "I/O (cache fsyncs + SQLite commit)",
        "parse": "parsing and checks (msgspec, unpack, load_bundle)",
        "db": "database work (reads, inserts, inventory refresh)",
        "other": "other (event loop, thread hops, registry)",
    }

    def share(value: float) -> dict[str, float]:
        return {"us": value / 1000, "percent": 100 * value / plain_median_ns}

    return {
        "median_install_us": plain_median_ns / 1000,
        "groups": {labels[g]: share(v) for g, v in groups.items()},
        "detail": {name: share(v) for name, v in detail.items()},
        "of_which": {name: share(v) for name, v in of_which.items()},
    }


# --- report ---------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next(
                (ln.split(":", 1)[1].strip() for ln in cpuinfo if ln.startswith("model name")), ""
            )
    except OSError:
        pass
    return {
        "cpus": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "cryptography": dist_version("cryptography"),
        "openssl": openssl_backend.openssl_version_text(),
        "sqlite": sqlite3.sqlite_version,
        "msgspec": dist_version("msgspec"),
    }


def print_report(results: dict[str, Any]) -> None:
    m, b = results["machine"], results["bundle"]
    print(
        f"python {m['python']}, cryptography {m['cryptography']} ({m['openssl']}),"
        f" sqlite {m['sqlite']}, msgspec {m['msgspec']}, {m['cpus']} CPUs ({m['cpu']})"
    )
    print(
        f"bundle: main surface {b['surface_bytes']:,} B (limit {MAX_BUNDLE_BYTES:,}),"
        f" {b['files']} files {b['files_bytes']:,} B, artifact {b['artifact_bytes']:,} B,"
        f" release {b['release_bytes']} B (signed part {b['canonical_bytes']} B);"
        f" {results['iterations']} samples per row"
    )
    print()
    print(f"{'operation':<56} {'median µs':>10} {'p95 µs':>10} {'ops/s':>10}")
    for name, row in results["rows"].items():
        print(
            f"{name:<56} {row['median_us']:10,.1f} {row['p95_us']:10,.1f} {row['ops_per_s']:10,.0f}"
        )
    print()
    ratios = results["ratios"]
    print("ratios (same run):")
    for name, value in ratios.items():
        print(f"  {name:<70} {value:6.2f}")
    print()
    bd = results["breakdown"]
    print(f"share of the median full install ({bd['median_install_us']:,.0f} µs):")
    for name, part in bd["groups"].items():
        print(f"  {name:<54} {part['us']:8,.0f} µs {part['percent']:5.1f} %")
    print("  detail:")
    for name, part in bd["detail"].items():
        print(f"    {name:<64} {part['us']:8,.0f} µs {part['percent']:5.1f} %")
    for name, part in bd["of_which"].items():
        print(f"      of which {name}: {part['us']:,.0f} µs ({part['percent']:.1f} %)")
    f = results["install_facts"]
    print(
        f"\nafter the run: {f['installed_versions']} versions installed,"
        f" {f['cached_files']} files in the verified cache, database {f['db_mib']:.1f} MiB;"
        f" install median first/last tenth of the plain runs:"
        f" {f['first_tenth_median_us']:,.0f} / {f['last_tenth_median_us']:,.0f} µs"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument(
        "--iterations",
        type=int,
        default=200,
        help="timed samples per row; the install row makes twice as many installs"
        " (plain and instrumented, interleaved)",
    )
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--dir",
        type=Path,
        default=None,
        help="where the temporary directory goes (default: TMPDIR)",
    )
    args = parser.parse_args()
    if args.iterations < 20:
        parser.error("--iterations must be at least 20")

    scratch = Path(tempfile.mkdtemp(prefix="lineup-bundle-install-", dir=args.dir))
    try:
        key = generate_key()
        bundle, surface_bytes = build_bundle(scratch)
        release_bytes, artifact = signed_release(bundle, key)
        release = decode_release(release_bytes)
        files = unpack(artifact)

        samples: dict[str, list[int]] = {}
        samples.update(reference_rows(args.iterations))
        samples.update(step_rows(args.iterations, release_bytes, artifact, key))
        disk, parts, facts = asyncio.run(io_rows(args.iterations, scratch, bundle, key, artifact))
        samples.update(disk)
        plain = disk["install_release (end to end)"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    rows = {name: summary(values) for name, values in samples.items()}
    tenth = max(1, len(plain) // 10)
    facts["first_tenth_median_us"] = summary(plain[:tenth])["median_us"]
    facts["last_tenth_median_us"] = summary(plain[-tenth:])["median_us"]

    def median(name: str) -> float:
        return rows[name]["median_us"]

    install = median("install_release (end to end)")
    ratios = {
        "check_release ÷ ref ed25519 verify": median("check_release (signature etc.)")
        / median("ref: ed25519 verify (300 B)"),
        "sha256 of the artifact ÷ ref sha256 (160 KiB)": median("  sha256 of the artifact")
        / median("ref: sha256 (160 KiB)"),
        "VerifiedCache.write ÷ ref file write + fsync": median("VerifiedCache.write (new digest)")
        / median("ref: file write + fsync + rename + dir fsync (160 KiB)"),
        "full install ÷ ref file write + fsync": install
        / median("ref: file write + fsync + rename + dir fsync (160 KiB)"),
        "full install ÷ (check_release + check_artifact + cache write)": install
        / (
            median("check_release (signature etc.)")
            + median("check_artifact (all)")
            + median("VerifiedCache.write (new digest)")
        ),
        "instrumented ÷ plain install (instrumentation cost)": median(
            "install_release (instrumented)"
        )
        / install,
    }
    results = {
        "machine": machine(),
        "iterations": args.iterations,
        "bundle": {
            "surface_bytes": surface_bytes,
            "files": len(files),
            "files_bytes": sum(len(body) for body in files.values()),
            "artifact_bytes": len(artifact),
            "release_bytes": len(release_bytes),
            "canonical_bytes": len(canonical_bytes(release)),
        },
        "rows": rows,
        "ratios": ratios,
        "breakdown": breakdown(install * 1000, parts),
        "install_facts": facts,
    }
    if args.json:
        json.dump(results, sys.stdout, indent=2, ensure_ascii=False)
        print()
    else:
        print_report(results)


if __name__ == "__main__":
    main()
