"""What the bench scripts share to call hostcore's tools over HTTP: the raw JSON-RPC ``tools/call``
request a client sends to ``/_/mcp`` (no SDK: the figures are the server's), a keep-alive client
for it, and what the server's processes hold in memory (from /proc)."""

from __future__ import annotations

import json
import os
import time
from http.client import HTTPConnection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

PROTOCOL = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL,
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def tool_request(token: str, tool: str, arguments: dict[str, Any]) -> tuple[dict[str, str], bytes]:
    """(headers, body) of a ``tools/call`` of ``tool`` with a bearer ``token``."""
    headers = {
        "Authorization": f"Bearer {token}",
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
        "Mcp-Method": "tools/call",
        "Mcp-Name": tool,
    }
    payload = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments, "_meta": META}}
    return headers, json.dumps(payload).encode()


class ToolClient:
    """Tool calls over one keep-alive connection to ``mcp_url`` (the standard library's client: the
    cheapest there is, so the client takes little of the cores the server shares)."""

    def __init__(self, mcp_url: str, token: str, timeout: float = 300) -> None:
        parts = urlsplit(mcp_url)
        self.path, self.token = parts.path, token
        self.http = HTTPConnection(parts.hostname, parts.port, timeout=timeout)

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """(milliseconds, the result) of one call; the result's ``isError`` is left to the caller."""
        headers, body = tool_request(self.token, tool, arguments)
        start = time.perf_counter()
        try:
            self.http.request("POST", self.path, body=body, headers=headers)
            response = self.http.getresponse()
            text = response.read()
        except (OSError, ConnectionError):  # the server closed the kept-alive connection: once more on a new one
            self.http.close()
            start = time.perf_counter()
            self.http.request("POST", self.path, body=body, headers=headers)
            response = self.http.getresponse()
            text = response.read()
        elapsed = (time.perf_counter() - start) * 1000
        if response.status != 200:
            return elapsed, {"isError": True, "status": response.status, "text": text[:300].decode(errors="replace")}
        return elapsed, json.loads(text).get("result", {"isError": True, "text": text[:300].decode(errors="replace")})

    def close(self) -> None:
        self.http.close()


def memory_mb(pid: int) -> tuple[float, float, float]:
    """(RSS, PSS, anonymous) of process ``pid`` in MB. PSS counts pages shared with other processes
    (a memory map both workers read) in part, so it shows what each worker holds alone; anonymous
    is its heap, what no file backs: RSS less it is files mapped (the vectors, the search index's
    files, libraries), page cache the kernel shares between processes and may take back."""
    try:
        fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:])
    except OSError:
        return 0.0, 0.0, 0.0
    rss, pss, anonymous = (int(fields[k].split()[0]) / 1024 for k in ("Rss", "Pss", "Anonymous"))
    return rss, pss, anonymous


def load() -> float:
    """The machine's load, the 1-minute average: printed beside each figure."""
    return os.getloadavg()[0]
