"""What the start-up check of a derived SQLite file costs. Prints figures, never pass/fail.

    python bench/derived_check.py --pages 50000

Builds a search index (hostcore-sqlite-search) and a link graph of ``--pages`` synthetic pages,
then times, per file, opening it the way a store does (baseline: connect and read the schema)
against :func:`hostcore.recover_sqlite` at start-up: a file changed since its last check (``PRAGMA
quick_check`` under the file's lock) and an unchanged one (``NAME.checked`` matches: no check),
median of ``--runs``. The OS page cache is warm, as at a restart; a cold cache costs a read of the
file.
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path

from hostcore import Page, SearchDoc, recover_sqlite
from hostcore.indexes.link_graph import LinkGraph
from hostcore_sqlite_search import SqliteSearch

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau".split()


def body(i: int) -> str:
    words = [WORDS[(i * 7 + k * 13) % len(WORDS)] + str((i + k) % 500) for k in range(300)]
    return " ".join(words) + f" [[n{i % 20}/p{(i + 1)}]] [[n{i % 20}/p{(i * 3) % 1000}]]"


def timed(fn, runs: int) -> float:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples) * 1000


def open_only(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("SELECT count(*) FROM sqlite_master").fetchone()
    db.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pages", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        search = SqliteSearch(root / "search")
        graph = LinkGraph(root / "links.sqlite")
        for start in range(0, args.pages, 1000):
            pages = [Page(f"n{i % 20}/p{i}", f"Page {i}", body(i), hash=f"h{i}") for i in range(start, min(start + 1000, args.pages))]
            search.update([SearchDoc(p.slug, p.title, p.body, (), p.hash) for p in pages])
            graph.update(pages)
        search.optimize()
        search.close()
        graph.close()
        for name, path in (("search index", search.path), ("link graph", root / "links.sqlite")):
            checked = path.with_name(path.name + ".checked")

            def changed(checked: Path = checked, path: Path = path, name: str = name) -> None:
                checked.unlink(missing_ok=True)
                recover_sqlite(path, name)

            base = timed(lambda path=path: open_only(path), args.runs)
            check = timed(changed, args.runs)
            unchanged = timed(lambda path=path, name=name: recover_sqlite(path, name), args.runs)
            size = path.stat().st_size / 1e6
            print(
                f"{name}: {args.pages} pages, {size:.1f} MB; open {base:.2f} ms; start-up check of a changed file "
                f"{check:.1f} ms ({check / base:.0f}x), of an unchanged file {unchanged:.2f} ms ({unchanged / base:.1f}x)"
            )


if __name__ == "__main__":
    main()
