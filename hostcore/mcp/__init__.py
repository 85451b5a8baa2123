"""The MCP adapter: the Flask view at ``/_/mcp`` (transport), the SDK endpoint, the thread-loop bridge."""
