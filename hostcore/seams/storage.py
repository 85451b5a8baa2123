"""The storage seam: a small base class every backend implements.

A backend stores files (bytes) at relative POSIX paths. Pages are ``<slug>.md``, namespace
settings ``<namespace>/.namespace.yaml``. As in fsspec, the public methods check their arguments
(every path, with :func:`check_path`) and then call the backend's protected implementation
(``read`` -> ``_read``): a backend implements ``_read``, ``_list`` and ``_apply``, receives only
safe paths, and cannot forget a check. Every write goes through :meth:`Storage.apply`, which is atomic and compare-and-set: each
operation names the hash it expects to replace, and either every expectation holds and every
operation lands (one commit, for backends with history) or nothing changes and
:class:`~hostcore.errors.Conflict` is raised with the current hash.

``hash`` is always the git blob id of the stored bytes (what ``git hash-object`` prints), so a
hash means the same thing whatever the backend.
"""

from __future__ import annotations

import builtins
import difflib
import errno
import shutil
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Final

from hostcore.domain.hashes import blob_hash
from hostcore.domain.pages import access_folder
from hostcore.errors import NoHistory, NotFound, Unavailable, ValidationError
from hostcore.seams.settings import Setting, with_defaults


class _Any:
    """Sentinel: the operation has no expectation about the current content."""

    def __repr__(self) -> str:
        return "ANY"


ANY: Final = _Any()


@dataclass(frozen=True)
class Put:
    """Write ``data`` at ``path``. ``expect``: the hash it must hold now, ``None`` for absent."""

    path: str
    data: bytes
    expect: str | _Any | None = ANY


@dataclass(frozen=True)
class Delete:
    """Remove ``path``. ``expect``: the hash it must hold now (``ANY``: just present)."""

    path: str
    expect: str | _Any = ANY


Operation = Put | Delete


@dataclass(frozen=True)
class Change:
    """Who made a change and why: a commit's author and message for backends with history.

    ``moves``: (old path, new path) of each file the change moves, so that a backend with history
    can follow the file back across the move (:meth:`Storage.history`, :meth:`Storage.read_at`).
    ``time``: when the change was made, for an import replaying recorded history (a backend with
    history records it as the change's time); None, as every live change has it, means now.
    """

    author: str
    message: str
    email: str = ""
    moves: tuple[tuple[str, str], ...] = ()
    time: datetime | None = None


@dataclass(frozen=True)
class Revision:
    """One recorded change: a commit for the git backend.

    ``paths`` lists the changed files (a backend may list only the first ones of a huge change;
    ``path_count`` has the total); ``folders`` are the namespaces it touched (:meth:`folders_of`:
    the top-level folders, "" for a visible file at the top, nothing for hidden ones), which is
    what access filtering needs. Both are derived from ``paths`` when not given.
    """

    id: str
    author: str
    time: datetime
    message: str
    paths: tuple[str, ...] = field(default_factory=tuple)
    folders: tuple[str, ...] = ()
    path_count: int = 0

    def __post_init__(self) -> None:
        if not self.folders and self.paths:
            object.__setattr__(self, "folders", self.folders_of(self.paths))
        if not self.path_count:
            object.__setattr__(self, "path_count", len(self.paths))

    @staticmethod
    def folders_of(paths: Iterable[str]) -> tuple[str, ...]:
        """The namespaces files at ``paths`` count against for access, sorted (see
        :func:`~hostcore.domain.pages.access_folder`): a hidden file at the top (``.wiki.yaml``)
        counts against none, so it never hides a change to a page beside it."""
        return tuple(sorted({folder for path in paths if (folder := access_folder(path)) is not None}))


@dataclass(frozen=True)
class BlameHunk:
    """Lines ``start`` to ``start + count - 1`` (1-based) of a file as it is now, last written by
    ``revision``. ``boundary``: the file's history was longer than blame looked back
    (:data:`BLAME_REVISIONS`), so these lines are at least that old, maybe older."""

    start: int
    count: int
    revision: Revision
    boundary: bool = False


BLAME_REVISIONS = 1000  # recorded changes of one file blame reads at most, newest first


def file_lines(data: bytes) -> builtins.list[str]:
    """The lines of a stored file as blame numbers them: split at ``\n`` only (as git does), the
    newline after the last line not starting another."""
    text = data.decode("utf-8", "replace")
    lines = text.split("\n")
    return lines[:-1] if lines and lines[-1] == "" else lines


