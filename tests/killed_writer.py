"""Leave a tantivy index as a worker killed mid-commit leaves it: ``python -m tests.killed_writer FOLDER``.

FOLDER is a ``TantivySearch``'s folder (the instance's ``search/``); stdin holds the documents
(JSON: a list of ``SearchDoc`` fields) it is to write, as the wiki's catch-up would. A child
forked from here writes them again and again and is killed (SIGKILL) at a random moment, until
one dies between writing a deletion file (``SEGMENT.OPSTAMP.del``) and the ``meta.json`` that
would name it: the next commit of the same documents makes that file again. Prints that file's name; exits 1 when no child died there in time.
"""

from __future__ import annotations

import json
import os
import random
import signal
import sys
import time
from pathlib import Path

from hostcore import SearchDoc
from hostcore_tantivy import FORMAT, TantivySearch

ATTEMPTS = int(os.environ.get("ATTEMPTS", "2000"))


def left_over(index: Path) -> list[str]:
    """The deletion files of a commit that never finished: newer than ``meta.json`` (older ones
    it does not name are a merge's garbage, which the next commit does not make again)."""
    committed = json.loads((index / "meta.json").read_bytes())["opstamp"]
    return sorted(p.name for p in index.glob("*.del") if int(p.name.split(".")[1]) > committed)


def write_forever(root: Path, docs: list[SearchDoc], ready: int) -> None:
    backend = TantivySearch(root)
    os.write(ready, b".")
    while True:
        backend.update(docs)


def main() -> int:
    root = Path(sys.argv[1])
    docs = [SearchDoc(**{**fields, "tags": tuple(fields["tags"])}) for fields in json.load(sys.stdin)]
    index = root / f"tantivy-v{FORMAT}"
    for _attempt in range(ATTEMPTS):
        read, ready = os.pipe()
        child = os.fork()
        if child == 0:
            os.close(read)
            try:
                write_forever(root, docs, ready)
            finally:
                os._exit(1)
        os.close(ready)
        os.read(read, 1)
        os.close(read)
        time.sleep(random.uniform(0.0, 0.4))  # a commit or two: one may be cut short
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        found = left_over(index)
        if found:
            print(found[0])
            return 0
    return 1


if __name__ == "__main__":
    sys.exit(main())
