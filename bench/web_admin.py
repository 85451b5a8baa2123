"""The admin's pages: namespaces (list, new, settings, the delete page naming what goes) and people
(list, one account), warm; and deleting and restoring a big namespace (one change each).

    python bench/web_admin.py [--runs 30] [--pages 5000] [--accounts 200]

Builds a fresh instance on git storage, SQLite search, tokens, accounts and web, with a namespace
of --pages pages (one attachment in ten) and --accounts accounts, and requests the pages through
the whole Flask app in this process (test client: routing, the signed-in admin, the service or
plugin call, templates, the site's frame). Prints p50/p95 per page; aim: under 100 ms each (issue
28). Never asserts timings.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from hostcore_accounts import accounts
from timing import percentiles, timed

from hostcore import SYSTEM, Change, Page, Principal, Put, create_app
from hostcore.testing import sign_in_client

ADMIN = Principal("person:root", frozenset({"admin"}))
CONFIG = {"PLUGINS": ["git", "tokens", "sqlite", "accounts", "web"], "STORAGE": "git", "SEARCH": "sqlite"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--accounts", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(CONFIG, instance_path=Path(tmp) / "instance")
        gc.freeze()  # as hostcore serve does in each worker once its app is made
        host = app.extensions["hostcore"]
        system = host.wiki(SYSTEM)
        system.save_namespace("big", title="Big")
        puts = [Put(f"big/folder-{i % 50}/page-{i}.md", Page(f"big/folder-{i % 50}/page-{i}", f"Page {i}", f"body {i}").to_bytes(),
                    expect=None) for i in range(args.pages)]  # fmt: skip
        puts += [Put(f"big/folder-{i % 50}/page-{i}.files/note.txt", b"a note", expect=None) for i in range(0, args.pages, 10)]
        host.storage.apply(puts, Change(author="bench", message="bench: many pages"))
        store = accounts(host)
        store.create("root", "a long password", ["admin"])
        for i in range(args.accounts):
            store.create(f"person-{i}", None, ["write"], [f"ns-{i % 7}"] if i % 2 else None)
        client = app.test_client()
        sign_in_client(client, "root")
        system.page_facts("big")  # the link graph catches up with the pages written above
        print(f"web_admin: namespace of {args.pages} pages, {args.accounts} accounts; {args.runs} runs warm")
        for path in ("/_/namespaces", "/_/namespaces/new", "/_/namespaces/big/settings", "/_/namespaces/big/delete",
                     "/_/people", "/_/people/person-1"):  # fmt: skip
            assert client.get(path).status_code == 200, path
            print(f"  {path:32} {percentiles(timed(lambda p=path: client.get(p), args.runs))}")
        admin = host.wiki(ADMIN)
        start = time.perf_counter()
        done = admin.delete_namespace("big", admin.namespace_contents("big")["digest"])
        deleted = time.perf_counter() - start
        start = time.perf_counter()
        back = admin.restore_namespace("big")
        restored = time.perf_counter() - start
        print(f"  delete_namespace of {done['pages']} pages and {done['attachments']} attachments: {deleted * 1000:.0f} ms; "
              f"restore_namespace of {back['pages']} pages: {restored * 1000:.0f} ms")  # fmt: skip
        host.close()


if __name__ == "__main__":
    main()
