"""Embedding catch-up of the passage index at scale, beside what the model itself costs.

Prints figures, never passes or fails. Builds a git wiki of ``--pages`` Markdown pages of 1-4 KB
(titles, tags, links, 8 namespaces, one commit, as an import makes), then:

1. the model's own cost: the same pages cut into passages and embedded by wordllama in this
   process, nothing else (pages a second: the ceiling catch-up can approach);
2. catch-up: a host with ``EMBEDDER = "wordllama"`` started on it, timed until nothing is pending
   (pages a second), the storage reads it made, and the size of ``passages.sqlite`` and its vectors;
3. search: ``search`` of a word every page holds, of a rare word and of words no page holds (so
   meaning answers) through the service layer (p50 / p95 ms), and ``similar_pages``;
4. one worker: a fresh process that starts a host on the instance and searches, its resident
   memory (RSS, and PSS: its share of what it shares, such as the mapped vectors) before and after.

Usage: ``python bench/passage_catch_up.py [--pages 20000] [--sample 2000] [--keep DIR]``, then
``--worker DIR`` to measure a worker again on a kept instance. The machine's load
average is printed beside the figures.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from timing import percentiles, timed  # bench/timing.py beside this script

from hostcore import Change, Put
from hostcore.app import build_host
from hostcore.domain.pages import Page
from hostcore.domain.principal import SYSTEM
from hostcore.indexes.passages import split_passages

WORDS = (
    "river meeting budget garden engine ledger harbour winter protocol kitten invoice sensor orchard "
    "library museum tariff glacier voltage recipe bakery compost tractor satellite archive council "
    "migration vaccine lantern pottery furnace quarry violin cathedral festival mortgage rainfall "
    "telescope bicycle warehouse pharmacy ferry timber granite copper wheat barley olive saffron"
).split()


def slug(n: int) -> str:
    return f"ns{n % 8}/b{n % 53:02d}/page-{n}"


def page_bytes(n: int, rng: random.Random) -> bytes:
    size = rng.randrange(1000, 4000)
    sentences: list[str] = []
    while sum(map(len, sentences)) < size:
        words = [rng.choice(WORDS) for _ in range(rng.randrange(6, 16))]
        sentences.append(" ".join(words).capitalize() + ".")
        if rng.random() < 0.15:
            sentences.append("\n\n")
    links = " ".join(f"[[{slug(rng.randrange(n + 1))}]]" for _ in range(3))
    body = f"# Page {n}\n\n" + " ".join(sentences) + f"\n\nSee {links}. Code Z{n}Q.\n"
    return Page(slug=slug(n), title=f"Page {n} {rng.choice(WORDS)}", body=body, tags=(f"t{n % 11}",)).to_bytes()


def rss_mb(field: str = "Rss:") -> float:
    """This process's resident memory (``Pss:``: its share of pages it shares, such as a mapped file)."""
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines():
        if line.startswith(field):
            return int(line.split()[1]) / 1024
    return 0.0


def worker(instance: Path, runs: int) -> None:
    """What one worker holds: a host started on the instance, after searches of every kind."""
    start = rss_mb()
    host = build_host(instance)
    wiki = host.wiki(SYSTEM)
    print(f"worker: RSS {start:.0f} MB bare, {rss_mb():.0f} MB with the host (PSS {rss_mb('Pss:'):.0f} MB)")
    for label, query in (("common", "river"), ("two words", "river zzzunknown"), ("nothing", "zzzunknown")):
        print(f"worker search {label:9}: {percentiles(timed(lambda query=query: wiki.search(query), runs))}")
    print(f"worker similar_pages: {percentiles(timed(lambda: wiki.similar_pages(slug(5)), max(5, runs // 5)))}")
    print(f"worker: RSS {rss_mb():.0f} MB after the searches (PSS {rss_mb('Pss:'):.0f} MB); load average {os.getloadavg()[0]:.2f}")
    host.close()


def build(instance: Path, total: int) -> list[bytes]:
    instance.mkdir(parents=True)
    (instance / "hostcore.toml").write_text(
        'PLUGINS = ["git", "sqlite", "wordllama"]\nSTORAGE = "git"\nSEARCH = "sqlite"\nEMBEDDER = ""\n'
        "[PLUGIN_CONFIG.git]\nfsync = false\n"
    )
    rng = random.Random(total)
    pages = [page_bytes(n, rng) for n in range(total)]
    host = build_host(instance, start=False)
    ops = [Put(f"ns{k}/.namespace.yaml", b"title: NS\n", expect=None) for k in range(8)]
    ops += [Put(slug(n) + ".md", data, expect=None) for n, data in enumerate(pages)]
    host.storage.apply(ops, Change("bench", "import"))
    host.close()
    return pages


