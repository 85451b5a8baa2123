"""The history index: which commits changed which paths, kept in a SQLite file.

``git log -- path`` walks the whole log on every call; this index answers one path's history with
one indexed query. Commits are numbered (``seq``) in the order they joined the branch, so newest
first is ``seq`` descending. Hostcore appends each of its own commits in the locked section that
moved the branch; commits made outside hostcore (a ``git push`` into the repository, a commit by
hand) are caught up by walking from the last indexed commit to the branch head. When the branch
was rewritten so that the last indexed commit is no longer an ancestor of the head, the index is
rebuilt from the whole log. The file is derived data: deleting it only costs one rebuild, and a
damaged one (``PRAGMA quick_check`` when opened, an error at run time) is set aside and rebuilt.

Moves are recorded too, so a page's history follows it back across ``move_page`` and
``rename_page`` (like ``git log --follow``, but exact): hostcore's own commits name each move in a
``Hostcore-Moved: old -> new`` trailer (kept out of the message the index shows); in other commits
a file that left one path and arrived unchanged at another (one blob, one old path, one new path)
counts as moved. A path's history is its *lineage*: the commits changing the path since the last
move into it, then those of the path it came from, before that move, and so on.

Every method that writes must be called under the storage's write lock.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import pygit2
from pygit2.enums import SortMode

from hostcore import DerivedDB, Revision, rows_in

from .trees import blob_id, changed

SCHEMA_VERSION = 4
# folders: the namespaces a commit touched (Revision.folders_of: "" for a visible file at the root,
# nothing for hidden ones), each followed by a newline (so none and [""] differ), so access
# filtering never needs the full path list of a huge commit (an import of 50,000 pages).
_SCHEMA = """
CREATE TABLE IF NOT EXISTS commits (
    seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, author TEXT NOT NULL,
    time INTEGER NOT NULL, message TEXT NOT NULL, folders TEXT NOT NULL, path_count INTEGER NOT NULL,
    parent TEXT);
