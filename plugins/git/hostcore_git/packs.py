"""Pack files: each group of commits is written as one git pack, and small packs are merged.

A save used to write four loose objects (its blob, two or three trees, its commit): four files
created and flushed per save. Creating a file is what a busy disk makes slow (on ext4 most of all
right after many deletions), so a group's objects are now written as one pack and its index
(git's formats, version 2: each object zlib-compressed whole, except the trees of a folder that
several commits of the group changed: whole once, then as deltas naming that one by its id, see
:class:`hostcore_git.trees.Line`), flushed together before the branch moves: three files per
group whatever its size.

The protocol is git's own for a pack received by a push (``index-pack --keep``): the pack is
written to temporary files and flushed, a ``.keep`` file is made, the pack and then its index are
renamed into ``objects/pack`` (git finds packs by their index), the folder is flushed; the caller
moves the branch, then removes the ``.keep``. While it exists, a concurrent ``git repack -a -d``
keeps the pack, whose objects nothing references yet.

:func:`merge` keeps the number of packs small: readers look an object up in each pack in turn.
Packs without offset deltas (hostcore's own, whose deltas name their base by id, always in the
same pack) are merged by copying their entries, without decompressing anything, in tiers: once there are :data:`MERGE_AT` under 1 MB they become one, and so on up to
64 MB; bigger packs, and git's own (with deltas), are left to ``git gc``. A :class:`Merger` runs it
in a thread of its own, in one process at a time, so no save waits for it, and not while a ``git
gc`` runs (it holds ``gc.pid``; a pack it listed must not go away); the new pack is flushed
before the old ones go, and a reader that had an old one open reads on (git's readers, and
libgit2's, look again when a pack is gone).
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import mmap
import operator
import os
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hostcore import CoalescingWorker, FileLock

from .group import flush
from .odb import Objects

SIGNATURE = b"PACK"
IDX_SIGNATURE = b"\377tOc"
OFS_DELTA = 6
HEADER = 12  # bytes before a pack's first entry
COPY = 1 << 20  # bytes a merge copies at a time
MERGE_AT = 16  # packs of one tier that are merged into one
TIERS = (1 << 20, 16 << 20, 64 << 20)  # sizes under which packs are merged
KEEP_TEXT = b"hostcore: being written\n"
GC_STALE = 12 * 3600.0  # age after which git itself takes a gc.pid for one a killed gc left
STALE_KEEP = 60.0  # seconds after which a hostcore .keep is one a killed process left

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Written:
    """A pack just written: its files, with the ``.keep`` that protects it until :meth:`release`."""

    pack: Path
    idx: Path
    keep: Path

    def release(self) -> None:
        self.keep.unlink(missing_ok=True)


def entry(kind: int, data: bytes) -> bytes:
    """An object's pack entry: its header, then its content compressed."""
    return header(kind, len(data)) + zlib.compress(data)


def header(kind: int, size: int) -> bytes:
    """An entry's header: type and size, 4 bits then 7 per byte, low bits first."""
    out = bytearray()
    byte = (kind << 4) | (size & 0x0F)
    size >>= 4
    while size:
        out.append(byte | 0x80)
        byte, size = size & 0x7F, size >> 7
    out.append(byte)
    return bytes(out)


def _write_idx(path: Path, entries: list[tuple[bytes, int, int]], pack_sum: bytes) -> None:
    """Write a version 2 index of ``entries`` (binary id, crc32, offset; any order) to ``path``."""
    entries = sorted(entries)
    fanout = [0] * 256
    for name, _, _ in entries:
        fanout[name[0]] += 1
    total = 0
    for i in range(256):
        total += fanout[i]
        fanout[i] = total
    body = b"".join(
        (
            IDX_SIGNATURE,
            struct.pack(">I", 2),
            struct.pack(">256I", *fanout),
            b"".join(name for name, _, _ in entries),
            struct.pack(f">{len(entries)}I", *(crc for _, crc, _ in entries)),
            struct.pack(f">{len(entries)}I", *(offset for _, _, offset in entries)),
            pack_sum,
        )
    )
    with open(path, "wb") as out:
        out.write(body)
        out.write(hashlib.sha1(body).digest())


def _publish(folder: Path, tmp_pack: Path, tmp_idx: Path, pack_sum: bytes, durable: bool) -> Written:
    """Flush the temporary files, keep, rename them into place (the index last), flush the folder."""
    if durable:
        flush([tmp_pack, tmp_idx])
    base = folder / f"pack-{pack_sum.hex()}"
    written = Written(base.with_suffix(".pack"), base.with_suffix(".idx"), base.with_suffix(".keep"))
    try:
        written.keep.write_bytes(KEEP_TEXT)
        os.replace(tmp_pack, written.pack)
        os.replace(tmp_idx, written.idx)
        if durable:
            flush([folder])
    except BaseException:
        for path in (written.idx, written.pack, written.keep):
            path.unlink(missing_ok=True)
        raise
    return written


