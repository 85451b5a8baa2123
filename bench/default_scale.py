"""The embedded default at scale, measured from outside: what ``hostcore init`` writes, served by
``hostcore serve`` (gunicorn), called over HTTP through ``/_/mcp``; every figure beside a baseline
measured in the same run, and the machine's load (1-minute average) beside each figure.

    python bench/default_scale.py [--sizes 50000] [--keep DIR] [--quick]
    python bench/default_scale.py --sizes 5000,50000,200000      # and one growth table

For each size N it:

1. makes an instance with ``hostcore init`` (its config kept as written: web, tantivy, the wordllama
   embedder) and imports N generated pages in ONE commit (``storage.apply``): 1-4 KB of Markdown
   each, a title, 1-3 tags in the front matter, wiki-links to other pages of the wiki, spread over 8
   namespaces (``--seed``: the same pages every run). The baseline is a copy of that instance made
   right after the import, served with the embedder off by the environment (``HOSTCORE_EMBEDDER=""``;
   the file stays as init wrote it). Both servers run with ``HOSTCORE_RATE_LIMITS`` requests and
   writes "off" (64 writers share one token) and ``--bind`` on a free loopback port: nothing else
   differs from ``hostcore serve`` as an operator runs it (2 workers x 16 threads).
2. builds the keyword indexes once (a host start with the embedder off) before making the copy, so
   both servers search the same index files and their hits compare one for one; removes the
   passage index, so the default server embeds every page from its start, as after an import; starts
   both servers;
3. searches, both servers in turns (who goes first alternates), per query shape (rare, common, two
   words, phrase, prefix, namespace, tag, second page), and many words (five words no page holds
   together: the default fuses the pages nearest in meaning in, the baseline ranks by words alone,
   so the difference is what meaning adds): while the embedding catches up, then after it caught up
   (or after ``--catchup-cap`` seconds, said so); p50/p95 and how often both return the same hits;
   then once more with a pause of ``--pause`` seconds before each call (``--quiet-rounds`` queries
   of each shape), as people and assistants ask: a call that follows a quiet spell finds the
   machine's caches holding other things, and takes longer than one of a stream;
4. follows the catch-up with ``/_/health`` (documents indexed, pending) every ``--poll`` seconds,
   ``hostcore status`` beside it at the first and last look (it costs a CLI start, seconds of CPU
   the embedding would miss): pages embedded per second over time, and the time to finish or what
   is left at the cap;
5. prints each worker's memory (RSS, PSS and anonymous memory: RSS less the files it maps, from /proc) after start, after ``--searches``
   searches and after the writers' load, for both servers;
6. runs ``--writers`` concurrent writers (each saving its own page for ``--seconds``) against the
   big wiki and against a fresh small one (``hostcore init``, same settings), in turns: saves/s and
   p50/p99 (``bench/concurrent_writers.py``'s load and its check that nothing was lost);
7. restarts with nothing changed: ``hostcore serve`` from launch to ``/_/health`` answering and to a
   first search answered, median of ``--starts`` runs, the big wiki with the embedder, without it, and
   the small wiki (what starting the processes costs whatever the size); ``hostcore --help`` beside
   ``python -c pass``, and the floor every server start pays before hostcore runs a line: importing
   the official MCP SDK and the libraries the default plugins use;
8. disk: the instance folder's size over the Markdown it holds, and the passage file's size.

With several sizes it ends with one growth table of these figures. ``--keep DIR`` keeps the
instances under ``DIR/<N>/`` and reuses them (the catch-up then goes on from where it was;
the writers' commits of earlier runs stay in the repository, and in the disk figure);
``--quick`` is a smoke run (few queries, short caps). It prints figures and never asserts.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from concurrent_writers import check, git, report, run_load, server_cpu
from mcp_http import ToolClient, load, memory_mb
from search_engines import NAMESPACES, TAGS, Corpus
from search_latency import shapes
from timing import p95, percentiles

from hostcore.testing.servers import (
    cli,
    create_token,
    free_port,
    hostcore_cmd,
    hostcore_env,
    start_process_group,
    stop_process_group,
    worker_pids,
)

FUSED = "many words"
SHAPES = {  # search_latency's shape -> the name the issue gives it
    "rare word": "rare",
    "word in half the pages": "common",
    "two words": "two words",
    "phrase": "phrase",
    "prefix (4 letters)": "prefix",
    "namespace argument": "namespace",
    "tag filter": "tag",
    "second page": "second page",
    "many words": FUSED,  # not one of the eight: no page holds all five words, so meaning is fused in
}
MEASURING_ENV = {"HOSTCORE_RATE_LIMITS": '{"requests": "off", "writes": "off"}', "HOSTCORE_LOG_LEVEL": "WARNING"}
WITHOUT_EMBEDDER = {"HOSTCORE_EMBEDDER": ""}
MEANING, KEYWORDS, SMALL = "default", "no embedder", "small wiki"
QUIET = "a call after each pause"  # the search phase with --pause seconds before each call


def say(line: str = "") -> None:
    print(line, flush=True)


# --- the pages --------------------------------------------------------------------------------


def generated_pages(total: int, seed: int) -> Iterator[tuple[str, bytes]]:
    """(slug, file bytes) of ``total`` pages, the same for the same seed: 1-4 KB of Markdown from
    ``search_engines.Corpus``'s vocabulary, tags in the front matter, links to pages of the wiki."""
    from hostcore.domain.pages import Page

    corpus = Corpus(seed)
    rng = corpus.rng

    def link() -> str:
        j = rng.randrange(total)
        return f"{NAMESPACES[j % len(NAMESPACES)]}/page-{j}"

    for i in range(total):
        title = corpus.title(i)
        body = corpus.body(rng.randint(900, 3500), link, link_share=0.5, code=False, sentences=5)
        tags = tuple(sorted(rng.sample(TAGS, rng.randint(1, 3))))
        slug = f"{NAMESPACES[i % len(NAMESPACES)]}/page-{i}"
        yield slug, Page(slug=slug, title=title, body=body, tags=tags).to_bytes()


