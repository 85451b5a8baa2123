"""The whole ``search`` tool call at wiki scale, per query shape, through the MCP endpoint.

    python bench/search_latency.py --pages 50000 --compare 42b8f16 [--rounds 20] [--keep DIR]
    python bench/search_latency.py --pages 50000 --engine tantivy --keep DIR

Builds (or, with ``--keep``, reuses) an instance of ``--pages`` synthetic pages on git storage with
the sqlite search index (without an embedder; ``--engine tantivy`` for the
tantivy plugin instead; pages from
``bench/search_engines.py``'s corpus, imported in one ``storage.apply`` batch, then indexed by
host start-up). Then one process per variant serves it in-process (Flask's test client, so no
network): this tree, and with ``--compare REV`` the code of git revision REV (``git archive`` of
``hostcore``, ``plugins/sqlite-search`` and ``plugins/tantivy``, on ``PYTHONPATH``; a revision with another index format
builds its own index file at its start-up, untimed). The parent sends each query to the variants in
turns (who goes first alternates), so load from elsewhere on the machine falls on both alike.

Each call is a JSON-RPC ``tools/call search`` POST to ``/_/mcp`` with a bearer token (rate limits
off): the transport, token check, tool validation, service, engine and result shaping. Shapes:
words by the share of pages holding them (every page, half, 5%, rare, none), several words, a rare
word with a common one, phrases, prefixes with and without a prefix index, OR, NOT, tag filters,
a namespace argument, a token limited to two namespaces, a second page (asked right after the
first, unmeasured, as a client pages). Prints p50/p95/p99 of wall
time and p50/p95 of the serving thread's CPU time per shape and overall, for every variant, the
ratio to the baseline, how often both return the same first 20 hits, and the machine's load; then,
for plain queries, how many of each variant's first 20 hits ranking every match also puts first.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from mcp_http import META

CONFIG = (
    'PLUGINS = ["git", "tokens", "{engine}"]\nSTORAGE = "git"\nSEARCH = "{engine}"\n'
    'PUBLIC_URL = "https://wiki.example.org"\n[RATE_LIMITS]\nrequests = "off"\n[PLUGIN_CONFIG.git]\nfsync = false\n'
)
ROOT = Path(__file__).resolve().parent.parent


# --- the instance -------------------------------------------------------------------------------


def build(instance: Path, pages: int, engine: str) -> None:
    from search_engines import NAMESPACES, Corpus

    from hostcore import Change, Put
    from hostcore.app import build_host
    from hostcore.domain.pages import Page

    corpus = Corpus()
    instance.mkdir(parents=True)
    (instance / "hostcore.toml").write_text(CONFIG.replace("{engine}", engine))
    start = time.perf_counter()
    host = build_host(instance, start=False)
    ops = [Put(f"{ns}/.namespace.yaml", f"title: {ns.title()}\n".encode(), expect=None) for ns in NAMESPACES]
    for i in range(pages):
        d = corpus.page(i)
        ops.append(Put(f"{d.slug}.md", Page(slug=d.slug, title=d.title, body=d.body, tags=d.tags).to_bytes(), expect=None))
    host.storage.apply(ops, Change("bench", "import"))
    host.close()
    print(f"imported {pages} pages in {time.perf_counter() - start:.1f} s", flush=True)


def document_frequencies(sample: int = 2000) -> dict[str, float]:
    """Share of pages holding each word, from the corpus's first pages (every page is drawn alike)."""
    from search_engines import Corpus

    corpus = Corpus()
    counts: Counter[str] = Counter()
    for i in range(sample):
        d = corpus.page(i)
        counts.update(set(re.findall(r"\w+", (d.title + " " + d.body).lower())))
    return {w: n / sample for w, n in counts.items()}


