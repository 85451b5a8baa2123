"""Timing helpers the bench scripts share: samples in milliseconds and their p50/p95."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable


def timed(fn: Callable[[], object], runs: int, clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Milliseconds of ``runs`` sequential calls of ``fn``: wall time, or this process's CPU time with
    ``clock=time.process_time`` (steadier on a machine others share)."""
    out = []
    for _ in range(runs):
        start = clock()
        fn()
        out.append((clock() - start) * 1000)
    return out


def p95(samples: list[float]) -> float:
    """The 95th percentile by nearest rank (the largest sample when there are fewer than 20)."""
    return sorted(samples)[math.ceil(0.95 * len(samples)) - 1]


def percentiles(samples: list[float]) -> str:
    """``p50 ... ms  p95 ... ms`` (p95: :func:`p95`)."""
    return f"p50 {statistics.median(samples):9.2f} ms  p95 {p95(samples):9.2f} ms"
