"""An inter-process lock: a threading lock plus ``flock`` on a lock file.

``flock`` alone serialises processes (and threads holding separate descriptors); the
threading lock keeps threads of one process from sharing a descriptor's lock by accident.
"""

from __future__ import annotations

import fcntl
import os
import threading
from pathlib import Path
from types import TracebackType

_thread_locks: dict[str, threading.Lock] = {}
_guard = threading.Lock()


class FileLock:
    """Exclusive lock across threads and processes, held on ``path`` (created if missing).

    ``with lock:`` waits for it; :meth:`acquire` with ``blocking=False`` takes it only when it is
    free. It may be released by another thread than the one that took it (a background job that
    holds it for its caller).
    """

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        with _guard:
            self._thread_lock = _thread_locks.setdefault(self.path, threading.Lock())
        self._fd: int | None = None

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock; without ``blocking``, return False at once when a thread or process holds it."""
        if not self._thread_lock.acquire(blocking):
            return False
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if blocking else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                self._thread_lock.release()
                return False
        except BaseException:
            self._thread_lock.release()
            raise
        self._fd = fd
        return True

    def release(self) -> None:
        fd, self._fd = self._fd, None
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        finally:
            self._thread_lock.release()

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.release()
