"""Why the passage index compares a query with every vector: what an approximate index of
clustered vectors (an inverted file, IVF: spherical k-means, about sqrt(n) clusters, a search
compares the vectors of the ``--probes`` share of clusters nearest its query) would save in time
and cost in recall. This embeds the labelled set among ``--pages`` generated wiki pages, cut into
passages as the index cuts them and quantised as it keeps them, clusters them, and ranks each
query every way, interleaved:

1. the labelled set's paraphrases: recall@5 and nDCG@10 (a page ranks by its nearest passage),
   every vector against each share of clusters;
2. ``--queries`` queries of 1-4 words of the generated pages: how many of the 10 nearest passages
   the clusters also find (the overlap), and the time of one comparison each way (p50 and p95,
   int8 against int8 as the index compares, the clusters' mask and the gathering);
3. the time clustering takes (train on a sample, label every vector).

    python bench/vector_clusters.py [--pages 50000] [--queries 300]

It prints figures and the machine's load, and asserts nothing.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from labelled_set import DISTRACTORS, SET
from quantised_recall import labelled_passages, ndcg, ranked_pages

from hostcore.indexes.vectors import quantise

SAMPLE = 50_000  # vectors the clusters are trained on
ROUNDS = 10


def unit(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1)
    return vectors / np.where(norms > 0, norms, 1)[:, None]


def dequantised(records: np.ndarray) -> np.ndarray:
    return records["vector"].astype(np.float32) * records["scale"][:, None]


def assign(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """The nearest centroid of each vector (by inner product)."""
    return np.concatenate([np.argmax(vectors[i : i + 16384] @ centroids.T, axis=1) for i in range(0, len(vectors), 16384)])


def train(sample: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """``k`` unit centroids of the unit rows ``sample``: k-means++ seeds (from at most 20 rows a
    seed), then spherical k-means for a fixed number of rounds (an empty cluster takes a random row)."""
    pool = sample[rng.choice(len(sample), min(len(sample), 20 * k), replace=False)]
    chosen = [int(rng.integers(len(pool)))]
    distance = np.maximum(1 - pool @ pool[chosen[0]], 0)
    for _ in range(1, k):
        pick = int(rng.choice(len(pool), p=distance / distance.sum()))
        chosen.append(pick)
        distance = np.minimum(distance, np.maximum(1 - pool @ pool[pick], 0))
    centroids = pool[chosen].copy()
    for _ in range(ROUNDS):
        nearest = assign(sample, centroids)
        order = np.argsort(nearest, kind="stable")
        counts = np.bincount(nearest, minlength=k)
        starts = np.concatenate(([0], np.cumsum(counts)[:-1]))
        filled = counts > 0
        centroids[filled] = unit(np.add.reduceat(sample[order], starts[filled], axis=0))
        empty = np.flatnonzero(~filled)
        centroids[empty] = sample[rng.choice(len(sample), len(empty), replace=False)]
    return centroids.astype(np.float32)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=50_000, help="generated wiki pages beside the labelled set")
    ap.add_argument("--queries", type=int, default=300, help="queries of the generated pages' words")
    ap.add_argument("--probes", default="0.05,0.1,0.2,0.3", help="shares of the clusters a search compares")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    from hostcore_wordllama import WordLlamaEmbedder

    embedder = WordLlamaEmbedder()
    texts, passages, owners = labelled_passages(args.pages, args.seed)
    began = time.perf_counter()
    rows, scales = quantise(np.asarray(embedder.embed(passages), dtype=np.float32))
    owner_of = np.asarray(owners)
    print(f"{len(texts)} pages, {len(passages)} passages embedded in {time.perf_counter() - began:.1f} s"
          f"   load {os.getloadavg()[0]:.2f}")  # fmt: skip

    records = np.zeros(len(rows), dtype=[("vector", "i1", (rows.shape[1],)), ("scale", "<f4"), ("kind", "i1")])
    records["vector"], records["scale"], records["kind"] = rows, scales, 1
    began = time.perf_counter()
    rng = np.random.default_rng(len(rows))
    sample = np.sort(rng.choice(len(rows), min(SAMPLE, len(rows)), replace=False))
    centroids = train(unit(dequantised(records[sample])), round(math.sqrt(len(rows))), rng)
    trained = time.perf_counter() - began
    labels = assign(dequantised(records), centroids)
    labelled = time.perf_counter() - began - trained
    shares = [float(s) for s in args.probes.split(",") if s]
    print(f"{len(centroids)} clusters trained in {trained:.1f} s, {len(rows)} vectors labelled in {labelled:.1f} s"
          f"   load {os.getloadavg()[0]:.2f}")  # fmt: skip
    kinds = np.ones(len(rows), dtype=np.int8)

    def every(query: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q8, qscale = quantise(query.reshape(1, -1))
        keep = np.flatnonzero(records["kind"] == 1)
        block = records[keep]
        return keep, np.einsum("ij,j->i", block["vector"], q8[0], dtype=np.int32) * (block["scale"] * float(qscale[0]))

    def clustered(query: np.ndarray, probe: int) -> tuple[np.ndarray, np.ndarray]:
        q8, qscale = quantise(query.reshape(1, -1))
        near = np.argpartition(-(centroids @ query), probe - 1)[:probe]
        wanted = np.zeros(2**15 + 1, dtype=bool)
        wanted[near + 1] = True
        keep = np.flatnonzero((kinds == 1) & wanted[labels.astype(np.int32) + 1])
        block = records[keep]
        sims = np.einsum("ij,j->i", block["vector"], q8[0], dtype=np.int32) * (block["scale"] * float(qscale[0]))
        return keep, np.where(block["kind"] != 1, -np.inf, sims)

    def similarities(way, query: np.ndarray) -> np.ndarray:
        keep, sims = way(np.asarray(query, dtype=np.float32))
        out = np.full(len(rows), -np.inf, dtype=np.float32)
        out[keep] = sims
        return out

    ways = {"every vector": every}
    for share in shares:
        probe = max(1, math.ceil(len(centroids) * share))
        ways[f"{probe} clusters"] = lambda query, probe=probe: clustered(query, probe)
    table: dict[str, tuple[list[bool], list[float]]] = {name: ([], []) for name in ways}
    for i, (_name, _text, paraphrase, _keyword) in enumerate(SET):
        query = embedder.embed_query(paraphrase)
        for name, way in ways.items():
            ranking = ranked_pages(similarities(way, query), owner_of, 10)
            table[name][0].append(i in ranking[:5])
            table[name][1].append(ndcg(ranking, i))
    print(f"\nparaphrases of the {len(SET)} labelled documents among {len(texts) - len(SET)} other pages:")
    print(f"  {'compared':13} {'recall@5':>9} {'nDCG@10':>8}")
    for name, (hits, gains) in table.items():
        print(f"  {name:13} {sum(hits) / len(hits):9.0%} {sum(gains) / len(gains):8.3f}")

    rand = random.Random(args.seed)
    vocabulary = sorted(
        {w for text in texts[len(SET) + len(DISTRACTORS) :][:500] for w in text.split() if w.isalpha() and len(w) > 3}
    )
    overlaps: dict[str, list[int]] = {name: [] for name in ways}
    times: dict[str, list[float]] = {name: [] for name in ways}
    for n in range(args.queries):
        query = np.asarray(embedder.embed_query(" ".join(rand.sample(vocabulary, rand.randint(1, 4)))), dtype=np.float32)
        tops = {}
        for name in list(ways) if n % 2 else list(ways)[::-1]:  # interleaved, each first half the time
            began = time.perf_counter()
            keep, sims = ways[name](query)
            top = keep[np.argsort(-sims)[:10]]
            times[name].append(time.perf_counter() - began)
            tops[name] = set(top.tolist())
        for name in ways:
            overlaps[name].append(len(tops["every vector"] & tops[name]))
    print(f"\n{args.queries} queries of 1-4 words, over {len(rows)} passages   load {os.getloadavg()[0]:.2f}:")
    base = np.percentile(times["every vector"], 50)
    print(f"  {'compared':13} {'p50 ms':>7} {'p95 ms':>7} {'p50 ratio':>9}   of the 10 nearest passages, found (mean, fewest)")
    for name, spent in times.items():
        ms = np.asarray(spent) * 1000
        print(f"  {name:13} {np.percentile(ms, 50):7.2f} {np.percentile(ms, 95):7.2f} {np.percentile(spent, 50) / base:8.2f}x"
              f"   {np.mean(overlaps[name]):.2f}, {min(overlaps[name])}")  # fmt: skip


if __name__ == "__main__":
    main()
