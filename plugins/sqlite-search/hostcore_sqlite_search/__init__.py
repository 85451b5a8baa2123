"""Full-text search on SQLite FTS5, in one database file in the instance folder.

Nothing to install beyond Python: this is hostcore's embedded search. Processes share the index
through SQLite itself:

- The database runs in WAL mode. A writer (any gunicorn worker, the CLI) takes the write lock with
  ``BEGIN IMMEDIATE``, replaces and deletes pages and commits in one transaction; another writer
  waits (``busy_timeout``, then retries) instead of failing. A save stays cheap: FTS5 merges its
  segments a little at every write, so there are no long merge stalls.
- Every search is its own read transaction, so it sees every commit made before it started, by any
  process.

Layout: ``pages`` holds slug, namespace, title, tags and hash; the FTS5 table ``fts`` (same rowid)
holds the searchable text once: title, body, tags, and a hidden ``keys`` column of filter tokens
(one per tag, one for the namespace, one per title word) so tag and namespace filters run inside the
MATCH, paging stays exact, and the pages whose title matches are found without reading every match.
Ranking is FTS5's bm25 over body and tags plus a boosted bm25 over the title alone, so a page whose
title matches comes first. User words never reach MATCH as syntax: the shared query tree
(:func:`hostcore.parse_query`) is compiled with every word quoted, and never match a filter token
(those start with a character no query word holds).

Cost: matching is cheap; bm25 costs something for every row it ranks, so a query matching thousands of
pages ranks a capped candidate set instead of every match (:mod:`.ranking` says which, and why
paging stays exact). Common words a query requires beside others are checked against a mask each
page carries instead of their long doclists (:mod:`.common`), and snippets are built in Python for
the returned page only (:mod:`.snippets`). ``bench/search_engines.py`` measures the whole search
call at 50,000 pages, against ranking every match.
Each backend remembers the ranked candidates of its last ``REMEMBERED`` queries while the index keeps
its generation (a random value every write stores, read in the search's own snapshot), so the next
page of a query, or the same query again, skips ranking; per query shape through ``/_/mcp``:
``bench/search_latency.py``.
"""

from __future__ import annotations

import json
import logging
import re
import sqlite3
import threading
import time
import unicodedata
from collections import OrderedDict
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any

from hostcore import (
    NO_FILTERS,
    DerivedDB,
    Not,
    Or,
    Phrase,
    QueryNode,
    SearchBackend,
    SearchDoc,
    SearchFilters,
    SearchHit,
    SearchResults,
    Tag,
    Term,
    Unavailable,
    ValidationError,
    drop_older_formats,
    generation,
    hookimpl,
    new_generation,
    parse_query,
    positive_leaves,
    rows_in,
    stem,
)

from .common import split_common, stops_of
from .ranking import Candidates, Match, candidates, extend, page_rows, rank
from .snippets import Marker

log = logging.getLogger(__name__)

FORMAT = 4  # bump when the schema, tokenizer or keys change: a new file is built from storage
MAX_LIMIT = 1000
BUSY_TIMEOUT_MS = 5000
WAL_LIMIT = 8_000_000
WRITE_DEADLINE_S = 60.0  # keep retrying a busy database this long before giving up

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f]")  # also keeps the markers out of indexed text
_WORD = re.compile(r"[^\W_]+")  # what unicode61 calls a token: letters and digits
_SPACES = re.compile(r"\s+")
# Every filter token in ``keys`` starts with a private-use character: FTS5's tokenizer keeps it inside
# the token, the query analyser never yields it, so no user word can match a filter token. User words
# then need no column filter, which would make FTS5 read every position list of a word (twice the cost).
_MARK = "\ue000"
_ALL_KEY = _MARK + "k"  # in every row's ``keys``: what a lone exclusion subtracts from
_TITLE_KEY = _MARK + "h"  # before each title word (tag and namespace keys: ``_key``)
PREFIX_INDEX = (2, 3, 4)  # prefix lengths FTS5 keeps doclists for; a longer (or shorter) prefix is expanded per query

SCHEMA = f"""
CREATE TABLE IF NOT EXISTS pages(
    id INTEGER PRIMARY KEY,
    slug TEXT NOT NULL UNIQUE,
    namespace TEXT NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL,
    hash TEXT NOT NULL,
    stops INTEGER NOT NULL DEFAULT 0,
    changed REAL
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts USING fts5(
    title, body, tags, keys, stems,
    tokenize = 'unicode61 remove_diacritics 2',
    prefix = '{" ".join(map(str, PREFIX_INDEX))}'
)
"""
# The storage version the index reflects is kept in the ``meta`` table hostcore.DerivedDB adds to
# every file (made at first use, so files built before it need no rebuild). Every write gives the index a new generation (hostcore.new_generation): what a process remembers
# of a query holds while the generation it read it at is the file's.
REMEMBERED = 32  # queries whose ranked candidates a backend keeps (LRU), for paging and asking again


