"""The link graph and page facts, kept in SQLite beside the instance, up to date from page events.

It holds, per visible page: title, hash and last change time; and every wiki-link between pages.
``backlinks`` and ``health`` answer from it with indexed queries and never read pages. It records
the storage version it reflects, so pages changed outside hostcore (a ``git push``, a copied file)
are caught up along the storage's changes since then, or by comparing hashes when the storage
cannot tell (see :mod:`hostcore.indexer`).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Collection, Sequence
from pathlib import Path

from .pages import Page, wiki_links

SCHEMA_VERSION = 2
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
"""
_META = "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)"  # the storage version


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
            db.executescript("DROP TABLE IF EXISTS pages; DROP TABLE IF EXISTS links; DROP TABLE IF EXISTS meta;")
            db.executescript(_SCHEMA)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute(_META)

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
                for target in wiki_links(page.body, page.slug):
                    if target == page.slug:
                        continue
                    db.execute(
                        "INSERT INTO links (source, target, source_namespace, resolved) "
                        "VALUES (?, ?, ?, EXISTS (SELECT 1 FROM pages WHERE slug = ?))",
                        (page.slug, target, page.namespace, target),
                    )
                    db.execute("UPDATE pages SET inbound = inbound + 1 WHERE slug = ?", (target,))
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

    def hashes(self) -> dict[str, str]:
        return dict(self._db().execute("SELECT slug, hash FROM pages"))

    def storage_version(self) -> str | None:
        """The storage version (``Storage.version``) the graph reflects; None when unknown."""
        row = self._db().execute("SELECT value FROM meta WHERE key = 'storage_version'").fetchone()
        return row[0] if row else None

    def set_storage_version(self, version: str | None) -> None:
        if version is None:
            self._db().execute("DELETE FROM meta WHERE key = 'storage_version'")
        else:
            self._db().execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('storage_version', ?)", (version,))

    def page_counts(self) -> dict[str, int]:
        """Namespace -> number of pages in it."""
        return dict(self._db().execute("SELECT namespace, count(*) FROM pages GROUP BY namespace"))

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
        where, args = _in(namespaces, "source_namespace")
        # Only links into readable namespaces: otherwise "missing" would tell whether pages exist there.
        target_where, target_args = _in(namespaces, "substr(target, 1, instr(target, '/') - 1)")
        sql = f"FROM links WHERE resolved = 0 AND {where} AND {target_where}"
        args = [*args, *target_args]
        total = self._db().execute(f"SELECT count(*) {sql}", args).fetchone()[0]
        rows = self._db().execute(f"SELECT source, target {sql} ORDER BY source, target LIMIT ?", [*args, limit])
        return [{"from": s, "to": t} for s, t in rows], total

    def orphans(
        self, namespaces: Collection[str] | None, exclude: Collection[str], limit: int, visible: Collection[str] | None = None
    ) -> tuple[list[str], int]:
        """Pages in ``namespaces`` no other page links to (``exclude``: entry pages, e.g. namespace
        indexes). With ``visible``, only links from pages in those namespaces count, so a caller
        limited to them learns nothing about the pages it cannot read."""
        where, args = _in(namespaces, "p.namespace")
        skip = sorted(exclude)
        if visible is None:
            linked, linked_args = "p.inbound = 0", []
        else:
            sources, linked_args = _in(visible, "l.source_namespace")
            linked = f"NOT EXISTS (SELECT 1 FROM links l WHERE l.target = p.slug AND l.source != p.slug AND {sources})"
        sql = f"FROM pages p WHERE {linked} AND {where} AND p.slug NOT IN ({','.join('?' * len(skip))})"
        params = [*linked_args, *args, *skip]
        total = self._db().execute(f"SELECT count(*) {sql}", params).fetchone()[0]
        rows = self._db().execute(f"SELECT p.slug {sql} ORDER BY p.slug LIMIT ?", [*params, limit])
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
