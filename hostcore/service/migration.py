"""Moving a wiki between storage backends: what ``hostcore export`` and ``hostcore import`` run.

Everything goes through the :class:`~hostcore.seams.storage.Storage` seam, so any backend can be
the source or the target. A wiki is its stored files (pages with their front matter: titles,
tags; namespace settings; attachments) plus, where the backend keeps it, its history.

**The export format** (version 1) is a folder:

``blobs/<2 hex>/<38 hex>``
    the bytes of every file version the export names, once each, named by its hash (the git
    blob id, what every backend reports), so any copy can be checked against its name.
``files.jsonl``
    the wiki's files as exported, one JSON object a line, sorted by path:
    ``{"path": "notes/plan.md", "hash": "<blob id>"}``.
``history.jsonl``
    the recorded changes, oldest first, one a line: ``{"id", "author", "email", "time"`` (ISO
    8601 with its offset), ``"message", "moves"`` (``[[old path, new path], ...]``), ``"changes"``
    (path -> the blob id the change left there, null for a deleted file)``}``. Empty when the
    source keeps no history.
``manifest.json``
    written last, so a folder without it is an export that did not finish: ``{"format":
    "hostcore-export", "version": 1, "created", "source": {"storage", "history"}, "files":
    {"count", "sha256"}, "history": {"count", "sha256"}, "blobs", "bytes"}``; the digests are
    the SHA-256 of the two listings.

**Importing** checks the whole export before writing anything (the manifest, both listings
against their digests, every blob against its name), then replays the history one change at a
time, each with its original author, email, time, message and moves, on a target that keeps
history, and ends with one change bringing the target to the exported files exactly (nothing,
when the history already did). It refuses a target that holds files or history unless told to
replace them. Replaying is resumable rather than all-or-nothing: after each change the import
writes how far it got to a state file; run again on the same export, it picks up from there (a
change that landed just before a crash is found already applied and adds nothing).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol, TypedDict, TypeVar

from hostcore.domain.hashes import blob_hash
from hostcore.errors import Conflict, NotFound, Unavailable, ValidationError
from hostcore.seams.storage import Change, Delete, Operation, Put, Storage, check_path

FORMAT = "hostcore-export"
VERSION = 1
MANIFEST = "manifest.json"
FILES = "files.jsonl"
HISTORY = "history.jsonl"
BLOBS = "blobs"
HISTORY_PAGE = 500  # revisions asked of the source's history at a time
READERS = 16  # reads of an export at a time
READ_CHUNK = 256  # revisions or files read ahead at a time, so an export holds few in memory
BATCH_BYTES = 64 * 1024 * 1024  # the final change is split into batches of at most this many bytes...
BATCH_FILES = 2000  # ...and files, so an import never holds a whole large wiki in memory
IMPORT_AUTHOR = "hostcore import"
_HASH = re.compile(r"[0-9a-f]{40}")
T = TypeVar("T")


class Progress(Protocol):
    """What a long export or import reports to: a phase with its total, then steps done."""

    def phase(self, label: str, total: int) -> None: ...

    def advance(self, count: int = 1) -> None: ...


class Quiet:
    """Reports nothing."""

    def phase(self, label: str, total: int) -> None:
        pass

    def advance(self, count: int = 1) -> None:
        pass


class Exported(TypedDict):
    """What :func:`export_wiki` wrote."""

    folder: str
    files: int
    revisions: int
    blobs: int
    bytes: int
    history: str


class Imported(TypedDict):
    """What :func:`import_wiki` did. ``history``: what of the export's history the target kept."""

    files: int
    revisions: int
    replayed: int
    resumed_at: int
    final_change: bool
    history: str


@dataclass(frozen=True)
class ExportedChange:
    """One change of ``history.jsonl``."""

    id: str
    change: Change
    changes: dict[str, str | None]


@dataclass(frozen=True)
class Export:
    """A checked export folder: its manifest, its files (path -> hash) and its history."""

    folder: Path
    manifest: dict[str, Any]
    digest: str  # the SHA-256 of manifest.json: names this export in the import's state file
    files: dict[str, str]
    revisions: list[ExportedChange]

    def blob(self, digest: str) -> bytes:
        return blob_file(self.folder, digest).read_bytes()


