"""One racer of test_concurrency: its own process, its own official MCP client.

    python race_worker.py URL TOKEN MODE SLUG BASEHASH INDEX

Connects and warms up (a read, so the connection is open and a legacy handshake is done), prints
``ready``, waits for ``go`` on stdin (the barrier), saves its body with BASEHASH and prints the
outcome as one JSON line.
"""

from __future__ import annotations

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def body_of(index: int) -> str:
    """A body large enough that a torn or interleaved write would show."""
    return f"writer {index} was here\n" * 20_000


async def main(url: str, token: str, mode: str, slug: str, basehash: str, index: int) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
            warm = await c.call_tool("read_page", {"slug": slug})
            assert not warm.is_error, warm.content
            body = body_of(index)
            print("ready", flush=True)
            line = await anyio.to_thread.run_sync(sys.stdin.readline)
            if line.strip() != "go":
                return
            r = await c.call_tool("save_page", {"slug": slug, "basehash": basehash, "body": body})
            out = {"index": index, "is_error": bool(r.is_error), "structured": r.structured_content, "texts": [c.text for c in r.content]}
            print(json.dumps(out), flush=True)


if __name__ == "__main__":
    url, token, mode, slug, basehash, index = sys.argv[1:7]
    anyio.run(main, url, token, mode, slug, basehash, int(index))