CREATE TABLE IF NOT EXISTS changes (
    path TEXT NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (path, seq)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS changes_by_seq ON changes (seq, path);
CREATE TABLE IF NOT EXISTS moves (
    new TEXT NOT NULL, seq INTEGER NOT NULL, old TEXT NOT NULL, PRIMARY KEY (new, seq)) WITHOUT ROWID;
"""
# parent: the first parent's id ("" for a root commit; NULL in rows indexed before the column was
# added, which only makes changes_between fall back to a tree diff).
MAX_PATHS = 100  # paths listed per revision; path_count has the total
MAX_BETWEEN = 1000  # commits changes_between follows; beyond, a tree diff is cheaper
PROGRESS_EVERY = 10_000  # commits between progress lines of a rebuild

log = logging.getLogger(__name__)
MAX_MOVES = 1000  # moves followed back from one path
MOVED = "Hostcore-Moved"
_MOVED_PREFIX = f"{MOVED}: "
_ARROW = " -> "


def with_moves(message: str, moves: Sequence[tuple[str, str]]) -> str:
    """``message`` (one final newline) with a ``Hostcore-Moved`` trailer line per move."""
    message = message.rstrip("\n") + "\n"
    if not moves:
        return message
    return message + "\n" + "".join(f"{_MOVED_PREFIX}{old}{_ARROW}{new}\n" for old, new in moves)


def split_moves(message: str) -> tuple[str, list[tuple[str, str]]]:
    """(the message without its ``Hostcore-Moved`` trailer lines, the moves they name)."""
    kept, moves = [], []
    for line in message.rstrip("\n").split("\n"):
        old, arrow, new = line.removeprefix(_MOVED_PREFIX).partition(_ARROW)
        if line.startswith(_MOVED_PREFIX) and arrow and old and new:
            moves.append((old, new))
        else:
            kept.append(line)
    return "\n".join(kept).rstrip("\n"), moves

def _add_parent(db: sqlite3.Connection) -> None:
    """A file of this layout made before the ``parent`` column gets it (empty: a tree diff then)."""
    if "parent" not in {row[1] for row in db.execute("PRAGMA table_info(commits)")}:
        db.execute("ALTER TABLE commits ADD COLUMN parent TEXT")


class HistoryIndex:
    """The per-path history of one branch, stored in ``file``."""

    def __init__(self, file: Path) -> None:
        self.file = Path(file)
        self._guard = threading.Lock()
        # derived data: an older layout is dropped, and rebuilt from the log on the next sync
        self._file = DerivedDB(self.file, "history index", _SCHEMA, SCHEMA_VERSION, setup=_add_parent)
        self._file.check()

    def _db(self) -> sqlite3.Connection:
        return self._file.connection()

    def recover(self, exc: BaseException) -> bool:
        """After ``exc``: when it says the file is damaged, set the file aside (the next :meth:`sync`
        rebuilds it from the log) and return True."""
        with self._guard:
            return self._file.recover(exc)

    def close(self) -> None:
        """Close this process's connections."""
        self._file.close()

    def head(self) -> str | None:
        """The id of the newest indexed commit, or None when the index is empty."""
        with self._guard:
            row = self._db().execute("SELECT id FROM commits ORDER BY seq DESC LIMIT 1").fetchone()
        return row[0] if row else None

    def sync(
        self,
        repo: pygit2.Repository,
        head: pygit2.Oid | None,
        *,
        line: Sequence[tuple[pygit2.Oid, pygit2.Oid | None, Sequence[str]]] = (),
    ) -> None:
        """Bring the index up to ``head`` (None: an unborn branch, so the index empties).

        ``line``: what the caller knows about the commits ending at ``head``, oldest first: each
        one's id, first parent and the paths it changed; that spares a tree diff per commit when
        the index stands at the first one's parent.
        """
        last = self.head()
        if last == (str(head) if head is not None else None):
            return
        # One transaction, so a process killed while catching up leaves the index as it was.
        with self._transaction() as db:
            if head is None:
                _clear(db)
            elif line and line[-1][0] == head and last == (str(line[0][1]) if line[0][1] else None):
                for oid, _parent, paths in line:
                    _insert(db, repo[oid].peel(pygit2.Commit), paths)
            else:
                if last is not None and not _is_ancestor(repo, last, head):
                    _clear(db)
                    last = None
                walker = repo.walk(head, SortMode.TOPOLOGICAL | SortMode.REVERSE)
                if last is not None:
                    walker.hide(last)
                else:
                    log.info("history index: building it from the git log")
                for count, commit in enumerate(walker, 1):
                    _insert(db, commit, changed_paths(repo, commit))
                    if count % PROGRESS_EVERY == 0:
                        log.info("history index: %d commits indexed", count)

    def changes_between(self, old: str, new: str) -> list[str] | None:
        """The paths changed by the indexed commits after ``old`` up to ``new``, sorted, when those
        commits form one line of first parents from ``old`` to ``new`` (then the files that differ
        between the two commits are among them); None otherwise, or when there are more than
        MAX_BETWEEN of them."""
        if old == new:
            return []
        with self._guard:
            db = self._db()
            seqs = dict(db.execute("SELECT id, seq FROM commits WHERE id IN (?, ?)", (old, new)).fetchall())
            low, high = seqs.get(old), seqs.get(new)
            if low is None or high is None or not 0 < high - low <= MAX_BETWEEN:
                return None
            line = db.execute("SELECT id, parent FROM commits WHERE seq > ? AND seq <= ? ORDER BY seq", (low, high)).fetchall()
            parent = old
            for id_, first_parent in line:
                if first_parent != parent:
                    return None
                parent = id_
            return [row[0] for row in db.execute("SELECT DISTINCT path FROM changes WHERE seq > ? AND seq <= ? ORDER BY path", (low, high))]

    def revisions(self, path: str | None, offset: int, limit: int) -> list[Revision]:
        """Indexed revisions newest first, only those changing ``path`` when given."""
        with self._guard:
            db = self._db()
            columns = "c.seq, c.id, c.author, c.time, c.message, c.folders, c.path_count"
            if path is None:
                rows = db.execute(
                    f"SELECT {columns} FROM commits c ORDER BY c.seq DESC LIMIT ? OFFSET ?", (limit, offset)
                ).fetchall()
            else:
                lineage = _lineage(db, path)
                where = " OR ".join("(p.path = ? AND p.seq BETWEEN ? AND ?)" for _ in lineage)
                rows = db.execute(
                    f"SELECT {columns} FROM changes p JOIN commits c USING (seq)"
                    f" WHERE {where} ORDER BY p.seq DESC LIMIT ? OFFSET ?",
                    [*(value for segment in lineage for value in segment), limit, offset],
                ).fetchall()
            paths = {
                row[0]: [
                    r[0]
                    for r in db.execute("SELECT path FROM changes WHERE seq = ? ORDER BY path LIMIT ?", (row[0], MAX_PATHS))
                ]
                for row in rows
            }
        return [
            Revision(
                id=id_,
                author=author,
                time=datetime.fromtimestamp(time, UTC),
                message=message,
                paths=tuple(paths[seq]),
                folders=tuple(folders.split("\n")[:-1]),
                path_count=path_count,
            )
            for seq, id_, author, time, message, folders, path_count in rows
        ]

    def path_at(self, path: str, commit: str) -> str:
        """Where the file now at ``path`` was in ``commit``: ``path`` unless the file moved since
        (or the commit is not indexed)."""
        with self._guard:
            db = self._db()
            row = db.execute("SELECT seq FROM commits WHERE id = ?", (commit,)).fetchone()
            if row is None:
                return path
            for old, low, _high in _lineage(db, path):
                if row[0] >= low:
                    return old
        return path

    def last_times(self, paths: Sequence[str]) -> dict[str, int]:
        """Path -> commit time (epoch seconds) of the newest indexed commit changing it."""
        return self._newest(paths, "time")

    def last_authors(self, paths: Sequence[str]) -> dict[str, str]:
        """Path -> author of the newest indexed commit changing it."""
        return self._newest(paths, "author")

    def _newest(self, paths: Sequence[str], column: Literal["time", "author"]) -> dict[str, Any]:
        """Path -> ``column`` of the newest indexed commit changing it, one query per 500 paths."""
        select = (  # only the column (one of two names) is formatted in; the paths are bound
            f"SELECT p.path, c.{column} FROM changes p JOIN commits c ON c.seq = "
            "(SELECT max(seq) FROM changes WHERE path = p.path) WHERE p.path IN"
        )
        with self._guard:
            return dict(rows_in(self._db(), select, paths, " GROUP BY p.path"))

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._guard:
            db = self._db()
            db.execute("BEGIN IMMEDIATE")
            try:
                yield db
            except BaseException:
                if db.in_transaction:
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")


def _insert(db: sqlite3.Connection, commit: pygit2.Commit, paths: Sequence[str]) -> None:
    folders = "".join(f"{folder}\n" for folder in Revision.folders_of(paths))
    message, moves = split_moves(commit.message)
    parent = str(commit.parent_ids[0]) if commit.parent_ids else ""
    seq = db.execute(
        "INSERT INTO commits (id, author, time, message, folders, path_count, parent) VALUES (?, ?, ?, ?, ?, ?, ?)",
        (str(commit.id), commit.author.name, commit.author.time, message, folders, len(paths), parent),
    ).lastrowid
    db.executemany("INSERT INTO changes (path, seq) VALUES (?, ?)", [(path, seq) for path in paths])
    if not moves:
        moves = unchanged_moves(commit, paths)
    changed_here = set(paths)
    db.executemany(
        "INSERT OR REPLACE INTO moves (new, seq, old) VALUES (?, ?, ?)",
        [(new, seq, old) for old, new in moves if old != new and old in changed_here and new in changed_here],
    )


def unchanged_moves(commit: pygit2.Commit, paths: Sequence[str]) -> list[tuple[str, str]]:
    """(old, new) of each file ``commit`` moved without changing it: the one path its blob left
    and the one path it arrived at."""
    if not commit.parents or len(paths) < 2:  # a move changes two paths; a save changes one (its folder's tree need not be read)
        return []
    before, after = commit.parents[0].tree, commit.tree
    gone: dict[pygit2.Oid, list[str]] = {}
    came: dict[pygit2.Oid, list[str]] = {}
    for path in paths:
        old, new = blob_id(before, path), blob_id(after, path)
        if new is None and old is not None:
            gone.setdefault(old, []).append(path)
        elif old is None and new is not None:
            came.setdefault(new, []).append(path)
    return [(gone[oid][0], came[oid][0]) for oid in gone.keys() & came.keys() if len(gone[oid]) == len(came[oid]) == 1]


def _lineage(db: sqlite3.Connection, path: str) -> list[tuple[str, int, int]]:
    """(path, lowest seq, highest seq) of each stretch of the file now at ``path``, newest first."""
    out: list[tuple[str, int, int]] = []
    high = 2**62
    for _ in range(MAX_MOVES):
        row = db.execute(
            "SELECT seq, old FROM moves WHERE new = ? AND seq <= ? ORDER BY seq DESC LIMIT 1", (path, high)
        ).fetchone()
        if row is None:
            break
        out.append((path, row[0], high))
        path, high = row[1], row[0] - 1
    out.append((path, 0, high))
    return out


def _clear(db: sqlite3.Connection) -> None:
    db.execute("DELETE FROM changes")
    db.execute("DELETE FROM commits")
    db.execute("DELETE FROM moves")


def changed_paths(repo: pygit2.Repository, commit: pygit2.Commit) -> list[str]:
    """The files ``commit`` changed against its first parent (all of them for a root commit)."""
    return sorted(changed(repo, commit.parents[0].tree_id if commit.parents else None, commit.tree_id))


def _is_ancestor(repo: pygit2.Repository, ancestor: str, head: pygit2.Oid) -> bool:
    try:
        return repo.descendant_of(head, pygit2.Oid(hex=ancestor))
    except (KeyError, ValueError, pygit2.GitError):
        return False
