"""The review page of a change request with 50 page diffs, as a reviewer's browser meets it: over
HTTP, from ``hostcore serve`` on what ``hostcore init`` writes (the embedded default).

    python bench/review_page_http.py

Makes an instance with ``hostcore init`` in a temporary folder, an admin token, serves it on a
loopback port (rate limits off), writes 50 pages of about 3 KB through ``/_/mcp`` with the
official client, proposes one change request editing a line of each (50 word-level diffs), then
times 30 ``GET /_/review/<id>`` inline and side by side (``?view=split``) over one keep-alive
connection. Prints p50/p95 with the machine's load; never asserts timings.
(``bench/review_page.py`` times the same page in process, beside the service's own part.)
"""

from __future__ import annotations

import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from web_pages_http import Server

from tests.e2e.conftest import mcp_session

PORT = 8393
BASE = f"http://127.0.0.1:{PORT}"
PARAGRAPH = "Part {i}: the service keeps its settings in one file and reloads them when the file changes. "


async def proposed(token: str) -> str:
    """50 pages, then one change request editing a line of each; its id."""
    async with mcp_session(f"{BASE}/_/mcp", token) as c:
        await c.call_tool("save_namespace", {"name": "docs", "title": "Docs"})
        hashes = {}
        for n in range(50):
            body = "\n\n".join(PARAGRAPH.format(i=i) for i in range(30))
            hashes[n] = (await c.call_tool("save_page", {"slug": f"docs/p{n}", "body": body})).structured_content["hash"]
        edit = {"oldText": "Part 25: the service", "newText": "Part 25: the daemon"}
        changes = [{"op": "edit", "slug": f"docs/p{n}", "basehash": hashes[n], "edits": [edit]} for n in range(50)]
        made = await c.call_tool("create_change_request", {"changes": changes, "title": "Rename", "reason": "bench"})
        return str(made.structured_content["id"])


def main() -> None:
    hostcore = str(Path(sys.executable).with_name("hostcore"))
    instance = tempfile.mkdtemp() + "/instance"
    subprocess.run([hostcore, "--instance", instance, "init"], check=True, capture_output=True)
    made = subprocess.run([hostcore, "--instance", instance, "token", "create", "--name", "bench", "--scope", "admin"],
                          check=True, capture_output=True, text=True)  # fmt: skip
    token = re.search(r"hc_[A-Za-z0-9_-]+", made.stdout).group(0)  # type: ignore[union-attr]
    server = Server(hostcore, instance, PORT)
    server.start()
    try:
        request = anyio.run(proposed, token)
        with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
            for view in ("", "?view=split"):
                url = f"{BASE}/_/review/{request}{view}"
                answer = http.get(url)  # unmeasured: the first
                assert answer.status_code == 200, (answer.status_code, answer.text[:300])
                spent = []
                for _ in range(30):
                    began = time.perf_counter()
                    answer = http.get(url)
                    spent.append((time.perf_counter() - began) * 1000)
                    assert answer.status_code == 200
                spent.sort()
                print(f"GET /_/review/<id>{view or ' (inline)'}: 50 page diffs, {len(answer.content) // 1024} KB: "
                      f"p50 {statistics.median(spent):.1f} ms, p95 {spent[28]:.1f} ms   load {os.getloadavg()[0]:.2f}")  # fmt: skip
    finally:
        server.stop()


if __name__ == "__main__":
    main()
