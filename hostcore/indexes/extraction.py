"""Text of attachments: extracted in a subprocess with time and memory limits, cached by blob hash.

An extractor (``register_extractors``) may be slow or crash on hostile input (a PDF bomb, a
zip bomb in a DOCX), so it never runs in a worker: :func:`run_extractor` starts
``python -m hostcore.indexes.extract_child`` in a session of its own, which limits its address
space (``RLIMIT_AS``) and CPU time before it imports the extractor, and kills the whole session
when the time limit passes. The worker thread only waits, at most that long; the other threads
and workers keep serving.

The outcome is cached in ``extracted.sqlite`` in the instance folder against the file's blob
hash and the extractor's name, so a file is extracted once, whatever page it moves to. A failure
is cached too (a hostile file costs its time limit once); delete the file to try again, e.g.
after raising the limits (deleted or found damaged while the wiki runs, it is set aside and made
anew at once: files are extracted again as they are asked for). A file no extractor accepts is
not cached: installing one later makes its text available.
"""

from __future__ import annotations

import json
import os
import select
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

from hostcore.errors import ExtractionFailed, Unavailable
from hostcore.indexes.extract_child import READY
from hostcore.seams.extract import Extractor, choose
from hostcore.seams.sqlite import DerivedDB

Status = Literal["extracted", "unsupported", "failed"]
T = TypeVar("T")
START_SECONDS = 120.0
"""How long the extraction subprocess may take to start and import its extractor: far more than
it needs (well under a second on an idle machine), only there so a hung import cannot hold a thread."""


@dataclass(frozen=True)
class Extraction:
    """What became of a file's text: ``extracted`` (with ``text``), ``unsupported`` or ``failed``
    (with ``reason``, a sentence people can read)."""

    status: Status
    text: str = ""
    reason: str = ""
    extractor: str = ""


