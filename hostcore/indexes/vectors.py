"""``passages.vectors``: the passage index's vectors, quantised to int8, in one file every process
maps read-only (see :mod:`hostcore.indexes.passages`, which keeps the rest in ``passages.sqlite``)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path

import numpy as np
import simsimd

from hostcore.seams.derived import file_id
from hostcore.seams.embed import Vectors

MAGIC = b"hostcore-vectors"  # a vectors file starts with it and its token (the meta key ``vectors``)
HEADER = len(MAGIC) + 16


def record_type(dimensions: int) -> np.dtype:
    """One passage's record in the vectors file: its vector quantised to int8 with the scale that
    gives it back (``vector * scale``), its namespace's number and its kind (0: a free record)."""
    return np.dtype([("vector", "i1", (dimensions,)), ("scale", "<f4"), ("namespace", "<i4"), ("kind", "i1")])


def quantise(vectors: Vectors) -> tuple[np.ndarray, np.ndarray]:
    """(int8 rows, float32 scale of each): a row times its scale is the vector within half a step."""
    vectors = np.asarray(vectors, dtype=np.float32)
    scale = np.abs(vectors).max(axis=1) / 127 if len(vectors) else np.zeros(0, dtype=np.float32)
    safe = np.where(scale > 0, scale, 1).astype(np.float32)
    return np.clip(np.rint(vectors / safe[:, None]), -127, 127).astype(np.int8), scale.astype(np.float32)


def dot_products(rows: np.ndarray, query: np.ndarray) -> np.ndarray:
    """Each int8 row's dot product with the int8 ``query`` (one row of the same length), exact:
    SimSIMD's SIMD kernels sum in int32 (numpy's ``einsum`` has no SIMD loop for int8; see
    docs/operators.md for the two timed); float64, which holds every such sum. ``rows`` may be a
    strided view (the records' vectors). One thread: sharing the rows with a second one halved
    the scan in a loop in one process but gained nothing over HTTP (docs/operators.md)."""
    if not len(rows):
        return np.zeros(0, dtype=np.float64)
    return np.asarray(simsimd.cdist(query.reshape(1, -1), rows, metric="dot"))[0]


class VectorFile:
    """``passages.vectors``: every passage's vector, one fixed-size record a passage (its id in
    ``passages.sqlite`` is its record's number), read through a read-only memory map: the page
    cache holds it once per machine, however many workers search it, and a worker reads what
    another process wrote without loading anything. Only the process holding ``passages.lock``
    writes it, in place; it is never shortened (a reader's map would fault), only replaced whole
    (:meth:`create`: a new token, which ``passages.sqlite`` records, so a vectors file and an index
    file that do not belong together are never read together)."""

    def __init__(self, path: Path, dimensions: int) -> None:
        self.path = Path(path)
        self.dtype = record_type(dimensions)
        self._map: tuple[tuple[int, int, int, str], np.ndarray] | None = None  # ((dev, inode, size, token), records)
        self._fd: tuple[tuple[int, int], int] | None = None  # the writer's descriptor and the file it opened

    # --- reading ------------------------------------------------------------------------------

    def records(self, token: str | None) -> np.ndarray:
        """The records of the file whose token is ``token`` (none when it is another, or missing)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return np.zeros(0, dtype=self.dtype)
        key = (st.st_dev, st.st_ino, st.st_size, token or "")
        if self._map is not None and self._map[0] == key:
            return self._map[1]
        count = max(st.st_size - HEADER, 0) // self.dtype.itemsize
        records = np.zeros(0, dtype=self.dtype)
        with open(self.path, "rb") as f:
            if token is not None and f.read(HEADER) == MAGIC + bytes.fromhex(token) and count:
                records = np.memmap(f, dtype=self.dtype, mode="r", offset=HEADER, shape=(count,))
        self._map = (key, records)
        return records

    # --- writing (under passages.lock) ----------------------------------------------------------

    def create(self) -> str:
        """Replace the file with an empty one; returns its new token."""
        token = os.urandom(16).hex()
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.new")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.write(fd, MAGIC + bytes.fromhex(token))
        finally:
            os.close(fd)
        os.replace(partial, self.path)
        self.close()
        return token

    def matches(self, token: str) -> bool:
        """Whether the file there is the one with ``token``."""
        try:
            with open(self.path, "rb") as f:
                return f.read(HEADER) == MAGIC + bytes.fromhex(token)
        except FileNotFoundError:
            return False

    def _descriptor(self) -> int:
        opened = file_id(self.path)
        if self._fd is not None and self._fd[0] == opened:
            return self._fd[1]
        self.close()
        fd = os.open(self.path, os.O_RDWR)
        self._fd = (file_id(self.path) or (0, 0), fd)
        return fd

    def write(self, slots: Sequence[int], vectors: Vectors, namespaces: Sequence[int], kinds: Sequence[int]) -> None:
        """Write the records of ``slots``: each its vector, namespace number and kind."""
        if not len(slots):
            return
        records = np.zeros(len(slots), dtype=self.dtype)
        records["vector"], records["scale"] = quantise(vectors)
        records["namespace"], records["kind"] = namespaces, kinds
        self._put(slots, records)

    def free(self, slots: Sequence[int]) -> None:
        """Mark the records of ``slots`` free: no search finds them."""
        self._put(slots, np.zeros(len(slots), dtype=self.dtype))

    def _put(self, slots: Sequence[int], records: np.ndarray) -> None:
        fd, size = self._descriptor(), self.dtype.itemsize
        order = np.argsort(np.asarray(slots, dtype=np.int64), kind="stable")
        run_start = 0
        ordered = [int(slots[i]) for i in order]
        data = records[order].tobytes()
        for i in range(1, len(ordered) + 1):  # consecutive records in one write
            if i == len(ordered) or ordered[i] != ordered[i - 1] + 1:
                os.pwrite(fd, data[run_start * size : i * size], HEADER + ordered[run_start] * size)
                run_start = i

    def close(self) -> None:
        if self._fd is not None:
            with suppress(OSError):
                os.close(self._fd[1])
            self._fd = None
