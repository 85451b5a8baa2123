"""The sqlite-search plugin as it answered queries before the capped ranking: the baseline of the bench.

Same backend class, with the previous query plan (bm25 for every match, snippets built while
sorting) on the previous index format (prefix index '2 3', no title words in ``keys``), so
``bench/search_engines.py`` measures both plans in one run on the same pages.
"""

from __future__ import annotations

import html
import json
import re
import sqlite3
import unicodedata
from collections.abc import Collection
from pathlib import Path

import hostcore_sqlite_search as plugin
from hostcore import Not, Or, Phrase, QueryNode, SearchDoc, SearchHit, SearchResults, Tag, Term, parse_query
from hostcore_sqlite_search import ranking

SCHEMA = plugin.SCHEMA.replace("prefix = '2 3 4'", "prefix = '2 3'")
ALL_KEY = "k"
TEXT_COLUMNS = "{title body tags}"
START, END = "\x02", "\x03"  # match markers FTS5 put around hits; swapped for <mark> after escaping
SQL = (
    f"SELECT pages.slug, pages.title, pages.tags, {ranking.SCORE} AS score,"
    f" snippet(fts, 1, '{START}', '{END}', '…', 32),"
    f" highlight(fts, 0, '{START}', '{END}')"
    " FROM fts CROSS JOIN pages ON pages.id = fts.rowid"
    " WHERE fts MATCH ? ORDER BY score, fts.rowid LIMIT ? OFFSET ?"
)


def key(kind: str, value: str) -> str:
    return kind + value.encode().hex()


def compile_match(node: QueryNode) -> str:
    """The previous MATCH: filter tokens without a mark, so user words were held to the text columns."""
    quoted = plugin._quoted
    if isinstance(node, Term | Phrase):
        words = node.text if isinstance(node, Term) else " ".join(node.words)
        return f"{TEXT_COLUMNS} : {quoted(words)}" + (" *" if node.prefix else "")
    if isinstance(node, Tag):
        return f"keys : {quoted(key('t', unicodedata.normalize('NFC', node.name)))}"
    if isinstance(node, Not):
        return f"(keys : {quoted(ALL_KEY)} NOT ({compile_match(node.node)}))"
    if isinstance(node, Or):
        return "(" + " OR ".join(compile_match(n) for n in node.nodes) + ")"
    wanted = [compile_match(n) for n in node.nodes if not isinstance(n, Not)] or [f"keys : {quoted(ALL_KEY)}"]
    expr = "(" + " AND ".join(wanted) + ")"
    for item in node.nodes:
        if isinstance(item, Not):
            expr = f"({expr} NOT ({compile_match(item.node)}))"
    return expr


def _marked(text: str) -> str:
    escaped = re.sub(r"\s+", " ", html.escape(text)).strip()
    return escaped.replace(START, "<mark>").replace(END, "</mark>")


def _snippet(body_snippet: str, marked_title: str) -> str:
    """FTS5's body snippet; else the title with its matches marked (FTS5 gives the body's start when nothing matches)."""
    return _marked(marked_title if START not in body_snippet and START in marked_title else body_snippet)


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
        keys = [ALL_KEY, key("n", doc.namespace)] + [key("t", tag.lower()) for tag in tags]
        db.execute(
            "INSERT INTO fts(rowid, title, body, tags, keys) VALUES(?, ?, ?, ?, ?)",
            (rowid, title, plugin._clean(doc.body), "\n".join(tags), " ".join(keys)),
        )

    def search(self, query: str, *, namespaces: Collection[str] | None, offset: int = 0, limit: int = 20) -> SearchResults:
        node = parse_query(query, plugin.analyse)
        if namespaces is not None and not namespaces:
            return SearchResults([], False)
        match = compile_match(node)
        if namespaces is not None:
            keys = " OR ".join(plugin._quoted(key("n", ns)) for ns in sorted(namespaces))
            match = f"({match}) AND keys : ({keys})"
        with self._connection() as db:
            rows = db.execute(SQL, (match, limit + 1, offset)).fetchall()
        hits = [
            SearchHit(slug, title, tuple(json.loads(tags)), _snippet(snippet, marked), -float(score))
            for slug, title, tags, score, snippet, marked in rows[:limit]
        ]
        return SearchResults(hits, len(rows) > limit)