def check_path(path: str) -> str:
    """Return ``path`` if it is a safe relative POSIX path, else raise ValidationError."""
    if not path or path.startswith("/") or "\\" in path or "\0" in path:
        raise ValidationError(f"invalid storage path {path!r}", field="path")
    for part in path.split("/"):
        if part in ("", ".", ".."):
            raise ValidationError(f"invalid storage path {path!r}", field="path")
    return path


def check_prefix(prefix: str) -> str:
    """Return ``prefix``, a folder: "" (the top) or a safe path (:func:`check_path`)."""
    return check_path(prefix) if prefix else ""


FULL_BELOW = 1024 * 1024  # free bytes under which a disk counts as full
AUTHORS_EACH_UP_TO = 20  # last_authors reads each path's own history up to this many paths, else walks it all once
AUTHORS_BATCH = 500


def disk_full(path: Path, reserve: int = FULL_BELOW) -> bool:
    """True when the disk holding the folder ``path`` has less than ``reserve`` bytes free."""
    try:
        return shutil.disk_usage(path).free < reserve
    except OSError:
        return False


def out_of_space(exc: BaseException, path: Path) -> bool:
    """True when ``exc``, raised while writing under ``path``, comes from a full disk.

    Libraries do not always keep the errno (libgit2 reports ``no error`` for some failed writes),
    so a failure while the disk is full counts as one.
    """
    return getattr(exc, "errno", None) in (errno.ENOSPC, errno.EDQUOT) or "No space left" in str(exc) or disk_full(path)


