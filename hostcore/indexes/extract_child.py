"""The extraction subprocess: ``python -m hostcore.indexes.extract_child MODULE:CLASS TYPE MEMORY SECONDS``.

Limits its own address space and CPU time first, then imports the extractor, reads the file
from standard input and writes ``{"text": ...}`` or ``{"error": reason}`` as JSON to standard
output. Started by :func:`hostcore.indexes.extraction.run_extractor`, which also kills it when
the wall-clock limit passes (a sleeping extractor uses no CPU time).
"""

from __future__ import annotations

import importlib
import json
import math
import resource
import sys


def _limit(memory: int, seconds: float) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))
    cpu = math.ceil(seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def main(argv: list[str]) -> int:
    target, media_type, memory, seconds = argv
    _limit(int(memory), float(seconds))
    data = sys.stdin.buffer.read()
    module_name, _, qualname = target.partition(":")
    try:
        obj: object = importlib.import_module(module_name)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        extractor = obj()  # type: ignore[operator]
        from hostcore.seams.extract import ExtractionFailed

        try:
            answer = {"text": extractor.extract(data, media_type)}
        except ExtractionFailed as exc:
            answer = {"error": exc.message}
    except MemoryError:
        answer = {"error": f"the file needs more than {int(memory) // 2**20} MiB of memory to read "
                           "(EXTRACT_MEMORY_BYTES)"}  # fmt: skip
    except Exception as exc:  # an extractor's bug: report it as the reason, never crash silently
        answer = {"error": f"the extractor failed: {type(exc).__name__}: {exc}"[:500]}
    sys.stdout.buffer.write(json.dumps(answer).encode())
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
