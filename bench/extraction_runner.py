"""Benchmark of attachment text extraction: prints figures, never passes or fails.

What the isolation costs: the built-in text extractor on a ``--kib`` KiB Markdown file run
in-process (the baseline: the extractor's own work), in the limited subprocess every extraction
runs in (``run_extractor``: Python start-up, importing hostcore and the extractor, the limits),
and answered from the ``extracted.sqlite`` cache (what every later read of the same file costs).

Usage: ``python bench/extraction.py [--kib 256] [--repeat 5]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from hostcore.domain.hashes import blob_hash
from hostcore.indexes.extraction import TextExtraction, run_extractor
from hostcore.indexes.text_extractor import PlainTextExtractor


def per_call_ms(fn: Callable[[], object], repeat: int) -> float:
    fn()
    start = time.perf_counter()
    for _ in range(repeat):
        fn()
    return (time.perf_counter() - start) / repeat * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kib", type=int, default=256)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    line = "Item: the committee approved the budget for the next quarter.\n"
    data = (line * (args.kib * 1024 // len(line) + 1)).encode()[: args.kib * 1024]
    extractor = PlainTextExtractor()
    in_process = per_call_ms(lambda: extractor.extract(data, "text/markdown"), args.repeat * 20)
    subprocess_ms = per_call_ms(lambda: run_extractor(extractor, data, "text/markdown", 30, 2**30), args.repeat)
    with tempfile.TemporaryDirectory() as tmp:
        cache = TextExtraction(Path(tmp) / "extracted.sqlite", [extractor], 30, 2**30)
        digest = blob_hash(data)
        cache.text(data, digest, "text/markdown")
        cached = per_call_ms(lambda: cache.text(data, digest, "text/markdown"), args.repeat * 20)
        cache.close()
    print(f"text extraction of a {args.kib} KiB Markdown file, ms per call:")
    print(f"  in-process extractor (baseline)  {in_process:9.2f}")
    print(f"  limited subprocess               {subprocess_ms:9.2f}  ({subprocess_ms / in_process:,.0f}x the baseline)")
    print(f"  from the extracted.sqlite cache  {cached:9.2f}  ({cached / in_process:,.1f}x the baseline)")


if __name__ == "__main__":
    main()
