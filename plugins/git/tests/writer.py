"""A writer process for the multi-process and crash tests.

``python writer.py ROOT NAME COUNT`` saves COUNT versions (0: until killed) spread over five
shared pages, each save a compare-and-set retried on conflict, and prints each finished index.
Every version is self-checking: one line repeated, so a torn page shows as mixed lines.
"""

from __future__ import annotations

import sys
from itertools import count
from pathlib import Path

from hostcore import Change, Conflict, Put
from hostcore_git import GitStorage

PAGES = [f"pages/p{n}.md" for n in range(5)]


def version(name: str, index: int) -> bytes:
    """The bytes of version ``index`` by writer ``name``: one line, repeated."""
    return f"{name} {index}\n".encode() * 2000


def main(root: str, name: str, total: int) -> None:
    storage = GitStorage(Path(root))
    for index in range(total) if total else count():
        path = PAGES[index % len(PAGES)]
        while True:
            try:
                storage.apply([Put(path, version(name, index), expect=storage.hash(path))], Change(name, f"{name} {index}"))
                break
            except Conflict:
                continue
        print(index, flush=True)
    storage.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]))