def import_pages(instance: Path, total: int, seed: int) -> int:
    """Import the pages into the instance in one commit; returns the Markdown's bytes."""
    from hostcore import Change, Put
    from hostcore.app import build_host

    host = build_host(instance, start=False)
    try:
        existing = {path.split("/", 1)[0] for path in host.storage.list()}
        ops = [
            Put(f"{ns}/.namespace.yaml", f"title: {ns.title()}\n".encode(), expect=None)
            for ns in NAMESPACES
            if ns not in existing
        ]
        markdown = 0
        for slug, data in generated_pages(total, seed):
            ops.append(Put(f"{slug}.md", data, expect=None))
            markdown += len(data)
        host.storage.apply(ops, Change("bench", f"import {total} pages"))
    finally:
        host.close()
    return markdown


# --- servers ----------------------------------------------------------------------------------


@dataclass
class Server:
    name: str
    instance: Path
    env: dict[str, str]
    token: str
    proc: Any = None
    base: str = ""
    port: int = 0
    health_s: float = 0.0
    search_s: float = 0.0
    launched: float = 0.0
    client: ToolClient | None = None

    def start(self, cap: float) -> Server:
        """Launch ``hostcore serve``; time it until ``/_/health`` answers and until a search answers."""
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        log = self.instance.parent / f"serve-{self.name.replace(' ', '-')}.log"
        began = self.launched = time.perf_counter()
        with open(log, "ab") as out:
            self.proc = start_process_group(
                [*hostcore_cmd(), "serve", "--instance", str(self.instance), "--bind", f"127.0.0.1:{self.port}"],
                marker="serve", what="hostcore serve", stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=hostcore_env(MEASURING_ENV | self.env),
            )  # fmt: skip
        deadline = began + cap
        while not self.health():
            if self.proc.poll() is not None or time.perf_counter() > deadline:
                self.stop()
                raise SystemExit(
                    f"{self.name}: hostcore serve did not answer /_/health:\n{log.read_text(errors='replace')[-3000:]}"
                )
            time.sleep(0.05)
        self.health_s = time.perf_counter() - began
        self.client = ToolClient(self.base + "/_/mcp", self.token)
        while True:
            _, result = self.client.call("search", {"query": "kalove"})
            if not result.get("isError"):
                break
            if self.proc.poll() is not None or time.perf_counter() > deadline or result.get("status") in (401, 403):
                self.stop()
                raise SystemExit(f"{self.name}: no search answered within {cap:.0f} s: {result}")
            time.sleep(0.2)
        self.search_s = time.perf_counter() - began
        return self

    def health(self) -> dict[str, Any] | None:
        try:
            with urllib.request.urlopen(self.base + "/_/health", timeout=5) as answer:
                return json.loads(answer.read()) if answer.status == 200 else None
        except (OSError, ValueError):
            return None

    def memory(self) -> list[tuple[float, float, float]]:
        return [memory_mb(pid) for pid in worker_pids(self.proc.pid)]

    def stop(self) -> None:
        if self.client:
            self.client.close()
            self.client = None
        if self.proc is not None:
            stop_process_group(self.proc)
            self.proc = None


