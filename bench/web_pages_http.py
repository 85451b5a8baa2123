"""Every web page a person reaches, as their browser meets it: over HTTP from ``hostcore serve`` on
what ``hostcore init`` writes (the embedded default: git, tantivy, the wordllama embedder, web,
accounts, oauth).

    python bench/web_pages_http.py [--pages 2000] [--runs 20]

Makes an instance with ``hostcore init`` in a temporary folder, serves it on a loopback port (rate
limits off), fills it through ``/_/mcp`` with the official client (a namespace of --pages pages in
folders, a guide page with six headings and a comment under each, an attachment, a change request),
signs in as the first admin through the sign-in form, then:

- first: each page's first request after a restart of the server (the pages in the order below,
  so only the very first one pays for the templates they share);
- warm: p50/p95 of --runs requests over one keep-alive connection.

Prints each page's figures and the machine's load; never asserts timings (every answer's status
is checked). Aim (issue 28): under 100 ms for any page.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.e2e.conftest import mcp_session

PORT = 8394
BASE = f"http://127.0.0.1:{PORT}"


def pages_to_time(request_id: str) -> list[str]:
    return [
        "/", "/notes/", "/notes/guide", "/notes/guide?thread=part-0", "/big/folder-1/page-1", "/_/pages/big",
        "/_/search?q=words", "/_/changes", "/_/history/notes/guide", "/_/blame/notes/guide", "/_/edit/notes/guide",
        "/_/edit-section/notes/guide?section=part-1", "/_/new", "/_/move/notes/guide", "/_/delete/notes/guide",
        "/_/web/page-names?q=gui", "/_/web/files/notes/guide/note.txt", "/_/account/tokens", "/_/account/sessions",
        "/_/account/password", "/_/account/activity", "/_/namespaces", "/_/namespaces/new",
        "/_/namespaces/notes/settings", "/_/people", "/_/people/admin", "/_/apps", "/_/review",
        f"/_/review/{request_id}", "/_/login",
    ]  # fmt: skip


class Server:
    """``hostcore serve`` on ``instance`` at a loopback ``port``, rate limits off."""

    def __init__(self, hostcore: str, instance: str, port: int = PORT) -> None:
        self.hostcore, self.instance, self.port = hostcore, instance, port
        self.base = f"http://127.0.0.1:{port}"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "HOSTCORE_RATE_LIMITS": json.dumps({"requests": "off", "writes": "off"})}
        self.proc = subprocess.Popen([self.hostcore, "--instance", self.instance, "serve", "--bind", f"127.0.0.1:{self.port}"],
                                     env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
        for _ in range(600):
            try:
                if httpx.get(f"{self.base}/_/health").status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise SystemExit("the server did not answer /_/health")

    def stop(self) -> None:
        if self.proc is not None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            self.proc.wait(30)


async def fill(token: str, pages: int) -> str:
    """The wiki's pages, comments, attachment and a change request; the request's id."""
    async with mcp_session(f"{BASE}/_/mcp", token) as c:
        for name in ("notes", "big"):
            await c.call_tool("save_namespace", {"name": name, "title": name.title()})
        guide = "\n\n".join(f"## Part {i}\n\nSome words about part {i} of the guide." for i in range(6))
        await c.call_tool("save_page", {"slug": "notes/guide", "title": "Guide", "body": guide})
        for i in range(6):
            await c.call_tool("post_comment", {"slug": "notes/guide", "section": f"part-{i}", "text": f"a comment on part {i}"})
        for first in range(0, pages, 50):
            ops = [{"op": "save", "slug": f"big/folder-{n % 20}/page-{n}", "body": f"Page {n} holds some words.\n"}
                   for n in range(first, min(first + 50, pages))]  # fmt: skip
            made = await c.call_tool("apply_changes", {"changes": ops})
            assert not made.is_error, made
        ticket = (await c.call_tool("upload_attachment", {"slug": "notes/guide", "filename": "note.txt"})).structured_content
        httpx.post(ticket["upload_url"], files={"file": ("note.txt", b"a note " * 200)}).raise_for_status()
        page = (await c.call_tool("read_page", {"slug": "notes/guide"})).structured_content
        edit = {"op": "edit", "slug": "notes/guide", "basehash": page["hash"], "edits": [{"oldText": "part 1 of", "newText": "part one of"}]}
        made = await c.call_tool("create_change_request", {"changes": [edit], "title": "Wording", "reason": "bench"})
        return str(made.structured_content["id"])


def signed_in(password: str) -> httpx.Client:
    http = httpx.Client(base_url=BASE, timeout=30, headers={"Origin": BASE})
    form = http.get("/_/login").text
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', form)
    assert csrf, "no CSRF token on the sign-in form"
    answer = http.post("/_/login", data={"name": "admin", "password": password, "csrf_token": csrf.group(1)})
    assert answer.status_code in (200, 303), answer.status_code
    return http


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=2000, help="pages of the big namespace")
    ap.add_argument("--runs", type=int, default=20, help="warm requests of each page")
    args = ap.parse_args()
    hostcore = str(Path(sys.executable).with_name("hostcore"))
    instance = tempfile.mkdtemp() + "/instance"
    made = subprocess.run([hostcore, "--instance", instance, "init"], check=True, capture_output=True, text=True)
    password = re.search(r"password \(shown once; keep it safe\): (\S+)", made.stdout + made.stderr).group(1)  # type: ignore[union-attr]
    token = re.search(r"hc_[A-Za-z0-9_-]+", made.stdout + made.stderr).group(0)  # type: ignore[union-attr]
    server = Server(hostcore, instance)
    server.start()
    try:
        request_id = anyio.run(fill, token, args.pages)
        paths = pages_to_time(request_id)
        server.stop()
        server.start()  # first requests: a restarted server
        load_before = os.getloadavg()[0]
        first: dict[str, float] = {}
        http = signed_in(password)
        try:
            for path in paths:
                began = time.perf_counter()
                answer = http.get(path)
                first[path] = (time.perf_counter() - began) * 1000
                assert answer.status_code == 200, (path, answer.status_code)
            warm: dict[str, list[float]] = {path: [] for path in paths}
            for _ in range(args.runs):
                for path in paths:
                    began = time.perf_counter()
                    answer = http.get(path)
                    warm[path].append((time.perf_counter() - began) * 1000)
                    assert answer.status_code == 200, (path, answer.status_code)
        finally:
            http.close()
    finally:
        server.stop()
    print(f"web pages over HTTP, `hostcore init`'s config, {args.pages} pages in a namespace; load {load_before:.2f} "
          f"before, {os.getloadavg()[0]:.2f} after (2 workers)")  # fmt: skip
    print(f"  {'page':48} {'first ms':>9} {'warm p50':>9} {'warm p95':>9}")
    for path in paths:
        samples = sorted(warm[path])
        p95 = samples[min(len(samples) - 1, int(len(samples) * 0.95))]
        print(f"  {path[:48]:48} {first[path]:9.1f} {statistics.median(samples):9.1f} {p95:9.1f}")
    print(f"  slowest first request {max(first.values()):.1f} ms, slowest warm p50 "
          f"{max(statistics.median(s) for s in warm.values()):.1f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