def shapes(per_shape: int) -> list[tuple[str, dict[str, Any]]]:
    """(shape, tool arguments) for every query, shapes interleaved."""
    from search_engines import COMMON, NAMESPACES, TAGS, TOPICAL

    df = document_frequencies()
    rng = random.Random(11)

    def band(low: float, high: float) -> list[str]:
        words = sorted(w for w, share in df.items() if low <= share <= high and not w.isdigit() and w not in ("page", "or", "and", "not"))
        assert words, (low, high)
        return words

    everywhere, half, five, rare = band(0.9, 1.0), band(0.35, 0.65), band(0.03, 0.08), band(0.001, 0.004)
    topical = [w for w in TOPICAL if w in df]
    long_prefixes = [w[:6] for w in topical if len(w) >= 7]
    made_up = ["zqxwvy", "plorbnik", "xyzzyqq", "quuxfrob"]
    kinds: dict[str, Any] = {
        "word in every page": lambda: {"query": rng.choice(everywhere)},
        "word in half the pages": lambda: {"query": rng.choice(half)},
        "word in 5% of pages": lambda: {"query": rng.choice(five)},
        "rare word": lambda: {"query": rng.choice(rare)},
        "no hits": lambda: {"query": rng.choice(made_up)},
        "two words": lambda: {"query": f"{rng.choice(five)} {rng.choice(half)}"},
        "many words": lambda: {"query": " ".join([rng.choice(half), rng.choice(five), rng.choice(topical), rng.choice(everywhere), rng.choice(half)])},
        "rare + common": lambda: {"query": f"{rng.choice(rare)} {rng.choice(everywhere)}"},
        "phrase": lambda: {"query": f'"{rng.choice(COMMON)} {rng.choice(topical)}"'},
        "prefix (4 letters)": lambda: {"query": rng.choice(topical)[:4] + "*"},
        "prefix (6 letters)": lambda: {"query": rng.choice(long_prefixes) + "*"},
        "a OR b": lambda: {"query": f"{rng.choice(rare)} OR {rng.choice(five)}"},
        "NOT": lambda: {"query": f"{rng.choice(half)} -{rng.choice(five)}"},
        "tag filter": lambda: {"query": f"{rng.choice(half)} tag:{rng.choice(TAGS)}"},
        "namespace argument": lambda: {"query": rng.choice(half), "namespace": rng.choice(NAMESPACES)},
        "limited token": lambda: {"query": rng.choice(five), "token": "limited"},
        "second page": lambda: {"query": rng.choice(half), "offset": 20},
    }
    return [(name, make()) for _ in range(per_shape) for name, make in kinds.items()]


# --- a variant: one process serving the instance ------------------------------------------------


def serve(instance: Path) -> None:
    """Answer queries read as JSON lines on stdin with JSON lines on stdout."""
    import hostcore
    import hostcore.app

    start = time.perf_counter()
    # as a server process makes it (its collector tuned for serving); older revisions lack serving_app
    app = getattr(hostcore.app, "serving_app", hostcore.app.create_app)(instance_path=instance)
    host = app.extensions["hostcore"]
    from hostcore_tokens import store

    tokens = {"all": store(host).create(f"bench-all-{os.getpid()}", ["read"]), "limited": store(host).create(f"bench-team-{os.getpid()}", ["read"], ["eng", "ops"])}
    client = app.test_client()
    out = sys.stdout
    out.write(json.dumps({"ready": time.perf_counter() - start, "code": str(Path(hostcore.__file__).parent)}) + "\n")
    out.flush()
    for line in sys.stdin:
        arguments = json.loads(line)
        token = tokens[arguments.pop("token", "all")]
        headers = {
            "Authorization": f"Bearer {token}",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2026-07-28",
            "Mcp-Method": "tools/call",
            "Mcp-Name": "search",
        }
        body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "search", "arguments": arguments, "_meta": META}})
        cpu, wall = time.thread_time(), time.perf_counter()
        answer = client.post("/_/mcp", data=body, headers=headers, content_type="application/json")
        result = answer.json["result"]
        wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
        if result.get("isError"):
            raise SystemExit(f"search {arguments} failed: {answer.get_data(as_text=True)[:300]}")
        found = result["structuredContent"]
        out.write(json.dumps({"wall": wall * 1000, "cpu": cpu * 1000, "hits": [h["slug"] for h in found["hits"]], "more": found["more"]}) + "\n")
        out.flush()
    host.close()


class Variant:
    def __init__(self, name: str, instance: Path, pythonpath: str | None) -> None:
        env = dict(os.environ)
        if pythonpath:
            env["PYTHONPATH"] = pythonpath
        self.name = name
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(instance)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env, text=True
        )
        assert self.proc.stdout is not None
        ready = json.loads(self.proc.stdout.readline())
        print(f"{name}: code from {ready['code']}, ready in {ready['ready']:.1f} s", flush=True)

    def ask(self, arguments: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(arguments) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"{self.name} stopped")
        return json.loads(line)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


def agreement(instance: Path, queries: list[tuple[str, dict[str, Any]]], samples: dict[str, dict[str, list[dict[str, Any]]]]) -> None:
    """Share of each variant's first 20 hits that ranking every match (bm25 over all of them) also
    puts first, per shape of plain queries (no namespace, first page): what the capped plans cost."""
    import sqlite3

    from hostcore import parse_query
    from hostcore_sqlite_search import FORMAT, analyse, compile_match
    from hostcore_sqlite_search.ranking import SCORE

    db = sqlite3.connect(f"file:{instance / 'search' / f'sqlite-search-v{FORMAT}.db'}?mode=ro", uri=True)
    sql = f"SELECT pages.slug, {SCORE} AS s FROM fts JOIN pages ON pages.id = fts.rowid WHERE fts MATCH ? ORDER BY s, fts.rowid LIMIT 20"
    shares: dict[str, dict[str, list[float]]] = {}
    seen: dict[str, int] = {}
    for shape, arguments in queries:
        i = seen[shape] = seen.get(shape, -1) + 1
        if set(arguments) != {"query"}:
            continue
        best = {slug for slug, _ in db.execute(sql, (compile_match(parse_query(arguments["query"], analyse)),))}
        for name, by_shape in samples.items():
            hits = by_shape[shape][i]["hits"]
            if best:
                shares.setdefault(shape, {}).setdefault(name, []).append(len(best & set(hits)) / len(best))
    db.close()
    print("\nfirst 20 hits also first 20 when every match is ranked (plain queries):")
    for shape, by_name in shares.items():
        print(f"  {shape:24}" + "".join(f"  {name[:12]:>12} {statistics.mean(v):5.0%}" for name, v in by_name.items()))