def catchup_state(instance: Path) -> tuple[int, int] | None:
    """(documents indexed, pending) as ``hostcore status`` prints them; None if it says otherwise."""
    out = cli(instance, "status", check=False).stdout
    found = re.search(r"(\d+) documents indexed.*?(\d+) pending", out)
    return (int(found[1]), int(found[2])) if found else None


# --- the figures ------------------------------------------------------------------------------


@dataclass
class Figures:
    """One size's figures, for the growth table."""

    pages: int
    markdown_mb: float = 0.0
    search: dict[str, dict[str, float]] = field(default_factory=dict)  # phase/server -> worst p95 and p50
    memory: dict[str, float] = field(default_factory=dict)  # moment/server -> largest worker RSS
    heap: dict[str, float] = field(default_factory=dict)  # moment/server -> largest worker's anonymous memory
    catchup: str = ""
    saves: dict[str, tuple[float, float]] = field(default_factory=dict)  # server -> (saves/s, p99)
    starts: dict[str, tuple[float, float]] = field(default_factory=dict)  # server -> (health s, search s)
    disk_ratio: float = 0.0
    passages_mb: float = 0.0


def print_memory(moment: str, servers: list[Server], figures: Figures) -> None:
    for server in servers:
        workers = server.memory()
        figures.memory[f"{moment}/{server.name}"] = max((rss for rss, _, _ in workers), default=0.0)
        figures.heap[f"{moment}/{server.name}"] = max((anonymous for _, _, anonymous in workers), default=0.0)
        listing = ", ".join(f"RSS {rss:4.0f} MB (PSS {pss:4.0f}, anonymous {anonymous:4.0f})" for rss, pss, anonymous in workers)
        say(f"  memory {moment:22} {server.name:12} {listing}   load {load():.2f}")


