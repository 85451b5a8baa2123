"""gather_context on the labelled set, as users run it: an instance made by ``hostcore init``
(tantivy, the wordllama embedder), served by ``hostcore serve``, called over HTTP through
``/_/mcp``; the machine's load beside each figure.

    python bench/context_budget.py [--distractors 2000] [--budget 2000] [--rounds 3]

The wiki holds the labelled set's documents (``labelled_set.py``: each with a paraphrase query
sharing no word with it, a keyword query and a reference code), its distractors, and
``--distractors`` generated pages (``default_scale.generated_pages``), imported in one commit.
Once the embedding has caught up, each query of each shape is the ``goal`` of one
``gather_context`` call with ``--budget`` characters, ``--rounds`` times. It prints per shape:

- found: how often the labelled document is among the items, and its rank (1 = first);
- relevant: the share of the characters returned that come from the labelled document (one
  relevant document a query, so a budget much larger than it is mostly other pages by design:
  ``relevant of first item`` says how often the first item alone is the right one);
- time: p50/p95 of the whole call over HTTP, beside ``search`` with the same words (the
  baseline of the same run, interleaved).

It prints figures and asserts nothing.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from default_scale import Server, catchup_state, generated_pages
from labelled_set import DISTRACTORS, SET, code, document
from mcp_http import load

from hostcore.testing.servers import cli, create_token


def quantiles(seconds: list[float]) -> tuple[float, float]:
    """p50 and p95 in ms."""
    ms = sorted(t * 1000 for t in seconds)
    return statistics.median(ms), ms[max(0, int(0.95 * len(ms)) - 1)]


def import_wiki(instance: Path, distractors: int) -> None:
    from hostcore import Change, Put
    from hostcore.app import build_host
    from hostcore.domain.pages import Page

    host = build_host(instance, start=False)
    try:
        existing = {path.split("/", 1)[0] for path in host.storage.list()}
        names = ("set", "eng", "ops", "product", "people", "research", "support", "design", "notes")
        ops = [Put(f"{ns}/.namespace.yaml", f"title: {ns.title()}\n".encode(), expect=None) for ns in names if ns not in existing]
        for i, (name, *_rest) in enumerate(SET):
            ops.append(
                Put(f"set/{name}.md", Page(slug=f"set/{name}", title=name.title(), body=document(i)).to_bytes(), expect=None)
            )
        for j, (name, text) in enumerate(DISTRACTORS):
            ops.append(
                Put(
                    f"set/other-{j}-{name}.md",
                    Page(slug=f"set/other-{j}-{name}", title=name.title(), body=text).to_bytes(),
                    expect=None,
                )
            )
        ops += [Put(f"{slug}.md", data, expect=None) for slug, data in generated_pages(distractors, 7)]
        host.storage.apply(ops, Change("bench", "import the labelled set"))
    finally:
        host.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--distractors", type=int, default=2000)
    ap.add_argument("--budget", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=3)
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="hostcore-context-"))
    instance = folder / "instance"
    try:
        cli(instance, "init")
        token = create_token(instance, "bench", ["read"])
        import_wiki(instance, args.distractors)
        server = Server("default", instance, {}, token).start(600)
        while (state := catchup_state(instance)) is None or state[1]:
            time.sleep(2)
        print(f"{len(SET)} labelled documents among {len(DISTRACTORS) + args.distractors} other pages, embedded; "
              f"budget {args.budget} characters, {args.rounds} rounds   load {load():.2f}")  # fmt: skip
        shapes = {
            "paraphrase": [row[2] for row in SET],
            "keyword": [row[3] for row in SET],
            "code": [code(i) for i in range(len(SET))],
        }
        print(f"\n{'shape':11} {'found':>6} {'mean rank':>9} {'relevant':>9} {'first item right':>17} "
              f"{'context p50/p95 ms':>19} {'search p50/p95 ms':>18}  load")  # fmt: skip
        assert server.client is not None
        for shape, queries in shapes.items():
            found, ranks, relevant, first_right, took, searched = 0, [], [], 0, [], []
            for _ in range(args.rounds):
                for i, goal in enumerate(queries):
                    began = time.perf_counter()
                    _, result = server.client.call("search", {"query": goal})
                    searched.append(time.perf_counter() - began)
                    began = time.perf_counter()
                    _, result = server.client.call("gather_context", {"goal": goal, "budget": args.budget})
                    took.append(time.perf_counter() - began)
                    items = result["structuredContent"]["items"]
                    wanted = f"set/{SET[i][0]}"
                    slugs = [item["slug"] for item in items]
                    used = max(1, result["structuredContent"]["used"])
                    if wanted in slugs:
                        found += 1
                        ranks.append(slugs.index(wanted) + 1)
                    relevant.append(sum(len(item["text"]) for item in items if item["slug"] == wanted) / used)
                    first_right += bool(slugs) and slugs[0] == wanted
            total = len(queries) * args.rounds
            c50, c95 = quantiles(took)
            s50, s95 = quantiles(searched)
            print(f"{shape:11} {found / total:6.0%} {statistics.mean(ranks) if ranks else float('nan'):9.1f} "
                  f"{statistics.mean(relevant):9.0%} {first_right / total:17.0%} {c50:9.1f} / {c95:6.1f} {s50:8.1f} / {s95:6.1f}  {load():.2f}")  # fmt: skip
        server.stop()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