def pct(values: list[float], p: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, round(p / 100 * (len(values) - 1)))]


def report(names: list[str], samples: dict[str, dict[str, list[dict[str, Any]]]], load: tuple[str, str]) -> None:
    shape_names = list(next(iter(samples.values())))
    base = names[-1] if len(names) > 1 else None
    print(f"\nmachine load (1-minute average) before {load[0]}, after {load[1]}; times in ms; wall p50/p95/p99, cpu p50/p95")
    header = f"{'shape':24}" + "".join(f"{n[:30]:>34}" for n in names) + ("   p95 ratio  same top 20" if base else "")
    print(header)
    rows = [*shape_names, "overall"]
    for shape in rows:
        line = f"{shape:24}"
        p95 = {}
        for name in names:
            runs = [r for s in shape_names for r in samples[name][s]] if shape == "overall" else samples[name][shape]
            wall, cpu = [r["wall"] for r in runs], [r["cpu"] for r in runs]
            p95[name] = pct(wall, 95)
            line += f"  {statistics.median(wall):6.2f} {pct(wall, 95):6.2f} {pct(wall, 99):6.2f} |{statistics.median(cpu):6.2f} {pct(cpu, 95):6.2f}"
        if base:
            new, old = names[0], base
            pairs = (
                list(zip(samples[new][shape], samples[old][shape], strict=True))
                if shape != "overall"
                else [p for s in shape_names for p in zip(samples[new][s], samples[old][s], strict=True)]
            )
            same = sum(a["hits"] == b["hits"] for a, b in pairs)
            line += f"  {p95[old] / p95[new]:8.1f}x  {same:4d}/{len(pairs)}"
        print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=50000)
    ap.add_argument("--rounds", type=int, default=20, help="queries of each shape")
    ap.add_argument("--compare", metavar="REV", help="also serve git revision REV's hostcore and search engines, in turns with this tree")
    ap.add_argument("--engine", default="sqlite", choices=("sqlite", "tantivy"), help="SEARCH of a new instance (default: sqlite)")
    ap.add_argument("--keep", help="instance folder, kept and reused by later runs (default: a temporary one)")
    ap.add_argument("--serve", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        serve(Path(args.serve))
        return
    work = Path(tempfile.mkdtemp(prefix="hostcore-search-latency-"))
    instance = Path(args.keep) if args.keep else work / "instance"
    variants: list[Variant] = []
    try:
        if not instance.exists():
            build(instance, args.pages, args.engine)
        queries = shapes(args.rounds)
        variants.append(Variant("this tree", instance, None))
        if args.compare:
            old = work / "old"
            old.mkdir()
            archive = subprocess.run(
                ["git", "-C", str(ROOT), "archive", args.compare, "hostcore", "plugins/sqlite-search", "plugins/tantivy"],
                capture_output=True,
                check=True,
            ).stdout
            subprocess.run(["tar", "-x", "-C", str(old)], input=archive, check=True)
            variants.append(Variant(args.compare, instance, f"{old}:{old}/plugins/sqlite-search:{old}/plugins/tantivy"))
        for variant in variants:  # warm up: the first calls of a process fill caches
            for _, arguments in queries[:40]:
                variant.ask(dict(arguments))
        load_before = os.getloadavg()[0]
        samples: dict[str, dict[str, list[dict[str, Any]]]] = {v.name: {} for v in variants}
        for i, (shape, arguments) in enumerate(queries):
            turn = variants[i % len(variants) :] + variants[: i % len(variants)]
            for variant in turn:
                if arguments.get("offset"):  # a second page follows the first, as a client pages
                    variant.ask({k: v for k, v in arguments.items() if k != "offset"})
                samples[variant.name].setdefault(shape, []).append(variant.ask(dict(arguments)))
        report([v.name for v in variants], samples, (f"{load_before:.1f}", f"{os.getloadavg()[0]:.1f}"))
        if 'SEARCH = "sqlite"' in (instance / "hostcore.toml").read_text():  # ranks every match with FTS5 itself
            agreement(instance, queries, samples)
    finally:
        for variant in variants:
            variant.close()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