def search_phase(
    label: str, servers: list[Server], queries: list[tuple[str, dict[str, Any]]], figures: Figures, cap: float,
    pause: float = 0.0,
) -> int:
    """Every query on every server, in turns, ``pause`` seconds before each (a second page's first
    page goes right before it); prints p50/p95 per shape. Returns the calls made."""
    samples: dict[str, dict[str, list[tuple[float, float, list[str]]]]] = {s.name: {} for s in servers}
    began, calls = time.perf_counter(), 0
    for i, (shape, arguments) in enumerate(queries):
        if time.perf_counter() - began > cap:
            say(f"  ({label}: stopped after {i} of {len(queries)} queries, at the {cap:.0f} s cap)")
            break
        for server in servers[i % len(servers) :] + servers[: i % len(servers)]:
            assert server.client is not None
            time.sleep(pause)
            if arguments.get("offset"):  # a second page right after the first, as a client pages
                server.client.call("search", {k: v for k, v in arguments.items() if k != "offset"})
                calls += 1
            ms, result = server.client.call("search", arguments)
            calls += 1
            if result.get("isError"):
                raise SystemExit(f"{server.name}: search {arguments} failed: {result}")
            hits = [hit["slug"] for hit in result["structuredContent"]["hits"]]
            samples[server.name].setdefault(SHAPES[shape], []).append((ms, load(), hits))
    say(f"\n  search, {label}: wall ms per call over HTTP; load = mean 1-minute load while measured")
    say(
        f"  {'shape':12}"
        + "".join(f" {s.name + ': p50 / p95':>36}" for s in servers)
        + "   p95 ratio  same hits (in order / as a set)   load"
    )
    for shape in SHAPES.values():
        if shape not in samples[servers[0].name]:
            continue
        line, p95s = f"  {shape:12}", []
        for server in servers:
            runs = samples[server.name][shape]
            ms = sorted(r[0] for r in runs)
            p95s.append(p95(ms))
            line += f" {percentiles(ms):>36}"
            key = f"{label}/{server.name}" + ("/meaning" if shape == FUSED else "")  # the eight shapes' worst, apart
            figures.search[key] = {"p95": max(figures.search.get(key, {}).get("p95", 0.0), p95s[-1])}
        runs = [samples[s.name][shape] for s in servers]
        same = sum(all(r[2] == group[0][2] for r in group) for group in zip(*runs, strict=True))
        same_set = sum(all(set(r[2]) == set(group[0][2]) for r in group) for group in zip(*runs, strict=True))
        loads = [r[1] for group in runs for r in group]
        ratio = f"{p95s[0] / p95s[1]:8.1f}x" if len(p95s) > 1 else ""
        say(f"{line}   {ratio}  {same:4d} / {same_set:4d} of {len(runs[0]):<4d}{'':14} {statistics.mean(loads):6.2f}")
    return calls


def follow_catchup(server: Server, cap: float, poll: float, began: float, figures: Figures) -> bool:
    """Poll ``/_/health`` until nothing is pending or ``cap`` seconds after ``began``, ``hostcore
    status`` at the first and last look; prints the pages embedded per second between polls. True
    when it finished."""
    say(f"\n  embedding catch-up (/_/health every {poll:g} s; hostcore status at the first and last look):")
    last: tuple[float, int] | None = None
    first: tuple[float, int] | None = None
    while True:
        asked = time.perf_counter()
        health = server.health() or {}
        counts, now, status = health.get("passages"), time.perf_counter() - began, ""
        if first is None or not counts:  # the CLI's view: at the start, and to confirm the end
            state = catchup_state(server.instance)
            status = f"  (hostcore status: {state}, took {time.perf_counter() - asked:.1f} s)"
            if state is None:
                say(f"  hostcore status printed no passage counts; health {health.get('status')}")
                figures.catchup = "not visible"
                return False
            if not counts:
                counts, now = {"documents": state[0], "pending": state[1]}, time.perf_counter() - began
        indexed, pending = int(counts["documents"]), int(counts["pending"])
        rate = (indexed - last[1]) / (now - last[0]) if last and now > last[0] else float("nan")
        say(f"  {now:7.1f} s  {indexed:7d} indexed {pending:7d} pending  {rate:7.1f} pages/s since last   "
            f"health {health.get('status')}  load {load():.2f}{status}")  # fmt: skip
        if pending == 0 and indexed > 0:
            pace = f"{(indexed - first[1]) / (now - first[0]):.0f}/s" if first else ""
            steady = f", {pace} from the first look" if pace else ""
            figures.catchup = f"{now:.0f} s, {pace}" if pace else f"{now:.0f} s"
            say(f"  caught up {now:.0f} s after the launch: {indexed / now:.0f} pages/s from the launch{steady}")
            return True
        if now > cap:
            figures.catchup = f"{pending} left, {now:.0f} s"
            say(f"  NOT caught up after the {cap:.0f} s cap: {pending} pending, {indexed} indexed")
            return False
        last = (now, indexed)
        first = first or last
        time.sleep(max(0.0, poll - (time.perf_counter() - asked)))


