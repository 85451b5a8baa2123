"""glibc's malloc, tuned for ``hostcore serve``'s workers: arenas capped, free memory handed back.

glibc gives each thread that allocates a malloc arena of its own, up to eight per core, and an
arena keeps the memory it once held: a worker's sixteen threads each keep their peak. Capped at
:data:`ARENAS` (set in the master before it forks, so every worker inherits it), the threads share
them and a worker's memory after a burst of writes stays near what one thread needs. An
operator's ``MALLOC_ARENA_MAX`` stands; other C libraries are left alone.

Even in a capped arena, memory freed in the middle of the heap stays with the process: glibc
returns only the top of the heap by itself, and after many searches and saves a worker holds much
of its heap free (docs/operators.md gives the figures). So each worker hands it back
(``malloc_trim``) every :data:`TRIM_SECONDS` in a thread of its own (:func:`trim_malloc_periodically`).
"""

from __future__ import annotations

import ctypes
import os
import platform
import threading
import time

ARENAS = 2
M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h
TRIM_SECONDS = 10.0  # between two trims of a worker's heap (a trim takes milliseconds)


def cap_malloc_arenas(arenas: int = ARENAS) -> int | None:
    """Cap this process's malloc arenas (and its children's after a fork) at ``arenas``; the cap, or
    None when the C library is not glibc or ``MALLOC_ARENA_MAX`` is set."""
    if os.environ.get("MALLOC_ARENA_MAX") or platform.libc_ver()[0] != "glibc":
        return None
    libc = ctypes.CDLL(None)
    return arenas if libc.mallopt(M_ARENA_MAX, arenas) == 1 else None


def trim_malloc() -> bool | None:
    """Hand the memory free in glibc's heaps back to the system now (``malloc_trim(0)``): whether
    some was, or None when the C library is not glibc."""
    if platform.libc_ver()[0] != "glibc":
        return None
    return bool(ctypes.CDLL(None).malloc_trim(ctypes.c_size_t(0)))


def trim_malloc_periodically(every: float = TRIM_SECONDS) -> threading.Thread | None:
    """Start a daemon thread that calls :func:`trim_malloc` every ``every`` seconds for the life of
    the process (a worker's); None when the C library is not glibc."""
    if platform.libc_ver()[0] != "glibc":
        return None

    def trim() -> None:
        while True:
            time.sleep(every)
            trim_malloc()

    thread = threading.Thread(target=trim, name="hostcore-malloc-trim", daemon=True)
    thread.start()
    return thread