def blob_file(folder: Path, digest: str) -> Path:
    return folder / BLOBS / digest[:2] / digest[2:]


# --- export ------------------------------------------------------------------------------


def export_wiki(storage: Storage, folder: Path, progress: Progress | None = None) -> Exported:
    """Write every file of ``storage`` and the history it keeps to ``folder`` (see the module
    docstring), which must not exist or be empty. Reads only, so the wiki may keep serving;
    changes made meanwhile are in the export's files when not in its history, and an import
    brings its target to those files. Raises ValidationError for a folder that holds something.
    """
    progress = progress or Quiet()
    folder = Path(folder)
    if folder.exists() and (not folder.is_dir() or any(folder.iterdir())):
        raise ValidationError(f"{folder} is not an empty folder; export into a new folder", field="folder")
    folder.mkdir(parents=True, exist_ok=True)
    blobs = _BlobWriter(folder)
    history = _export_history(storage, folder, blobs, progress)
    paths = storage.list()
    progress.phase("exporting files", len(paths))
    files = 0
    with open(folder / FILES, "w", encoding="utf-8") as out:
        for path, read in _read_each(storage.read_with_hash, paths, missing_ok=True):
            progress.advance()
            if read is None:  # deleted since it was listed
                continue
            data, digest = read
            blobs.write(digest, data)
            out.write(json.dumps({"path": path, "hash": digest}, ensure_ascii=False) + "\n")
            files += 1
    kept = "kept" if history is not None else f"none: the {storage.name or type(storage).__name__} storage keeps no history"
    manifest = {
        "format": FORMAT,
        "version": VERSION,
        "created": datetime.now(UTC).isoformat(),
        "source": {"storage": storage.name, "history": kept},
        "files": {"count": files, "sha256": _sha256(folder / FILES)},
        "history": {"count": history or 0, "sha256": _sha256(folder / HISTORY)},
        "blobs": len(blobs.written),
        "bytes": blobs.bytes,
    }
    _write_json(folder / MANIFEST, manifest)
    return {
        "folder": str(folder),
        "files": files,
        "revisions": history or 0,
        "blobs": len(blobs.written),
        "bytes": blobs.bytes,
        "history": kept,
    }


