"""What quantising the passage vectors to int8 costs in recall: the passage index keeps each vector
as int8 with one float scale (``hostcore.indexes.vectors.quantise``, 265 bytes a passage with
wordllama instead of 1,028 in float32); this ranks the same passages by the float vectors and by
their int8 copies, as the index compares them, and prints the two side by side.

    python bench/quantised_recall.py [--distractors 5000] [--queries 300]

1. The labelled set (``labelled_set.py``: each document's paraphrase query, which shares no word
   with it), among its distractors and ``--distractors`` generated wiki pages
   (``default_scale.generated_pages``) cut into passages as the index cuts them: recall@5 and
   nDCG@10 of the paraphrases (a page ranks by its nearest passage), float against int8.
2. ``--queries`` queries made of words of the generated pages: how many of the 10 nearest
   passages by float the int8 ranking also puts in its 10 (the overlap), and the largest
   difference of a similarity.

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

from default_scale import generated_pages
from labelled_set import DISTRACTORS, SET, document

from hostcore.domain.pages import Page
from hostcore.indexes.passages import split_passages
from hostcore.indexes.vectors import dot_products, quantise


def ranked_pages(similarities: np.ndarray, owners: np.ndarray, k: int) -> list[int]:
    """The ``k`` pages whose nearest passage is nearest, nearest first."""
    best: dict[int, float] = {}
    for slot in np.argsort(-similarities, kind="stable"):
        owner = int(owners[slot])
        if owner not in best:
            best[owner] = float(similarities[slot])
            if len(best) == k:
                break
    return list(best)


def labelled_passages(pages: int, seed: int) -> tuple[list[str], list[str], list[int]]:
    """(texts, passages, the text each passage is of): the labelled set's documents first, then
    its distractors and ``pages`` generated wiki pages, cut into passages as the index cuts them."""
    texts = [document(i) for i in range(len(SET))] + [text for _, text in DISTRACTORS]
    texts += [Page.from_bytes(slug, data).body for slug, data in generated_pages(pages, seed)]
    passages, owners = [], []
    for page, text in enumerate(texts):
        for _start, passage in split_passages(text):
            passages.append(passage)
            owners.append(page)
    return texts, passages, owners


def ndcg(ranking: list[int], wanted: int, k: int = 10) -> float:
    """One relevant page: 1 / log2(its rank + 1) within the first ``k``, else 0."""
    return next((1 / math.log2(rank + 2) for rank, page in enumerate(ranking[:k]) if page == wanted), 0.0)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--distractors", type=int, default=5000, help="generated wiki pages beside the labelled set")
    ap.add_argument("--queries", type=int, default=300, help="queries of the generated pages' words, for the overlap")
    ap.add_argument("--seed", type=int, default=7)
    args = ap.parse_args()
    from hostcore_wordllama import WordLlamaEmbedder

    embedder = WordLlamaEmbedder()
    texts, passages, owners = labelled_passages(args.distractors, args.seed)
    began = time.perf_counter()
    exact = np.asarray(embedder.embed(passages), dtype=np.float32)
    print(
        f"{len(texts)} pages, {len(passages)} passages embedded in {time.perf_counter() - began:.1f} s   load {os.getloadavg()[0]:.2f}"
    )
    rows, scales = quantise(exact)
    owner_of = np.asarray(owners)

    def both(query_vector: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = np.asarray(query_vector, dtype=np.float32)
        q8, qscale = quantise(q.reshape(1, -1))
        approximate = dot_products(rows, q8[0]) * (scales * float(qscale[0]))
        return exact @ q, approximate

    table = {"float32": ([], []), "int8": ([], [])}
    for i, (_name, _text, paraphrase, _keyword) in enumerate(SET):
        for label, sims in zip(table, both(embedder.embed_query(paraphrase)), strict=True):
            ranking = ranked_pages(sims, owner_of, 10)
            table[label][0].append(i in ranking[:5])
            table[label][1].append(ndcg(ranking, i))
    print(f"\nparaphrases of the {len(SET)} labelled documents among {len(texts) - len(SET)} other pages:")
    print(f"  {'vectors':8} {'recall@5':>9} {'nDCG@10':>8}   bytes of a vector")
    for label, (hits, gains) in table.items():
        size = exact.shape[1] * 4 if label == "float32" else rows.shape[1] + 4
        print(f"  {label:8} {sum(hits) / len(hits):9.0%} {sum(gains) / len(gains):8.3f}   {size}")

    rng = random.Random(args.seed)
    vocabulary = sorted(
        {w for text in texts[len(SET) + len(DISTRACTORS) :][:500] for w in text.split() if w.isalpha() and len(w) > 3}
    )
    overlaps, worst = [], 0.0
    for _ in range(args.queries):
        sims, approximate = both(embedder.embed_query(" ".join(rng.sample(vocabulary, rng.randint(1, 4)))))
        top = set(np.argsort(-sims)[:10].tolist())
        overlaps.append(len(top & set(np.argsort(-approximate)[:10].tolist())))
        worst = max(worst, float(np.abs(sims - approximate).max()))
    print(f"\n{args.queries} queries of 1-4 words of the generated pages, over {len(passages)} passages:")
    print(f"  the 10 nearest passages by int8 that are among the 10 by float32: mean {np.mean(overlaps):.2f}, "
          f"fewest {min(overlaps)}; largest difference of a similarity {worst:.4f}   load {os.getloadavg()[0]:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
