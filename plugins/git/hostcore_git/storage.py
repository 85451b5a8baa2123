"""Git storage: every change is one commit on the branch of a bare repository at ``root``.

The repository is bare: there is no working tree or index to keep in step, commits are built at
the object level, and operators clone it, pull from it and push into it with ordinary git (a push
into a non-bare repository's checked-out branch is refused by git). Next to git's own files the
folder holds hostcore's: ``hostcore.lock`` (the write lock), ``hostcore-packs.lock`` (see
:class:`hostcore_git.packs.Merger`), ``hostcore-history.sqlite`` (the
history index, see :mod:`hostcore_git.history`, with its ``.lock`` and ``.checked``) and, with a
remote, ``hostcore-push.json``. Git ignores them and never clones or pushes them.

A write runs in two steps. Its blobs are hashed and compressed first, outside any lock. Then the
change joins the writes of this process waiting for the inter-process file lock, and one thread
commits them together (:mod:`hostcore_git.group`): under the lock, the branch head is resolved;
for each change in turn every expectation is checked against the tree so far, the new tree is
built along the changed paths only and its commit object made on the previous one (one commit per
change, with its author and message; a change whose expectation fails gets its Conflict and no
commit); then every new object of the group (blobs included) is written as one pack, flushed and
kept (:mod:`hostcore_git.packs`; a folder changed by several commits of the group is in it whole
once, its later versions as deltas against that, see :class:`hostcore_git.trees.Line`), the branch moves to the last commit with compare-and-swap (only
if it still points at the head read first), the pack's ``.keep`` goes and the ref is flushed.
Objects are always on disk before the ref moves and the ref before any change of the group is
acknowledged, so a process killed at any point leaves each page as it was before or after its
change. ``git gc`` and ``git repack`` run by an operator at the same time keep every object: a
pack is kept until the branch references it, as git keeps a pushed one. Small packs are merged
in the background as they accumulate, and repository handles renewed every :data:`HANDLE_SECONDS` so that packs
removed since are closed. A ref lock file left by a killed process is removed once it is older
than any live git process would hold it.

A save's cost does not follow the size of its folder: trees are built from parsed folders kept in
memory between groups (a folder of 6,000 pages is not parsed, sorted and compressed again each
save), a folder another process changed is worked out from the paths the history index says it
changed, and trees written whole are stored uncompressed.
"""

from __future__ import annotations

import builtins
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any, ClassVar, TypeVar, cast

import pygit2
from pygit2.enums import RepositoryOpenFlag

from hostcore import (
    ANY,
    Change,
    ConfigError,
    Conflict,
    Delete,
    DiskFull,
    FileLock,
    HostcoreError,
    NotFound,
    Operation,
    Put,
    Revision,
    Setting,
    Storage,
    Unavailable,
    out_of_space,
)

from . import packs
from .group import Group, Pending, flush
from .history import HistoryIndex, changed_paths, split_moves, unchanged_moves, with_moves
from .odb import Objects
from .remote import Pusher
from .trees import Folder, Line, blob_id, changed, entry_at, follow, parsed_blob, walk

log = logging.getLogger(__name__)
T = TypeVar("T")

TREE_CACHE_LIMIT = 64 * 1024 * 1024  # largest tree object libgit2 may keep parsed in its cache
CACHE_MAX_SIZE = 32 * 1024 * 1024  # all it keeps parsed, per process (libgit2's default: 256 MiB)
# A live git process holds a ref lock for milliseconds; one this old was left by a killed process.
STALE_REF_LOCK = 5.0
_REF_LOCK_WAIT = 2 * STALE_REF_LOCK
# Compare-and-swap retries when a push from outside moves the branch between check and update.
_CAS_ATTEMPTS = 5
FOLLOW_PATHS = 1000  # paths changed by other processes above which their trees are parsed instead
CLOSE_MERGE_WAIT = 60.0  # seconds close() lets a running pack merge finish
HANDLE_SECONDS = 5.0  # age at which a repository handle is renewed: it holds removed packs open, and looks through each pack it ever saw when an object is not in the others
BLOB = int(pygit2.enums.ObjectType.BLOB)
_UNSAFE_IN_SIGNATURE = re.compile(r"[<>\x00-\x1f]")
_BLOB_ID = re.compile(r"[0-9a-f]{40}")
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"  # git's id of the empty tree: the version of an unborn branch


