"""LineUp as an MCP host: the servers a person configures, connected and supervised.

``config`` reads the ``mcpServers`` file.
"""

from .config import McpConfigError, ServerConfig, load_config, parse_config, server_key

__all__ = ["McpConfigError", "ServerConfig", "load_config", "parse_config", "server_key"]
