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

from .pages import Page, namespace_of, wiki_links

_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    slug TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    title TEXT NOT NULL,
    hash TEXT NOT NULL,
    changed REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS pages_changed ON pages(changed);
CREATE INDEX IF NOT EXISTS pages_namespace ON pages(namespace);
CREATE TABLE IF NOT EXISTS links (
    source TEXT NOT NULL,
    target TEXT NOT NULL,
    PRIMARY KEY (source, target)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS links_target ON links(target, source);
"""


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
        self._db().executescript(_SCHEMA)

    def _db(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=NORMAL")
            self._local.db = db
        return db

    def update(self, pages: Sequence[Page] = (), removed: Sequence[str] = (), *, times: dict[str, float] | None = None) -> None:
        """Record ``pages`` (their links, title, hash; changed now or at ``times[slug]``) and drop ``removed``."""
        now = time.time()
        db = self._db()
        db.execute("BEGIN IMMEDIATE")
        try:
            for slug in removed:
                db.execute("DELETE FROM pages WHERE slug = ?", (slug,))
                db.execute("DELETE FROM links WHERE source = ?", (slug,))
            for page in pages:
                changed = (times or {}).get(page.slug, now)
                db.execute(
                    "INSERT OR REPLACE INTO pages (slug, namespace, title, hash, changed) VALUES (?, ?, ?, ?, ?)",
                    (page.slug, page.namespace, page.title, page.hash, changed),
                )
                db.execute("DELETE FROM links WHERE source = ?", (page.slug,))
                db.executemany(
                    "INSERT OR IGNORE INTO links (source, target) VALUES (?, ?)",
                    [(page.slug, target) for target in wiki_links(page.body, page.slug) if target != page.slug],
                )
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def hashes(self) -> dict[str, str]:
        return dict(self._db().execute("SELECT slug, hash FROM pages"))

    def exists(self, slug: str) -> bool:
        return self._db().execute("SELECT 1 FROM pages WHERE slug = ?", (slug,)).fetchone() is not None

    def backlinks(self, slug: str, namespaces: Collection[str] | None) -> list[dict[str, str]]:
        """Pages (slug, title) in ``namespaces`` (None: all) whose links point at ``slug``."""
        where, args = _in(namespaces, "p.namespace")
        rows = self._db().execute(
            f"SELECT p.slug, p.title FROM links l JOIN pages p ON p.slug = l.source "
            f"WHERE l.target = ? AND {where} ORDER BY p.slug",
            [slug, *args],
        )
        return [{"slug": s, "title": t} for s, t in rows]

    def dangling(self, namespaces: Collection[str] | None, limit: int) -> tuple[list[dict[str, str]], int]:
        """Links from readable pages to pages that do not exist: ({from, to} list, total)."""
        where, args = _in(namespaces, "namespace")
        sql = (
            f"FROM links l WHERE l.source IN (SELECT slug FROM pages WHERE {where}) "
            "AND NOT EXISTS (SELECT 1 FROM pages p WHERE p.slug = l.target)"
        )
        total = self._db().execute(f"SELECT count(*) {sql}", args).fetchone()[0]
        rows = self._db().execute(f"SELECT l.source, l.target {sql} ORDER BY l.source, l.target LIMIT ?", [*args, limit])
        return [{"from": s, "to": t} for s, t in rows], total

    def orphans(self, namespaces: Collection[str] | None, exclude: Collection[str], limit: int) -> tuple[list[str], int]:
        """Readable pages no other page links to (``exclude``: entry pages, e.g. namespace indexes)."""
        where, args = _in(namespaces, "p.namespace")
        skip = sorted(exclude)
        sql = (
            f"FROM pages p WHERE {where} AND p.slug NOT IN ({','.join('?' * len(skip))}) "
            "AND NOT EXISTS (SELECT 1 FROM links l WHERE l.target = p.slug AND l.source != p.slug)"
        )
        total = self._db().execute(f"SELECT count(*) {sql}", [*args, *skip]).fetchone()[0]
        rows = self._db().execute(f"SELECT p.slug {sql} ORDER BY p.slug LIMIT ?", [*args, *skip, limit])
        return [r[0] for r in rows], total

    def stale(self, namespaces: Collection[str] | None, before: float, limit: int) -> tuple[list[dict[str, object]], int]:
        """Readable pages last changed before ``before`` (epoch seconds), oldest first."""
        where, args = _in(namespaces, "namespace")
        sql = f"FROM pages WHERE {where} AND changed < ?"
        total = self._db().execute(f"SELECT count(*) {sql}", [*args, before]).fetchone()[0]
        rows = self._db().execute(f"SELECT slug, changed {sql} ORDER BY changed LIMIT ?", [*args, before, limit])
        return [{"slug": s, "changed": c} for s, c in rows], total

    def slugs_linking_to(self, slug: str) -> list[str]:
        return [r[0] for r in self._db().execute("SELECT source FROM links WHERE target = ? ORDER BY source", (slug,))]

    def close(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None

    def namespace_of(self, slug: str) -> str:
        return namespace_of(slug)
