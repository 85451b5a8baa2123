"""A writer process for the group-commit tests: several threads, each saving its own page.

``python group_writer.py ROOT NAME THREADS COUNT`` runs THREADS threads; thread ``t`` saves COUNT
versions of ``NAME/t<t>.md`` (0: until killed), each a compare-and-set on the hash it got back,
and prints ``<path> <index> <commit message>`` once the save is acknowledged (apply returned).
A save refused with Unavailable (a git process held the branch too long) is tried again, as a
client would.
"""

from __future__ import annotations

import sys
import threading
from itertools import count
from pathlib import Path

from hostcore import Change, Put, Unavailable
from hostcore_git import GitStorage

_print = threading.Lock()


def version(path: str, index: int) -> bytes:
    return f"{path} {index}\n".encode() * 50


def write(storage: GitStorage, name: str, thread: int, total: int) -> None:
    path, expect = f"{name}/t{thread}.md", None
    for index in range(total) if total else count():
        message = f"{name} t{thread} {index}"
        while True:
            try:
                expect = storage.apply([Put(path, version(path, index), expect=expect)], Change(f"{name}-t{thread}", message))[path]
                break
            except Unavailable:
                continue
        with _print:
            print(path, index, message, flush=True)


def main(root: str, name: str, threads: int, total: int) -> None:
    storage = GitStorage(Path(root))
    workers = [threading.Thread(target=write, args=(storage, name, t, total)) for t in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    storage.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
