"""Web pages: render time of a big page and of a big namespace's index page.

    python bench/web_render.py [--runs 50] [--pages 5000]

Builds a fresh instance on the embedded default (git storage, SQLite search, tokens, web) and
requests pages through the whole Flask app in this process (test client: routing, the signed-in
person, the service call, rendering, sanitising, templates):

- a 100 KB page with 200 wiki-links (half to pages that exist), headings and code blocks;
  baseline: the same page's ``read_page`` service call alone, so the ratio is what the page adds;
  the first request renders it (shown apart), later ones find it kept by hash;
- the index page of a namespace of --pages pages (default widgets: pages, pinned, tags, recent
  changes); the first request reads every page once for its tags and pin (kept by hash after that),
  so it is shown apart; baseline: ``list_pages`` of 100 of those pages, the MCP tool's default.

Prints p50/p95 per case and the ratio to its baseline; aim: under 50 ms each. Never asserts timings.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from timing import percentiles, timed

from hostcore import SYSTEM, Change, Page, Principal, Put, create_app, hookimpl

PERSON = Principal("bench", frozenset({"write"}))


class People:
    @hookimpl
    def find_person(self, name, host):
        return PERSON if name == "bench" else None


def big_page() -> str:
    parts = ["# A big page\n"]
    n = 0
    while sum(len(p) for p in parts) < 100_000:
        parts.append(f"\n## Section {n}\n\n")
        for i in range(4):
            link = f"[[target-{(n * 4 + i) % 200}]]" if (n * 4 + i) < 200 else "plain words"
            parts.append(f"Some text with *emphasis*, `code` and a link to {link} in paragraph {i}. " * 3 + "\n\n")
        if n % 10 == 0:
            parts.append("```python\ndef f(x):\n    return [i * x for i in range(10)]\n```\n")
        n += 1
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--pages", type=int, default=5000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app({"PLUGINS": ["git", "tokens", "sqlite", "web"], "STORAGE": "git", "SEARCH": "sqlite"},
                         instance_path=Path(tmp) / "instance", plugins=[People()])  # fmt: skip
        host = app.extensions["hostcore"]
        admin = host.wiki(SYSTEM)
        admin.save_namespace("notes", title="Notes")
        admin.save_namespace("big", title="Big")
        body = big_page()
        admin.save_page("notes/big", body=body, title="Big page")
        for i in range(0, 200, 2):
            admin.save_page(f"notes/target-{i}", body="x", title=f"Target {i}")
        start = time.perf_counter()
        puts = [
            Put(f"big/folder-{i % 50}/page-{i}.md", Page(f"big/folder-{i % 50}/page-{i}", f"Page {i}", f"body {i}",
                                                       tags=(f"tag{i % 30}",), pin=i % 500 == 0).to_bytes(), expect=None)
            for i in range(args.pages)
        ]  # fmt: skip
        host.storage.apply(puts, Change(author="bench", message="bench: many pages"))
        client = app.test_client()
        with client.session_transaction() as session:
            session["person"] = "bench"
        host.wiki(PERSON).page_facts("big")  # the link graph catches up with the pages written above
        made = time.perf_counter() - start
        print(f"web_render: page of {len(body) // 1000} KB with 200 wiki-links; namespace of {args.pages} pages "
              f"(written and indexed in {made:.1f} s); {args.runs} runs each")  # fmt: skip

        wiki = host.wiki(PERSON)
        page_base = timed(lambda: wiki.read_page("notes/big"), args.runs)
        page_cold = timed(lambda: client.get("/notes/big"), 1)  # rendered, then kept by hash
        page = timed(lambda: client.get("/notes/big"), args.runs)
        assert b"wikilink" in client.get("/notes/big").data
        index_cold = timed(lambda: client.get("/big/"), 1)
        index = timed(lambda: client.get("/big/"), args.runs)
        index_base = timed(lambda: wiki.list_pages("big", 0, 100), args.runs)

        def line(name: str, samples: list[float], base: list[float]) -> None:
            ratio = sorted(samples)[len(samples) // 2] / sorted(base)[len(base) // 2]
            print(f"  {name:44s} {percentiles(samples)}  ({ratio:5.1f}x baseline)")

        print(f"  {'baseline: read_page of the big page':44s} {percentiles(page_base)}")
        line("GET /notes/big (100 KB, 200 links)", page, page_base)
        print(f"  {'GET /notes/big (first request, renders)':44s} {page_cold[0]:9.2f} ms")
        print(f"  {'baseline: list_pages(big, limit 100)':44s} {percentiles(index_base)}")
        line(f"GET /big/ ({args.pages} pages, warm)", index, index_base)
        print(f"  {'GET /big/ (first request, reads tags+pins)':44s} {index_cold[0]:9.2f} ms")
        host.close()


if __name__ == "__main__":
    main()
