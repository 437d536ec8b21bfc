"""LineUp as an MCP host: the servers a person configures, connected and supervised.

``config`` reads the ``mcpServers`` file; ``McpServer`` (``connection``) is one server,
kept up and called; ``McpServers`` (``host``) holds them all.
"""

from .config import McpConfigError, ServerConfig, load_config, parse_config, server_key
from .connection import UI_EXTENSION, UI_MIME_TYPE, Elicit, McpLimits, McpServer, McpState, Progress
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