class GitStorage(Storage):
    """A bare git repository at ``root``; each :meth:`apply` that changes content is one commit.

    Its settings (``PLUGIN_CONFIG.git``) are declared in :attr:`settings`.
    """

    name = "git"
    has_history = True
    settings: ClassVar[Mapping[str, Setting]] = {
        "remote": Setting(str, None, "URL or path to push the branch to after each commit, in the background"),
        "fsync": Setting(
            bool, True, "flush objects and refs to disk so a power cut loses no acknowledged save (process-wide)"
        ),
    }

    def __init__(self, root: Path, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(root, config)
        if (self.root / ".git").exists():
            raise ConfigError(f"{self.root} is a git working tree; the git storage needs a bare repository", field="root")
        # Durability is this class's own (group.flush: one parallel flush per group of commits);
        # libgit2's would flush every object and the ref one after another under the lock.
        pygit2.settings.enable_fsync_gitdir(False)
        self._durable = bool(self.config["fsync"])
        self._group: Group[_Change] = Group(self._commit_group)
        self._writing: tuple[int, float, pygit2.Repository, Objects] | None = None
        self._parsed: dict[pygit2.Oid, Folder] = {}  # the group leader's parsed trees (see trees.Line)
        self._last_line: tuple[pygit2.Oid, pygit2.Oid] | None = None  # the last commit this process made, its root tree
        self._merger = packs.Merger(self.root / "objects" / "pack", self.root / "hostcore-packs.lock", self._durable)
        # libgit2 caches no tree over 4 KB by default, so every read in a folder of thousands of
        # pages re-parsed that folder's tree, where a cached tree is found at once.
        pygit2.settings.cache_object_limit(pygit2.enums.ObjectType.TREE, TREE_CACHE_LIMIT)
        # Each save makes a new version of its folder's tree, and reads parse it: without a smaller
        # bound a worker kept a quarter of a gigabyte of folder versions only the newest of which
        # is read again.
        pygit2.settings.cache_max_size(CACHE_MAX_SIZE)
        self.root.mkdir(parents=True, exist_ok=True)
        self._lock = FileLock(self.root / "hostcore.lock")
        self._local = threading.local()
        with self._lock:
            if not (self.root / "HEAD").is_file():
                if any(item.name != "hostcore.lock" for item in self.root.iterdir()):
                    raise ConfigError(f"{self.root} is neither empty nor a git repository; point the git storage at an empty folder or a bare repository", field="root")
                pygit2.init_repository(str(self.root), bare=True, initial_head="main")
            repo = self._repo()
            head_ref = repo.lookup_reference("HEAD")
            if not isinstance(head_ref.target, str):
                raise ConfigError(f"HEAD of {self.root} is detached; point it at a branch (git symbolic-ref HEAD refs/heads/main)")
            self._branch = head_ref.target
            self._history_index = HistoryIndex(self.root / "hostcore-history.sqlite")
            head = self._head(repo)
            try:
                self._history_index.sync(repo, head)
            except sqlite3.OperationalError as exc:  # a full disk: the wiki still starts, for reading
                if not out_of_space(exc, self.root):
                    raise
                log.warning("the history index cannot catch up on a full disk (%s); it does at the first read with space", exc)
        remote = self.config["remote"]
        self._pusher = Pusher(self.root, self._branch, str(remote)) if remote else None
        if self._pusher is not None and head is not None and self._pusher.pushed_commit() != str(head):
            self._pusher.notify()

    # --- reading ---------------------------------------------------------------------------

    def _renewed(self, held: tuple[int, float, pygit2.Repository] | None) -> pygit2.Repository | None:
        """A new handle when ``held`` (pid, opened at, handle) is missing, another process's (a
        fork) or older than :data:`HANDLE_SECONDS`, else None. A handle keeps every pack it opened
        open, and merged packs (:func:`packs.merge`) and ``git gc`` remove packs, so the old one is
        freed at once (pygit2 handles sit in reference cycles, freed late); an object read through
        it still works: the handle reopens what it needs."""
        if held is not None and held[0] == os.getpid():
            if time.monotonic() - held[1] <= HANDLE_SECONDS:
                return None
            held[2].free()
        return pygit2.Repository(str(self.root), RepositoryOpenFlag.NO_SEARCH)

    def _repo(self) -> pygit2.Repository:
        """This thread's repository handle (libgit2 handles must not be shared between threads),
        renewed as :meth:`_renewed` says."""
        local = self._local
        repo = self._renewed((local.pid, local.opened, local.repo) if getattr(local, "pid", None) is not None else None)
        if repo is not None:
            local.repo, local.pid, local.opened, local.head, local.tree = repo, os.getpid(), time.monotonic(), None, None
        return local.repo

    def _writer(self) -> tuple[pygit2.Repository, Objects]:
        """This process's handle for the group leader (one thread at a time, under the lock): the
        objects it writes stay in memory (the returned :class:`Objects`) until they are
        written as one pack. Renewed as :meth:`_repo`'s are."""
        repo = self._renewed(self._writing[:3] if self._writing is not None else None)
        if repo is not None:
            objects = Objects()
            repo.odb.add_backend(objects, 1000)  # before git's own: new objects land here
            self._writing = (os.getpid(), time.monotonic(), repo, objects)
        assert self._writing is not None
        return self._writing[2], self._writing[3]

    def _head(self, repo: pygit2.Repository) -> pygit2.Oid | None:
        """The commit the branch points at now (other processes move it), None while unborn."""
        try:
            return cast(pygit2.Oid, repo.references[self._branch].target)
        except KeyError:
            return None

    def _snapshot(self, repo: pygit2.Repository) -> tuple[pygit2.Oid | None, pygit2.Tree | None]:
        """The branch head and its tree; the tree is cached for as long as the head stays."""
        head, local = self._head(repo), self._local
        if head != local.head:
            local.head, local.tree = head, (repo[head].tree if head is not None else None)
        return head, local.tree

    def _blob(self, path: str) -> pygit2.Blob:
        repo = self._repo()
        _, tree = self._snapshot(repo)
        known, oid = self._parsed_blob(tree, path)
        entry = repo[oid] if oid is not None else None if known else entry_at(tree, path)
        if not isinstance(entry, pygit2.Blob):
            raise NotFound(f"{path} does not exist")
        return entry

    def _parsed_blob(self, tree: pygit2.Tree | None, path: str) -> tuple[bool, pygit2.Oid | None]:
        """The id of the file at ``path`` in ``tree`` from the folders the group leader parsed and
        made (:func:`trees.parsed_blob`): after a commit of this process, a page of a folder of
        thousands is found without libgit2 parsing the folder's new version again."""
        return parsed_blob(self._parsed, tree.id, path) if tree is not None else (True, None)

    def _read(self, path: str) -> bytes:
        return self._blob(path).data

    def _read_with_hash(self, path: str) -> tuple[bytes, str]:
        blob = self._blob(path)
        return blob.data, str(blob.id)

    def _hash(self, path: str) -> str | None:
        _, tree = self._snapshot(self._repo())
        known, oid = self._parsed_blob(tree, path)
        oid = oid if known else blob_id(tree, path)
        return str(oid) if oid is not None else None

    def _list(self, prefix: str) -> builtins.list[str]:
        _, tree = self._snapshot(self._repo())
        return [path for path, _ in walk(tree, prefix)]

    def _folders(self, prefix: str) -> builtins.list[str]:
        _, tree = self._snapshot(self._repo())
        folder = tree if not prefix else entry_at(tree, prefix)
        if not isinstance(folder, pygit2.Tree):
            return []
        return sorted(str(entry.name) for entry in folder if isinstance(entry, pygit2.Tree))

    def _hashes(self, prefix: str) -> dict[str, str]:
        _, tree = self._snapshot(self._repo())
        return {path: str(oid) for path, oid in walk(tree, prefix)}

    def version(self) -> str:
        """The branch's commit id (one read of the ref); the empty tree's id while the branch is unborn."""
        head = self._head(self._repo())
        return str(head) if head is not None else EMPTY_TREE

    def changed_since(self, version: str, until: str) -> builtins.list[str] | None:
        """The files that differ between two commits, or None when either is not a commit of this
        repository.

        From the history index when ``until`` descends from ``version`` along a line of first
        parents it holds (every save in between, hostcore's or a linear push): one indexed query.
        Otherwise a tree diff that skips equal subtrees, whose cost follows what changed but reads
        every entry of each changed folder (so big folders make it slower).
        The last answer is kept per thread: the link graph and the search index usually ask the same.
        """
        last = getattr(self._local, "diff", None)
        if last is not None and last[0] == (version, until):
            return list(last[1])
        paths = self._indexed_changes(version, until)
        if paths is None:
            repo = self._repo()
            trees: builtins.list[pygit2.Oid | None] = []
            for rev in (version, until):
                if rev == EMPTY_TREE:
                    trees.append(None)
                    continue
                try:
                    trees.append(repo[rev].peel(pygit2.Commit).tree_id)
                except (KeyError, ValueError, TypeError, pygit2.GitError):
                    return None
            paths = sorted(changed(repo, trees[0], trees[1]))
        self._local.diff = ((version, until), paths)
        return list(paths)

    def _indexed_changes(self, version: str, until: str) -> builtins.list[str] | None:
        """The paths the history index records for the commits after ``version`` up to ``until``,
        when they form one line of first parents; else None."""
        if version == EMPTY_TREE:
            return None
        try:
            paths = self._history_index.changes_between(version, until)
            if paths is None and self._history_index.head() != until:  # a commit of another process, not indexed yet
                self._sync_history()
                paths = self._history_index.changes_between(version, until)
        except sqlite3.Error as exc:
            self._history_index.recover(exc)
            return None
        return paths

    # --- writing ---------------------------------------------------------------------------

    def _apply(self, ops: Sequence[Operation], change: Change) -> dict[str, str | None]:
        """See :meth:`Storage.apply`: one commit when anything changes, none when nothing does.

        Also raises ValidationError when a file would replace a folder (or a folder a file), and
        Unavailable when pushes from outside keep moving the branch or hold its lock.
        """
        try:
            wanted, committed = self._commit(ops, change)
        except (OSError, pygit2.GitError) as exc:
            # Objects written before the disk filled are unreferenced garbage; the branch has not moved.
            if out_of_space(exc, self.root):
                raise DiskFull() from exc
            raise
        if committed and self._pusher is not None:
            self._pusher.notify()
        return {path: str(oid) if oid is not None else None for path, oid in wanted.items()}

    def _commit(self, ops: Sequence[Operation], change: Change) -> tuple[dict[str, pygit2.Oid | None], bool]:
        """Hash and compress the blobs, then have the change committed with the others waiting
        for the lock.

        Returns (path -> blob id, None for a delete; whether a commit was made).
        """
        blobs = {op.path: (pygit2.hash(op.data), op.data, packs.entry(BLOB, op.data)) for op in ops if isinstance(op, Put)}
        wanted = {op.path: blobs[op.path][0] if op.path in blobs else None for op in ops}
        signature = _signature(change)
        item = _Change(ops, wanted, blobs, signature, with_moves(change.message, change.moves))
        committed = self._group.submit(item)
        return wanted, bool(committed)

    def _commit_group(self, take: Callable[[], builtins.list[Pending[_Change]]]) -> None:
        """Under the lock: one commit per change of ``take()``, chained, their objects written as
        one pack, then the branch moved once; finishes each change with whether it committed, or
        its own error."""
        repo, objects = self._writer()
        pack_folder = self.root / "objects" / "pack"
        with self._lock:
            group = take()
            try:
                for _ in range(_CAS_ATTEMPTS):
                    objects.clear()
                    head = self._head(repo)
                    root = repo[head].peel(pygit2.Commit).tree_id if head is not None else None
                    if head is not None and root is not None:
                        self._follow(repo, head, root)
                    line = Line(lambda oid: repo.odb.read(oid)[1], self._parsed, root, objects.add)
                    parent = head
                    made: builtins.list[tuple[pygit2.Oid, pygit2.Oid | None, builtins.list[str]]] = []
                    outcomes: dict[Pending[_Change], bool | HostcoreError] = {}
                    for pending in group:
                        item = pending.item
                        try:
                            changes = _changes(line, item.ops, item.wanted)
                        except HostcoreError as exc:  # this change's own conflict: the others go on
                            outcomes[pending] = exc
                            continue
                        outcomes[pending] = bool(changes)
                        if not changes:
                            continue
                        # Every changed blob goes in the pack, even one the repository has from an
                        # older version: asking libgit2 first rescans objects/pack on each miss,
                        # which costs more saves than it spares bytes; a repeat costs only its bytes.
                        for path, oid in changes.items():
                            if oid is not None:
                                objects.add(oid, BLOB, item.blobs[path][1], item.blobs[path][2])
                        new_tree = line.apply(changes)
                        parents = [parent] if parent else []
                        commit = repo.create_commit(None, item.signature, item.signature, item.message, new_tree, parents)
                        made.append((commit, parent, sorted(changes)))
                        parent = commit
                    if not made:
                        break
                    written = packs.write(pack_folder, objects, self._durable)
                    try:
                        moved = self._move_branch(repo, head, made[-1][0])
                    finally:
                        written.release()
                    if moved:
                        self._index(repo, made)
                        self._last_line = made[-1][0], new_tree
                        break
                else:
                    raise Unavailable("the branch kept moving under pushes from outside; try again")
            finally:
                objects.clear()
        if made and self._durable:
            # After the lock: a later group's flush of the ref holds this group's commits too.
            flush([self.root / self._branch])
        if made:
            self._merger.poke()
        for pending, outcome in outcomes.items():
            if isinstance(outcome, HostcoreError):
                pending.finish(error=outcome)
            else:
                pending.finish(outcome)

    def _follow(self, repo: pygit2.Repository, head: pygit2.Oid, root: pygit2.Oid) -> None:
        """Have the parsed trees hold ``root`` (``head``'s tree) when other processes committed
        since this one's last commit: the paths the history index says they changed, applied to
        the trees of that commit, instead of parsing the big folders they changed again."""
        last = self._last_line
        if last is None or last[0] == head or root in self._parsed or last[1] not in self._parsed:
            return
        try:
            paths = self._history_index.changes_between(str(last[0]), str(head))
        except sqlite3.Error:
            return
        if not paths or len(paths) > FOLLOW_PATHS:
            return
        tree = repo[root].peel(pygit2.Tree)
        follow(lambda oid: repo.odb.read(oid)[1], self._parsed, last[1], {path: blob_id(tree, path) for path in paths}, root)

    def _move_branch(self, repo: pygit2.Repository, parent: pygit2.Oid | None, commit: pygit2.Oid) -> bool:
        """Point the branch at ``commit`` if it still points at ``parent``; False if it moved.

        Raises Unavailable when a live git process holds the ref lock for too long.
        """
        deadline = time.monotonic() + _REF_LOCK_WAIT
        while True:
            try:
                if parent is None:
                    repo.create_reference_direct(self._branch, commit, False)
                else:
                    ref = repo.lookup_reference(self._branch)
                    if ref.target != parent:
                        return False
                    ref.set_target(commit)  # libgit2 compares with the target read above
                return True
            except (KeyError, pygit2.GitError) as exc:
                if out_of_space(exc, self.root):
                    raise
                return False
            except OSError as exc:
                if out_of_space(exc, self.root):
                    raise
                # The ref's lock, held by a git process: still (wait for it), or only for the
                # moment libgit2 met it (git gc's pack-refs takes it briefly): then try again at once.
                lock = self.root / f"{self._branch}.lock"
                held = lock.exists()
                # libgit2 says "failed to lock" or "failed to create locked file ... File exists"
                if not held and "failed to lock" not in str(exc) and "locked file" not in str(exc):
                    raise
                if not _clear_stale_lock(lock) and time.monotonic() > deadline:
                    raise Unavailable(f"{self._branch} is locked by another git process; try again") from None
                if held:
                    time.sleep(0.05)

    def _index(self, repo: pygit2.Repository, line: builtins.list[tuple[pygit2.Oid, pygit2.Oid | None, builtins.list[str]]]) -> None:
        """Append the commits of ``line`` (id, first parent, paths changed; oldest first) to the
        history index, in one transaction."""
        # The commits have landed, so the saves succeeded; an index that lags is caught up later.
        try:
            self._history_index.sync(repo, line[-1][0], line=line)
        except sqlite3.Error as exc:
            if not self._history_index.recover(exc):
                log.exception("could not index commit %s; the history index catches up on its next read", line[-1][0])

    # --- history ---------------------------------------------------------------------------

    def _history(self, path: str | None, *, offset: int, limit: int) -> builtins.list[Revision]:
        """Commits newest first (only those changing ``path`` when given), from the index.
        Raises Unavailable when the index file cannot be read."""
        return self._from_history(lambda: self._history_index.revisions(path, offset, limit))

    def _from_history(self, read: Callable[[], T]) -> T:
        """``read()`` from the caught-up history index; a damaged index is set aside and rebuilt
        from the log first. Raises Unavailable when the index cannot be read otherwise."""
        for attempt in range(2):
            try:
                self._sync_history()
                return read()
            except sqlite3.Error as exc:
                if attempt == 0 and self._history_index.recover(exc):
                    continue
                raise Unavailable(f"the history index cannot be read ({exc}); try again, or delete {self._history_index.file} to rebuild it") from exc
        raise AssertionError("unreachable")

    def _sync_history(self) -> None:
        """Catch the index up when the branch moved outside hostcore since it was last written."""
        repo = self._repo()
        head = self._head(repo)
        if (str(head) if head is not None else None) != self._history_index.head():
            with self._lock:
                self._history_index.sync(repo, self._head(repo))

    def _read_at(self, path: str, revision: str) -> bytes:
        """The bytes of ``path`` in commit ``revision`` (an id or any git revision expression), at
        the path the file had then when it moved since (see :meth:`history`).

        Raises NotFound when the revision does not exist or holds no file at ``path``.
        """
        commit = self._commit_at(revision)
        try:
            self._sync_history()
            path = self._history_index.path_at(path, str(commit.id))
        except sqlite3.Error:
            log.exception("the history index cannot be read; reading %s at %s without following moves", path, revision)
        entry = entry_at(commit.tree, path)
        if not isinstance(entry, pygit2.Blob):
            raise NotFound(f"{path} does not exist at revision {revision}")
        return entry.data

    def _list_at(self, prefix: str, revision: str) -> builtins.list[str]:
        """Every file under the folder ``prefix`` in commit ``revision``. Raises NotFound."""
        return [path for path, _ in walk(self._commit_at(revision).tree, prefix)]

    def _commit_at(self, revision: str) -> pygit2.Commit:
        """The commit ``revision`` names (an id or any git revision expression). Raises NotFound."""
        try:
            return self._repo().revparse_single(revision).peel(pygit2.Commit)
        except (KeyError, ValueError, pygit2.GitError):
            raise NotFound(f"revision {revision!r} does not exist", field="revision") from None

    def changes_in(self, revision: str) -> tuple[Change, dict[str, str | None]]:
        """The commit's author (name, email, time in its own offset), its message and moves (from
        its ``Hostcore-Moved`` trailer, else the files it moved unchanged), and every file it
        changed against its first parent. Raises NotFound."""
        commit = self._commit_at(revision)
        message, moves = split_moves(commit.message)
        paths = changed_paths(self._repo(), commit)
        author = commit.author
        when = datetime.fromtimestamp(author.time, timezone(timedelta(minutes=author.offset)))
        change = Change(author.name, message, author.email, tuple(moves or unchanged_moves(commit, paths)), when)
        return change, {path: str(oid) if (oid := blob_id(commit.tree, path)) is not None else None for path in paths}

    def read_blob(self, digest: str) -> bytes:
        """The blob ``digest`` of the repository. Raises NotFound."""
        try:
            blob = self._repo().get(digest) if _BLOB_ID.fullmatch(digest) else None
        except (ValueError, pygit2.GitError):
            blob = None
        if not isinstance(blob, pygit2.Blob):
            raise NotFound(f"no stored version has the hash {digest!r}", field="hash")
        return blob.data

    def last_revision_with(self, path: str) -> Revision | None:
        """The newest revision whose tree holds ``path``, or None if none ever did.

        For restoring a deleted page: ``read_at(path, rev.id)`` returns its last content.
        """
        repo, offset = self._repo(), 0
        while batch := self.history(path, offset=offset, limit=20):
            for revision in batch:
                if blob_id(repo[revision.id].tree, path) is not None:
                    return revision
            offset += len(batch)
        return None

    # --- remote and lifecycle ----------------------------------------------------------------

    def _last_changed(self, paths: Sequence[str]) -> dict[str, datetime]:
        """Path -> time of the newest commit changing it, in one indexed query per 500 paths."""
        times = self._from_history(lambda: self._history_index.last_times(paths))
        return {p: datetime.fromtimestamp(t, UTC) for p, t in times.items()}

    def _last_authors(self, paths: Sequence[str]) -> dict[str, str]:
        """Path -> author of the newest commit changing it, in one indexed query per 500 paths."""
        authors: dict[str, str] = self._from_history(lambda: self._history_index.last_authors(paths))
        return authors

    def status(self) -> dict[str, Any]:
        """For ``health``: the remote push state, when a remote is configured."""
        return {"push": self.push_status()} if self._pusher is not None else {}

    def push_status(self) -> dict[str, Any]:
        """The last push to the remote, for a health report.

        Keys: ``remote`` (credentials masked; None without a remote), ``ok`` (None before any
        push), ``commit``, ``time`` (ISO 8601 UTC), ``error``, ``failures`` (in a row), ``pending``.
        """
        if self._pusher is None:
            return {"remote": None, "ok": None, "commit": None, "time": None, "error": None, "failures": 0, "pending": False}
        status = self._pusher.status()
        status.pop("pushed", None)
        return status

    def close(self) -> None:
        """Finish a pending push and a running pack merge (briefly), close the history index, this
        thread's handle and the group leader's."""
        if self._pusher is not None:
            self._pusher.close()
        self._merger.wait(CLOSE_MERGE_WAIT)
        self._history_index.close()
        local = self._local
        if getattr(local, "pid", None) == os.getpid():
            local.repo.free()
        local.pid = None
        if self._writing is not None and self._writing[0] == os.getpid():
            self._writing[2].free()
        self._writing = None


@dataclass(frozen=True)
class _Change:
    """One apply() waiting in a group: its ops, their blobs, the commit's author and message."""

    ops: Sequence[Operation]
    wanted: Mapping[str, pygit2.Oid | None]
    blobs: Mapping[str, tuple[pygit2.Oid, bytes, bytes]]  # path -> blob id, content, pack entry
    signature: pygit2.Signature
    message: str


def _clear_stale_lock(lock: Path) -> bool:
    """Remove ``lock`` if a killed process left it (it is older than any live one); True if so."""
    try:
        age = time.time() - lock.stat().st_mtime
    except FileNotFoundError:
        return False
    if age < STALE_REF_LOCK:
        return False
    log.warning("removing stale ref lock %s (%.0f s old), left by a killed process", lock, age)
    lock.unlink(missing_ok=True)
    return True


def _changes(tree: Line, ops: Sequence[Operation], wanted: Mapping[str, pygit2.Oid | None]) -> dict[str, pygit2.Oid | None]:
    """Check every op against the current root of ``tree``; return path -> new blob id (None: delete) of real changes.

    Raises Conflict (with the current hash, "" when absent) when an expectation fails, NotFound
    when a Delete without expectation targets nothing, ValidationError when a file would replace
    a folder or a folder a file.
    """
    for op in ops:
        current = tree.blob_id(op.path)
        if op.expect is ANY:
            if isinstance(op, Delete) and current is None:
                raise NotFound(f"{op.path} does not exist")
        elif (str(current) if current is not None else None) != op.expect:
            raise Conflict(
                f"{op.path} has changed since it was read; read it again and retry",
                path=op.path,
                hash=str(current) if current is not None else "",
            )
        if isinstance(op, Put):
            tree.check_writable(op.path)
    return {path: oid for path, oid in wanted.items() if oid != tree.blob_id(path)}


def _signature(change: Change) -> pygit2.Signature:
    """The commit author for ``change``: its email, or ``<name>@hostcore`` when it has none; its
    time when it has one (an import replaying history), else now."""
    name = _UNSAFE_IN_SIGNATURE.sub("", change.author).strip() or "hostcore"
    email = _UNSAFE_IN_SIGNATURE.sub("", change.email).strip()
    if not email:
        local_part = re.sub(r"[^a-z0-9._-]+", "-", name.lower()).strip("-.") or "user"
        email = f"{local_part}@hostcore"
    if change.time is None:
        return pygit2.Signature(name, email)
    offset = change.time.utcoffset()
    minutes = int(offset.total_seconds() // 60) if offset is not None else 0
    return pygit2.Signature(name, email, int(change.time.timestamp()), minutes)
