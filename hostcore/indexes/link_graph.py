"""The link graph and page facts, kept in SQLite beside the instance, up to date from page events.

It holds, per visible page: title, hash and last change time; and every wiki-link between pages.
``backlinks`` and ``health`` answer from it with indexed queries and never read pages. At
start-up it is caught up with storage by comparing hashes, so pages changed outside hostcore
(a ``git pull``, a copied file) are accounted for.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Collection, Sequence
from pathlib import Path

from typing_extensions import TypedDict

from hostcore.domain.attachments import attachment_links
from hostcore.domain.pages import Page, wiki_links


class LinkingPage(TypedDict):
    slug: str
    title: str


DanglingLink = TypedDict("DanglingLink", {"from": str, "to": str})


class StaleRow(TypedDict):
    slug: str
    changed: float  # epoch seconds

SCHEMA_VERSION = 3
_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    slug TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    title TEXT NOT NULL,
    hash TEXT NOT NULL,
    changed REAL NOT NULL,
    inbound INTEGER NOT NULL DEFAULT 0  -- links from other pages
);
CREATE INDEX IF NOT EXISTS pages_changed ON pages(changed);
CREATE INDEX IF NOT EXISTS pages_orphans ON pages(inbound, namespace, slug);
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    source_namespace TEXT NOT NULL,
    resolved INTEGER NOT NULL,  -- 1 when the target page exists
    PRIMARY KEY (source, target)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_target ON links(target, source);
CREATE INDEX IF NOT EXISTS links_dangling ON links(resolved, source_namespace, source, target);
CREATE TABLE IF NOT EXISTS file_links (  -- Markdown links and images to attachment URLs
    source TEXT NOT NULL,
    source_namespace TEXT NOT NULL,
    page TEXT NOT NULL,  -- the attachment's page
    filename TEXT NOT NULL,
    PRIMARY KEY (source, page, filename)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS file_links_namespace ON file_links(source_namespace, source);
"""


def _folders_of(slug: str) -> list[str]:
    """The folders a page sits in, below its namespace: notes/a/b/c -> notes/a, notes/a/b."""
    parts = slug.split("/")
    return ["/".join(parts[:depth]) for depth in range(2, len(parts))]


def _add_case_lookups(db: sqlite3.Connection) -> None:
    """What case_variant looks up: pages by slug ignoring case, and each folder's name (one row
    per name ignoring case). Added to a graph built before them without a rebuild."""
    db.execute("BEGIN IMMEDIATE")
    try:
        db.execute("CREATE INDEX IF NOT EXISTS pages_nocase ON pages(slug COLLATE NOCASE)")
        if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'folders'").fetchone() is None:
            db.execute("CREATE TABLE folders (path TEXT PRIMARY KEY COLLATE NOCASE) WITHOUT ROWID")
            slugs = [r[0] for r in db.execute("SELECT slug FROM pages")]
            db.executemany("INSERT OR REPLACE INTO folders (path) VALUES (?)", [(f,) for s in slugs for f in _folders_of(s)])
        db.execute("COMMIT")
    except BaseException:
        db.execute("ROLLBACK")
        raise


def _in(namespaces: Collection[str] | None, column: str) -> tuple[str, list[str]]:
    if namespaces is None:
        return "1", []
    names = sorted(namespaces)
    return f"{column} IN ({','.join('?' * len(names))})" if names else "0", names


