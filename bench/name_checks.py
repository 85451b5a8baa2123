"""Benchmark of the checks that guard names and revisions: prints figures, never passes or fails.

- The case check on every create (``LinkGraph.case_variant``: is there a page or folder whose name
  differs only by case?) on a link graph of ``--pages`` pages, half of them in one folder and half
  flat in the namespace, against an exact-slug look-up in the same table (the baseline) and the
  simplest alternative, a NOCASE range scan over the pages under the folder.
- Reading a page at a revision (``read_page_at``, which first finds the id in the page's own
  history, newest first) on a git wiki where the page has ``--commits`` commits, at its oldest
  commit (the worst case), by full id and by 7 digits, against reading the current page, and
  against ``storage.read_at`` alone (the call without the check).

Usage: ``python bench/name_checks.py [--pages 100000] [--commits 500]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hostcore import create_app
from hostcore.domain.pages import Page
from hostcore.domain.principal import SYSTEM
from hostcore.indexes.link_graph import LinkGraph


def per_call_ms(fn: Callable[[], object], repeat: int = 200) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1000


def case_checks(folder: Path, pages: int) -> None:
    graph = LinkGraph(folder / "links.sqlite")
    half = pages // 2
    graph.update([Page(f"notes/projects/p{i}", "t", "") for i in range(half)] + [Page(f"notes/q{i}", "t", "") for i in range(half)])
    db = graph._db()
    baseline = per_call_ms(lambda: db.execute("SELECT 1 FROM pages WHERE slug = ?", ("notes/projects/new",)).fetchone())
    scan = "SELECT 1 FROM pages WHERE slug >= ? COLLATE NOCASE AND slug < ? COLLATE NOCASE AND substr(slug, 1, 14) != ? LIMIT 1"
    naive = per_call_ms(lambda: db.execute(scan, ("notes/projects/", "notes/projects0", "notes/projects")).fetchone(), 20)
    print(f"case check on a link graph of {pages} pages ({half} in notes/projects, {half} flat in notes):")
    print(f"  baseline, exact slug look-up:           {baseline:8.4f} ms")
    for slug in ("notes/projects/new", "notes/new", "notes/Projects/new", "notes/Q7"):
        ms = per_call_ms(lambda slug=slug: graph.case_variant(slug))
        print(f"  case_variant({slug!r:22}) {ms:8.4f} ms  ({ms / baseline:5.1f}x baseline)  -> {graph.case_variant(slug)}")
    print(f"  NOCASE range scan of the big folder:    {naive:8.4f} ms  ({naive / baseline:5.1f}x baseline; not used)")
    graph.close()


def revision_reads(folder: Path, commits: int) -> None:
    app = create_app({"PLUGINS": ["git"], "STORAGE": "git", "PLUGIN_CONFIG": {"git": {"fsync": False}}}, instance_path=folder / "i")
    host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("notes")
    h = wiki.save_page("notes/p", body="v0")["hash"]
    for n in range(1, commits):
        h = wiki.save_page("notes/p", basehash=h, body=f"v{n}")["hash"]
    oldest = wiki.page_history("notes/p", offset=commits - 1, limit=1)["commits"][0]["id"]
    current = per_call_ms(lambda: wiki.read_page("notes/p"), 50)
    unchecked = per_call_ms(lambda: host.storage.read_at("notes/p.md", oldest), 50)
    at_full = per_call_ms(lambda: wiki.read_page_at("notes/p", oldest, None, 0, 100), 20)
    at_short = per_call_ms(lambda: wiki.read_page_at("notes/p", oldest[:7], None, 0, 100), 20)
    print(f"read_page at a revision, page with {commits} commits, the oldest one:")
    print(f"  baseline, read_page (current):          {current:8.3f} ms")
    print(f"  storage.read_at alone (no id check):    {unchecked:8.3f} ms  ({unchecked / current:5.1f}x baseline)")
    print(f"  full id:                                {at_full:8.3f} ms  ({at_full / current:5.1f}x baseline)")
    print(f"  7-digit abbreviation:                   {at_short:8.3f} ms  ({at_short / current:5.1f}x baseline)")
    host.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pages", type=int, default=100_000)
    parser.add_argument("--commits", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-names-") as tmp:
        case_checks(Path(tmp), args.pages)
        revision_reads(Path(tmp), args.commits)


if __name__ == "__main__":
    main()