def writers_phase(servers: list[Server], args: argparse.Namespace, figures: Figures) -> None:
    """``--writers`` writers on each server in turns, ``--rounds`` rounds; saves/s and p50/p99."""
    say(f"\n  saves: {args.writers} writers, each its own page in notes/, {args.seconds:g} s per run, servers in turns")
    results: dict[str, list[tuple[list[float], float]]] = {s.name: [] for s in servers}
    run = time.strftime("%H%M%S")  # new pages each run: a kept instance holds the last run's
    for round_ in range(args.writer_rounds):
        for server in servers[round_ % 2 :] + servers[: round_ % 2]:
            git_dir = server.instance / "wiki"
            before, cpu = int(git(git_dir, "rev-list", "--count", "HEAD")), server_cpu(server.proc.pid)
            latencies, _firsts, wall, last = run_load(
                server.base + "/_/mcp", server.token, f"r{run}-{round_}", args.writers, args.seconds, 10**6
            )
            report(f"  {server.name} round {round_ + 1}", latencies, wall)
            say(
                f"  {'':34s} server CPU {(server_cpu(server.proc.pid) - cpu) * 1000 / max(1, len(latencies)):.1f} ms per save   load {load():.2f}"
            )
            check(git_dir, before, len(latencies), last)
            results[server.name].append((latencies, wall))
    rates = {}
    for name, runs in results.items():
        ms = sorted(x * 1000 for lat, _ in runs for x in lat)
        rate = sum(len(lat) for lat, _ in runs) / sum(wall for _, wall in runs)
        q = statistics.quantiles(ms, n=100)
        rates[name] = rate
        figures.saves[name] = (rate, q[98])
        say(f"  {name:12} all rounds: {rate:6.1f} saves/s  p50 {q[49]:6.0f} ms  p99 {q[98]:6.0f} ms")
    big, small = (s.name for s in servers)
    say(f"  {big} / {small}: {rates[big] / rates[small]:.2f}x the saves per second")


def startup_phase(servers: list[Server], runs: int, figures: Figures) -> None:
    say(f"\n  start-up with nothing changed: hostcore serve from launch to /_/health, and to a first search (median of {runs})")
    took: dict[str, list[tuple[float, float, float]]] = {s.name: [] for s in servers}
    for run in range(runs):
        for server in servers[run % len(servers) :] + servers[: run % len(servers)]:
            server.start(cap=600)
            took[server.name].append((server.health_s, server.search_s, load()))
            server.stop()
    for name, values in took.items():
        health, search = statistics.median(v[0] for v in values), statistics.median(v[1] for v in values)
        figures.starts[name] = (health, search)
        say(f"  {name:12} /_/health {health:5.2f} s  first search {search:5.2f} s   (runs: "
            f"{', '.join(f'{h:.2f}/{s:.2f}' for h, s, _ in values)})  load {statistics.mean(v[2] for v in values):.2f}")  # fmt: skip
    cli_times = [seconds_of([*hostcore_cmd(), "--help"]) for _ in range(5)]
    bare = [seconds_of([sys.executable, "-c", "pass"]) for _ in range(5)]
    libraries = [seconds_of([sys.executable, "-c", f"import {LIBRARIES}"]) for _ in range(5)]
    say(
        f"  hostcore --help {statistics.median(cli_times):.2f} s (median of 5), python -c pass {statistics.median(bare):.2f} s   load {load():.2f}"
    )
    say(f"  importing the libraries alone ({LIBRARIES}): {statistics.median(libraries):.2f} s (median of 5)   load {load():.2f}")


# What a server start imports before hostcore's own code: the floor of its start-up.
LIBRARIES = "mcp, flask, gunicorn.app.base, numpy, tantivy, pygit2, authlib.oauth2, wordllama"


def seconds_of(argv: list[str]) -> float:
    began = time.perf_counter()
    subprocess.run(argv, capture_output=True, check=True, env=hostcore_env())
    return time.perf_counter() - began