class Storage(ABC):
    """Base class of storage backends.

    Callers use the public methods, which check every path (:func:`check_path`; a folder may
    also be "", the top) and then call the backend's protected implementation of the same name
    (``read`` -> ``_read``), so a backend never sees an unsafe path. A backend must implement
    :meth:`_read`, :meth:`_list`, :meth:`_apply` and, where cheaper than reading, :meth:`_hash`;
    backends with history also implement :meth:`_history`, :meth:`_read_at`, :meth:`_list_at`,
    :meth:`changes_in` and :meth:`read_blob`. Registered by name through the
    ``register_storage_backends`` hook; the ``STORAGE`` setting picks one. The constructor
    receives the instance data folder and the plugin's config: the ``PLUGIN_CONFIG.<name>``
    table, checked against :attr:`settings` and with their defaults filled in (``path``, the
    folder, is the host's and never reaches the backend).
    """

    name: ClassVar[str] = ""
    has_history: ClassVar[bool] = False
    settings: ClassVar[Mapping[str, Setting]] = {}  # the PLUGIN_CONFIG keys it takes

    def __init__(self, root: Path, config: Mapping[str, Any] | None = None) -> None:
        self.root = Path(root)
        self.config = with_defaults(self.settings, config, f"the {self.name or type(self).__name__} storage backend")

    # --- what callers use: arguments checked here, once, for every backend ---------------

    def read(self, path: str) -> bytes:
        """The bytes at ``path``. Raises NotFound when absent, ValidationError for an unsafe path."""
        return self._read(check_path(path))

    def list(self, prefix: str = "") -> builtins.list[str]:
        """Every file path under the folder ``prefix`` ("" for all), sorted, hidden ones too."""
        return self._list(check_prefix(prefix))

    def apply(self, ops: Sequence[Operation], change: Change) -> dict[str, str | None]:
        """Apply ``ops`` atomically, checking every expectation first.

        Returns the new hash of every path written (``None`` for deleted ones). Raises
        :class:`~hostcore.errors.Conflict` with ``path`` and ``hash`` (current, "" when absent)
        and changes nothing when any expectation fails; NotFound when a Delete targets nothing;
        ValidationError, before anything is written, for an unsafe path.
        Applying ops that change nothing (same bytes) records nothing.
        """
        for op in ops:
            check_path(op.path)
        return self._apply(ops, change)

    def hash(self, path: str) -> str | None:
        """The blob id of ``path``, or None when absent."""
        return self._hash(check_path(path))

    def exists(self, path: str) -> bool:
        return self.hash(path) is not None

    def read_with_hash(self, path: str) -> tuple[bytes, str]:
        """The bytes at ``path`` and their blob id. Raises NotFound."""
        return self._read_with_hash(check_path(path))

    def folders(self, prefix: str = "") -> builtins.list[str]:
        """Names of the folders directly inside the folder ``prefix`` ("" for the top), sorted."""
        return self._folders(check_prefix(prefix))

    def hashes(self, prefix: str = "") -> dict[str, str]:
        """Path -> blob id of every file under ``prefix``. Git answers from its tree, cheaply."""
        return self._hashes(check_prefix(prefix))

    def history(self, path: str | None = None, *, offset: int = 0, limit: int = 20) -> builtins.list[Revision]:
        """Recorded changes, newest first; only those touching ``path`` when given, following the
        file back across moves (recorded in ``Change.moves``, or a file that left one path for
        another unchanged in one change), so a moved page keeps its history. Raises
        ValidationError for an unsafe path or a negative offset or limit."""
        if path is not None:
            check_path(path)
        if offset < 0 or limit < 0:
            raise ValidationError("offset and limit must not be negative", field="offset" if offset < 0 else "limit")
        return self._history(path, offset=offset, limit=limit)

    def last_changed(self, paths: Sequence[str]) -> dict[str, datetime]:
        """Path -> time of its newest recorded change, for the paths that have history."""
        for path in paths:
            check_path(path)
        return self._last_changed(paths)

    def last_authors(self, paths: Sequence[str]) -> dict[str, str]:
        """Path -> author of its newest recorded change, for the paths that have history (what
        search's ``author`` filter compares)."""
        for path in paths:
            check_path(path)
        return self._last_authors(paths)

    def read_at(self, path: str, revision: str) -> bytes:
        """The bytes of ``path`` as of ``revision`` (at the path it had then, for a file moved
        since: :meth:`history` lists such revisions). Raises NotFound."""
        return self._read_at(check_path(path), revision)

    def blame(self, path: str) -> builtins.list[BlameHunk]:
        """Which recorded change last wrote each line of the file at ``path`` as it is now: hunks
        in line order, covering every line (:func:`file_lines`), following the file back across
        moves as :meth:`history` does. Raises NotFound when the file is absent, NoHistory when the
        backend keeps no history."""
        return self._blame(check_path(path))

    def list_at(self, prefix: str, revision: str) -> builtins.list[str]:
        """Every file path under the folder ``prefix`` as of ``revision``, sorted. Raises NotFound
        for an unknown revision (restoring a page brings back its attachments from there)."""
        return self._list_at(check_path(prefix), revision)

    # --- what a backend implements: paths arrive checked -----------------------------------

    @abstractmethod
    def _read(self, path: str) -> bytes:
        """The bytes at ``path``. Raises NotFound when absent."""

    @abstractmethod
    def _list(self, prefix: str) -> builtins.list[str]:
        """Every file path under the folder ``prefix`` ("" for all), sorted, hidden ones too."""

    @abstractmethod
    def _apply(self, ops: Sequence[Operation], change: Change) -> dict[str, str | None]:
        """:meth:`apply`, every path checked: all of ``ops`` or none, compare-and-set."""

    # --- derived implementations; override when the backend can do better ---------------

    def _hash(self, path: str) -> str | None:
        try:
            return blob_hash(self._read(path))
        except NotFound:
            return None

    def _read_with_hash(self, path: str) -> tuple[bytes, str]:
        data = self._read(path)
        return data, blob_hash(data)

    def _folders(self, prefix: str) -> builtins.list[str]:
        depth = prefix.count("/") + 1 if prefix else 0
        return sorted({path.split("/")[depth] for path in self._list(prefix) if path.count("/") > depth})

    def _hashes(self, prefix: str) -> dict[str, str]:
        return {path: blob_hash(self._read(path)) for path in self._list(prefix)}

    def status(self) -> dict[str, Any]:
        """Operational facts worth showing in ``health`` (e.g. the last push to a remote)."""
        return {}

    # --- versions: optional, so derived indexes catch up with what changed, not with everything

    def version(self) -> str | None:
        """A cheap id of everything stored now, new after every change, wherever it came from (git:
        the branch's commit id). None when the backend has none: indexes then compare every page."""
        return None

    def changed_since(self, version: str, until: str) -> builtins.list[str] | None:
        """The paths whose content differs between two versions (from :meth:`version`), sorted, or
        None when the backend cannot tell (an unknown version): indexes then compare every page."""
        return None

    def close(self) -> None:
        """Release resources (file handles, connections)."""

    # --- history: only for backends that keep it ----------------------------------------

    def _no_history(self) -> Unavailable:
        return Unavailable(f"the {self.name or type(self).__name__} storage keeps no history; use the git storage")

    def _history(self, path: str | None, *, offset: int, limit: int) -> builtins.list[Revision]:
        raise self._no_history()

    def _last_changed(self, paths: Sequence[str]) -> dict[str, datetime]:
        return {path: revision.time for path, revision in self._newest_each(paths).items()}

    def _newest_each(self, paths: Sequence[str]) -> dict[str, Revision]:
        """Path -> its newest recorded change, from each path's own history."""
        if not self.has_history:
            return {}
        out = {}
        for path in paths:
            revs = self._history(path, offset=0, limit=1)
            if revs:
                out[path] = revs[0]
        return out

    def _last_authors(self, paths: Sequence[str]) -> dict[str, str]:
        """A path's own history for a few paths; for more, one walk of the whole history, newest
        first, until every path has its author (a huge change listing only its first paths leaves
        the others to an older change, or to none)."""
        if not self.has_history:
            return {}
        if len(paths) <= AUTHORS_EACH_UP_TO:
            return {path: revision.author for path, revision in self._newest_each(paths).items()}
        wanted, found, offset = set(paths), dict[str, str](), 0
        while wanted:
            batch = self._history(None, offset=offset, limit=AUTHORS_BATCH)
            for revision in batch:
                for path in wanted.intersection(revision.paths):
                    found[path] = revision.author
                wanted.difference_update(revision.paths)
            if len(batch) < AUTHORS_BATCH:
                break
            offset += len(batch)
        return found

    def _read_at(self, path: str, revision: str) -> bytes:
        raise self._no_history()

    def _blame(self, path: str) -> builtins.list[BlameHunk]:
        """From :meth:`_history` and :meth:`_read_at`, so every backend with history answers alike
        (git's own blame does not follow a file across a move, which a wiki's pages often make):
        the versions oldest first, each compared line by line with the one before (difflib); a
        line keeps the change that wrote it while the versions after leave it alone."""
        if not self.has_history:
            raise NoHistory(
                f"the {self.name or type(self).__name__} storage keeps no line history: blame needs a storage that "
                "records every change (git or s3)"
            )
        current = file_lines(self._read(path))
        revisions: builtins.list[Revision] = []
        while len(revisions) < BLAME_REVISIONS:
            batch = self._history(path, offset=len(revisions), limit=min(100, BLAME_REVISIONS - len(revisions)))
            revisions += batch
            if len(batch) < 100:
                break
        boundary = len(revisions) >= BLAME_REVISIONS
        lines: builtins.list[str] = []
        owners: builtins.list[tuple[int, bool]] = []  # per line: the index in revisions, whether at the boundary
        for index in range(len(revisions) - 1, -1, -1):
            try:
                version = file_lines(self._read_at(path, revisions[index].id))
            except NotFound:  # deleted by that change (and brought back later)
                version = []
            owners = _carried(lines, owners, version, (index, boundary and index == len(revisions) - 1))
            lines = version
        if not revisions:
            raise self._no_history()
        if lines != current:  # changed outside the recorded history: the newest change holds what differs
            owners = _carried(lines, owners, current, (0, False))
        hunks: builtins.list[BlameHunk] = []
        for number, (index, old) in enumerate(owners, 1):
            last = hunks[-1] if hunks else None
            if last is not None and last.revision is revisions[index] and last.boundary == old:
                hunks[-1] = BlameHunk(last.start, last.count + 1, last.revision, old)
            else:
                hunks.append(BlameHunk(number, 1, revisions[index], old))
        return hunks

    def _list_at(self, prefix: str, revision: str) -> builtins.list[str]:
        raise self._no_history()

    # --- replaying history: what ``hostcore export`` reads from a backend with history ---------

    def changes_in(self, revision: str) -> tuple[Change, dict[str, str | None]]:
        """What ``revision`` did, exactly: the Change that made it (author, email, message without
        the moves, moves, time) and path -> the blob id it left there (None: deleted) for every
        file it changed, at the paths they had then. Raises NotFound for an unknown revision."""
        raise self._no_history()

    def read_blob(self, digest: str) -> bytes:
        """The bytes of any version ever stored whose blob id is ``digest`` (those
        :meth:`changes_in` names). Raises NotFound."""
        raise self._no_history()


def _carried(before: builtins.list[str], owners: builtins.list[tuple[int, bool]], after: builtins.list[str],
             new: tuple[int, bool]) -> builtins.list[tuple[int, bool]]:  # fmt: skip
    """The owners of ``after``'s lines: those it kept from ``before`` keep theirs, the rest are ``new``'s."""
    matcher = difflib.SequenceMatcher(None, before, after, autojunk=len(after) > 2000)
    carried: builtins.list[tuple[int, bool]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        carried += owners[i1:i2] if tag == "equal" else [new] * (j2 - j1)
    return carried
