"""Plain-files storage: each stored path is a file under the instance's ``pages`` folder.

Writes go to a temporary file that is fsynced and renamed into place, so a reader sees the old
bytes or the new, never a torn file. One lock file serialises writers across threads and
processes; every expectation is checked under it before anything is written. A batch (a move) is
applied in order under the lock: a crash between its steps can leave both copies of a moved page,
never a half-written one. There is no history: use the git storage for that.
"""

from __future__ import annotations

import builtins
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from hostcore import (
    ANY,
    Change,
    Conflict,
    Delete,
    FileLock,
    NotFound,
    Operation,
    Put,
    Storage,
    blob_hash,
    hookimpl,
)

_TMP_PREFIX = ".hostcore-tmp-"


class FileStorage(Storage):
    """Files in a folder; ``PLUGIN_CONFIG.fs.path`` overrides the folder (default ``pages``)."""

    name = "fs"

    def __init__(self, root: Path, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(root, config)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(self.root.parent / f".{self.root.name}.lock")

    def _file(self, path: str) -> Path:
        return self.root / path

    def _read(self, path: str) -> bytes:
        try:
            return self._file(path).read_bytes()
        except (FileNotFoundError, NotADirectoryError, IsADirectoryError):
            raise NotFound(f"{path} does not exist") from None

    def _list(self, prefix: str) -> list[str]:
        base = self._file(prefix) if prefix else self.root
        if not base.is_dir():
            return []
        found = []
        for folder, _dirs, files in os.walk(base):
            rel = os.path.relpath(folder, self.root)
            for name in files:
                if not name.startswith(_TMP_PREFIX):
                    found.append(name if rel == "." else f"{rel}/{name}")
        return sorted(found)

    def _folders(self, prefix: str) -> builtins.list[str]:
        base = self._file(prefix) if prefix else self.root
        if not base.is_dir():
            return []
        return sorted(entry.name for entry in os.scandir(base) if entry.is_dir())

    def _apply(self, ops: Sequence[Operation], change: Change) -> dict[str, str | None]:
        with self._lock:
            for op in ops:
                self._check(op)
            result: dict[str, str | None] = {}
            for op in ops:
                if isinstance(op, Put):
                    self._write(op.path, op.data)
                    result[op.path] = blob_hash(op.data)
                else:
                    self._remove(op.path)
                    result[op.path] = None
            return result

    def _check(self, op: Operation) -> None:
        current = self._hash(op.path)
        if op.expect is ANY:
            if isinstance(op, Delete) and current is None:
                raise NotFound(f"{op.path} does not exist")
            return
        if current != op.expect:
            raise Conflict(f"{op.path} has changed", path=op.path, hash=current or "")

    def _write(self, path: str, data: bytes) -> None:
        target = self._file(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=_TMP_PREFIX, dir=target.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def _remove(self, path: str) -> None:
        target = self._file(path)
        target.unlink()
        folder = target.parent
        while folder != self.root and not any(folder.iterdir()):
            folder.rmdir()
            folder = folder.parent


@hookimpl
def register_storage_backends(register):
    register(FileStorage)
