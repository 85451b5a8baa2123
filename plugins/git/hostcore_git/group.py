"""Group commit: the writes that queue up in one process while another holds the write lock are
committed together, and made durable together.

A git commit is cheap; making it durable is not: each object file and the ref need an fsync, a
disk's round trip each, one after another under the write lock. Concurrent fsyncs of
different files cost about one (the file system commits its journal once for all of them), so
every change waiting for the lock is taken by one *leader* thread, which writes each change's
commit (one commit per change, each on the previous, with its own author and message), writes and
flushes all their objects at once (one pack), moves the branch once, and hands every waiting thread its own outcome. The
branch never points at an object before it is on disk, and no change is acknowledged before the
branch holds it.

:func:`flush` is the durability half: fsync files (and the folders that name them) in parallel.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

T = TypeVar("T")
MAX_GROUP = 64  # changes committed in one group at most
FLUSH_THREADS = 8

_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_guard = threading.Lock()


@dataclass(eq=False)
class Pending(Generic[T]):
    """One change waiting for a leader: ``item`` in, ``result`` or ``error`` out."""

    item: T
    result: Any = None
    error: BaseException | None = None
    done: bool = field(default=False)

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        self.result, self.error, self.done = result, error, True


class Group(Generic[T]):
    """Leader/follower queue: :meth:`submit` returns the outcome ``lead`` gave the item.

    ``lead(take)`` runs in one thread at a time; it calls ``take()`` (once it holds whatever lock
    makes waiting worthwhile) for every change queued so far, and must ``finish`` each of them;
    any it leaves unfinished get the exception ``lead`` raised.
    """

    def __init__(self, lead: Callable[[Callable[[], list[Pending[T]]]], None]) -> None:
        self._lead = lead
        self._cond = threading.Condition()
        self._queue: list[Pending[T]] = []
        self._leading = False

    def submit(self, item: T) -> Any:
        """Queue ``item``, wait until a leader (perhaps this thread) has handled it; return its
        result or raise its error."""
        pending = Pending(item)
        with self._cond:
            self._queue.append(pending)
        while not pending.done:
            with self._cond:
                while self._leading and not pending.done:
                    self._cond.wait()
                if pending.done:
                    break
                self._leading = True
            try:
                self._lead_once(pending)
            finally:
                with self._cond:
                    self._leading = False
                    self._cond.notify_all()
        if pending.error is not None:
            raise pending.error
        return pending.result

    def _lead_once(self, pending: Pending[T]) -> None:
        taken: list[Pending[T]] = []

        def take() -> list[Pending[T]]:
            with self._cond:
                batch, self._queue[:] = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            taken.extend(batch)
            return batch

        try:
            self._lead(take)
        except BaseException as exc:
            if not taken:  # failed before taking anything: only this change learns of it
                with self._cond:
                    self._queue.remove(pending)
                taken.append(pending)
            for other in taken:
                if not other.done:
                    other.finish(error=exc)


def _executor() -> ThreadPoolExecutor:
    """This process's flushing threads (a forked child makes its own)."""
    global _pool
    with _pool_guard:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(FLUSH_THREADS, thread_name_prefix="hostcore-fsync"))
        return _pool[1]


def _fsync(paths: list[Path]) -> None:
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:  # an object git already had packed: it was durable before
            continue
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def flush(files: Iterable[Path]) -> None:
    """fsync every file of ``files`` and every folder holding one, in parallel; a missing file is
    skipped. Raises the first OSError."""
    paths = sorted(set(files))
    paths += sorted({path.parent for path in paths})
    if len(paths) == 1:
        _fsync(paths)
        return
    # One task per flushing thread, each taking its share in turn: the concurrent fsyncs still
    # share journal commits, at a few Python calls per thread instead of per file (a group of 20
    # commits has some 150 files and folders to flush).
    futures = [_executor().submit(_fsync, paths[i::FLUSH_THREADS]) for i in range(min(FLUSH_THREADS, len(paths)))]
    wait(futures)
    for future in futures:
        future.result()