def _clean(text: str) -> str:
    return _CONTROL.sub(" ", unicodedata.normalize("NFC", text))


def analyse(text: str) -> list[str]:
    """Split ``text`` into words as FTS5's unicode61 tokenizer does (FTS5 folds case and accents)."""
    return [w.lower() for w in _WORD.findall(unicodedata.normalize("NFC", text))]


def _key(kind: str, value: str) -> str:
    """A filter token: hex keeps any tag or namespace one unicode61 token."""
    return _MARK + kind + value.encode().hex()


def stems_of(words: list[str]) -> str:
    """The ``stems`` column: the stem of every word, in order (:func:`hostcore.stem`)."""
    return " ".join(stem(word) for word in words)


def _quoted(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def compile_match(node: QueryNode) -> str:
    """The FTS5 MATCH expression for a parsed query; every user word is a quoted string."""
    if isinstance(node, Term) and not node.prefix and stem(node.text) != node.text:
        # the word as typed, or any word of its stem (a word that is its own stem matches ``stems``
        # unfiltered: a column filter makes FTS5 read the position lists twice)
        return f"({_quoted(node.text)} OR stems : {_quoted(stem(node.text))})"
    if isinstance(node, Term | Phrase):
        words = node.text if isinstance(node, Term) else " ".join(node.words)
        return _quoted(words) + (" *" if node.prefix else "")
    if isinstance(node, Tag):
        return f"keys : {_quoted(_key('t', unicodedata.normalize('NFC', node.name)))}"
    if isinstance(node, Not):  # alone (the parser puts it inside an And): everything but it
        return f"(keys : {_quoted(_ALL_KEY)} NOT ({compile_match(node.node)}))"
    if isinstance(node, Or):
        return "(" + " OR ".join(compile_match(n) for n in node.nodes) + ")"
    wanted = [compile_match(n) for n in node.nodes if not isinstance(n, Not)]
    unwanted = [compile_match(n.node) for n in node.nodes if isinstance(n, Not)]
    if not wanted:
        wanted = [f"keys : {_quoted(_ALL_KEY)}"]
    expr = "(" + " AND ".join(wanted) + ")"
    for item in unwanted:
        expr = f"({expr} NOT ({item}))"
    return expr


def compile_title_matches(node: QueryNode) -> list[str]:
    """``keys`` filters for pages whose title holds the words the query looks for, best first.

    First the pages whose title holds every term and phrase of the query, then those whose title
    holds one of them (when there are several). A phrase counts when its words are all in the title,
    even apart: a superset of the title matches, which is all the ranking needs. Empty when the query
    looks for no word (a tag alone).
    """
    leaves = []
    for leaf in positive_leaves(node):
        words = [_quoted(_TITLE_KEY + word) for word in ((leaf.text,) if isinstance(leaf, Term) else leaf.words)]
        if leaf.prefix:
            words[-1] += " *"
        leaves.append(" AND ".join(words))
    leaves = list(dict.fromkeys(leaves))
    if len(leaves) < 2:
        return [f"keys : ({leaf})" for leaf in leaves]
    return ["keys : (" + " AND ".join(f"({leaf})" for leaf in leaves) + ")", "keys : (" + " OR ".join(f"({leaf})" for leaf in leaves) + ")"]


def _busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc).lower()
    return "locked" in text or "busy" in text


