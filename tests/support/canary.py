"""A network canary: loopback TCP and UDP listeners that record every contact, so a
browser test can prove that a surface reached nothing.

``Canary`` listens on ephemeral loopback ports: TCP (accepts, records the connection
and the first line it sends, closes) and UDP (records each datagram's source and
size). ``resolver_args`` maps attacker host names onto it with Chromium's
``--host-resolver-rules``. Measured on Chromium 156: a ``MAP pattern 127.0.0.1:PORT``
rule replaces the port too, so ``http://x.attacker.test/`` (port 80) and
``http://x.attacker.test:1234/`` both land on the canary's TCP port.

A canary is only evidence if it can hear: every test that asserts "no hit" must also
show, from a page without the surface's headers, that the same request does hit.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from typing import Literal

from playwright.async_api import Browser, async_playwright

from tests.support.browser import CHROMIUM, CHROMIUM_ARGS

ATTACKER_HOSTS = ("*.attacker.test",)
WAIT_SECONDS = 10
_READ_LIMIT = 512


@dataclass(frozen=True)
class Hit:
    """One contact: ``first_line`` is the start of what a TCP peer sent (an HTTP request
    line, say); for UDP it is empty and ``size`` is the datagram's length."""

    protocol: Literal["tcp", "udp"]
    source: tuple[str, int]
    size: int
    first_line: str = ""


@dataclass
class Canary:
    """Loopback listeners that record contacts; use ``async with Canary.listening()``."""

    tcp_port: int = 0
    udp_port: int = 0
    hits: list[Hit] = field(default_factory=list)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    @classmethod
    @asynccontextmanager
    async def listening(cls) -> AsyncIterator[Canary]:
        canary = cls()
        loop = asyncio.get_running_loop()
        server = await asyncio.start_server(canary._on_tcp, "127.0.0.1", 0)
        transport, _ = await loop.create_datagram_endpoint(
            lambda: _Datagrams(canary), local_addr=("127.0.0.1", 0)
        )
        canary.tcp_port = server.sockets[0].getsockname()[1]
        canary.udp_port = transport.get_extra_info("sockname")[1]
        try:
            yield canary
        finally:
            transport.close()
            server.close()
            await server.wait_closed()

    def tcp_hits(self) -> list[Hit]:
        return [hit for hit in self.hits if hit.protocol == "tcp"]

    def udp_hits(self) -> list[Hit]:
        return [hit for hit in self.hits if hit.protocol == "udp"]

    async def wait_for(self, protocol: Literal["tcp", "udp"]) -> Hit:
        """The first hit over ``protocol``, waiting (on events, not time) if need be; at
        most ``WAIT_SECONDS``."""
        async with asyncio.timeout(WAIT_SECONDS):
            while True:
                self._changed.clear()
                for hit in self.hits:
                    if hit.protocol == protocol:
                        return hit
                await self._changed.wait()

    def record(self, hit: Hit) -> None:
        self.hits.append(hit)
        self._changed.set()

    async def _on_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peername")
        try:
            data = await asyncio.wait_for(reader.read(_READ_LIMIT), 5)
        except (TimeoutError, ConnectionError):
            data = b""
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        self.record(Hit("tcp", (peer[0], peer[1]), len(data), line))
        writer.close()
        with suppress(ConnectionError):
            await writer.wait_closed()


class _Datagrams(asyncio.DatagramProtocol):
    def __init__(self, canary: Canary) -> None:
        self.canary = canary

    def datagram_received(self, data: bytes, addr: tuple[str | object, int]) -> None:
        self.canary.record(Hit("udp", (str(addr[0]), int(addr[1])), len(data)))


def resolver_args(canary: Canary, hosts: Iterable[str] = ATTACKER_HOSTS) -> list[str]:
    """Chromium flags sending every name matching ``hosts`` to the canary's TCP port."""
    rules = ", ".join(f"MAP {pattern} 127.0.0.1:{canary.tcp_port}" for pattern in hosts)
    return [f"--host-resolver-rules={rules}"]


@asynccontextmanager
async def launch_chromium_with(extra_args: Sequence[str]) -> AsyncIterator[Browser]:
    """``tests.support.browser.launch_chromium`` with extra command-line flags."""
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(f"no Chromium at {CHROMIUM}")
    async with async_playwright() as playwright:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, args=[*CHROMIUM_ARGS, *extra_args], headless=True
        )
        try:
            yield browser
        finally:
            await browser.close()