def folder_bytes(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def disk_phase(instance: Path, markdown: int, figures: Figures) -> None:
    total = folder_bytes(instance)
    passages = sum(p.stat().st_size for p in instance.rglob("passage*") if p.is_file())
    figures.disk_ratio, figures.passages_mb = total / markdown, passages / 1e6
    parts = ", ".join(
        f"{p.name} {(folder_bytes(p) if p.is_dir() else p.stat().st_size) / 1e6:.1f}" for p in sorted(instance.iterdir())
    )
    say(f"\n  disk: instance {total / 1e6:.1f} MB for {markdown / 1e6:.1f} MB of Markdown = {total / markdown:.2f}x; "
        f"passage files {passages / 1e6:.1f} MB\n  (MB: {parts})")  # fmt: skip


# --- one size ---------------------------------------------------------------------------------


KEYWORD_INDEXES = """
import sys
from pathlib import Path
from hostcore import SYSTEM
from hostcore.app import build_host
host = build_host(Path(sys.argv[1]))
host.wiki(SYSTEM).search("kalove")
host.close()
"""


def prepared(folder: Path, pages: int, seed: int) -> tuple[Path, Path, str, int]:
    """(the instance, its copy for the baseline, a write token, Markdown bytes), made once per folder.

    The keyword indexes are built once, with the embedder off, before the copy: both servers then
    search the same index files, so their hits compare one for one (two indexes built apart break
    ties in other orders). The passage index is removed after, so the default server embeds every
    page from the start, as after an import."""
    instance, baseline, made = folder / "default", folder / "baseline", folder / "made.json"
    if made.exists():
        facts = json.loads(made.read_text())
        say(f"reusing {folder} ({pages} pages)")
        return instance, baseline, facts["token"], facts["markdown"]
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    cli(instance, "init")
    token = create_token(instance, "bench", ["write"])
    began = time.perf_counter()
    markdown = import_pages(instance, pages, seed)
    say(
        f"imported {pages} pages ({markdown / 1e6:.1f} MB of Markdown) in one commit in {time.perf_counter() - began:.1f} s   load {load():.2f}"
    )
    began = time.perf_counter()
    subprocess.run([sys.executable, "-c", KEYWORD_INDEXES, str(instance)], check=True, env=hostcore_env(WITHOUT_EMBEDDER))
    for path in instance.glob("passage*"):
        path.unlink()
    say(f"keyword indexes built (a host start with the embedder off) in {time.perf_counter() - began:.1f} s   load {load():.2f}")
    shutil.copytree(instance, baseline, symlinks=True)
    made.write_text(json.dumps({"token": token, "markdown": markdown}))
    return instance, baseline, token, markdown


def measure(pages: int, folder: Path, args: argparse.Namespace) -> Figures:
    figures = Figures(pages)
    say(f"\n=== {pages} pages ===")
    instance, baseline, token, markdown = prepared(folder, pages, args.seed)
    figures.markdown_mb = markdown / 1e6
    meaning = Server(MEANING, instance, {}, token)
    keywords = Server(KEYWORDS, baseline, WITHOUT_EMBEDDER, token)
    small_instance = folder / "small" / "default"
    shutil.rmtree(small_instance.parent, ignore_errors=True)
    cli(small_instance, "init")
    small = Server(SMALL, small_instance, {}, create_token(small_instance, "bench", ["write"]))
    servers = [meaning, keywords]
    queries = shapes(args.rounds)
    queries = [(shape, arguments) for shape, arguments in queries if shape in SHAPES]
    try:
        for server in servers:  # one after the other: each builds its keyword index on its first start
            server.start(cap=args.start_cap)
            say(
                f"{server.name:12} started: /_/health after {server.health_s:.1f} s, first search after {server.search_s:.1f} s   load {load():.2f}"
            )
        catchup_began = meaning.launched
        print_memory("after start", servers, figures)
        state = catchup_state(instance)
        say(f"  passages (hostcore status): {state[0] if state else '?'} indexed, {state[1] if state else '?'} pending")
        caught_up = state is not None and state[1] == 0
        calls = 0
        if not caught_up:
            calls += search_phase("while embedding catches up", servers, queries, figures, args.search_cap)
            caught_up = follow_catchup(meaning, args.catchup_cap, args.poll, catchup_began, figures)
        else:
            figures.catchup = f"within {time.perf_counter() - catchup_began:.0f} s"
        calls += search_phase(
            "after catch-up" if caught_up else "catch-up NOT finished", servers, queries, figures, args.search_cap
        )
        if args.quiet_rounds:
            quiet = [(shape, arguments) for shape, arguments in shapes(args.quiet_rounds) if shape in SHAPES]
            calls += search_phase(f"{QUIET} of {args.pause:g} s", servers, quiet, figures, args.search_cap, args.pause)
        more, began = max(0, args.searches - calls // 2), time.perf_counter()
        for i in range(more):  # up to --searches on each server, unmeasured, for the memory after
            if time.perf_counter() - began > args.search_cap:
                say(f"  (stopped the searches for memory after {i} more, at the {args.search_cap:.0f} s cap)")
                break
            for server in servers:
                assert server.client is not None
                server.client.call("search", queries[i % len(queries)][1])
        print_memory(f"after {min(args.searches, calls // 2 + more)} searches", servers, figures)
        keywords.stop()
        small.start(cap=args.start_cap)
        writers_phase([meaning, small], args, figures)
        print_memory("after the writers", [meaning, small], figures)
        state = catchup_state(instance)
        say(f"  passages after the writers: {state}")
    finally:
        for server in (meaning, keywords, small):
            server.stop()
    startup_phase([meaning, keywords, small], args.starts, figures)
    disk_phase(instance, markdown, figures)
    return figures


def growth_table(rows: list[Figures]) -> None:
    def cell(value: Any, fmt: str = "{:.1f}") -> str:
        return fmt.format(value) if isinstance(value, float | int) else str(value)

    def after(key: str) -> bool:  # the search phase after catch-up (or at its cap), calls in a stream
        return not key.startswith(("while", QUIET))

    def quiet_p95(server: str, suffix: str) -> Callable[[Figures], Any]:
        return lambda f: next((v["p95"] for k, v in f.search.items() if k.startswith(QUIET) and k.endswith(server + suffix)), "-")

    say(
        "\n=== growth (worst p95 over the eight query shapes, many words apart; the largest worker's RSS, and its anonymous memory: RSS less the files it maps) ==="
    )
    fields: list[tuple[str, Callable[[Figures], Any]]] = [
        ("Markdown MB", lambda f: f.markdown_mb),
        (
            "search p95 ms, catching up, default",
            lambda f: f.search.get(f"while embedding catches up/{MEANING}", {}).get("p95", "-"),
        ),
        (
            "search p95 ms, catching up, no embedder",
            lambda f: f.search.get(f"while embedding catches up/{KEYWORDS}", {}).get("p95", "-"),
        ),
        (
            "search p95 ms, after, default",
            lambda f: next((v["p95"] for k, v in f.search.items() if after(k) and k.endswith(MEANING)), "-"),
        ),
        (
            "search p95 ms, after, no embedder",
            lambda f: next((v["p95"] for k, v in f.search.items() if after(k) and k.endswith(KEYWORDS)), "-"),
        ),
        (
            "search p95 ms, many words, after, default",
            lambda f: next(
                (v["p95"] for k, v in f.search.items() if after(k) and k.endswith(f"{MEANING}/meaning")), "-"
            ),
        ),
        (
            "search p95 ms, many words, after, no embedder",
            lambda f: next(
                (v["p95"] for k, v in f.search.items() if after(k) and k.endswith(f"{KEYWORDS}/meaning")), "-"
            ),
        ),
        *(
            (f"search p95 ms, {what}pauses, {name}", quiet_p95(server, suffix))
            for what, suffix in (("", ""), ("many words, ", "/meaning"))
            for server, name in ((MEANING, "default"), (KEYWORDS, "no embedder"))
        ),
        ("RSS MB after start, default", lambda f: f.memory.get(f"after start/{MEANING}", "-")),
        ("RSS MB after start, no embedder", lambda f: f.memory.get(f"after start/{KEYWORDS}", "-")),
        (
            "RSS MB after searches, default",
            lambda f: next((v for k, v in f.memory.items() if "searches" in k and k.endswith(MEANING)), "-"),
        ),
        (
            "RSS MB after searches, no embedder",
            lambda f: next((v for k, v in f.memory.items() if "searches" in k and k.endswith(KEYWORDS)), "-"),
        ),
        ("RSS MB after writers, default", lambda f: f.memory.get(f"after the writers/{MEANING}", "-")),
        ("anonymous MB after start, default", lambda f: f.heap.get(f"after start/{MEANING}", "-")),
        (
            "anonymous MB after searches, default",
            lambda f: next((v for k, v in f.heap.items() if "searches" in k and k.endswith(MEANING)), "-"),
        ),
        ("anonymous MB after writers, default", lambda f: f.heap.get(f"after the writers/{MEANING}", "-")),
        ("embedding catch-up: s after launch, pages/s", lambda f: f.catchup),
        ("saves/s, this wiki", lambda f: f.saves.get(MEANING, ("-",))[0]),
        ("saves/s, fresh small wiki", lambda f: f.saves.get(SMALL, ("-",))[0]),
        ("save p99 ms, this wiki", lambda f: f.saves.get(MEANING, ("-", "-"))[1]),
        ("save p99 ms, fresh small wiki", lambda f: f.saves.get(SMALL, ("-", "-"))[1]),
        ("start to /_/health s, default", lambda f: f.starts.get(MEANING, ("-",))[0]),
        ("start to first search s, default", lambda f: f.starts.get(MEANING, ("-", "-"))[1]),
        ("start to first search s, no embedder", lambda f: f.starts.get(KEYWORDS, ("-", "-"))[1]),
        ("start to first search s, small wiki", lambda f: f.starts.get(SMALL, ("-", "-"))[1]),
        ("instance size / Markdown", lambda f: f.disk_ratio),
        ("passage files MB", lambda f: f.passages_mb),
    ]
    say(f"{'pages':46}" + "".join(f"{f.pages:>16}" for f in rows))
    for name, get in fields:
        say(f"{name:46}" + "".join(f"{cell(get(f)):>16}" for f in rows))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="50000", help="page counts, comma-separated (default 50000)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--keep", help="keep the instances under DIR/<pages>/ and reuse them")
    ap.add_argument("--quick", action="store_true", help="a smoke run: few queries, short runs and caps")
    ap.add_argument("--rounds", type=int, default=20, help="queries of each shape per search phase")
    ap.add_argument("--searches", type=int, default=1000, help="searches on each server before the memory is read again")
    ap.add_argument("--search-cap", type=float, default=300, help="seconds at most per search phase")
    ap.add_argument("--catchup-cap", type=float, default=900, help="seconds after start to wait for the embedding at most")
    ap.add_argument("--poll", type=float, default=2, help="seconds between catch-up polls")
    ap.add_argument("--start-cap", type=float, default=1800, help="seconds a first start may take")
    ap.add_argument("--writers", type=int, default=64)
    ap.add_argument("--seconds", type=float, default=10, help="per writers' run")
    ap.add_argument("--writer-rounds", type=int, default=2, help="writers' runs on each wiki")
    ap.add_argument("--starts", type=int, default=3, help="restarts of each server for the start-up median")
    ap.add_argument("--pause", type=float, default=0.25, help="seconds before each call of the last search phase")
    ap.add_argument("--quiet-rounds", type=int, default=30, help="queries of each shape in that phase (0: none)")
    args = ap.parse_args()
    if args.quick:
        args.rounds, args.searches, args.search_cap, args.catchup_cap, args.quiet_rounds = 3, 100, 60, 60, 2
        args.poll, args.seconds, args.writer_rounds, args.starts = 10, 3, 1, 1
    from importlib.metadata import version

    say(f"hostcore default at scale: python {sys.version.split()[0]}, gunicorn {version('gunicorn')}, "
        f"load now {load():.2f}, {sys.argv[1:]}")  # fmt: skip
    rows = []
    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="hostcore-default-scale-"))
    try:
        for pages in (int(s) for s in args.sizes.split(",")):
            rows.append(measure(pages, work / str(pages), args))
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    growth_table(rows)


if __name__ == "__main__":
    main()
