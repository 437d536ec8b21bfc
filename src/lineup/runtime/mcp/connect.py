"""The gateway's two hooks into the connection layer: ``connect`` makes the
``McpServer`` of one configured server, ``listing`` turns what a ready one listed into
the snapshots the store keeps (``servers.McpToolSnapshot``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .config import ServerConfig
from .connection import Elicit, McpLimits, McpServer, McpState
from .servers import McpToolSnapshot

__all__ = ["PROGRESS_INTERVAL_S", "connect", "listing"]

PROGRESS_INTERVAL_S = 0.25
"""At most one progress report per call this often: each becomes a durable
``tool.progress`` for the agent, so a flood of them is coalesced (the newest wins)."""


def connect(
    elicit: Elicit | None = None,
) -> Callable[[ServerConfig, Callable[[], None]], McpServer]:
    """The gateway's ``connect``: an (unstarted) ``McpServer`` that calls ``on_change``
    whenever its state or tools change."""

    def make(config: ServerConfig, on_change: Callable[[], None]) -> McpServer:
        limits = McpLimits(progress_interval_s=PROGRESS_INTERVAL_S)
        return McpServer(
            config, elicit=elicit, on_change=lambda _server: on_change(), limits=limits
        )

    return make


def listing(
    server: McpServer,
) -> tuple[tuple[McpToolSnapshot, ...], Mapping[str, str | None]] | None:
    """What a ready server lists (``None`` before it first did)."""
    info = server.info
    if info is None or server.state is not McpState.READY:
        return None
    tools = tuple(
        McpToolSnapshot(
            name=tool.name,
            input_schema=dict(tool.input_schema),
            title=tool.title,
            description=tool.description,
            output_schema=None if tool.output_schema is None else dict(tool.output_schema),
            read_only=bool(tool.read_only),
            destructive=tool.destructive,
            ui_resource_uri=tool.ui_resource_uri,
            visibility=tuple(str(v) for v in tool.visibility),
        )
        for tool in info.tools
    )
    about = {"server_name": info.name, "server_version": info.version, "title": info.title}
    return tools, about
