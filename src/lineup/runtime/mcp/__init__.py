"""LineUp as an MCP host (issue 24): the servers a person configures, connected and
supervised, their tools in the inventory, and the calls agents make of them.

``config`` reads the ``mcpServers`` file; ``McpServer`` (``connection``) is one server,
kept up and called; ``servers`` keeps what the person decided about each and what it
lists; ``calls`` and ``call_store`` are the calls' rules and their rows; ``gateway`` runs
it all for the Runtime. The connection layer (and with it the MCP SDK) is imported only
when one of its names is first used: a Runtime without MCP servers never loads it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .config import McpConfigError, ServerConfig, load_config, parse_config, server_key

if TYPE_CHECKING:
    from .connection import (
        UI_EXTENSION,
        UI_MIME_TYPE,
        Elicit,
        McpLimits,
        McpServer,
        McpState,
        Progress,
    )
    from .host import McpServers
    from .results import ElicitAnswer, McpCallError, McpCallResult, McpResource
    from .tools import McpTool, RejectedTool, RejectionReason, ServerInfo

__all__ = [
    "UI_EXTENSION",
    "UI_MIME_TYPE",
    "Elicit",
    "ElicitAnswer",
    "McpCallError",
    "McpCallResult",
    "McpConfigError",
    "McpLimits",
    "McpResource",
    "McpServer",
    "McpServers",
    "McpState",
    "McpTool",
    "Progress",
    "RejectedTool",
    "RejectionReason",
    "ServerConfig",
    "ServerInfo",
    "load_config",
    "parse_config",
    "server_key",
]

_LAZY = {
    **dict.fromkeys(
        ("UI_EXTENSION", "UI_MIME_TYPE", "Elicit", "McpLimits", "McpServer", "McpState"),
        "connection",
    ),
    "Progress": "connection",
    "McpServers": "host",
    **dict.fromkeys(("ElicitAnswer", "McpCallError", "McpCallResult", "McpResource"), "results"),
    **dict.fromkeys(("McpTool", "RejectedTool", "RejectionReason", "ServerInfo"), "tools"),
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
