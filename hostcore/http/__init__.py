"""Plain HTTP routes that are neither the MCP endpoint nor pages: an attachment's upload URL and
its download (``files``)."""
