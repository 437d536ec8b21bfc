"""MCP servers hosted by the Runtime (issue 24): their config, connections, tools in
the inventory and the calls agents make of them."""