class SqliteSearch(SearchBackend):
    """Full-text search over title, body and tags; the best match first, title matches boosted.

    Query syntax: :mod:`hostcore.domain.query`, shared by every hostcore search backend.
    """

    name = "sqlite"

    def __init__(self, root: Path, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(root, config)
        self.root.mkdir(parents=True, exist_ok=True)
        self.path = self.root / f"sqlite-search-v{FORMAT}.db"
        self._guard = threading.Lock()
        self._remembered: OrderedDict[tuple[str, Match, tuple[str, ...]], Candidates] = OrderedDict()  # (generation, match, titled)
        # a crash may lose the last saves (synchronous=NORMAL): start-up re-indexes them; a big batch
        # must not leave a big WAL file
        pragmas = (f"busy_timeout={BUSY_TIMEOUT_MS}", "synchronous=NORMAL", f"journal_size_limit={WAL_LIMIT}")
        self._db = DerivedDB(self.path, "search index", SCHEMA, rebuild=self.rebuild, timeout=BUSY_TIMEOUT_MS / 1000, pragmas=pragmas)
        self._db.check()
        with self._connection() as db:
            if generation(db) is None:
                self._first_generation()

    def _first_generation(self) -> None:
        """Give a file made before generations one, so searches remember what they ranked."""
        try:
            with self._write() as db:
                new_generation(db)
        except (sqlite3.Error, Unavailable) as exc:  # a read-only snapshot (full disk): searches rank afresh
            log.info("search index: no generation recorded (%s); searches are not remembered", exc)

    def _connection(self) -> AbstractContextManager[sqlite3.Connection]:
        """This thread's connection to the index file; a damaged file is set aside and ``rebuild.error()`` raised."""
        return self._db.guard()

    @staticmethod
    def _retry(action: Any) -> Any:
        """Run ``action``, retrying while another process holds the database past busy_timeout."""
        deadline = time.monotonic() + WRITE_DEADLINE_S
        attempt = 0
        while True:
            try:
                return action()
            except sqlite3.OperationalError as exc:
                if not _busy(exc):
                    raise
                if time.monotonic() > deadline:
                    raise Unavailable("the search index stays locked by another program; try again later") from exc
                attempt += 1
                time.sleep(min(0.005 * attempt, 0.1))

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; waits for (never fails on) other writers."""
        with self._connection() as db:  # rolled back there when the caller raises
            self._retry(lambda: db.execute("BEGIN IMMEDIATE"))
            yield db
            self._retry(lambda: db.execute("COMMIT"))

    # writing

    def update(self, docs: Sequence[SearchDoc] = (), removed: Sequence[str] = ()) -> None:
        if not docs and not removed:
            return
        with self._write() as db:
            for slug in removed:
                self._delete(db, slug)
            for doc in docs:
                self._delete(db, doc.slug)
                self._insert(db, doc)
            new_generation(db)

    @staticmethod
    def _delete(db: sqlite3.Connection, slug: str) -> None:
        row = db.execute("DELETE FROM pages WHERE slug = ? RETURNING id", (slug,)).fetchone()
        if row is not None:
            db.execute("DELETE FROM fts WHERE rowid = ?", row)

    @staticmethod
    def _insert(db: sqlite3.Connection, doc: SearchDoc) -> None:
        title, body, tags = _clean(doc.title), _clean(doc.body), [_clean(tag) for tag in doc.tags]
        tags_text = "\n".join(tags)
        title_words, body_words, tag_words = analyse(title), analyse(body), analyse(tags_text)
        stops = stops_of(title_words) | stops_of(body_words) | stops_of(tag_words)
        (rowid,) = db.execute(
            "INSERT INTO pages(slug, namespace, title, tags, hash, stops, changed) VALUES(?, ?, ?, ?, ?, ?, ?) RETURNING id",
            (doc.slug, doc.namespace, title, json.dumps(tags, ensure_ascii=False), doc.hash, stops, doc.changed),
        ).fetchone()
        keys = [_ALL_KEY, _key("n", doc.namespace)] + [_key("t", tag.lower()) for tag in tags]
        if doc.author:
            keys.append(_key("a", _clean(doc.author).lower()))
        keys += [_TITLE_KEY + word for word in dict.fromkeys(title_words)]
        db.execute(
            "INSERT INTO fts(rowid, title, body, tags, keys, stems) VALUES(?, ?, ?, ?, ?, ?)",
            (rowid, title, body, tags_text, " ".join(keys), stems_of(title_words + body_words + tag_words)),
        )

    def optimize(self) -> None:
        """Merge FTS5's segments into one: searches read one segment instead of many (a slow,
        one-off pass; ``bench/search_engines.py`` measures what it saves)."""
        with self._write() as db:
            db.execute("INSERT INTO fts(fts) VALUES('optimize')")

    def clear(self) -> None:
        with self._write() as db:
            db.execute("DELETE FROM pages")
            db.execute("DELETE FROM fts")
            db.execute("DELETE FROM meta")
            new_generation(db)

    def storage_version(self) -> str | None:
        return self._db.storage_version()

    def identity(self) -> object:
        return self._db.identity()

    def set_storage_version(self, version: str | None) -> None:
        with self._write() as db:
            if version is None:
                db.execute("DELETE FROM meta WHERE key = 'storage_version'")
            else:
                db.execute("INSERT OR REPLACE INTO meta(key, value) VALUES('storage_version', ?)", (version,))
        if version is not None:  # this format reflects storage: an older one is dead weight
            drop_older_formats(self.root, "sqlite-search-v", FORMAT)

    # reading

    def search(
        self, query: str, *, namespaces: Collection[str] | None, offset: int = 0, limit: int = 20,
        filters: SearchFilters = NO_FILTERS,
    ) -> SearchResults:
        return self.ranked(query, namespaces=namespaces, offset=offset, limit=limit, marked=limit, filters=filters)

    def ranked(
        self, query: str, *, namespaces: Collection[str] | None, offset: int = 0, limit: int, marked: int,
        filters: SearchFilters = NO_FILTERS,
    ) -> SearchResults:
        if offset < 0:
            raise ValidationError("must be 0 or more", field="offset")
        if not 1 <= limit <= MAX_LIMIT:
            raise ValidationError(f"must be between 1 and {MAX_LIMIT}", field="limit")
        node = parse_query(query, analyse)
        if namespaces is not None and not namespaces:
            return SearchResults([], False)
        looked_for, stops = split_common(node)
        expr = compile_match(looked_for)
        if namespaces is not None:
            expr = f"({expr}) AND keys : (" + " OR ".join(_quoted(_key("n", ns)) for ns in sorted(namespaces)) + ")"
        for tag in sorted(set(filters.tags)):
            expr = f"({expr}) AND keys : {_quoted(_key('t', _clean(tag).lower()))}"
        if filters.author is not None:
            expr = f"({expr}) AND keys : {_quoted(_key('a', _clean(filters.author).lower()))}"
        match = Match(expr, stops, filters.since, filters.before)
        titled = [f"({expr}) AND {title_match}" for title_match in compile_title_matches(looked_for)]
        with self._connection() as db:
            db.execute("BEGIN")  # one snapshot: the generation read is the one ranked
            try:
                leaves = list(positive_leaves(looked_for))
                tiered = len(leaves) == 1 and isinstance(leaves[0], Term)
                found = self._candidates(db, match, titled, tiered, offset + limit + 1)
                ranked, more = rank(db, match, found, offset, limit)
                rows = page_rows(db, [rowid for rowid, _ in ranked])
            except BaseException as exc:
                if db.in_transaction:
                    with suppress(sqlite3.Error):
                        db.execute("ROLLBACK")
                if not isinstance(exc, sqlite3.OperationalError) or "fts5" not in str(exc):
                    raise
                # not expected: compile_match quotes every word
                log.warning("sqlite search: FTS5 rejected %r compiled from %r: %s", match, query, exc)
                raise ValidationError("could not be understood; use plain words", field="query") from exc
            db.execute("COMMIT")
        marker, hits = Marker.of(positive_leaves(node)), []
        for i, (rowid, score) in enumerate(ranked):
            slug, title, tags, body = rows[rowid]
            hits.append(SearchHit(slug, title, tuple(json.loads(tags)), marker.snippet(title, body) if i < marked else "", -float(score)))
        return SearchResults(hits, more)

    def _candidates(self, db: sqlite3.Connection, match: Match, titled: list[str], tiered: bool, need: int) -> Candidates:
        """The ranked candidates of ``match``, at least ``need`` of them when it has that many
        (:func:`.ranking.candidates`), remembered while the index keeps its generation."""
        current = generation(db)
        if current is None:  # a file no write of this version touched yet: nothing tells its states apart
            return candidates(db, match, titled, tiered=tiered, need=need)
        key = (current, match, tuple(titled))
        with self._guard:
            found = self._remembered.get(key)
            if found is not None:
                self._remembered.move_to_end(key)
        if found is None:
            found = candidates(db, match, titled, tiered=tiered, need=need)
        elif found.tier and need > len(found.ranked):
            found = extend(db, match, found)
        else:
            return found
        with self._guard:
            self._remembered[key] = found
            while len(self._remembered) > REMEMBERED:
                self._remembered.popitem(last=False)
        return found

    def documents(self, slugs: Sequence[str]) -> dict[str, SearchDoc]:
        select = "SELECT pages.slug, pages.title, fts.body, pages.tags, pages.hash FROM pages JOIN fts ON fts.rowid = pages.id WHERE pages.slug IN"
        with self._connection() as db:
            rows = rows_in(db, select, sorted(set(slugs)))
            return {slug: SearchDoc(slug, title, body, tuple(json.loads(tags)), digest) for slug, title, body, tags, digest in rows}

    def hashes(self) -> dict[str, str]:
        with self._connection() as db:
            return dict(db.execute("SELECT slug, hash FROM pages").fetchall())

    def close(self) -> None:
        self._db.close()


@hookimpl
def register_search_backends(register: Any) -> None:
    register(SqliteSearch)
