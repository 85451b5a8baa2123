"""A background thread that does one job again whenever asked, the asks that come meanwhile in one go.

What keeps derived state current off the request path (the indexes' catch-up, embedding, rendering
ahead, pushing to a remote) has the same shape: a request says "something changed" (:meth:`kick`)
and returns at once; a thread of this process runs the job soon after; asks that come while it
runs, or within ``gap`` seconds of its start, are taken by its next run, in one go (a save after a
quiet spell is taken at once); :meth:`wait` waits for every ask so far (taking a run the gap holds
back at once); :meth:`stop` finishes (or drops) what was asked and ends the thread. Work that
may wait (embedding a whole wiki) runs at a lower CPU priority (``nice``), so requests come first,
and gives way (:meth:`CoalescingWorker.give_way`) while the server says requests are being answered
(:func:`serving_from`): on two cores a search beside the embedding lost more to it (the interpreter
lock, the caches) than the priority could give back.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
from collections.abc import Callable

from hostcore.errors import Unavailable

log = logging.getLogger("hostcore.worker")

GIVE_WAY_MOST = 0.02  # seconds a job waits for requests at a checkpoint at most: a stream of them slows it, never stops it
GIVE_WAY_POLL = 0.001  # seconds between looks at the requests in flight while giving way


def _nothing_served() -> int:
    return 0


_serving: Callable[[], int] = _nothing_served


def serving_from(probe: Callable[[], int] | None) -> None:
    """Where this process learns how many requests this machine's server answers now
    (``hostcore serve``'s workers give theirs, shared across its processes; None: none known)."""
    global _serving
    _serving = probe or _nothing_served


def serving() -> int:
    """Requests this machine's server is answering now, as far as this process knows (0 outside a server)."""
    return _serving()


class CoalescingWorker:
    """Runs ``job()`` in a thread named ``name`` after each :meth:`kick`, kicks meanwhile coalesced.

    ``gap``: a run starts at most this many seconds after the previous one started, while kicks
    keep coming. ``every``: also run this often unkicked (0: only when kicked). ``retry``: after a
    run that failed (raised, or returned False), run again after this many seconds, twice as long
    each time up to ``retry_max`` (0: the next kick tries again). A job that raises is logged, with
    its traceback, as ``what`` failing; one that raises :class:`~hostcore.errors.Unavailable` (an
    outage) as one warning line until it works again. The thread ends when nothing is asked (a
    forked child starts its own); ``job`` may end early when :attr:`stopping`. ``nice``: on Linux, the
    thread's nice value is raised by this much (:func:`lower_priority`): the kernel then gives the
    CPU to the process's request threads first, and to other processes' work, while the job waits.
    """

    def __init__(
        self,
        job: Callable[[], object],
        name: str,
        *,
        what: str = "",
        gap: float = 0.0,
        every: float = 0.0,
        retry: float = 0.0,
        retry_max: float = 0.0,
        nice: int = 0,
        logger: logging.Logger = log,
    ) -> None:
        self.job, self.name, self.what, self.nice = job, name, what or name, nice
        self.gap, self.every, self.retry, self.retry_max = gap, every, retry, max(retry, retry_max)
        self.log = logger
        self._cond = threading.Condition()
        self._asked = self._busy = self._hurry = self._stopping = self._finish = False
        self._thread: threading.Thread | None = None
        self._pid = os.getpid()
        self._down = False  # the job met an outage: said once, and said again when it works
        self._delay = 0.0  # the retry's current wait, doubling while the job fails

    @property
    def stopping(self) -> bool:
        """True once :meth:`stop` was called: a long job may end early."""
        return self._stopping and not self._finish

    @property
    def pending(self) -> bool:
        """Whether a run was asked for and has not started (or is due again after a failure)."""
        return self._asked

    @property
    def thread(self) -> threading.Thread | None:
        """The thread running now, if any."""
        return self._thread

    def start(self) -> None:
        """Begin the runs every ``every`` seconds (kicks start the thread anyway)."""
        with self._cond:
            self._forked()
            if self.every > 0 and self._thread is None and not self._stopping:
                self._launch()

    def give_way(self) -> float:
        """A checkpoint for a job that may wait: while requests are being answered (:func:`serving`)
        and nobody waits for this job (:meth:`wait`), pause, up to ``GIVE_WAY_MOST`` seconds; the
        seconds it paused. Call it between slices of a few milliseconds of work."""
        if self._hurry or self._stopping or not _serving():
            return 0.0
        started = time.monotonic()
        deadline = started + GIVE_WAY_MOST
        while _serving() and not (self._hurry or self._stopping) and time.monotonic() < deadline:
            time.sleep(GIVE_WAY_POLL)
        return time.monotonic() - started

    def kick(self) -> None:
        """Run the job soon (now, unless a run started less than ``gap`` seconds ago)."""
        with self._cond:
            self._forked()
            self._asked = True
            if self._thread is None and not self._stopping:
                self._launch()
            self._cond.notify_all()

    def _forked(self) -> None:
        """In a forked child: the parent's thread is not here; this process runs its own (under ``_cond``)."""
        if self._pid != os.getpid():
            self._pid, self._thread, self._busy, self._hurry = os.getpid(), None, False, False

    def _launch(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        if self.nice:
            lower_priority(self.nice)
        while True:
            with self._cond:
                if self.every > 0 and not (self._asked or self._stopping):
                    self._cond.wait(self.every)
                    self._asked = self._asked or not self._stopping
                if not self._asked or (self._stopping and not self._finish):
                    self._thread, self._hurry = None, False
                    self._cond.notify_all()
                    return
                self._asked, self._busy = False, True
            started = time.monotonic()
            ok = self._attempt()
            with self._cond:
                self._busy = False
                if not ok and self.retry > 0 and not self._stopping:
                    self._delay = min(self._delay * 2, self.retry_max) if self._delay else self.retry
                    self._asked = True
                    self._cond.notify_all()
                    until = time.monotonic() + self._delay  # neither a kick nor wait() hurries a retry
                    while not self._stopping and (left := until - time.monotonic()) > 0:
                        self._cond.wait(left)
                    self._asked = self._asked and not self._stopping  # stopped while failing: no last try
                    continue
                self._delay = 0.0
                self._cond.notify_all()
                # the next run once ``gap`` has passed: kicks that come meanwhile share it
                while not (self._stopping or self._hurry) and (left := started + self.gap - time.monotonic()) > 0:
                    self._cond.wait(left)

    def _attempt(self) -> bool:
        """One run of the job; False when it failed (logged here)."""
        try:
            done = self.job()
        except Unavailable as exc:
            if not self._down:
                self.log.warning("%s: %s; trying again at the next change or read", self.what, exc)
            self._down = True
            return False
        except Exception:
            self.log.exception("%s failed; %s", self.what, "it is tried again soon" if self.retry else
                               "it is tried again at the next change or read")  # fmt: skip
            return False
        if self._down:
            self._down = False
            self.log.warning("%s: works again", self.what)
        return done is not False

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every kick so far has been run (a run the gap holds back is taken now);
        False when ``timeout`` seconds passed first. A job that keeps failing with ``retry`` is
        waited for until it succeeds."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._cond:
            self._forked()
            while (self._asked and self._thread is not None) or self._busy:
                self._hurry = True
                self._cond.notify_all()
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cond.wait(left)
            self._hurry = False
        return True

    def stop(self, finish: bool = True, timeout: float | None = None) -> None:
        """End the thread: after the run asked for (``finish``), or after the one under way (its
        job sees :attr:`stopping`); waits up to ``timeout`` seconds. Later kicks do nothing."""
        with self._cond:
            self._forked()
            self._stopping, self._finish = True, finish
            self._cond.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)


def lower_priority(by: int) -> bool:
    """Raise the calling thread's nice value by ``by`` (at most to 19): Linux keeps one for each
    thread, so the process's other threads keep theirs. Whether it was lowered (elsewhere,
    ``setpriority`` would name a process, not a thread: nothing is done)."""
    if sys.platform != "linux" or by <= 0:
        return False
    thread = threading.get_native_id()
    try:
        os.setpriority(os.PRIO_PROCESS, thread, min(19, os.getpriority(os.PRIO_PROCESS, thread) + by))
    except OSError:
        return False
    return True
