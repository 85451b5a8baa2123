"""Rate limits per principal: how many requests and writes one caller may make in a window (and
how many OAuth clients one client address may register).

Counted by the ``limits`` library's moving window (at most N hits in any window of the given
length, so no burst at a window's edge), per principal name (or address), in this process's memory or, when
``REDIS_URL`` is set, in Redis, shared by every worker and host of the wiki.

When Redis cannot be reached the limits are not dropped: each process counts in its own memory
meanwhile (so a caller spread over W workers gets up to W times the limit), logs one warning,
tries Redis again every ``RETRY_SECONDS``, and logs when Redis answers again. ``status()`` (shown
by the ``health`` tool) says which store counts now.
"""

from __future__ import annotations

import functools
import logging
import math
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis
    from limits import RateLimitItem
    from limits.errors import StorageError
    from limits.storage import MemoryStorage
    from limits.strategies import MovingWindowRateLimiter

# The rest of `limits` (its package imports its async storages, a third of a second on a busy
# machine) loads when a limit is parsed or counted, not with the settings that name the defaults:
# the CLI reads the settings for every command, `hostcore --help` included.

log = logging.getLogger("hostcore.ratelimits")

KINDS = {
    "requests": "HTTP requests: MCP with an accepted token (initialize and tools/list included), web pages, files and "
    "uploads (a visitor and an upload by address); over it: HTTP 429",
    "writes": "calls that change the wiki (a save, edit, delete, move, rename, restore); over it: a rate_limited tool error",
    "registrations": "OAuth client registrations (RFC 7591) per client address, not per principal; over it: HTTP 429",
}
DEFAULT_LIMITS = {"requests": "300/minute", "writes": "60/minute", "registrations": "20/hour"}
OFF = "off"
RETRY_SECONDS = 5.0
"""After Redis failed, count in memory this long before trying Redis again (no timeout per call)."""


def parse_limit(value: str) -> RateLimitItem | None:
    """The limit written as ``"300/minute"`` (or ``"10 per second"``, ``"1000/hour"``); None for
    ``"off"``. Raises ValueError for anything else."""
    from limits import parse

    if value.strip().lower() == OFF:
        return None
    item = parse(value)
    if item.amount < 1:
        raise ValueError(value)
    return item


def limit_problems(value: Any, where: str) -> list[str]:
    """Every problem with a RATE_LIMITS table, each naming where it was written and the fix."""
    if not isinstance(value, Mapping):
        return []  # the setting's type check names it
    problems = []
    for kind, limit in value.items():
        if kind not in KINDS:
            problems.append(f"{where}.{kind}: no rate limit named {kind!r}; the limits are {', '.join(KINDS)}")
            continue
        if limit == DEFAULT_LIMITS[kind]:
            continue  # known good, and checking a config that keeps it needs no `limits`
        try:
            if not isinstance(limit, str):
                raise ValueError(limit)
            parse_limit(limit)
        except ValueError:
            problems.append(
                f"{where}.{kind}: {limit!r} is no rate limit; write it like \"{DEFAULT_LIMITS[kind]}\" "
                f"(per second, minute, hour or day) or \"{OFF}\""
            )
    return problems


@functools.cache
def quiet_memory_storage() -> type[MemoryStorage]:
    """``limits``' memory storage without its expiry thread, which it starts (a short
    ``threading.Timer``) on every hit after an idle moment: on a loaded machine starting that
    thread costs far more than the count itself (``bench/rate_limits.py``). Instead each hit trims its key's list to the limit
    (the older entries are never consulted), so memory stays bounded by principals x limit."""
    from limits.storage import MemoryStorage

    class QuietMemoryStorage(MemoryStorage):
        def acquire_entry(self, key: str, limit: int, expiry: int, amount: int = 1) -> bool:
            with self.locks[key]:
                acquired = super().acquire_entry(key, limit, expiry, amount)
                del self.events[key][limit:]
            return acquired

        def _MemoryStorage__schedule_expiry(self) -> None:
            """What every hit calls to start the thread (name-mangled in limits 5.x; setup.cfg pins <6)."""

    return QuietMemoryStorage


