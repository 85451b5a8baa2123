"""The link graph and page facts, kept in SQLite beside the instance, up to date from page events.

It holds, per visible page: title, hash, last change time, tags and pin; and every wiki-link between pages.
``backlinks`` and ``health`` answer from it with indexed queries and never read pages. It records
the storage version it reflects, so pages changed outside hostcore (a ``git push``, a copied file)
are caught up along the storage's changes since then, or by comparing hashes when the storage
cannot tell (see :mod:`hostcore.indexes.indexer`).
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections import OrderedDict
from collections.abc import Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

from typing_extensions import TypedDict

from hostcore.domain.attachments import attachment_links
from hostcore.domain.pages import Page, page_path, wiki_links
from hostcore.seams.derived import file_id, generation
from hostcore.seams.index import Changes, DerivedIndex
from hostcore.seams.sqlite import DerivedDB, rows_in


class LinkingPage(TypedDict):
    slug: str
    title: str


DanglingLink = TypedDict("DanglingLink", {"from": str, "to": str})


class PageFact(TypedDict):
    slug: str
    title: str
    hash: str
    changed: float  # epoch seconds
    tags: list[str]
    pin: bool


class StaleRow(TypedDict):
    slug: str
    changed: float  # epoch seconds


SCHEMA_VERSION = 6
FACTS_KEPT = 16  # namespaces whose page facts are kept in memory (pages_in)
_SCHEMA = """
CREATE TABLE IF NOT EXISTS pages (
    slug TEXT PRIMARY KEY,
    namespace TEXT NOT NULL,
    title TEXT NOT NULL,
    hash TEXT NOT NULL,
    changed REAL NOT NULL,
    tags TEXT NOT NULL DEFAULT '[]',  -- JSON list
    pin INTEGER NOT NULL DEFAULT 0,
    inbound INTEGER NOT NULL DEFAULT 0  -- links from other pages
);
CREATE INDEX IF NOT EXISTS pages_changed ON pages(changed);
CREATE INDEX IF NOT EXISTS pages_nocase ON pages(slug COLLATE NOCASE);
-- every folder below a namespace that ever held a page, one row per name ignoring case (case_variant)
CREATE TABLE IF NOT EXISTS folders (path TEXT PRIMARY KEY COLLATE NOCASE) WITHOUT ROWID;
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
    page TEXT NOT NULL,  -- the attachment's page
    filename TEXT NOT NULL,
    -- after the key's columns: SQLite 3.40's quick_check reports a NOT NULL column between them as NULL
    source_namespace TEXT NOT NULL,
    PRIMARY KEY (source, page, filename)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS file_links_namespace ON file_links(source_namespace, source);
