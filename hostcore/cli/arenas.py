"""glibc's malloc arenas, capped for ``hostcore serve``'s workers.

glibc gives each thread that allocates a malloc arena of its own, up to eight per core, and an
arena keeps the memory it once held: a worker's sixteen threads each keep their peak. Capped at
:data:`ARENAS` (set in the master before it forks, so every worker inherits it), the threads share
them and a worker's memory after a burst of writes stays near what one thread needs. An
operator's ``MALLOC_ARENA_MAX`` stands; other C libraries are left alone.
"""

from __future__ import annotations

import ctypes
import os
import platform

ARENAS = 2
M_ARENA_MAX = -8  # mallopt's parameter number, from glibc's malloc.h


def cap_malloc_arenas(arenas: int = ARENAS) -> int | None:
    """Cap this process's malloc arenas (and its children's after a fork) at ``arenas``; the cap, or
    None when the C library is not glibc or ``MALLOC_ARENA_MAX`` is set."""
    if os.environ.get("MALLOC_ARENA_MAX") or platform.libc_ver()[0] != "glibc":
        return None
    libc = ctypes.CDLL(None)
    return arenas if libc.mallopt(M_ARENA_MAX, arenas) == 1 else None
