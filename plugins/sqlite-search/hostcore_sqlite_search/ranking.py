"""How a search is answered at any wiki size: rank a capped candidate set, snippet only the page asked for.

FTS5's bm25 costs something for every row it scores, and each statement that calls it first counts
the documents of every phrase (a pass over their whole doclists). Ranking every match of a common
word made ``search`` slow on a big wiki (``bench/search_engines.py``), and snippets were built for
every row that entered the sorter. So:

- A query matching at most ``WINDOW`` pages is ranked whole: the same order as ranking every match.
- A broader one ranks a capped candidate set: its ``WINDOW`` most recently indexed matches (FTS5
  walks the doclists backwards by rowid and stops there), plus up to ``TITLE_WINDOW`` of the most
  recent pages whose title holds a word the query looks for (found through the title keys each row
  carries in its ``keys`` column, so the best pages, those with a title match, are not left out
  because they are old). The pages whose title holds any word come in one statement; those holding
  every word are looked for apart only when the others fill ``TITLE_WINDOW``. The remaining matches
  follow the ranked ones, most recent first, so paging stays exact: every match appears once,
  whatever the offset.
- A broad query that scores one word (a term, maybe with tags, namespaces or exclusions) ranks its
  ``TIER_WINDOW`` most recent title matches first and, while they fill the page asked for, nothing
  else: with one word, bm25's order does not depend on how common it is and a title match outscores
  any body match (unless its page is over seven times the average length), so this is the order of
  the capped set above, with one statement (one pass over the word's doclist) instead of two. A
  page past the tier adds the ``WINDOW`` most recent other matches after it, best first.
- Snippets are built for the returned page only, in Python from each row's text (:mod:`.snippets`).

Scores are the same formula as before (lower is better in SQL; hits carry its negation); the title
words in ``keys`` add a few tokens to each page's length, which bm25 normalises by.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

TITLE_BOOST = 8.0
TAGS_WEIGHT = 4.0
STEMS_WEIGHT = 0.5  # a word matched through its stem only (another inflection) counts half a body match
# bm25 over body and tags plus TITLE_BOOST times bm25 over the title alone. FTS5's bm25 adds column
# weights into one saturating term frequency, so a weighted title in one bm25 call can still lose to
# a body repeating the word; a separate title score keeps title matches on top. Lower is better.
# A word as typed matches in its own column and in ``stems`` too, so it outranks another form of it.
SCORE = f"bm25(fts, 0.0, 1.0, {TAGS_WEIGHT}, 0.0, {STEMS_WEIGHT}) + {TITLE_BOOST} * bm25(fts, 1.0, 0.0, 0.0, 0.0, 0.0)"
WINDOW = 1000  # a query matching more pages ranks its most recent WINDOW matches...
TITLE_WINDOW = 1000  # ...and up to this many (most recent) older title matches
TIER_WINDOW = 1500  # a one-word query ranks this many of its most recent title matches (see ``candidates``)

Row = tuple[int, float]  # rowid, score


def _order(row: Row) -> tuple[float, int]:
    return row[1], row[0]


@dataclass(frozen=True)
class Match:
    """A compiled query: the FTS5 expression, the mask of common words its pages must hold
    besides (``pages.stops``, :mod:`.common`), and the times its pages last changed within
    (``pages.changed``: at or after ``since``, before ``before``)."""

    expr: str
    stops: int = 0
    since: float | None = None
    before: float | None = None

    def narrowed(self, expr: str) -> Match:
        return Match(expr, self.stops, self.since, self.before)

    @property
    def joined(self) -> bool:
        """Whether it needs the ``pages`` row of each match."""
        return bool(self.stops) or self.since is not None or self.before is not None


def _select(db: sqlite3.Connection, what: str, match: Match, *, below: int | None = None, limit: int | None = None, offset: int = 0) -> sqlite3.Cursor:
    """``what`` of the rows matching ``match`` (older than rowid ``below``), most recent first."""
    sql, args = f"SELECT {what} FROM fts", list[str | int | float]()
    if match.joined:
        sql += " CROSS JOIN pages ON pages.id = fts.rowid"  # fts first: its rowid order, no sort
    sql += " WHERE fts MATCH ?"
    args.append(match.expr)
    if match.stops:
        sql += " AND (pages.stops & ?) = ?"
        args += [match.stops, match.stops]
    if match.since is not None:
        sql += " AND pages.changed >= ?"
        args.append(match.since)
    if match.before is not None:
        sql += " AND pages.changed < ?"
        args.append(match.before)
    if below is not None:
        sql += " AND fts.rowid < ?"
        args.append(below)
    sql += " ORDER BY fts.rowid DESC"
    if limit is not None:
        sql += " LIMIT ? OFFSET ?"
        args += [limit, offset]
    return db.execute(sql, args)


SCORED = f"fts.rowid, {SCORE}"


@dataclass(frozen=True)
class Candidates:
    """What a query ranks before paging: its candidates best first, and where the unranked matches start."""

    ranked: list[Row]  # best first
    below: int | None  # rowid the unranked matches lie below (None: every match is ranked)
    titled: frozenset[int]  # ranked rows older than ``below``, skipped when reading the unranked ones
    tier: bool = False  # only the title tier so far: ``extend`` adds the recent window after it


def candidates(db: sqlite3.Connection, match: Match, titled: list[str], *, tiered: bool = False, need: int = 0) -> Candidates:
    """The ranked candidates of ``match`` (every match when at most WINDOW).

    ``titled``: ``match`` restricted to pages whose title holds the words it looks for, best first
    (all of them, then any); empty when it looks for no word (a tag alone). ``tiered``: the query
    scores one word (bm25's order then does not depend on how common it is, and a title match ranks
    above any body match): a broad one ranks its title tier first, then the window's other rows,
    and reads the window only when the tier holds fewer than ``need`` rows, sparing its statement
    and its pass over the word's doclist. The order never depends on ``need``: a page asked of
    another process, which remembers nothing, continues the same order.
    """
    if tiered and titled and _holds(db, match, WINDOW):  # broad
        tier = _select(db, SCORED, match.narrowed(titled[0]), limit=TIER_WINDOW).fetchall()
        found = Candidates(sorted(tier, key=_order), None, frozenset(rowid for rowid, _ in tier), tier=True)
        return found if len(tier) >= need else extend(db, match, found)
    window = _select(db, SCORED, match, limit=WINDOW).fetchall()
    if len(window) < WINDOW:
        return Candidates(sorted(window, key=_order), None, frozenset())
    below = window[-1][0]
    titles = _title_matches(db, match, titled, below)
    return Candidates(sorted([*window, *titles.items()], key=_order), below, frozenset(titles))


def _holds(db: sqlite3.Connection, match: Match, count: int) -> bool:
    """Whether ``match`` has at least ``count`` matches: read without scoring, and no further."""
    return _select(db, "1", match, limit=1, offset=count - 1).fetchone() is not None


def extend(db: sqlite3.Connection, match: Match, found: Candidates) -> Candidates:
    """A title tier followed by the best of the WINDOW most recent other matches."""
    window = _select(db, SCORED, match, limit=WINDOW).fetchall()
    below = window[-1][0] if len(window) == WINDOW else None
    others = sorted((row for row in window if row[0] not in found.titled), key=_order)
    older = frozenset(rowid for rowid in found.titled if below is not None and rowid < below)
    return Candidates(found.ranked + others, below, older)


def rank(db: sqlite3.Connection, match: Match, found: Candidates, offset: int, limit: int) -> tuple[list[Row], bool]:
    """The ``limit`` best (rowid, score) after ``offset`` among ``found`` (the candidates of ``match``), and whether more follow."""
    if found.tier and offset + limit >= len(found.ranked):
        found = extend(db, match, found)
    ranked = found.ranked
    if found.below is not None and offset + limit >= len(ranked):  # paged past the ranked candidates: the others, most recent first
        ranked = ranked + _rest(db, match, found.below, found.titled, offset + limit + 1 - len(ranked))
    return ranked[offset : offset + limit], len(ranked) > offset + limit


def _title_matches(db: sqlite3.Connection, match: Match, titled: list[str], below: int) -> dict[int, float]:
    """Up to TITLE_WINDOW of the most recent title matches older than rowid ``below``, with scores.

    The pages whose title holds any word come in one statement (each statement that scores rows
    first counts the documents of every phrase it holds); those holding every word are looked for
    apart only when there are more than TITLE_WINDOW of the others, so that they are not left out.
    """
    found: dict[int, float] = {}
    for expression in reversed(titled):  # any word, then (if that was cut short) every word
        rows = _select(db, SCORED, match.narrowed(expression), below=below, limit=TITLE_WINDOW).fetchall()
        found.update(rows)
        if len(rows) < TITLE_WINDOW:
            break  # every match of this expression is in: so are those of the narrower one
    return found


def _rest(db: sqlite3.Connection, match: Match, below: int, ranked: frozenset[int], count: int) -> list[Row]:
    rows: list[Row] = []
    cursor = _select(db, SCORED, match, below=below)
    try:
        for row in cursor:
            if row[0] not in ranked:
                rows.append(row)
                if len(rows) == count:
                    break
    finally:
        cursor.close()
    return rows


def page_rows(db: sqlite3.Connection, rowids: list[int]) -> dict[int, tuple[str, str, str, str]]:
    """rowid -> (slug, title, tags as JSON, body) for these rows only (:mod:`.snippets` marks them)."""
    if not rowids:
        return {}
    found = db.execute(
        "SELECT pages.id, pages.slug, pages.title, pages.tags, fts.body FROM pages JOIN fts ON fts.rowid = pages.id"
        f" WHERE pages.id IN ({','.join('?' * len(rowids))})",
        rowids,
    )
    return {row[0]: row[1:] for row in found}