def model_cost(pages: list[bytes], sample: int) -> float:
    """Pages a second: cut and embedded by the model alone, in batches of 256 pages."""
    from hostcore_wordllama import WordLlamaEmbedder

    embedder = WordLlamaEmbedder()
    embedder.load()
    chosen = pages[:sample]
    start = time.perf_counter()
    for first in range(0, len(chosen), 256):
        texts = []
        for n, data in enumerate(chosen[first : first + 256], first):
            page = Page.from_bytes(slug(n), data)
            texts += [f"{page.title}\n{piece}" for _, piece in split_passages(page.body)]
        embedder.embed(texts)
    return len(chosen) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=20000)
    parser.add_argument("--sample", type=int, default=2000)
    parser.add_argument("--runs", type=int, default=50)
    parser.add_argument("--worker", type=Path, help="measure one worker on this instance (the bench runs it itself)")
    parser.add_argument("--keep", type=Path, help="build the instance here and keep it (for --worker runs later)")
    args = parser.parse_args()
    if args.worker:
        worker(args.worker, args.runs)
        return
    with tempfile.TemporaryDirectory(prefix="hostcore-passages-") as tmp:
        instance = args.keep or Path(tmp) / "instance"
        if args.keep and args.keep.exists():
            raise SystemExit(f"--keep: {args.keep} exists; measure a worker on it with --worker {args.keep}")
        t0 = time.perf_counter()
        pages = build(instance, args.pages)
        print(f"built {args.pages} pages ({sum(len(p) for p in pages) / 1e6:.0f} MB) in {time.perf_counter() - t0:.1f} s")
        print(f"load average {os.getloadavg()[0]:.2f}")
        cold = model_cost(pages, args.sample)  # every word new to the process's cache
        print(f"model alone: {cold:.0f} pages/s first, {model_cost(pages, args.sample):.0f} pages/s again "
              f"(cut + embed, {args.sample} pages)")  # fmt: skip
        text = (instance / "hostcore.toml").read_text().replace('EMBEDDER = ""', 'EMBEDDER = "wordllama"')
        (instance / "hostcore.toml").write_text(text)
        before = rss_mb()
        t0 = time.perf_counter()
        host = build_host(instance, start=False)
        host.indexes.reindex("search index")
        host.indexes.reindex("link graph", empty=False)
        reads: list[str] = []
        read = host.storage.read_with_hash

        def counted(path: str) -> tuple[bytes, str]:
            reads.append(path)
            return read(path)

        host.storage.read_with_hash = counted  # type: ignore[method-assign]
        t1 = time.perf_counter()
        host.indexes.reindex("passage index")  # every page noted as pending
        t2 = time.perf_counter()
        embedded = host.passages.catch_up()
        took = time.perf_counter() - t2
        print(f"load average {os.getloadavg()[0]:.2f}")
        print(f"noted {args.pages} pages pending in {t2 - t1:.1f} s; start (search index, link graph) {t1 - t0:.1f} s")
        print(f"catch-up: {embedded} pages in {took:.1f} s = {embedded / took:.0f} pages/s; storage reads {len(reads)}")
        sizes = {p.name: p.stat().st_size for p in instance.glob("passages*") if p.is_file()}
        print("files: " + ", ".join(f"{name} {size / 1e6:.1f} MB" for name, size in sorted(sizes.items())))
        print(f"status: {host.indexes.status('passage index')}")
        wiki = host.wiki(SYSTEM)
        print(f"RSS before host {before:.0f} MB, after catch-up {rss_mb():.0f} MB")
        for label, query in (("common", "river"), ("rare", "Z777Q"), ("nothing", "zzzunknown")):
            print(f"search {label:8}: {percentiles(timed(lambda query=query: wiki.search(query), args.runs))}")
        print(f"similar_pages: {percentiles(timed(lambda: wiki.similar_pages(slug(5)), max(5, args.runs // 5)))}")
        print(f"RSS after searches {rss_mb():.0f} MB; load average {os.getloadavg()[0]:.2f}")
        host.close()
        subprocess.run([sys.executable, __file__, "--worker", str(instance), "--runs", str(args.runs)], check=True)


if __name__ == "__main__":
    main()