def write(folder: Path, objects: Objects, durable: bool = True) -> Written:
    """Write ``objects`` as one pack in ``folder`` (``objects/pack``), kept until the caller
    releases it. Raises OSError, leaving no pack."""
    listed, chunks, offset = [], [], HEADER
    for oid, (kind, data, packed) in objects.objects.items():
        made = packed if packed is not None else entry(kind, data)
        listed.append((oid.raw, zlib.crc32(made), offset))
        chunks.append(made)
        offset += len(made)
    return _write(folder, "hostcore", listed, chunks, durable)


def _write(folder: Path, name: str, listed: list[tuple[bytes, int, int]], chunks: Iterable[bytes], durable: bool) -> Written:
    """Write the pack whose entries are ``listed`` (binary id, crc32, offset) and whose body is
    ``chunks`` (the entries, in the order of their offsets, :data:`HEADER` bytes in), and its
    index, as temporary files named after ``name``; then publish them (see :func:`_publish`)."""
    tmp_pack = folder / f"tmp_pack_{name}_{os.getpid()}"
    tmp_idx = folder / f"tmp_idx_{name}_{os.getpid()}"
    digest = hashlib.sha1()
    try:
        with open(tmp_pack, "wb") as out:
            for chunk in itertools.chain([SIGNATURE + struct.pack(">II", 2, len(listed))], chunks):
                out.write(chunk)
                digest.update(chunk)
            pack_sum = digest.digest()
            out.write(pack_sum)
        _write_idx(tmp_idx, listed, pack_sum)
        return _publish(folder, tmp_pack, tmp_idx, pack_sum, durable)
    finally:
        tmp_pack.unlink(missing_ok=True)
        tmp_idx.unlink(missing_ok=True)


# --- merging ------------------------------------------------------------------------------

_SIDE_FILES = (".keep", ".bitmap", ".rev", ".mtimes", ".promisor")


@dataclass(frozen=True)
class _Pack:
    pack: Path
    size: int
    entries: list[tuple[bytes, int, int]]  # binary id, crc32, offset; by offset


def _read_idx(idx: Path) -> list[tuple[bytes, int, int]] | None:
    """The entries of a version 2 index by offset, or None when it is not one this module merges
    (another version, or offsets past 2 GB)."""
    data = idx.read_bytes()
    if data[:4] != IDX_SIGNATURE or struct.unpack(">I", data[4:8])[0] != 2:
        return None
    count = struct.unpack(">I", data[8 + 255 * 4 : 8 + 256 * 4])[0]
    names_at = 8 + 256 * 4
    crcs_at = names_at + 20 * count
    offsets_at = crcs_at + 4 * count
    crcs = struct.unpack(f">{count}I", data[crcs_at:offsets_at])
    offsets = struct.unpack(f">{count}I", data[offsets_at : offsets_at + 4 * count])
    if any(offset & 0x80000000 for offset in offsets):
        return None
    names = [data[names_at + 20 * i : names_at + 20 * (i + 1)] for i in range(count)]
    return sorted(zip(names, crcs, offsets, strict=True), key=lambda entry: entry[2])


def _small_packs(folder: Path, under: int) -> list[tuple[Path, int]]:
    """(pack, size) of the packs in ``folder`` under ``under`` bytes that have an index and no
    other file (no ``.keep``: not being written or pushed; no bitmap, reverse index...)."""
    names = {entry.name for entry in os.scandir(folder)}
    found = []
    for name in sorted(names):
        stem = name[: -len(".pack")]
        if not (name.startswith("pack-") and name.endswith(".pack")) or f"{stem}.idx" not in names:
            continue
        if any(f"{stem}{suffix}" in names for suffix in _SIDE_FILES):
            continue
        try:
            size = (folder / name).stat().st_size
        except FileNotFoundError:
            continue
        if size < under:
            found.append((folder / name, size))
    return found


def _without_deltas(pack: Path, size: int) -> _Pack | None:
    """The pack with its entries when none is an offset delta (hostcore's packs; git's have them,
    and copying would break their offsets; a delta naming its base by id stays right), else None."""
    entries = _read_idx(pack.with_suffix(".idx"))
    if entries is None or not entries:
        return None
    with open(pack, "rb") as source, mmap.mmap(source.fileno(), 0, access=mmap.ACCESS_READ) as data:
        firsts = operator.itemgetter(*(offset for _, _, offset in entries))(data) if len(entries) > 1 else (data[entries[0][2]],)
        if len(data) != size or any((byte >> 4) & 7 == OFS_DELTA for byte in firsts):
            return None
    return _Pack(pack, size, entries)