def run_extractor(extractor: Extractor, data: bytes, media_type: str, timeout: float, memory: int) -> str:
    """The text ``extractor`` makes of ``data``, in a subprocess limited to ``timeout`` seconds and
    ``memory`` bytes of address space. Raises ExtractionFailed with the reason.

    The ``timeout`` clock starts when the subprocess has imported the extractor (it says so with
    one byte): a busy machine's slow Python start-up is not the file's time, and must not stop an
    extraction the memory limit would have stopped, or one that would have finished. Start-up has
    a bound of its own, :data:`START_SECONDS`.
    """
    cls = type(extractor)
    target = f"{cls.__module__}:{cls.__qualname__}"
    cmd = [sys.executable, "-m", "hostcore.indexes.extract_child", target, media_type, str(memory), str(timeout)]
    proc = subprocess.Popen(
        cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        if not _started(proc, START_SECONDS):
            raise ExtractionFailed(
                f"the {extractor.name} extractor did not start within {START_SECONDS:g} s (the machine is busy, "
                "or its plugin hangs on import) and was stopped"
            )
        out, err = proc.communicate(data, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_session(proc)
        proc.communicate()
        raise ExtractionFailed(
            f"the {extractor.name} extractor took longer than {timeout:g} s (EXTRACT_TIMEOUT_SECONDS) and was stopped"
        ) from None
    finally:
        _kill_session(proc)  # whatever the extractor started and left behind
        if proc.returncode is None:
            proc.communicate()
    try:
        answer = json.loads(out)
    except ValueError:
        answer = None
    if isinstance(answer, dict) and isinstance(answer.get("text"), str):
        return answer["text"]
    if isinstance(answer, dict) and isinstance(answer.get("error"), str):
        raise ExtractionFailed(answer["error"])
    if proc.returncode in (-signal.SIGKILL, -signal.SIGXCPU, -signal.SIGSEGV):
        raise ExtractionFailed(
            f"the {extractor.name} extractor was stopped by its limits (memory {memory // 2**20} MiB, "
            f"EXTRACT_MEMORY_BYTES; time {timeout:g} s, EXTRACT_TIMEOUT_SECONDS)"
        )
    detail = err.decode("utf-8", "replace").strip().splitlines()[-1:] or [f"exit status {proc.returncode}"]
    raise ExtractionFailed(f"the {extractor.name} extractor crashed ({detail[0][:300]})")


def _started(proc: subprocess.Popen[bytes], limit: float) -> bool:
    """Wait until the subprocess writes its ready byte (True), exits first (True: its answer, or
    its crash, is read next) or ``limit`` seconds pass (False). Reads the one byte from the pipe
    itself, not through the buffered file, so that ``communicate`` reads everything after it."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], limit)
    if not ready:
        return False
    os.read(proc.stdout.fileno(), len(READY))
    return True


def _kill_session(proc: subprocess.Popen[bytes]) -> None:
    """Kill the child and anything it started: every process left in its session's group."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


_SCHEMA = """
CREATE TABLE IF NOT EXISTS texts (
    hash TEXT NOT NULL,
    extractor TEXT NOT NULL,
    status TEXT NOT NULL,
    text TEXT NOT NULL,
    reason TEXT NOT NULL,
    at REAL NOT NULL,
    PRIMARY KEY (hash, extractor)
) WITHOUT ROWID;
"""


class TextExtraction:
    """Extract text with the registered extractors, once per file (SQLite cache at ``path``)."""

    def __init__(self, path: Path, extractors: list[Extractor], timeout: float, memory: int) -> None:
        self.path = Path(path)
        self.extractors = extractors
        self.timeout = timeout
        self.memory = memory
        self._db = DerivedDB(self.path, "extracted text cache", _SCHEMA, pragmas=())


    def cached(self, digest: str, media_type: str) -> Extraction | None:
        """The cached outcome for the file with blob id ``digest``, without extracting."""
        extractor = choose(self.extractors, media_type)
        if extractor is None:
            return self._unsupported(media_type)
        row = self._cache(
            lambda db: db.execute(
                "SELECT status, text, reason FROM texts WHERE hash = ? AND extractor = ?", (digest, extractor.name)
            ).fetchone()
        )
        return Extraction(row[0], row[1], row[2], extractor.name) if row is not None else None

    def text(self, data: bytes, digest: str, media_type: str) -> Extraction:
        """The text of ``data`` (blob id ``digest``, sniffed ``media_type``): cached, or extracted now."""
        found = self.cached(digest, media_type)
        if found is not None:
            return found
        extractor = choose(self.extractors, media_type)
        assert extractor is not None  # cached() answers unsupported types
        try:
            result = Extraction("extracted", run_extractor(extractor, data, media_type, self.timeout, self.memory),
                                extractor=extractor.name)  # fmt: skip
        except ExtractionFailed as exc:
            result = Extraction("failed", reason=exc.message, extractor=extractor.name)
        self._cache(
            lambda db: db.execute(
                "INSERT OR REPLACE INTO texts (hash, extractor, status, text, reason, at) VALUES (?, ?, ?, ?, ?, ?)",
                (digest, extractor.name, result.status, result.text, result.reason, time.time()),
            )
        )
        return result

    def _cache(self, use: Callable[[sqlite3.Connection], T]) -> T:
        """``use(db)`` on the cache. A file found damaged is set aside and a new one used at once:
        a cache, it only costs extracting again."""
        try:
            with self._db.guard() as db:
                return use(db)
        except Unavailable:  # what guard() raises once it set a damaged file aside
            with self._db.guard() as db:
                return use(db)

    @staticmethod
    def _unsupported(media_type: str) -> Extraction:
        return Extraction(
            "unsupported",
            reason=f"no text extractor reads {media_type} files; the file is stored and linkable, but its text "
            "cannot be read or searched (an extractor plugin may add the type)",
        )

    def close(self) -> None:
        self._db.close()
