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
    """Exclusive lock across threads and processes, held on ``path`` (created if missing)."""

    def __init__(self, path: Path | str) -> None:
        self.path = str(path)
        with _guard:
            self._thread_lock = _thread_locks.setdefault(self.path, threading.Lock())
        self._fd: int | None = None

    def __enter__(self) -> FileLock:
        self._thread_lock.acquire()
        try:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except BaseException:
            self._thread_lock.release()
            raise
        self._fd = fd
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        fd, self._fd = self._fd, None
        try:
            if fd is not None:
                fcntl.flock(fd, fcntl.LOCK_UN)
                os.close(fd)
        finally:
            self._thread_lock.release()
