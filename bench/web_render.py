"""Web pages: render time of a big page and of a big namespace's index page, warm and first.

    python bench/web_render.py [--runs 50] [--firsts 10] [--pages 5000]

Builds a fresh instance on git storage, SQLite search, tokens and web, and
requests pages through the whole Flask app in this process (test client: routing, the signed-in
person, the service call, rendering, sanitising, templates):

- a 100 KB page with 200 wiki-links (half to pages that exist), headings and code blocks:
  warm (kept whole); the first request after an edit of one paragraph (``--firsts`` edits; the
  other blocks are kept); the first request of new text saved through the wiki (rendered ahead
  by the web plugin after the save) and of new text pushed into storage from outside (nothing
  rendered before: every block is; ``--firsts`` pages of new words each); baselines: ``read_page`` (what the page adds) and ``render()`` of the whole page with
  nothing kept (what a first request cost before blocks were kept);
- the index page of a namespace of --pages pages (default widgets: pages, pinned, tags, recent
  changes): warm; the first request after a page of it changed; baseline ``list_pages`` of 100
  of those pages, the MCP tool's default;
- the editor: the edit page of the 100 KB page (its text in the form; EasyMDE and editor.js are
  static files a browser keeps), warm and first in a restarted worker, and the preview of its
  whole text (``POST /_/web/preview/...``: what each pause in typing asks);
- a page of the --pages namespace: its sidebar lists that namespace's page tree;
- a page with 12 attachments (4 images, 4 PDFs, 4 text documents whose text it shows);
- the diff of the 100 KB page between two revisions ten paragraphs apart, words marked, inline
  and side by side;
- the page, the index and the edit page again as the first request of a restarted worker: a new
  process on the same instance (``--firsts`` processes; imports and app made before the clock starts).

Prints p50/p95 per case and the ratio to its baseline; aim: under 50 ms each. Never asserts timings.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from hostcore_web.render import render
from hostcore_web.views import prerender
from timing import percentiles, timed

from hostcore import SYSTEM, Change, Page, Principal, Put, create_app, hookimpl
from hostcore.testing import sign_in_client
from hostcore.testing.documents import pdf_document, png_image

PERSON = Principal("bench", frozenset({"write"}))
CONFIG = {"PLUGINS": ["git", "tokens", "sqlite", "web"], "STORAGE": "git", "SEARCH": "sqlite"}


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


def new_words(seed: int) -> str:
    """The big page with other words: text no cache has seen (same size, links and code)."""
    return big_page().replace("Some text", f"Other text {seed}").replace("return [i", f"return [{seed} + i")


def worker(instance: str) -> None:
    """A restarted worker: a new app on the instance, then the first request of each page, timed."""
    app = create_app(CONFIG, instance_path=Path(instance), plugins=[People()])
    gc.freeze()
    client = app.test_client()
    sign_in_client(client, "bench")
    page = timed(lambda: client.get("/notes/big"), 1)[0]
    index = timed(lambda: client.get("/big/"), 1)[0]
    edit = timed(lambda: client.get("/_/edit/notes/big"), 1)[0]
    print(f"{page} {index} {edit}")
    app.extensions["hostcore"].close()


def restarted(instance: Path, runs: int) -> tuple[list[float], list[float], list[float]]:
    pages, indexes, edits = [], [], []
    for _ in range(runs):
        out = subprocess.run([sys.executable, __file__, "--worker", str(instance)], capture_output=True, text=True, check=True)
        page, index, edit = out.stdout.split()
        pages.append(float(page))
        indexes.append(float(index))
        edits.append(float(edit))
    return pages, indexes, edits


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--firsts", type=int, default=10)
    parser.add_argument("--pages", type=int, default=5000)
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--no-freeze", dest="freeze", action="store_false", help="leave the heap unfrozen (as before hostcore serve froze it)")
    args = parser.parse_args()
    if args.worker:
        return worker(args.worker)
    with tempfile.TemporaryDirectory() as tmp:
        app = create_app(CONFIG, instance_path=Path(tmp) / "instance", plugins=[People()])
        if args.freeze:
            gc.freeze()  # as hostcore serve does in each worker once its app is made
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
        csrf = sign_in_client(client, "bench")
        host.wiki(PERSON).page_facts("big")  # the link graph catches up with the pages written above
        made = time.perf_counter() - start
        print(f"web_render: page of {len(body) // 1000} KB with 200 wiki-links; namespace of {args.pages} pages "
              f"(written and indexed in {made:.1f} s); {args.runs} runs warm, {args.firsts} firsts")  # fmt: skip

        wiki = host.wiki(PERSON)
        targets = {f"notes/target-{i}" for i in range(0, 200, 2)}
        page_base = timed(lambda: wiki.read_page("notes/big"), args.runs)
        first_ever = timed(lambda: client.get("/notes/big"), 1)[0]  # this process's first page: templates, lexers
        page = timed(lambda: client.get("/notes/big"), args.runs)
        assert b"wikilink missing" in client.get("/notes/big").data
        full = timed(lambda: render(body, "notes/big", lambda _t: targets), args.firsts)
        fresh, ahead = [], []
        for n in range(args.firsts):  # written into storage as an outside push is: no event, nothing rendered ahead
            text = Page(f"notes/new-{n}", "New", new_words(n)).to_bytes()
            host.storage.apply([Put(f"notes/new-{n}.md", text, expect=None)], Change(author="bench", message="bench: new text"))
            fresh += timed(lambda n=n: client.get(f"/notes/new-{n}"), 1)
        for n in range(args.firsts):  # saved through the wiki: rendered ahead by the web plugin's background thread
            admin.save_page(f"notes/saved-{n}", body=new_words(100 + n), title="New")
            prerender(host).wait()
            ahead += timed(lambda n=n: client.get(f"/notes/saved-{n}"), 1)
        edits = []
        for n in range(args.firsts):
            edited = body.replace(f"paragraph {n % 4}.", f"paragraph {n % 4} (edit {n}).", 1)
            admin.save_page("notes/big", wiki.read_page("notes/big")["hash"], edited, "Big page")
            edits += timed(lambda: client.get("/notes/big"), 1)
        admin.save_page("notes/big", wiki.read_page("notes/big")["hash"], body, "Big page")
        client.get("/notes/big")

        index_first_ever = timed(lambda: client.get("/big/"), 1)[0]
        index = timed(lambda: client.get("/big/"), args.runs)
        index_base = timed(lambda: wiki.list_pages("big", 0, 100), args.runs)
        index_changed = []
        for n in range(args.firsts):
            slug = f"big/folder-{n}/page-{n}"
            admin.save_page(slug, admin.page(slug).hash, f"changed {n}", f"Page {n}", [f"tag{n}"])
            index_changed += timed(lambda: client.get("/big/"), 1)
        edit_first_ever = timed(lambda: client.get("/_/edit/notes/big"), 1)[0]
        edit_page = timed(lambda: client.get("/_/edit/notes/big"), args.runs)
        assert b"data-preview" in client.get("/_/edit/notes/big").data
        preview = timed(lambda: client.post("/_/web/preview/notes/big", data={"csrf_token": csrf, "body": body}), args.runs)
        typed = []
        for n in range(args.runs):  # a word more each time, as typing does: one block changed
            more = body.replace("paragraph 0.", f"paragraph 0 and word {n}.", 1)
            typed += timed(lambda more=more: client.post("/_/web/preview/notes/big", data={"csrf_token": csrf, "body": more}), 1)
        in_big = timed(lambda: client.get("/big/folder-1/page-1"), args.runs)
        assert b'<nav class="tree"' in client.get("/big/folder-1/page-1").data
        admin.save_page("notes/with-files", body="A page with files.", title="With files")
        for i in range(4):
            for name, data in [(f"photo-{i}.png", png_image(400, 300)), (f"report-{i}.pdf", pdf_document([f"Report {i}."])),
                               (f"notes-{i}.txt", f"Notes {i}: ".encode() + b"words " * 2000)]:  # fmt: skip
                ticket = admin.upload_attachment("notes/with-files", name)
                admin.complete_upload(ticket["upload_url"].rsplit("/", 1)[1], data)
        assert client.get("/notes/with-files").data.count(b'class="file file-') == 12
        with_files = timed(lambda: client.get("/notes/with-files"), args.runs)
        before = wiki.page_history("notes/big", 0, 1)["commits"][0]["id"]
        changed = body
        for n in range(10):
            changed = changed.replace(f"link to [[target-{n * 8}]]", f"link to [[target-{n * 8}]] (see also {n})", 1)
        admin.save_page("notes/big", wiki.read_page("notes/big")["hash"], changed, "Big page")
        after = wiki.page_history("notes/big", 0, 1)["commits"][0]["id"]
        assert b"<ins>" in client.get(f"/_/diff/notes/big?from={before}&to={after}").data
        diff_inline = timed(lambda: client.get(f"/_/diff/notes/big?from={before}&to={after}"), args.runs)
        diff_split = timed(lambda: client.get(f"/_/diff/notes/big?from={before}&to={after}&view=split"), args.runs)
        worker_page, worker_index, worker_edit = restarted(host.instance_path, args.firsts)

        def line(name: str, samples: list[float], base: list[float] | None = None) -> None:
            ratio = f"  ({statistics.median(samples) / statistics.median(base):5.1f}x baseline)" if base else ""
            print(f"  {name:52s} {percentiles(samples)}{ratio}")

        print("page /notes/big (100 KB, 200 links):")
        line("baseline: read_page", page_base)
        line("baseline: render() of the whole page, nothing kept", full)
        line("warm (kept whole)", page, page_base)
        line("first after an edit of one paragraph", edits, full)
        line("first of new text saved through the wiki (rendered ahead)", ahead, full)
        line("first of new text pushed from outside (every block rendered)", fresh, full)
        line("first in a restarted worker (new process)", worker_page, full)
        print(f"  {'first request of this process (templates, lexers)':52s} {first_ever:9.2f} ms")
        print(f"namespace index /big/ ({args.pages} pages):")
        line("baseline: list_pages(big, limit 100)", index_base)
        line("warm", index, index_base)
        line("first after a page of it changed", index_changed, index_base)
        line("first in a restarted worker (new process)", worker_index, index_base)
        print(f"  {'first request of this process':52s} {index_first_ever:9.2f} ms")
        print("editor /_/edit/notes/big (100 KB of text):")
        line("warm", edit_page, page_base)
        line("first in a restarted worker (new process)", worker_edit, page_base)
        line("preview of the whole text, unchanged", preview, full)
        line("preview after a word more (one block changed)", typed, full)
        print(f"  {'first request of this process':52s} {edit_first_ever:9.2f} ms")
        print(f"a page of the {args.pages}-page namespace (its sidebar: the page tree):")
        line("warm", in_big, page_base)
        print("a page with 12 attachments (images, PDFs, text documents):")
        line("warm", with_files, page_base)
        print("diff of /notes/big, ten paragraphs changed (words marked):")
        line("inline", diff_inline, page_base)
        line("side by side", diff_split, page_base)
        host.close()


if __name__ == "__main__":
    main()