class LinkGraph:
    """Pages and wiki-links in ``path`` (SQLite, WAL): shared safely by threads and processes."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._local = threading.local()
        db = self._db()
        if db.execute("PRAGMA user_version").fetchone()[0] != SCHEMA_VERSION:
            # Derived data: an older layout is dropped and rebuilt by the start-up catch-up.
            db.executescript(
                "DROP TABLE IF EXISTS pages; DROP TABLE IF EXISTS links; DROP TABLE IF EXISTS folders; "
                "DROP TABLE IF EXISTS file_links;"
            )
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        _add_case_lookups(db)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def update(self, pages: Sequence[Page] = (), removed: Sequence[str] = (), *, times: dict[str, float] | None = None) -> None:
        """Record ``pages`` (their links, title, hash; changed now or at ``times[slug]``) and drop ``removed``.

        Keeps each page's count of incoming links and each link's resolved flag current, so
        health answers from indexes instead of scanning every page and link.
        """
        now = time.time()
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            for slug in removed:
                self._drop_links_from(db, slug)
                db.execute("DELETE FROM pages WHERE slug = ?", (slug,))
                db.execute("UPDATE links SET resolved = 0 WHERE target = ?", (slug,))
            for page in pages:
                self._drop_links_from(db, page.slug)
                db.execute(
                    "INSERT OR REPLACE INTO pages (slug, namespace, title, hash, changed, inbound) VALUES "
                    "(?, ?, ?, ?, ?, (SELECT count(*) FROM links WHERE target = ?))",
                    (page.slug, page.namespace, page.title, page.hash, (times or {}).get(page.slug, now), page.slug),
                )
                db.execute("UPDATE links SET resolved = 1 WHERE target = ?", (page.slug,))
                db.executemany("INSERT OR REPLACE INTO folders (path) VALUES (?)", [(f,) for f in _folders_of(page.slug)])
                for target in wiki_links(page.body, page.slug):
                    if target == page.slug:
                        continue
                    db.execute(
                        "INSERT INTO links (source, target, source_namespace, resolved) "
                        "VALUES (?, ?, ?, EXISTS (SELECT 1 FROM pages WHERE slug = ?))",
                        (page.slug, target, page.namespace, target),
                    )
                    db.execute("UPDATE pages SET inbound = inbound + 1 WHERE slug = ?", (target,))
                db.executemany(
                    "INSERT OR IGNORE INTO file_links (source, source_namespace, page, filename) VALUES (?, ?, ?, ?)",
                    [(page.slug, page.namespace, owner, name) for owner, name in attachment_links(page.body)],
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    @staticmethod
    def _drop_links_from(db: sqlite3.Connection, slug: str) -> None:
        db.execute(
            "UPDATE pages SET inbound = inbound - 1 WHERE slug IN (SELECT target FROM links WHERE source = ?)", (slug,)
        )
        db.execute("DELETE FROM links WHERE source = ?", (slug,))
        db.execute("DELETE FROM file_links WHERE source = ?", (slug,))

    def hashes(self) -> dict[str, str]:
        return dict(self._db().execute("SELECT slug, hash FROM pages"))

    def page_counts(self) -> dict[str, int]:
        """Namespace -> number of pages in it."""
        return dict(self._db().execute("SELECT namespace, count(*) FROM pages GROUP BY namespace"))

    def backlinks(self, slug: str, namespaces: Collection[str] | None) -> list[LinkingPage]:
        """Pages (slug, title) in ``namespaces`` (None: all) whose links point at ``slug``."""
        where, args = _in(namespaces, "p.namespace")
        rows = self._db().execute(
            f"SELECT p.slug, p.title FROM links l JOIN pages p ON p.slug = l.source "
            f"WHERE l.target = ? AND {where} ORDER BY p.slug",
            [slug, *args],
        )
        return [LinkingPage(slug=s, title=t) for s, t in rows]

    def dangling(self, namespaces: Collection[str] | None, limit: int) -> tuple[list[DanglingLink], int]:
        """Links from readable pages to pages that do not exist: ({from, to} list, total)."""
        where, args = _in(namespaces, "source_namespace")
        # Only links into readable namespaces: otherwise "missing" would tell whether pages exist there.
        target_where, target_args = _in(namespaces, "substr(target, 1, instr(target, '/') - 1)")
        sql = f"FROM links WHERE resolved = 0 AND {where} AND {target_where}"
        args = [*args, *target_args]
        total = self._db().execute(f"SELECT count(*) {sql}", args).fetchone()[0]
        rows = self._db().execute(f"SELECT source, target {sql} ORDER BY source, target LIMIT ?", [*args, limit])
        return [DanglingLink({"from": s, "to": t}) for s, t in rows], total

    def orphans(
        self, namespaces: Collection[str] | None, exclude: Collection[str], limit: int, visible: Collection[str] | None = None
    ) -> tuple[list[str], int]:
        """Pages in ``namespaces`` no other page links to (``exclude``: entry pages, e.g. namespace
        indexes). With ``visible``, only links from pages in those namespaces count, so a caller
        limited to them learns nothing about the pages it cannot read."""
        where, args = _in(namespaces, "p.namespace")
        skip = sorted(exclude)
        if visible is None:
            linked, linked_args = "p.inbound = 0", list[str]()
        else:
            sources, linked_args = _in(visible, "l.source_namespace")
            linked = f"NOT EXISTS (SELECT 1 FROM links l WHERE l.target = p.slug AND l.source != p.slug AND {sources})"
        sql = f"FROM pages p WHERE {linked} AND {where} AND p.slug NOT IN ({','.join('?' * len(skip))})"
        params = [*linked_args, *args, *skip]
        total = self._db().execute(f"SELECT count(*) {sql}", params).fetchone()[0]
        rows = self._db().execute(f"SELECT p.slug {sql} ORDER BY p.slug LIMIT ?", [*params, limit])
        return [r[0] for r in rows], total

    def stale(self, namespaces: Collection[str] | None, before: float, limit: int) -> tuple[list[StaleRow], int]:
        """Readable pages last changed before ``before`` (epoch seconds), oldest first."""
        where, args = _in(namespaces, "namespace")
        sql = f"FROM pages WHERE {where} AND changed < ?"
        total = self._db().execute(f"SELECT count(*) {sql}", [*args, before]).fetchone()[0]
        rows = self._db().execute(f"SELECT slug, changed {sql} ORDER BY changed LIMIT ?", [*args, before, limit])
        return [StaleRow(slug=s, changed=c) for s, c in rows], total

    def case_variant(self, slug: str, ignore: str = "") -> tuple[str, str] | None:
        """A folder (below the namespace) or page whose name differs from ``slug``'s only by case:
        (that part of ``slug``, the existing name), or None.

        ``ignore``: a page to leave out (the one being moved). Slugs are ASCII, so SQLite's NOCASE
        is the whole comparison: a few indexed look-ups, however big the folder.
        """
        db = self._db()
        for folder in _folders_of(slug):
            row = db.execute("SELECT path FROM folders WHERE path = ?", (folder,)).fetchone()  # a NOCASE column
            if row is None or row[0] == folder:
                continue
            # The table keeps folders that have since emptied: one counts only while it holds a
            # page, i.e. a slug in [folder + "/", folder + "0") ('0' is the character after '/').
            held = "SELECT 1 FROM pages WHERE slug >= ? AND slug < ? AND slug != ? LIMIT 1"
            if db.execute(held, (row[0] + "/", row[0] + "0", ignore)).fetchone():
                return folder, row[0]
        row = db.execute(
            "SELECT slug FROM pages WHERE slug = ? COLLATE NOCASE AND slug != ? AND slug != ? LIMIT 1", (slug, slug, ignore)
        ).fetchone()
        return (slug, row[0]) if row is not None else None

    def attachment_links(self, namespaces: Collection[str] | None) -> list[tuple[str, str, str]]:
        """(linking page, attachment's page, filename) of the attachment links from pages in
        ``namespaces`` (None: all) to attachments of pages in them, sorted."""
        where, args = _in(namespaces, "source_namespace")
        target_where, target_args = _in(namespaces, "substr(page, 1, instr(page, '/') - 1)")
        rows = self._db().execute(
            f"SELECT source, page, filename FROM file_links WHERE {where} AND {target_where} ORDER BY source, page, filename",
            [*args, *target_args],
        )
        return [(source, page, filename) for source, page, filename in rows]

    def slugs_linking_to(self, slug: str) -> list[str]:
        return [r[0] for r in self._db().execute("SELECT source FROM links WHERE target = ? ORDER BY source", (slug,))]

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None
