"""A Runtime in its own process that installs a signed release and stops dead at a
chosen point, for the parent to SIGKILL it exactly there.

Usage::

    python -m tests.support.install_child DATA_DIR RELEASE_FILE ARTIFACT_FILE PUBKEY_FILE STAGE
    python -m tests.support.install_child DATA_DIR RELEASE_FILE ARTIFACT_FILE PUBKEY_FILE \
        loop [RELEASE_FILE ARTIFACT_FILE ...]

It opens the Runtime at DATA_DIR, trusts the public key in PUBKEY_FILE and installs
the release with ``AppDelivery.install_release``. With a STAGE, when the install
reaches it the child prints the stage on stdout, flushes, and blocks reading stdin
(the parent keeps stdin open and never writes), so the parent kills it at exactly that
point, with no timing involved:

* ``mid-write``: the temporary file holds half the artifact. ``VerifiedCache`` has no
  hook inside its write, so the child wraps ``os.fdopen`` for the install: the cache's
  own write puts the first half of the bytes in its own ``.incoming-*`` file, flushes
  it and stops there. That torn temporary file is what a crash mid-write leaves.
* ``written``: the temporary file is complete and fsynced, not yet renamed.
* ``renamed``: ``<sha256>.tar`` is in place (and the directory fsynced), the registry
  row not yet committed.
* ``committed``: ``install_release`` returned (the row is committed).

If the stage is never reached the child prints ``unreached`` (or ``error <code>`` for
a refusal) and exits non-zero.

With ``loop`` it installs every given release in order, printing ``written V``,
``renamed V`` and ``installed V`` as each install gets there (without stopping), then
``done``, and blocks: the parent kills it after as many lines as it likes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from unittest import mock

from lineup.delivery.cache import VerifiedCache
from lineup.delivery.errors import DeliveryError
from lineup.delivery.keys import PublicKey
from lineup.delivery.release import decode_release
from lineup.runtime import Runtime

STAGES = ("mid-write", "written", "renamed", "committed")


def say(line: str) -> None:
    sys.stdout.write(line + "\n")
    sys.stdout.flush()


def halt(line: str) -> None:
    """Print ``line`` and block until the parent kills this process."""
    say(line)
    sys.stdin.read()  # returns only at EOF: the parent went away without killing us
    os._exit(3)


class _TornFile:
    """A file whose ``write`` stores the first half of the bytes, flushes them to the
    file and halts: the cache's temporary file as a crash mid-write leaves it."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __enter__(self) -> _TornFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self._inner.close()

    def write(self, data: bytes) -> int:
        self._inner.write(data[: len(data) // 2])
        self._inner.flush()
        halt("mid-write")
        raise AssertionError("unreachable")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def torn_fdopen(real: Callable[..., Any]) -> Callable[..., Any]:
    def fdopen(fd: int, *args: Any, **kwargs: Any) -> Any:
        return _TornFile(real(fd, *args, **kwargs))

    return fdopen


async def open_runtime(data_dir: str, key: PublicKey, stage: Callable[[str], None]) -> Runtime:
    runtime = Runtime(data_dir, catalog_interval=None)
    await runtime.open()
    await runtime.delivery.trust_key(key)
    runtime.delivery.cache = VerifiedCache(runtime.delivery.cache.directory, stage=stage)
    return runtime


async def install_at(data_dir: str, key: PublicKey, body: bytes, data: bytes, stop: str) -> int:
    def hook(stage: str) -> None:
        if stage == stop:
            halt(stage)

    runtime = await open_runtime(data_dir, key, hook)
    torn = (
        mock.patch.object(os, "fdopen", torn_fdopen(os.fdopen))
        if stop == "mid-write"
        else contextlib.nullcontext()
    )
    try:
        with torn:
            await runtime.delivery.install_release(body, data)
    except DeliveryError as exc:
        say(f"error {exc.code}")
        return 2
    if stop == "committed":
        halt("committed")
    say("unreached")
    return 2


async def install_loop(data_dir: str, key: PublicKey, releases: list[tuple[bytes, bytes]]) -> int:
    current = ""

    def hook(stage: str) -> None:
        say(f"{stage} {current}")

    runtime = await open_runtime(data_dir, key, hook)
    for body, data in releases:
        current = decode_release(body).version
        await runtime.delivery.install_release(body, data)
        say(f"installed {current}")
    halt("done")
    return 3


def main(argv: list[str]) -> int:
    data_dir, release, artifact, pubkey, stage, *more = argv
    key = PublicKey.decode(Path(pubkey).read_bytes())
    files = [release, artifact, *more]
    releases = [
        (Path(body).read_bytes(), Path(data).read_bytes())
        for body, data in zip(files[::2], files[1::2], strict=True)
    ]
    if stage == "loop":
        return asyncio.run(install_loop(data_dir, key, releases))
    if stage not in STAGES or more:
        raise SystemExit(f"usage: see {__name__}")
    ((body, data),) = releases
    return asyncio.run(install_at(data_dir, key, body, data, stage))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