"""


def _folders_of(slug: str) -> list[str]:
    """The folders a page sits in, below its namespace: notes/a/b/c -> notes/a, notes/a/b."""
    parts = slug.split("/")
    return ["/".join(parts[:depth]) for depth in range(2, len(parts))]




def _in(namespaces: Collection[str] | None, column: str) -> tuple[str, list[str]]:
    if namespaces is None:
        return "1", []
    names = sorted(namespaces)
    return f"{column} IN ({','.join('?' * len(names))})" if names else "0", names


class LinkGraph(DerivedIndex):
    """Pages and wiki-links in ``path`` (SQLite, WAL): shared safely by threads and processes.

    A damaged file (checked at start-up, or an error at run time) is set aside and started again
    empty; :attr:`rebuild` then marks it until the host has rebuilt it from storage, and the reads
    tools make (backlinks, health, page counts) answer Unavailable meanwhile.
    """

    name = "link graph"
    db: DerivedDB

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.db = DerivedDB(self.path, self.name, _SCHEMA, SCHEMA_VERSION, rebuild=True)
        self._facts: OrderedDict[str, tuple[tuple[Any, str | None], list[PageFact]]] = OrderedDict()  # see pages_in
        self._facts_lock = threading.Lock()
        self.db.check()
        self.db.connection()

    @property
    def lock(self) -> str:
        return "links.catch-up.lock"

    def indexed(self) -> dict[str, str]:
        return {page_path(slug): digest for slug, digest in self.hashes().items()}

    def apply(self, changes: Changes) -> None:
        """Record the changed pages, each changed when storage says it last was, and drop the deleted ones."""
        for pages, removed in changes.pages():
            changed = changes.storage.last_changed([page_path(p.slug) for p in pages])
            times = {p.slug: changed[page_path(p.slug)].timestamp() for p in pages if page_path(p.slug) in changed}
            self.update(pages, removed, times=times)

    def _guard(self) -> AbstractContextManager[sqlite3.Connection]:
        """This thread's connection; a damaged file is set aside and Unavailable raised."""
        return self.db.guard()

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """:meth:`_guard` for the reads tools make: Unavailable while the graph is being rebuilt."""
        assert self.db.rebuild is not None
        self.db.rebuild.check()
        with self._guard() as db:
            yield db

    def update(self, pages: Sequence[Page] = (), removed: Sequence[str] = (), *, times: dict[str, float] | None = None) -> None:
        """Record ``pages`` (their links, title, hash; changed now or at ``times[slug]``) and drop ``removed``.

        Keeps each page's count of incoming links and each link's resolved flag current, so
        health answers from indexes instead of scanning every page and link.
        """
        now = time.time()
        with self.db.transaction() as db:
            for slug in removed:
                self._drop_links_from(db, slug)
                db.execute("DELETE FROM pages WHERE slug = ?", (slug,))
                db.execute("UPDATE links SET resolved = 0 WHERE target = ?", (slug,))
            for page in pages:
                self._drop_links_from(db, page.slug)
                db.execute(
                    "INSERT OR REPLACE INTO pages (slug, namespace, title, hash, changed, tags, pin, inbound) VALUES "
                    "(?, ?, ?, ?, ?, ?, ?, (SELECT count(*) FROM links WHERE target = ?))",
                    (page.slug, page.namespace, page.title, page.hash, (times or {}).get(page.slug, now),
                     json.dumps(list(page.tags)), int(page.pin), page.slug),
                )  # fmt: skip
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

    @staticmethod
    def _drop_links_from(db: sqlite3.Connection, slug: str) -> None:
        db.execute(
            "UPDATE pages SET inbound = inbound - 1 WHERE slug IN (SELECT target FROM links WHERE source = ?)", (slug,)
        )
        db.execute("DELETE FROM links WHERE source = ?", (slug,))
        db.execute("DELETE FROM file_links WHERE source = ?", (slug,))

    def hashes(self) -> dict[str, str]:
        with self._guard() as db:
            return dict(db.execute("SELECT slug, hash FROM pages"))

    def page_counts(self) -> dict[str, int]:
        """Namespace -> number of pages in it."""
        with self._reading() as db:
            return dict(db.execute("SELECT namespace, count(*) FROM pages GROUP BY namespace"))

    def backlinks(self, slug: str, namespaces: Collection[str] | None) -> list[LinkingPage]:
        """Pages (slug, title) in ``namespaces`` (None: all) whose links point at ``slug``."""
        where, args = _in(namespaces, "p.namespace")
        with self._reading() as db:
            rows = db.execute(
                f"SELECT p.slug, p.title FROM links l JOIN pages p ON p.slug = l.source "
                f"WHERE l.target = ? AND {where} ORDER BY p.slug",
                [slug, *args],
            ).fetchall()
        return [LinkingPage(slug=s, title=t) for s, t in rows]

    def pages_in(self, namespace: str) -> list[PageFact]:
        """Every page of ``namespace``: slug, title, hash, last change (epoch seconds), tags and pin, sorted by slug.

        Kept per namespace until the graph's generation changes (any process's update), so a big
        namespace costs one small query when nothing changed. The facts are shared: don't change them.
        """
        with self._reading() as db:
            current = (file_id(self.path), generation(db))  # read first: rows read after are never older
            with self._facts_lock:
                kept = self._facts.get(namespace)
                if kept is not None and kept[0] == current:
                    self._facts.move_to_end(namespace)
                    return list(kept[1])
            parsed: dict[str, list[str]] = {}  # tags lists repeat: each distinct one parsed once
            facts = [
                PageFact(slug=s, title=t, hash=h, changed=c, tags=parsed.get(g) or parsed.setdefault(g, json.loads(g)), pin=bool(p))
                for s, t, h, c, g, p in db.execute(
                    "SELECT slug, title, hash, changed, tags, pin FROM pages WHERE namespace = ? ORDER BY slug", (namespace,)
                )
            ]  # fmt: skip
        with self._facts_lock:
            self._facts[namespace] = (current, facts)
            while len(self._facts) > FACTS_KEPT:
                self._facts.popitem(last=False)
        return list(facts)

    def pages_after(self, namespaces: Collection[str] | None, after: str, limit: int) -> list[PageFact]:
        """Up to ``limit`` pages of ``namespaces`` (None: all) whose slug sorts after ``after``, by
        slug: a page of a listing that stays in place while pages come and go (keyed, not counted).
        Each namespace is a range of the slug index, so a token limited to a few namespaces of a
        large wiki reads only their pages."""
        ranges: list[tuple[str, str | None]] = [("", None)]
        if namespaces is not None:  # "ns/" orders namespaces as their slugs sort ('a-b/x' < 'a/x')
            ranges = sorted((f"{ns}/", f"{ns}0") for ns in namespaces)
        out: list[PageFact] = []
        with self._reading() as db:
            for low, high in ranges:
                if high is not None and high <= after:
                    continue
                sql, args = "SELECT slug, title, hash, changed, tags, pin FROM pages WHERE slug > ?", [max(after, low)]
                if high is not None:
                    sql, args = sql + " AND slug < ?", [*args, high]  # '0' follows '/': the namespace's slugs
                rows = db.execute(sql + " ORDER BY slug LIMIT ?", [*args, limit - len(out)]).fetchall()
                out += [PageFact(slug=s, title=t, hash=h, changed=c, tags=json.loads(g), pin=bool(p)) for s, t, h, c, g, p in rows]
                if len(out) >= limit:
                    break
        return out

    def slugs_starting(self, namespaces: Collection[str] | None, prefix: str, limit: int) -> list[str]:
        """Up to ``limit`` slugs of pages in ``namespaces`` (None: all) that start with ``prefix``, by slug."""
        where, args = _in(namespaces, "namespace")
        with self._reading() as db:
            rows = db.execute(
                f"SELECT slug FROM pages WHERE slug >= ? AND slug < ? AND {where} ORDER BY slug LIMIT ?",
                [prefix, prefix + "\U0010ffff", *args, limit],  # past every slug that starts with prefix
            ).fetchall()
        return [r[0] for r in rows]

    def links_around(self, slugs: Collection[str], namespaces: Collection[str] | None) -> set[tuple[str, str]]:
        """(source, target) of every link between pages, from or to one of ``slugs``, whose other
        end is a page in ``namespaces`` (None: all): the links a page has and the ones it gets."""
        wanted = sorted(set(slugs))
        found: set[tuple[str, str]] = set()
        source_in, source_args = _in(namespaces, "source_namespace")
        target_in, target_args = _in(namespaces, "substr(target, 1, instr(target, '/') - 1)")
        with self._reading() as db:
            for first in range(0, len(wanted), 400):
                chunk = wanted[first : first + 400]
                marks = ",".join("?" * len(chunk))
                found.update(db.execute(
                    f"SELECT source, target FROM links WHERE resolved = 1 AND source IN ({marks}) AND {target_in} "
                    f"UNION SELECT source, target FROM links WHERE target IN ({marks}) AND {source_in}",
                    [*chunk, *target_args, *chunk, *source_args],
                ).fetchall())  # fmt: skip
        return found

    def facts(self, slugs: Collection[str]) -> dict[str, tuple[str, list[str]]]:
        """Slug -> (title, tags) of those of ``slugs`` that are pages."""
        wanted = sorted(set(slugs))
        found: dict[str, tuple[str, list[str]]] = {}
        with self._reading() as db:
            for slug, title, tags in rows_in(db, "SELECT slug, title, tags FROM pages WHERE slug IN", wanted):
                found[slug] = (title, json.loads(tags))
        return found

    def dangling(
        self, sources: Collection[str] | None, targets: Collection[str] | None, limit: int
    ) -> tuple[list[DanglingLink], int]:
        """Links from pages in ``sources`` to pages in ``targets`` (None: all) that do not exist:
        ({from, to} list, total)."""
        where, args = _in(sources, "source_namespace")
        # Only links into readable namespaces: otherwise "missing" would tell whether pages exist there.
        target_where, target_args = _in(targets, "substr(target, 1, instr(target, '/') - 1)")
        sql = f"FROM links WHERE resolved = 0 AND {where} AND {target_where}"
        args = [*args, *target_args]
        with self._reading() as db:
            total = db.execute(f"SELECT count(*) {sql}", args).fetchone()[0]
            rows = db.execute(f"SELECT source, target {sql} ORDER BY source, target LIMIT ?", [*args, limit]).fetchall()
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
        with self._reading() as db:
            total = db.execute(f"SELECT count(*) {sql}", params).fetchone()[0]
            rows = db.execute(f"SELECT p.slug {sql} ORDER BY p.slug LIMIT ?", [*params, limit]).fetchall()
        return [r[0] for r in rows], total

    def stale(self, namespaces: Collection[str] | None, before: float, limit: int) -> tuple[list[StaleRow], int]:
        """Readable pages last changed before ``before`` (epoch seconds), oldest first."""
        where, args = _in(namespaces, "namespace")
        sql = f"FROM pages WHERE {where} AND changed < ?"
        with self._reading() as db:
            total = db.execute(f"SELECT count(*) {sql}", [*args, before]).fetchone()[0]
            rows = db.execute(f"SELECT slug, changed {sql} ORDER BY changed LIMIT ?", [*args, before, limit]).fetchall()
        return [StaleRow(slug=s, changed=c) for s, c in rows], total

    def case_variant(self, slug: str, ignore: str = "") -> tuple[str, str] | None:
        """A folder (below the namespace) or page whose name differs from ``slug``'s only by case:
        (that part of ``slug``, the existing name), or None.

        ``ignore``: a page to leave out (the one being moved). Slugs are ASCII, so SQLite's NOCASE
        is the whole comparison: a few indexed look-ups, however big the folder.
        """
        with self._guard() as db:
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

    def attachment_links(
        self, sources: Collection[str] | None, targets: Collection[str] | None
    ) -> list[tuple[str, str, str]]:
        """(linking page, attachment's page, filename) of the attachment links from pages in
        ``sources`` to attachments of pages in ``targets`` (None: all), sorted."""
        where, args = _in(sources, "source_namespace")
        target_where, target_args = _in(targets, "substr(page, 1, instr(page, '/') - 1)")
        with self._reading() as db:
            rows = db.execute(
                f"SELECT source, page, filename FROM file_links WHERE {where} AND {target_where} ORDER BY source, page, filename",
                [*args, *target_args],
            ).fetchall()
        return [(source, page, filename) for source, page, filename in rows]

    def slugs_linking_to(self, slug: str) -> list[str]:
        with self._reading() as db:
            return [r[0] for r in db.execute("SELECT source FROM links WHERE target = ? ORDER BY source", (slug,))]

