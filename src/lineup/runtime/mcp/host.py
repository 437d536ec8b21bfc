"""All the MCP servers of one config (``McpServers``): started, enabled, disabled, stopped.

The Runtime holds one ``McpServers``; which servers are enabled is the person's
choice, kept by the Runtime and passed in as keys. A disabled server is stopped (its
child ends) and its tools leave with it. Stopping all runs the servers' stops
concurrently, so a Runtime's shutdown takes one server's grace, not the sum.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator

import anyio

from .config import ServerConfig
from .connection import Elicit, McpLimits, McpServer

__all__ = ["STOP_ALL_TIMEOUT_S", "McpServers"]

STOP_ALL_TIMEOUT_S = 15.0
"""Bound on stopping every server. One stop is at most ~6 s (the SDK's graces: stdin,
SIGTERM, SIGKILL); this leaves room without letting a shutdown hang."""

log = logging.getLogger("lineup.runtime.mcp")


class McpServers:
    """The ``McpServer`` of each configured server, by key, in config order."""

    def __init__(
        self,
        configs: Iterable[ServerConfig],
        *,
        elicit: Elicit | None = None,
        on_change: Callable[[McpServer], None] | None = None,
        limits: McpLimits | None = None,
    ) -> None:
        self._servers = {
            config.key: McpServer(config, elicit=elicit, on_change=on_change, limits=limits)
            for config in configs
        }

    def __iter__(self) -> Iterator[McpServer]:
        return iter(self._servers.values())

    def keys(self) -> tuple[str, ...]:
        return tuple(self._servers)

    def get(self, key: str) -> McpServer | None:
        return self._servers.get(key)

    async def start(self, keys: Iterable[str]) -> None:
        """Start the named servers (the enabled ones); unknown keys are ignored."""
        for key in keys:
            await self.enable(key)

    async def enable(self, key: str) -> None:
        server = self._servers.get(key)
        if server is not None:
            await server.start()

    async def disable(self, key: str) -> None:
        server = self._servers.get(key)
        if server is not None:
            await server.stop()

    async def stop(self) -> None:
        """Stop every server, concurrently, within ``STOP_ALL_TIMEOUT_S``."""
        with anyio.move_on_after(STOP_ALL_TIMEOUT_S) as scope:
            async with anyio.create_task_group() as tg:
                for server in self._servers.values():
                    tg.start_soon(server.stop)
        if scope.cancelled_caught:
            log.warning(
                "mcp servers did not all stop in time", extra={"servers": len(self._servers)}
            )
