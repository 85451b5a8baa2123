"""The extraction subprocess: ``python -m hostcore.indexes.extract_child MODULE:CLASS TYPE MEMORY SECONDS``.

Limits its own address space first, then imports the extractor (and what its ``prepare`` imports) and writes one byte (``READY``) to
standard output; only then does it limit its CPU time, read the file from standard input and write
``{"text": ...}`` or ``{"error": reason}`` as JSON after it. Started by
:func:`hostcore.indexes.extraction.run_extractor`, which starts the extraction's wall clock at that
byte (so the interpreter's start-up and the imports, slow on a busy machine, never count against
the file) and kills the process when the clock passes the limit (a sleeping extractor uses no CPU
time).
"""

from __future__ import annotations

import importlib
import json
import math
import resource
import sys

READY = b"\x06"


def _limit_memory(memory: int) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (memory, memory))


def _limit_cpu(seconds: float) -> None:
    """At most ``seconds`` more CPU time (and a second's grace): what start-up used is not the file's."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = math.ceil(usage.ru_utime + usage.ru_stime + seconds) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))


def _memory_error(memory: int) -> dict[str, str]:
    return {"error": f"the file needs more than {memory // 2**20} MiB of memory to read (EXTRACT_MEMORY_BYTES)"}


def _extractor(target: str) -> object:
    module_name, _, qualname = target.partition(":")
    obj: object = importlib.import_module(module_name)
    for part in qualname.split("."):
        obj = getattr(obj, part)
    return obj()  # type: ignore[operator]


def main(argv: list[str]) -> int:
    target, media_type, memory, seconds = argv
    _limit_memory(int(memory))
    answer: dict[str, str] | None = None
    try:
        from hostcore.errors import ExtractionFailed

        extractor: object = _extractor(target)
        prepare = getattr(extractor, "prepare", None)
        if callable(prepare):
            prepare()
    except MemoryError:
        answer = _memory_error(int(memory))
    except Exception as exc:  # an extractor that does not import: report it, never crash silently
        answer = {"error": f"the extractor failed: {type(exc).__name__}: {exc}"[:500]}
    sys.stdout.buffer.write(READY)
    sys.stdout.buffer.flush()
    _limit_cpu(float(seconds))
    data = sys.stdin.buffer.read()
    if answer is None:
        try:
            answer = {"text": extractor.extract(data, media_type)}  # type: ignore[attr-defined]
        except ExtractionFailed as exc:
            answer = {"error": exc.message}
        except MemoryError:
            answer = _memory_error(int(memory))
        except Exception as exc:  # an extractor's bug: report it as the reason, never crash silently
            answer = {"error": f"the extractor failed: {type(exc).__name__}: {exc}"[:500]}
    sys.stdout.buffer.write(json.dumps(answer).encode())
    sys.stdout.buffer.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
