"""The sqlite-search plugin as it answered queries before the capped ranking: the baseline of the bench.

Same backend class, with the previous query plan (bm25 for every match, snippets built while
sorting) on the previous index format (prefix index '2 3', no title words in ``keys``), so
``bench/search_engines.py`` measures both plans in one run on the same pages.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection
from pathlib import Path

import hostcore_sqlite_search as plugin
from hostcore_sqlite_search import ranking

from hostcore import SearchDoc, SearchHit, SearchResults, parse_query

SCHEMA = plugin.SCHEMA.replace("prefix = '2 3 4'", "prefix = '2 3'")
SQL = (
    f"SELECT pages.slug, pages.title, pages.tags, {ranking.SCORE} AS score,"
    f" snippet(fts, 1, '{ranking.START}', '{ranking.END}', '…', {ranking.SNIPPET_TOKENS}),"
    f" highlight(fts, 0, '{ranking.START}', '{ranking.END}')"
    " FROM fts CROSS JOIN pages ON pages.id = fts.rowid"
    " WHERE fts MATCH ? ORDER BY score, fts.rowid LIMIT ? OFFSET ?"
)


class PreviousSqliteSearch(plugin.SqliteSearch):
    """Ranks every match with bm25 in one statement; its own file in ``root``."""

    def __init__(self, root: Path) -> None:
        root.mkdir(parents=True, exist_ok=True)
        path = root / f"sqlite-search-v{plugin.FORMAT}.db"
        if not path.exists():  # the previous schema, before the plugin would create the current one
            db = sqlite3.connect(path)
            db.executescript(SCHEMA)
            db.close()
        super().__init__(root)

    @staticmethod
    def _insert(db: sqlite3.Connection, doc: SearchDoc) -> None:
        title, tags = plugin._clean(doc.title), [plugin._clean(tag) for tag in doc.tags]
        (rowid,) = db.execute(
            "INSERT INTO pages(slug, namespace, title, tags, hash) VALUES(?, ?, ?, ?, ?) RETURNING id",
            (doc.slug, doc.namespace, title, json.dumps(tags, ensure_ascii=False), doc.hash),
        ).fetchone()
        keys = [plugin._ALL_KEY, plugin._key("n", doc.namespace)] + [plugin._key("t", tag.lower()) for tag in tags]
        db.execute(
            "INSERT INTO fts(rowid, title, body, tags, keys) VALUES(?, ?, ?, ?, ?)",
            (rowid, title, plugin._clean(doc.body), "\n".join(tags), " ".join(keys)),
        )

    def search(self, query: str, *, namespaces: Collection[str] | None, offset: int = 0, limit: int = 20) -> SearchResults:
        node = parse_query(query, plugin.analyse)
        if namespaces is not None and not namespaces:
            return SearchResults([], False)
        match = plugin.compile_match(node)
        if namespaces is not None:
            keys = " OR ".join(plugin._quoted(plugin._key("n", ns)) for ns in sorted(namespaces))
            match = f"({match}) AND keys : ({keys})"
        with self._connection() as db:
            rows = db.execute(SQL, (match, limit + 1, offset)).fetchall()
        hits = [
            SearchHit(slug, title, tuple(json.loads(tags)), plugin._snippet(snippet, marked), -float(score))
            for slug, title, tags, score, snippet, marked in rows[:limit]
        ]
        return SearchResults(hits, len(rows) > limit)
