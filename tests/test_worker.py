"""The one background worker (``hostcore.CoalescingWorker``) that keeps derived state current off
the request path: kicks coalesced, a gap between runs, wait and stop, failures logged and retried.
Real threads, a real forked process."""

from __future__ import annotations

import logging
import multiprocessing
import os
import threading
import time

from hostcore import CoalescingWorker, Unavailable


class Job:
    """Counts its runs; the first waits for ``release`` when ``hold``."""

    def __init__(self, hold: bool = False) -> None:
        self.runs: list[str] = []
        self.running, self.release = threading.Event(), threading.Event()
        if not hold:
            self.release.set()

    def __call__(self) -> None:
        self.running.set()
        assert self.release.wait(30), "the test never released the job"
        self.runs.append(threading.current_thread().name)


def test_kicks_while_it_runs_are_taken_in_one_more_run():
    job = Job(hold=True)
    worker = CoalescingWorker(job, "test-worker")
    worker.kick()
    assert job.running.wait(30)
    for _ in range(5):
        worker.kick()
    assert worker.pending
    job.release.set()
    assert worker.wait(30)
    assert job.runs == ["test-worker", "test-worker"] and not worker.pending
    worker.stop()


def test_runs_keep_a_gap_that_wait_does_not():
    job = Job()
    worker = CoalescingWorker(job, "test-worker", gap=60.0)
    worker.kick()  # after a quiet spell: at once
    deadline = time.monotonic() + 30
    while not job.runs and time.monotonic() < deadline:
        time.sleep(0.01)
    worker.kick()
    time.sleep(0.3)
    assert len(job.runs) == 1  # the next run waits for the gap
    assert worker.wait(30) and len(job.runs) == 2  # wait() takes it now
    worker.stop()


def test_stop_finishes_what_was_asked_or_ends_early():
    job = Job(hold=True)
    worker = CoalescingWorker(job, "test-worker")
    worker.kick()
    assert job.running.wait(30)
    worker.kick()
    threading.Timer(0.2, job.release.set).start()
    worker.stop()  # finish: the run asked for meanwhile too
    assert job.runs == ["test-worker", "test-worker"] and worker.thread is None
    worker.kick()
    assert worker.thread is None  # stopped: nothing starts again

    started, seen = threading.Event(), []

    def long_job() -> None:
        started.set()
        time.sleep(0.3)
        seen.append(quitter.stopping)

    quitter = CoalescingWorker(long_job, "test-worker")
    quitter.kick()
    assert started.wait(30)
    quitter.kick()
    quitter.stop(finish=False)
    assert seen == [True]  # the run under way was told to end early; the one asked for never came


def test_a_failing_job_is_logged_and_tried_again(caplog):
    outcomes = [Unavailable("the storage cannot be reached"), Unavailable("the storage cannot be reached"), None,
                RuntimeError("broken"), None]  # fmt: skip

    def job() -> None:
        outcome = outcomes.pop(0)
        if outcome is not None:
            raise outcome

    caplog.set_level(logging.INFO)
    worker = CoalescingWorker(job, "test-worker", what="test job", retry=0.01, retry_max=0.02)
    worker.kick()
    assert worker.wait(30)
    assert [type(o) for o in outcomes] == [RuntimeError, type(None)]  # tried until it worked
    messages = [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "hostcore.worker"]
    assert messages == [
        ("WARNING", "test job: the storage cannot be reached; trying again at the next change or read"),
        ("WARNING", "test job: works again"),
    ]  # an outage is one line, however long it lasts
    worker.kick()
    assert worker.wait(30) and outcomes == []
    failed = [r for r in caplog.records if r.getMessage().startswith("test job failed")]
    assert len(failed) == 1 and failed[0].exc_info is not None
    worker.stop()


def test_a_forked_child_runs_its_own_thread(tmp_path):
    """The parent's thread, busy when the process forks, is not in the child: the child's kick
    starts a thread of its own there."""
    mark, parent, release = tmp_path / "ran", os.getpid(), threading.Event()
    running = threading.Event()

    def job() -> None:
        if os.getpid() == parent:
            running.set()
            assert release.wait(30), "the test never released the parent's job"
        else:
            mark.write_text(str(os.getpid()))

    worker = CoalescingWorker(job, "test-worker")
    worker.kick()
    assert running.wait(30)  # the parent's thread is busy in the job

    def child() -> None:
        worker.kick()
        os._exit(0 if worker.wait(30) else 1)

    process = multiprocessing.get_context("fork").Process(target=child)
    process.start()
    process.join(30)
    release.set()
    assert process.exitcode == 0 and mark.read_text() == str(process.pid)
    worker.stop()


def test_a_nice_worker_runs_below_the_threads_that_kick_it():
    """The embedding thread runs at a lower CPU priority than request threads (Linux keeps a nice
    value per thread): the thread that kicked it, and the process, keep theirs."""
    seen: list[tuple[int, int]] = []

    def job() -> None:
        thread = threading.get_native_id()
        seen.append((os.getpriority(os.PRIO_PROCESS, thread), thread))

    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    plain, nice = CoalescingWorker(job, "plain"), CoalescingWorker(job, "nice", nice=5)
    for worker in (plain, nice):
        worker.kick()
        assert worker.wait(10)
        worker.stop()
    (plain_nice, _), (lowered, thread) = seen
    assert plain_nice == before and lowered == min(19, before + 5) and thread != threading.get_native_id()
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before
    assert os.getpriority(os.PRIO_PROCESS, os.getpid()) == before  # the main thread is the process's id


def test_a_job_gives_way_while_requests_are_served_unless_someone_waits_for_it():
    """A job's checkpoint (``give_way``) pauses while the server says requests are in flight, at
    most GIVE_WAY_MOST each time (a stream of requests slows the job, never stops it); at once
    when none are, and at once when a caller waits for the job (it would wait for itself)."""
    from hostcore.seams import worker as seam

    paused: list[float] = []
    hold = threading.Event()

    def job() -> None:
        hold.wait(30)
        paused.append(worker.give_way())

    worker = CoalescingWorker(job, "gives way")
    requests = [0]
    seam.serving_from(lambda: requests[0])
    try:
        hold.set()
        worker.kick()  # nothing served: no pause
        assert worker.wait(10)
        requests[0] = 2
        worker.kick()  # requests in flight the whole time: the longest pause, then on
        deadline = time.monotonic() + 10
        while len(paused) < 2 and time.monotonic() < deadline:  # not wait(): the job would not give way to it
            time.sleep(0.005)
        hold.clear()
        worker.kick()  # a caller waits for the job: it does not give way
        waiter = threading.Thread(target=worker.wait, args=(10,))
        waiter.start()
        time.sleep(0.05)
        hold.set()
        waiter.join(10)
        assert not waiter.is_alive()
        requests[0] = 0
        assert seam.serving() == 0
    finally:
        seam.serving_from(None)
        worker.stop()
    assert paused[0] == 0.0
    assert seam.GIVE_WAY_MOST <= paused[1] < 10
    assert paused[2] == 0.0
    assert seam.serving() == 0  # outside a server nothing is served
