"""Every web page a person reaches: its first server render in a restarted worker, and warm.

    python bench/web_pages.py [--runs 20] [--firsts 5] [--pages 2000] [--comments 60]

Builds a fresh instance on git storage, SQLite search, tokens, accounts, oauth and web: a
namespace of --pages pages (its page tree and index), a guide page with six headings and
--comments comments across their threads, an attachment, a few changes by two clients. Then:

- first: each page's first request in a new process on that instance (app made, person signed
  in, before the clock starts; the pages in the order below, so only the very first one pays for
  the templates it shares with the rest): the median of --firsts processes, and the slowest;
- warm: p50/p95 of --runs requests in this process.

Pages come through the whole Flask app (test client: routing, the signed-in admin, the service
calls, rendering, templates, the site's frame). Prints the machine's load before and after.
Aim (issue 28): under 100 ms on the server for any page. Never asserts timings.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from hostcore_accounts import accounts
from timing import percentiles, timed

from hostcore import SYSTEM, Change, Page, Principal, Put, create_app
from hostcore.testing import sign_in_client

CONFIG = {"PLUGINS": ["git", "tokens", "sqlite", "accounts", "oauth", "web"], "STORAGE": "git", "SEARCH": "sqlite",
          "RATE_LIMITS": {"requests": "off", "writes": "off"}}  # the bench measures pages, not the limits
GUIDE = "Start here.\n\n" + "".join(f"## Part {i}\n\nSome words about part {i}, with a [[notes/p-{i}]] link.\n\n" for i in range(6))


def urls(before: str, after: str) -> list[str]:
    """One URL of each page a person reaches (docs/web.md lists them), the comments page among them."""
    return [
        "/", "/notes/", "/notes/guide", "/notes/guide?thread=part-0", "/big/folder-1/page-1", "/_/pages/big",
        "/_/search?q=words", "/_/changes", "/_/changes?person=root&client=web", "/_/history/notes/guide",
        f"/_/diff/notes/guide?from={before}&to={after}", "/_/blame/notes/guide", "/_/edit/notes/guide",
        "/_/edit-section/notes/guide?section=part-1", "/_/new", "/_/move/notes/guide", "/_/delete/notes/guide",
        "/_/web/page-names?q=gui", "/_/web/files/notes/guide/note.txt", "/notes/missing",
        "/_/account/tokens", "/_/account/sessions", "/_/account/password", "/_/account/activity", "/_/namespaces",
        "/_/namespaces/new", "/_/namespaces/notes/settings", "/_/namespaces/notes/delete", "/_/people",
        "/_/people/root", "/_/apps", "/_/login",
    ]  # fmt: skip


def worker(instance: str, paths: list[str]) -> None:
    """A restarted worker: a new app on the instance, then each page's first request, timed (JSON on stdout)."""
    app = create_app(CONFIG, instance_path=Path(instance))
    gc.freeze()
    client = app.test_client()
    sign_in_client(client, "root")
    statuses: list[int] = []
    times = [timed(lambda p=p: statuses.append(client.get(p).status_code), 1)[0] for p in paths]
    print(json.dumps({"ms": times, "statuses": statuses}))
    app.extensions["hostcore"].close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--firsts", type=int, default=5)
    parser.add_argument("--pages", type=int, default=2000)
    parser.add_argument("--comments", type=int, default=60)
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker[0], json.loads(args.worker[1]))
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(CONFIG, instance_path=Path(tmp) / "instance")
        gc.freeze()  # as hostcore serve does in each worker once its app is made
        host = app.extensions["hostcore"]
        system = host.wiki(SYSTEM)
        system.save_namespace("notes", title="Notes")
        system.save_namespace("big", title="Big")
        puts = [Put(f"big/folder-{i % 50}/page-{i}.md", Page(f"big/folder-{i % 50}/page-{i}", f"Page {i}", f"body {i}").to_bytes(),
                    expect=None) for i in range(args.pages)]  # fmt: skip
        host.storage.apply(puts, Change(author="bench", message="bench: many pages"))
        accounts(host).create("root", "a long password", ["admin"])
        root = Principal("root", frozenset({"admin"}))
        web = host.wiki(Principal("root", frozenset({"admin"}), client="web"))
        bot = host.wiki(Principal("helper", frozenset({"write"}), client="claude-code 2.1"))
        system.save_page("notes/guide", body=GUIDE, title="Guide")
        before = system.page_history("notes/guide", 0, 1)["commits"][0]["id"]
        rev = next(s["rev"] for s in bot.outline("notes/guide")["sections"] if s["section_id"] == "part-2")
        bot.save_section("notes/guide", "part-2", rev, "## Part 2\n\nOther words about part 2.\n")
        web.edit_page("notes/guide", web.read_page("notes/guide")["hash"], [{"oldText": "Start here.", "newText": "Start here, please."}])
        after = system.page_history("notes/guide", 0, 1)["commits"][0]["id"]
        ticket = system.upload_attachment("notes/guide", "note.txt")
        system.complete_upload(ticket["upload_url"].rsplit("/", 1)[1], b"a note " * 200)
        for i in range(args.comments):
            (bot if i % 2 else web).post_comment("notes/guide", f"part-{i % 6}", f"Comment {i} on part {i % 6}: words " * 3)
        host.wiki(root).page_facts("big")  # the link graph catches up with the pages written above
        client = app.test_client()
        sign_in_client(client, "root")
        paths = urls(before, after)
        for path in paths:
            status = client.get(path).status_code
            assert status == (404 if path == "/notes/missing" else 200), (path, status)
        firsts: list[list[float]] = [[] for _ in paths]
        for _ in range(args.firsts):
            out = subprocess.run([sys.executable, __file__, "--worker", str(host.instance_path), json.dumps(paths)],
                                 capture_output=True, text=True, check=True)  # fmt: skip
            got = json.loads(out.stdout.strip().splitlines()[-1])
            bad = [(p, s) for p, s in zip(paths, got["statuses"], strict=True) if s != (404 if p == "/notes/missing" else 200)]
            assert not bad, f"a restarted worker did not get these pages: {bad}"
            for i, ms in enumerate(got["ms"]):
                firsts[i].append(ms)
        print(f"web_pages: {args.pages} pages in a namespace, {args.comments} comments on one page; {args.runs} runs warm, "
              f"{args.firsts} restarted workers; load before {load_before[0]:.2f} {load_before[1]:.2f} (1, 5 min)")  # fmt: skip
        print(f"  {'page':48s} {'first (median, slowest)':>26s}   warm")
        for path, samples in zip(paths, firsts, strict=True):
            statuses: set[int] = set()
            warm = timed(lambda p=path, seen=statuses: seen.add(client.get(p).status_code), args.runs)
            assert statuses == {404 if path == "/notes/missing" else 200}, (path, statuses)
            print(f"  {path[:48]:48s} {statistics.median(samples):9.2f} ms {max(samples):9.2f} ms   {percentiles(warm)}")
        load_after = os.getloadavg()
        print(f"  load after {load_after[0]:.2f} {load_after[1]:.2f} (1, 5 min) on {os.cpu_count()} cores")
        host.close()


if __name__ == "__main__":
    main()
