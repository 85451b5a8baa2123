"""One writer of test_sections: its own process, its own official MCP client, one section of a shared page.

    python section_worker.py URL TOKEN MODE SLUG SECTION_ID ROUNDS

Connects and reads its section (its rev and text), prints ``ready``, waits for ``go`` on stdin
(the barrier), then replaces its section's text ROUNDS times, each with the rev the previous edit
returned (no read in between), and prints one JSON line: the texts acknowledged, in order, and
the errors met. With SECTION_ID ``-`` it appends a line to the page ROUNDS times instead.
"""

from __future__ import annotations

import json
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def main(url: str, token: str, mode: str, slug: str, section_id: str, rounds: int) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=httpx2.Timeout(120.0)) as http:
        async with Client(streamable_http_client(url, http_client=http), mode=mode) as c:
            await c.list_tools()  # as clients do: the output schemas are checked from now on
            rev, text = "", ""
            if section_id != "-":
                read = await c.call_tool("read_section", {"slug": slug, "section_id": section_id})
                assert not read.is_error, read.content
                rev, text = read.structured_content["rev"], read.structured_content["blocks"][0]["text"]
            print("ready", flush=True)
            if (await anyio.to_thread.run_sync(sys.stdin.readline)).strip() != "go":
                return
            acknowledged, errors = [], []
            for n in range(rounds):
                new = f"{section_id} by writer, edit {n}." if section_id != "-" else f"appended by {token[-6:]} #{n}"
                if section_id == "-":
                    r = await c.call_tool("append_to_page", {"slug": slug, "markdown": new})
                else:
                    args = {"slug": slug, "section_id": section_id, "rev": rev, "old_text": text, "new_text": new}
                    r = await c.call_tool("replace_text", args)
                if r.is_error:
                    errors.append([x.text for x in r.content])
                    continue
                rev, text = r.structured_content["rev"], new
                acknowledged.append(new)
            print(json.dumps({"section_id": section_id, "acknowledged": acknowledged, "errors": errors}), flush=True)


if __name__ == "__main__":
    url, token, mode, slug, section_id, rounds = sys.argv[1:7]
    anyio.run(main, url, token, mode, slug, section_id, int(rounds))