class _BlobWriter:
    """Writes each version once, under its hash."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.written: set[str] = set()
        self.bytes = 0

    def write(self, digest: str, data: bytes) -> None:
        if digest in self.written:
            return
        target = blob_file(self.folder, digest)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        self.written.add(digest)
        self.bytes += len(data)


def _export_history(storage: Storage, folder: Path, blobs: _BlobWriter, progress: Progress) -> int | None:
    """Write ``history.jsonl`` oldest first; the number of revisions, None when the storage keeps
    none (or cannot say what its revisions did)."""
    (folder / HISTORY).write_bytes(b"")
    if not storage.has_history:
        return None
    ids = _revision_ids(storage)
    progress.phase("exporting history", len(ids))
    with open(folder / HISTORY, "w", encoding="utf-8") as out:
        for start in range(0, len(ids), READ_CHUNK):
            batch = []
            for revision in ids[start : start + READ_CHUNK]:
                try:
                    batch.append((revision, *storage.changes_in(revision)))
                except Unavailable:
                    if revision == ids[0]:  # a backend with history that cannot replay it
                        return None
                    raise
            wanted = {digest for _, _, changes in batch for digest in changes.values() if digest is not None}
            for digest, data in _read_each(storage.read_blob, sorted(wanted - blobs.written)):
                blobs.write(digest, data)
            for revision, change, changes in batch:
                time = change.time or datetime.now(UTC)
                line = {
                    "id": revision, "author": change.author, "email": change.email, "time": time.isoformat(),
                    "message": change.message, "moves": [list(move) for move in change.moves], "changes": changes,
                }  # fmt: skip
                out.write(json.dumps(line, ensure_ascii=False) + "\n")
            progress.advance(len(batch))
    return len(ids)


def _read_each(read: Callable[[str], T], keys: Sequence[str], *, missing_ok: bool = False) -> Iterator[tuple[str, T]]:
    """(key, ``read(key)``) for each key in order, READERS reads at a time (an object store
    answers each in tens of milliseconds; the storage seam is thread-safe). With ``missing_ok``,
    a key that is gone (NotFound) reads as None."""

    def one(key: str) -> Any:
        try:
            return read(key)
        except NotFound:
            if missing_ok:
                return None
            raise

    with ThreadPoolExecutor(READERS, thread_name_prefix="hostcore-export") as pool:
        for start in range(0, len(keys), READ_CHUNK):
            chunk = keys[start : start + READ_CHUNK]
            yield from zip(chunk, pool.map(one, chunk), strict=True)


def _revision_ids(storage: Storage) -> list[str]:
    """Every revision id, oldest first. Changes landing meanwhile shift the pages by one, so ids
    seen twice count once."""
    seen: dict[str, None] = {}
    offset = 0
    while page := storage.history(offset=offset, limit=HISTORY_PAGE):
        seen.update((revision.id, None) for revision in page)
        offset += len(page)
    return list(reversed(seen))


# --- reading an export ---------------------------------------------------------------------


def read_export(folder: Path, progress: Progress | None = None) -> Export:
    """The export in ``folder``, checked whole: manifest, listings, every blob against its hash.

    Raises ValidationError naming what is wrong and what to do.
    """
    progress = progress or Quiet()
    folder = Path(folder)
    manifest_file = folder / MANIFEST
    if not manifest_file.is_file():
        if folder.is_dir() and (folder / FILES).exists():
            raise _damaged(folder, f"has no {MANIFEST}: the export did not finish")
        raise ValidationError(
            f"{folder} is not a hostcore export (no {MANIFEST}); name the folder `hostcore export` wrote", field="folder"
        )
    raw = manifest_file.read_bytes()
    try:
        manifest = json.loads(raw)
    except ValueError as exc:
        raise _damaged(folder, f"{MANIFEST} is not JSON ({exc})") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise ValidationError(
            f"{manifest_file} is not a hostcore export manifest (format is not {FORMAT!r}); name the folder `hostcore export` wrote",
            field="manifest",
        )
    version = manifest.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _damaged(folder, f"{MANIFEST}: version {version!r} is not a format version")
    if version > VERSION:
        raise ValidationError(
            f"{folder} is in export format version {version}, newer than this hostcore reads (version {VERSION}); "
            "upgrade hostcore and import again",
            field="version",
        )
    listings = {}
    for name, key in ((FILES, "files"), (HISTORY, "history")):
        expected = manifest.get(key)
        if (
            not isinstance(expected, dict)
            or not isinstance(expected.get("sha256"), str)
            or not isinstance(expected.get("count"), int)
        ):
            raise _damaged(folder, f"{MANIFEST}: {key!r} must hold a count and a sha256")
        if not (folder / name).is_file():
            raise _damaged(folder, f"{name} is missing")
        if _sha256(folder / name) != expected["sha256"]:
            raise _damaged(folder, f"{name} does not match its SHA-256 in {MANIFEST} (changed or cut short)")
        listings[key] = expected["count"]
    files = _read_files(folder)
    revisions = list(_read_history(folder))
    if len(files) != listings["files"] or len(revisions) != listings["history"]:
        raise _damaged(
            folder,
            f"{MANIFEST} counts {listings['files']} files and {listings['history']} revisions, the listings hold {len(files)} and {len(revisions)}",
        )
    _check_blobs(folder, files, revisions, progress)
    return Export(folder, manifest, hashlib.sha256(raw).hexdigest(), files, revisions)


def _damaged(folder: Path, what: str) -> ValidationError:
    return ValidationError(
        f"{folder} is damaged: {what}; export the wiki again (nothing was imported)", field="export"
    )


def _lines(folder: Path, name: str) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(folder / name, encoding="utf-8") as lines:
        for number, line in enumerate(lines, 1):
            try:
                value = json.loads(line)
            except ValueError:
                value = None
            if not isinstance(value, dict):
                raise _damaged(folder, f"{name} line {number} is not a JSON object")
            yield number, value


def _checked_path(folder: Path, name: str, number: int, path: Any) -> str:
    try:
        if isinstance(path, str):
            return check_path(path)
    except ValidationError:
        pass
    raise _damaged(folder, f"{name} line {number}: {path!r} is not a storage path")


def _checked_hash(folder: Path, name: str, number: int, digest: Any) -> str:
    if not isinstance(digest, str) or not _HASH.fullmatch(digest):
        raise _damaged(folder, f"{name} line {number}: {digest!r} is not a hash")
    return digest


def _read_files(folder: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for number, line in _lines(folder, FILES):
        path = _checked_path(folder, FILES, number, line.get("path"))
        files[path] = _checked_hash(folder, FILES, number, line.get("hash"))
    return files


def _read_history(folder: Path) -> Iterator[ExportedChange]:
    for number, line in _lines(folder, HISTORY):
        try:
            moves = tuple((str(old), str(new)) for old, new in line.get("moves", ()))
            when = datetime.fromisoformat(line["time"])
            when = when if when.tzinfo is not None else when.replace(tzinfo=UTC)
            change = Change(str(line["author"]), str(line["message"]), str(line.get("email", "")), moves, when)
            raw = line["changes"]
            revision_id = str(line["id"])
        except (KeyError, TypeError, ValueError):
            raise _damaged(
                folder, f"{HISTORY} line {number} is not a change (id, author, time, message, moves, changes)"
            ) from None
        if not isinstance(raw, dict):
            raise _damaged(folder, f"{HISTORY} line {number}: changes must map paths to hashes")
        changes = {
            _checked_path(folder, HISTORY, number, path): None
            if digest is None
            else _checked_hash(folder, HISTORY, number, digest)
            for path, digest in raw.items()
        }
        yield ExportedChange(revision_id, change, changes)


def _check_blobs(folder: Path, files: dict[str, str], revisions: list[ExportedChange], progress: Progress) -> None:
    wanted = set(files.values()) | {d for r in revisions for d in r.changes.values() if d is not None}
    progress.phase("checking the export", len(wanted))
    for digest in sorted(wanted):
        try:
            data = blob_file(folder, digest).read_bytes()
        except FileNotFoundError:
            raise _damaged(folder, f"{BLOBS}/{digest[:2]}/{digest[2:]} is missing") from None
        if blob_hash(data) != digest:
            raise _damaged(folder, f"{BLOBS}/{digest[:2]}/{digest[2:]} does not hold the bytes its name is the hash of")
        progress.advance()


# --- import ------------------------------------------------------------------------------


def import_wiki(
    storage: Storage,
    folder: Path,
    state_file: Path,
    *,
    replace: bool = False,
    progress: Progress | None = None,
) -> Imported:
    """Import the export in ``folder`` into ``storage`` (see the module docstring).

    ``state_file``: where the import notes how far it got, so that running it again on the same
    export resumes (deleted when the import ends). ``replace``: import into a storage that holds
    files or history (its files end as the export's; its history is kept, the export's added).
    Raises ValidationError for a damaged export or a target that is not empty (nothing written),
    Conflict when something else writes to the target meanwhile (run again to resume).
    """
    progress = progress or Quiet()
    export = read_export(folder, progress)
    state = _read_state(state_file)
    if state is not None and state.get("export") != export.digest:
        raise ValidationError(
            f"{state_file} records an unfinished import of another export ({state.get('folder')}); finish that import "
            f"first (run it again), or delete {state_file} and import into an empty storage",
            field="state",
        )
    if state is None:
        _check_empty(storage, replace)
        state = {"export": export.digest, "folder": str(export.folder), "done": 0}
        _write_json(state_file, state)
    resumed_at = int(state["done"])
    current = storage.hashes()
    replayed = 0
    keeps_history = storage.has_history and bool(export.revisions)
    if keeps_history:
        progress.phase("importing history", len(export.revisions))
        progress.advance(resumed_at)
        for index in range(resumed_at, len(export.revisions)):
            revision = export.revisions[index]
            replayed += _replay(storage, export, revision.changes, revision.change, current)
            state["done"] = index + 1
            _write_json(state_file, state)
            progress.advance()
    final = _bring_to_files(storage, export, current, progress)
    if storage.hashes() != export.files:
        raise Conflict(
            "the target storage does not hold the exported files after the import; stop whatever else writes to it and import again"
        )
    state_file.unlink(missing_ok=True)
    if keeps_history:
        kept = "kept: every change replayed with its author, email, time, message and moves"
    elif export.revisions:
        kept = f"not kept: the {storage.name or type(storage).__name__} storage keeps no history"
    else:
        kept = f"none in the export ({export.manifest.get('source', {}).get('history', 'none')})"
    return {
        "files": len(export.files), "revisions": len(export.revisions), "replayed": replayed, "resumed_at": resumed_at,
        "final_change": final, "history": kept,
    }  # fmt: skip


def _check_empty(storage: Storage, replace: bool) -> None:
    if replace:
        return
    files = storage.list()
    if files:
        raise ValidationError(
            f"the storage already holds {len(files)} files (e.g. {files[0]}); import into an empty storage, "
            "or pass --replace to replace its files (its history is kept, the export's added after it)",
            field="target",
        )
    if storage.has_history and storage.history(limit=1):
        raise ValidationError(
            "the storage holds history (every file was deleted); import into an empty storage, or pass "
            "--replace to add the export's history after it",
            field="target",
        )


def _replay(storage: Storage, export: Export, changes: dict[str, str | None], change: Change, current: dict[str, str]) -> int:
    """Apply one change of the history, expecting what the import left; 1 if it changed
    anything (a change that landed before a resume changes nothing)."""
    ops: list[Operation] = []
    for path, digest in sorted(changes.items()):
        now = current.get(path)
        if digest is None and now is not None:
            ops.append(Delete(path, expect=now))
        elif digest is not None and digest != now:
            ops.append(Put(path, export.blob(digest), expect=now))
    if not ops:
        return 0
    _apply(storage, ops, change, current)
    return 1


def _apply(storage: Storage, ops: list[Operation], change: Change, current: dict[str, str]) -> None:
    try:
        written = storage.apply(ops, change)
    except Conflict as exc:
        raise Conflict(
            f"{exc.data.get('path', 'a file')} changed in the target storage during the import; stop whatever else "
            "writes to it and run the import again to resume",
            path=exc.data.get("path", ""),
            hash=exc.data.get("hash", ""),
        ) from None
    for path, digest in written.items():
        if digest is None:
            current.pop(path, None)
        else:
            current[path] = digest


def _bring_to_files(storage: Storage, export: Export, current: dict[str, str], progress: Progress) -> bool:
    """Make the target hold exactly the exported files, in batches; True if anything changed."""
    ops: list[Operation] = [Delete(path, expect=digest) for path, digest in sorted(current.items()) if path not in export.files]
    todo = [(path, digest) for path, digest in sorted(export.files.items()) if current.get(path) != digest]
    if ops or todo:
        progress.phase("importing files", len(todo) + len(ops))
    change = Change(IMPORT_AUTHOR, f"import: the wiki as exported on {export.manifest.get('created', '?')}")
    size, changed = 0, bool(ops or todo)
    for path, digest in todo:
        data = export.blob(digest)
        if ops and (size + len(data) > BATCH_BYTES or len(ops) >= BATCH_FILES):
            _apply(storage, ops, change, current)
            progress.advance(len(ops))
            ops, size = [], 0
        ops.append(Put(path, data, expect=current.get(path)))
        size += len(data)
    if ops:
        _apply(storage, ops, change, current)
        progress.advance(len(ops))
    return changed


# --- small files ---------------------------------------------------------------------------


def _sha256(file: Path) -> str:
    digest = hashlib.sha256()
    with open(file, "rb") as data:
        for chunk in iter(lambda: data.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _write_json(file: Path, value: dict[str, Any]) -> None:
    """Write ``value`` whole or not at all (a temporary file renamed into place)."""
    tmp = file.with_name(f".{file.name}.tmp")
    tmp.write_text(json.dumps(value, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, file)


def _read_state(file: Path) -> dict[str, Any] | None:
    try:
        state = json.loads(file.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except ValueError as exc:
        raise ValidationError(f"{file} is damaged ({exc}); delete it and import into an empty storage", field="state") from None
    if not isinstance(state, dict) or not isinstance(state.get("done"), int):
        raise ValidationError(f"{file} is damaged; delete it and import into an empty storage", field="state")
    return state
