"""gunicorn's threaded worker with the connections spread evenly over the workers.

gunicorn's workers share one listening socket, and whichever worker calls ``accept`` first takes a
new connection: the busiest one, as it turns out, since its event loop is the one awake. A client
keeps its keep-alive connection with that worker, so under many concurrent writers one worker held
most of the connections and its clients waited longer than the others: the wiki's slowest answers
were theirs. (Closing connections now and then made it worse: the busy worker took the
reconnections too.)

So each worker publishes how many connections it holds on a small board in memory it shares with
its siblings (anonymous shared memory the master makes before it forks them; each worker gets a
slot in ``pre_fork``, freed in ``child_exit``). A worker listens for new connections only while it
holds no more than the least loaded worker plus :data:`SLACK`, and one that holds more than an even
share plus :data:`SLACK` answers its next request with ``Connection: close``: the client reconnects
(HTTP clients do so by themselves) and a less loaded worker takes it. With 64 writers on two
workers: 32 and 32.

The board also holds each worker's requests in flight: background work that may wait (the embedding
catching up) pauses while there are any (:func:`hostcore.seams.worker.serving_from`).

The worker is :class:`hostcore.cli.intake.IntakeWorker`: gthread reading each request in its event
loop before a thread takes it, so slow clients hold no thread.

``hostcore serve`` runs this. With gunicorn run by hand, load this module as a config file:
``gunicorn -c python:hostcore.cli.workers ...`` (its ``worker_class``, ``pre_fork``,
``child_exit`` and ``worker_exit`` are gunicorn settings); without it gunicorn's plain gthread worker runs.

It leans on gthread's loop as gunicorn 24 and later have it: before each wait it compares its open
connections (``nr_conns``) with ``worker_connections`` and stops listening, while still serving the
connections it holds, when they reach it (gunicorn 23 stopped polling those too).
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import sys
import threading
from typing import Any

from hostcore.cli.intake import IntakeWorker
from hostcore.seams.worker import serving_from

log = logging.getLogger("hostcore.serve")

SLACK = 1  # connections a worker may hold above the least loaded (to accept) or an even share (to keep)
SLOTS = 128  # workers the board has room for, those being replaced included
HELD_BACK_WAIT = 0.01  # seconds a worker held back from accepting waits before it looks at the board again
SWITCH_INTERVAL = 0.001  # seconds a thread waits for the interpreter lock before it asks the holder to let go
_SLOT = struct.Struct("=iii")  # a worker's pid (0: free), its open connections and its requests in flight
_HEAD = struct.Struct("=ii")  # the pid and the connections, published together
_FLIGHT = struct.Struct("=i")  # the requests in flight, after them


class Board:
    """A slot per worker, its pid, its open connections and its requests in flight, in memory shared
    across the fork."""

    def __init__(self, slots: int = SLOTS) -> None:
        self.slots = slots
        self._memory = mmap.mmap(-1, _SLOT.size * slots)  # anonymous, shared with the forked workers
        self._owners: list[Any] = [None] * slots  # the master's own record: the worker given each slot

    def claim(self, worker: Any, live: set[int]) -> int:
        """A free slot for ``worker``, about to be forked (in the master, one fork at a time): one
        never given, or given to a worker that is not among the ``live`` pids; -1 when full."""
        for slot, owner in enumerate(self._owners):
            if owner is None or getattr(owner, "pid", None) not in live:
                self._owners[slot] = worker
                self.release(slot)
                return slot
        return -1

    def publish(self, slot: int, connections: int) -> None:
        _HEAD.pack_into(self._memory, slot * _SLOT.size, os.getpid(), connections)

    def flying(self, slot: int, requests: int) -> None:
        """Publish the requests the worker in ``slot`` is answering now."""
        _FLIGHT.pack_into(self._memory, slot * _SLOT.size + _HEAD.size, requests)

    def release(self, slot: int) -> None:
        _SLOT.pack_into(self._memory, slot * _SLOT.size, 0, 0, 0)

    def counts(self) -> list[int]:
        """The open connections of each worker that has published."""
        return [connections for pid, connections, _ in _SLOT.iter_unpack(self._memory) if pid]  # read twice a request: in C

    def in_flight(self) -> int:
        """The requests all the workers are answering now."""
        return sum(requests for pid, _, requests in _SLOT.iter_unpack(self._memory) if pid)


BOARD = Board()


class Worker(IntakeWorker):
    """gthread reading requests before a thread takes them (:mod:`hostcore.cli.intake`), accepting
    and keeping connections only up to an even share (see the module)."""

    board: Board | None = None  # given by the master in pre_fork, with the slot
    slot = -1
    _limit = 0
    _held_back = False  # not listening because another worker holds fewer connections
    _flying = 0  # requests this worker's threads are answering (counted under _flight_lock)

    def init_process(self) -> None:
        self._flight_lock = threading.Lock()
        super().init_process()

    @property
    def worker_connections(self) -> int:
        """What gthread's loop compares its open connections with before each wait (it listens
        for new ones while it holds fewer): its configured limit, lowered to what it holds while
        another worker holds fewer by more than SLACK. Publishes what this worker holds."""
        held = self.nr_conns
        if self.board is None or self.slot < 0:
            return self._limit
        self.board.publish(self.slot, held)
        self._held_back = False
        if held >= self._limit:
            return self._limit
        if held <= min(self.board.counts(), default=0) + SLACK:
            return held + 1
        self._held_back = True
        return held

    @worker_connections.setter
    def worker_connections(self, value: int) -> None:
        self._limit = value

    def wait_for_and_dispatch_events(self, timeout: float) -> None:
        """gthread's wait for events, shortened while this worker is held back: it learns that
        the others caught up only by looking at the board again, which it does after an event or
        the wait's 1 s. With many clients connecting at once, both workers busy with their first
        requests took the connections in turns of two, an event apart, and the writers' first
        saves waited for those turns (``bench/concurrent_writers.py`` shows them)."""
        super().wait_for_and_dispatch_events(min(timeout, HELD_BACK_WAIT) if self._held_back else timeout)

    def run(self) -> None:
        """Warm every thread of the pool (:meth:`warm_threads`), start handing free heap memory
        back to the system now and then (:mod:`hostcore.cli.arenas`), then serve.

        A thread that wants the interpreter lock asks its holder to let go after
        :data:`SWITCH_INTERVAL` (Python's default is five times as long), and a request hands the
        lock over at each read, write or query it makes: beside a thread that computes in Python
        (the embedding catching up, between its checkpoints) each handover cost a request up to
        the interval again (docs/operators.md, Document search, gives the figures)."""
        from hostcore.cli.arenas import trim_malloc_periodically

        sys.setswitchinterval(SWITCH_INTERVAL)
        self.warm_threads()
        trim_malloc_periodically()
        if self.board is not None and self.slot >= 0:
            serving_from(self.board.in_flight)
        super().run()

    def warm_threads(self) -> None:
        """Start the pool's threads now and have each make its own state (the MCP transport's
        event loop, see :func:`hostcore.app.warm_thread`) before the first connection, not on its
        first request: with many writers starting at once, every thread of both workers met its
        first request in the same second, and the slowest of those saves were the wiki's slowest."""
        from hostcore.app import warm_thread

        threads = self.cfg.threads
        # Each job waits for all the others: none is idle, so the pool starts a thread for each.
        barrier = threading.Barrier(threads)

        def warm() -> None:
            barrier.wait(timeout=30)
            warm_thread(getattr(self, "served", self.wsgi))  # the app itself, not the wrapper it is served in

        for job in [self.tpool.submit(warm) for _ in range(threads)]:
            try:
                job.result()
            except Exception:  # a thread left cold makes its state at its first request, as before
                log.exception("warming a worker thread failed")

    def handle_request(self, req: Any, conn: Any) -> Any:
        """Serve ``req``; its response closes the connection while this worker holds more than an
        even share (gunicorn says ``Connection: close`` and closes it once answered)."""
        if self.board is None or self.slot < 0:
            return super().handle_request(req, conn)
        counts = self.board.counts()
        share = -(-sum(counts) // max(1, len(counts)))
        if self.nr_conns > share + SLACK:
            req.must_close = True
        self._fly(+1)
        try:
            return super().handle_request(req, conn)
        finally:
            self._fly(-1)

    def _fly(self, change: int) -> None:
        """Count a request that starts (+1) or ends (-1) and publish the count on the board."""
        with self._flight_lock:
            self._flying += change
            assert self.board is not None
            self.board.flying(self.slot, self._flying)


# gunicorn settings (``hostcore serve`` sets them; ``gunicorn -c python:hostcore.cli.workers``
# reads them from this module).
worker_class = f"{__name__}.Worker"


def pre_fork(server: Any, worker: Any) -> None:
    worker.board, worker.slot = BOARD, BOARD.claim(worker, set(server.WORKERS))
    if worker.slot < 0:
        log.warning("more than %d workers: the new one takes connections as they come", SLOTS)


def child_exit(_server: Any, worker: Any) -> None:
    if getattr(worker, "slot", -1) >= 0:
        BOARD.release(worker.slot)


def worker_exit(_server: Any, worker: Any) -> None:
    """In the worker, as it stops cleanly: what it holds in memory is written (the activity log)."""
    from hostcore.app import stop_serving

    stop_serving(getattr(worker, "served", None))


SETTINGS = {"worker_class": worker_class, "pre_fork": pre_fork, "child_exit": child_exit, "worker_exit": worker_exit}