def _gc_running(folder: Path) -> bool:
    """Whether a ``git gc`` runs on the repository of ``folder`` (``objects/pack``): it holds
    ``gc.pid``, and fails ("unable to add recent objects") when a pack it listed goes away."""
    try:
        return time.time() - (folder.parent.parent / "gc.pid").stat().st_mtime < GC_STALE
    except FileNotFoundError:
        return False


def small_pack_count(folder: Path) -> int:
    """How many packs of ``folder`` a merge could take (a directory listing and a stat each)."""
    return len(_small_packs(folder, TIERS[-1]))


def merge(folder: Path, durable: bool = True) -> int:
    """Merge small hostcore packs of ``folder`` tier by tier (see the module's docs); returns how
    many packs were merged away. One process at a time (see :class:`Merger`); objects are in the
    new pack, flushed, before any old pack is removed."""
    now = time.time()
    for name in os.listdir(folder):
        # A hostcore .keep lives for the milliseconds of a branch move: an old one was left by a
        # process killed between writing its pack and moving the branch.
        keep = folder / name
        try:
            if name.endswith(".keep") and now - keep.stat().st_mtime > STALE_KEEP and keep.read_bytes() == KEEP_TEXT:
                keep.unlink()
        except FileNotFoundError:
            pass
    merged = 0
    for under in TIERS:
        if _gc_running(folder):
            break
        small = _small_packs(folder, under)
        if len(small) < MERGE_AT:
            continue
        try:
            packs = [pack for path, size in small if (pack := _without_deltas(path, size)) is not None]
        except FileNotFoundError:  # a git gc removed one meanwhile: its objects are elsewhere now
            continue
        if len(packs) < MERGE_AT:
            continue
        written = _merge(folder, packs, durable)
        written.release()
        if _gc_running(folder):  # it may be listing packs: it removes the old ones itself
            break
        for pack in packs:
            if pack.pack != written.pack:
                pack.pack.with_suffix(".idx").unlink(missing_ok=True)  # the index first: readers find packs by it
                pack.pack.unlink(missing_ok=True)
        merged += len(packs)
    return merged


def _merge(folder: Path, packs: Iterable[_Pack], durable: bool) -> Written:
    """One pack of every object of ``packs`` (each once): runs of entries copied as they lie."""
    seen: set[bytes] = set()
    listed: list[tuple[bytes, int, int]] = []
    runs: list[tuple[Path, int, int]] = []  # pack, start, end of entries copied in one piece
    offset = HEADER
    for pack in packs:
        ends = [start for _, _, start in pack.entries[1:]] + [pack.size - 20]
        run_start = run_end = -1
        for (name, crc, start), end in zip(pack.entries, ends, strict=True):
            if name in seen:
                continue
            seen.add(name)
            listed.append((name, crc, offset))
            offset += end - start
            if start != run_end:  # an entry skipped (a duplicate) ends the run
                if run_end > 0:
                    runs.append((pack.pack, run_start, run_end))
                run_start = start
            run_end = end
        if run_end > 0:
            runs.append((pack.pack, run_start, run_end))

    def chunks() -> Iterator[bytes]:
        for path, start, end in runs:
            with open(path, "rb") as source:
                source.seek(start)
                while start < end:
                    piece = source.read(min(COPY, end - start))
                    if not piece:
                        raise OSError(f"{path} is shorter than its index says")
                    start += len(piece)
                    yield piece

    return _write(folder, "hostcore_merge", listed, chunks(), durable)


class Merger:
    """Merges the small packs of ``folder`` in a thread of this process, after a save left
    :data:`MERGE_AT` of them, so that no save waits for it; the file lock ``lock`` (taken without
    waiting) keeps it to one process at a time."""

    def __init__(self, folder: Path, lock: Path, durable: bool) -> None:
        self.folder, self.durable = folder, durable
        self.lock = FileLock(lock)
        self._worker = CoalescingWorker(self._run, "hostcore-packs", what=f"merging the packs of {folder}", logger=log)

    def poke(self) -> None:
        """Start merging if there are enough small packs (saves meanwhile ask for one merge more)."""
        if small_pack_count(self.folder) >= MERGE_AT:
            self._worker.kick()

    def wait(self, timeout: float | None = None) -> None:
        """Wait for this process's merge, if one runs."""
        self._worker.wait(timeout)

    def _run(self) -> None:
        if small_pack_count(self.folder) < MERGE_AT:  # merged since it was asked for
            return
        try:
            if not self.lock.acquire(blocking=False):  # another process merges
                return
        except OSError:
            log.warning("could not open %s; packs are not merged", self.lock.path, exc_info=True)
            return
        try:
            merge(self.folder, self.durable)
        except OSError:
            log.warning("could not merge the packs of %s; the next save tries again", self.folder, exc_info=True)
        finally:
            self.lock.release()