class RateLimiter:
    """Counts hits per (kind, principal name) and says how long a caller over its limit must wait.

    ``limits``: kind -> limit string (see :func:`parse_limit`); kinds left out are not limited.
    ``redis``: a client of the shared store, or None to count in this process's memory.
    ``prefix``: what this wiki's Redis keys start with, so wikis sharing one Redis count apart.
    """

    def __init__(self, limits: Mapping[str, str], redis: redis.Redis | None = None, prefix: str = "hostcore") -> None:
        from limits.errors import StorageError
        from limits.storage import RedisStorage
        from limits.strategies import MovingWindowRateLimiter

        self._storage_error = StorageError

        self.items = {kind: item for kind, value in limits.items() if (item := parse_limit(value)) is not None}
        self.memory = MovingWindowRateLimiter(quiet_memory_storage()())
        self.shared: MovingWindowRateLimiter | None = None
        if redis is not None:
            storage = RedisStorage(
                "redis://", connection_pool=redis.connection_pool, key_prefix=prefix, wrap_exceptions=True
            )
            self.shared = MovingWindowRateLimiter(storage)
        self._lock = threading.Lock()
        self._down_since: float | None = None  # wall-clock time Redis failed; None while it answers
        self._retry_at = 0.0  # monotonic time to try Redis again

    def wait(self, kind: str, who: str) -> int:
        """Count one hit of ``kind`` by ``who``: 0 when it is within the limit, else the whole
        seconds until one more would be (at least 1). Nothing is counted for a refused hit."""
        item = self.items.get(kind)
        if item is None:
            return 0
        limiter = self._limiter()
        try:
            if limiter.hit(item, kind, who):
                self._answered(limiter)
                return 0
            reset = limiter.get_window_stats(item, kind, who).reset_time
        except self._storage_error as exc:
            self._failed(exc)
            return self.wait(kind, who)
        self._answered(limiter)
        return max(1, math.ceil(reset - time.time()))

    def describe(self, kind: str) -> str:
        """The limit on ``kind`` in words: "60 per minute", "1000 per 2 hours"."""
        item = self.items[kind]
        unit = item.GRANULARITY.name
        return f"{item.amount} per {unit}" if item.multiples == 1 else f"{item.amount} per {item.multiples} {unit}s"

    def _limiter(self) -> MovingWindowRateLimiter:
        if self.shared is None or time.monotonic() < self._retry_at:
            return self.memory
        return self.shared

    def _failed(self, exc: StorageError) -> None:
        with self._lock:
            self._retry_at = time.monotonic() + RETRY_SECONDS
            if self._down_since is None:
                self._down_since = time.time()
                log.warning(
                    "Redis is unreachable (%s): rate limits are counted in each worker's memory until it answers; "
                    "trying again every %d s",
                    exc.storage_error,
                    RETRY_SECONDS,
                )

    def _answered(self, limiter: MovingWindowRateLimiter) -> None:
        if limiter is self.shared and self._down_since is not None:
            with self._lock:
                if self._down_since is not None:
                    log.info("Redis answers again: rate limits are shared again")
                    self._down_since = None

    def status(self) -> dict[str, Any]:
        """Which store counts (``memory``: this worker only; ``redis``: shared), whether Redis
        answers now (one PING), and the limits in force."""
        out: dict[str, Any] = {
            "store": "memory" if self.shared is None else "redis",
            "limits": {kind: self.describe(kind) for kind in self.items},
        }
        if self.shared is not None:
            reachable = self.shared.storage.check()
            if reachable:
                self._answered(self.shared)
            out["reachable"] = reachable
            if not reachable:
                out["note"] = "Redis is unreachable: each worker counts on its own until it answers"
        return out
