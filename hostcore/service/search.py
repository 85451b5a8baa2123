"""Finding pages and documents: search and ChatGPT-style fetch, limited to what the caller may read.

:meth:`SearchMixin.search` is where keyword and meaning meet: the search backend's full-text hits
on pages, then what :mod:`hostcore.service.documents` adds (pages near in meaning, attachments'
passages), composed in that one method.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime

from typing_extensions import TypedDict

from hostcore.domain.attachments import URL_PREFIX
from hostcore.domain.pages import page_path
from hostcore.errors import NotFound, Unavailable, ValidationError
from hostcore.indexes.passages import RRF_K, Near
from hostcore.seams.search import SearchBackend, SearchDoc, SearchFilters, SearchHit
from hostcore.service.documents import DocumentsMixin

MAX_SEARCH_OFFSET = 1000
MAX_SEARCH_LIMIT = 50
MAX_FILTER_TAGS = 10
FUSE_WORDS = 3  # words from which a query is a description or a question, which fuses
FUSE_DEPTH = 50  # keyword hits and pages by meaning fused into the first places of a fused search
CONTINUE_BATCH = 200  # keyword hits read at a time past the fused places
SNIPPET_CHARS = 200  # of a page found by meaning alone: the start of its body
_CODE = re.compile(r"\w*\d\w*|\w+[_.:/#]\w+")  # a word holding a digit, or joined by _ . : / #: an identifier (a hyphen joins words)
_WORD = re.compile(r"[^\W_]+")


def plain_words(query: str) -> bool:
    """True when ``query`` is words alone: no phrase, prefix, group, tag, OR, AND or NOT."""
    return not re.search(r'["*()]|tag:', query, re.IGNORECASE) and not any(
        token in ("OR", "AND", "NOT") or token.startswith("-") for token in query.split()
    )


class Hit(TypedDict):
    slug: str
    title: str
    tags: list[str]
    snippet: str
    score: float
    found_by: str  # "words", "meaning" or "words and meaning"


class Result(TypedDict):
    id: str
    title: str
    url: str


class SearchResult(TypedDict):
    hits: list[Hit]
    results: list[Result]
    more: bool
    next_offset: int | None


class FetchMetadata(TypedDict):
    slug: str
    namespace: str
    tags: list[str]
    hash: str


class Fetched(TypedDict):
    id: str
    title: str
    text: str
    url: str
    metadata: FetchMetadata


def parse_time(value: str | None, field: str) -> float | None:
    """Epoch seconds of an ISO 8601 date (2026-05-01, midnight UTC) or time (a time without a
    zone is UTC); ValidationError naming ``field`` for anything else."""
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value.strip().replace("z", "Z"))
    except ValueError:
        raise ValidationError(
            f"{value[:40]!r} is no date; give one like 2026-05-01 or a time like 2026-05-01T09:30:00Z", field=field
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


def search_filters(tags: Sequence[str] | None, author: str | None, since: str | None, before: str | None) -> SearchFilters:
    """The checked filters of a search (each error names its field and the fix)."""
    wanted = []
    for tag in tags or ():
        if not tag.strip():
            raise ValidationError("holds an empty tag; give tag names, or leave tags out", field="tags")
        wanted.append(tag.strip().lower())
    if len(wanted) > MAX_FILTER_TAGS:
        raise ValidationError(f"holds {len(wanted)} tags; give at most {MAX_FILTER_TAGS}", field="tags")
    if author is not None and not author.strip():
        raise ValidationError("is empty; give the name a change was made by, or leave author out", field="author")
    low, high = parse_time(since, "since"), parse_time(before, "before")
    if low is not None and high is not None and high <= low:
        raise ValidationError("is not after since; give a later before, or an earlier since", field="before")
    return SearchFilters(tuple(dict.fromkeys(wanted)), author.strip() if author is not None else None, low, high)


def describes(query: str) -> bool:
    """Whether meaning may help find ``query``: plain words naming no code or identifier (a
    meaning has nothing to add to a part number, and ranks it below near words)."""
    return plain_words(query) and not any(_CODE.fullmatch(word.strip(".,;:?!")) for word in query.split())


def fuses(query: str) -> bool:
    """Whether a search ranks keyword and meaning together from the start: a description or a
    question (:func:`describes`, at least FUSE_WORDS words). A look-up of
    one or two words ranks by words, as fast as the engine, and fuses only when no page holds them
    (:meth:`SearchMixin.search`): on the labelled set, fusing a word of the page found it no more
    often than its words did (docs/operators.md has the table per query shape)."""
    return describes(query) and len(_WORD.findall(query)) >= FUSE_WORDS


def title_holds(title: str, query: str) -> bool:
    """Whether ``title`` holds every word of ``query`` (case folded): a title match, which ranks first."""
    held = set(_WORD.findall(title.casefold()))
    words = _WORD.findall(query.casefold())
    return bool(words) and all(word in held for word in words)


class SearchMixin(DocumentsMixin):
    """search and fetch; mixed into :class:`~hostcore.service.wiki.Wiki`. Both read pages and
    documents alike, and say here how each answer is made of the two."""

    def search(
        self, query: str, namespace: str | None = None, offset: int = 0, limit: int = 20, *,
        tags: Sequence[str] | None = None, author: str | None = None, since: str | None = None, before: str | None = None,
    ) -> SearchResult:
        """Pages matching ``query`` that pass the filters (``tags``: every one; ``author``: who
        last changed the page; ``since``/``before``: when, ISO 8601), best first.

        With an ``EMBEDDER``, a description or question of plain words naming no code
        (:func:`fuses`) ranks keyword and meaning together (:meth:`_fused`), and so does a look-up
        of one or two such words that no page holds; otherwise, and for a query with operators or
        a code, ``hits`` are the search backend's alone, every word matching (in any inflection). ``results`` (for
        ChatGPT-style connectors, which ask in plain language) list the same pages first; the first
        page of ``results`` of a plain query goes on with what the documents add
        (:meth:`_documents_results`): when no hit was found by words, the pages near it in meaning;
        then the attachments with the best passages, each with its URL path as ``id`` for
        :meth:`fetch`. docs/operators.md says what the bench found."""
        self.principal.require("read")
        if self.host.indexes.search is None:
            raise Unavailable("search is not enabled on this wiki (SEARCH is empty); use list_pages")
        scope = self._scope(query, namespace, limit, MAX_SEARCH_LIMIT)
        if not 0 <= offset <= MAX_SEARCH_OFFSET:
            raise ValidationError(f"must be between 0 and {MAX_SEARCH_OFFSET}; narrow the query instead", field="offset")
        filters = search_filters(tags, author, since, before)
        backend = self.host.indexes.search_backend()  # caught up: never older than the writes acknowledged
        assert backend is not None
        passages = self.host.indexes.passages
        meaning = passages is not None and passages.embedder is not None and describes(query)
        page = None if meaning and fuses(query) else backend.search(query, namespaces=scope, offset=offset, limit=limit, filters=filters)
        if page is not None and meaning and not page.hits and not self._held_by_words(backend, query, scope, filters, offset):
            page = None  # no page holds the words: by meaning (the same on every page of the answer)
        if page is None:
            found, more, how = self._fused(backend, query, scope, filters, offset, limit)
        else:
            found, more, how = list(page.hits), page.more, {h.slug: "words" for h in page.hits}
        by_words = any(way != "meaning" for way in how.values())
        hits: list[Hit] = [
            {"slug": h.slug, "title": h.title, "tags": list(h.tags), "snippet": h.snippet, "score": round(h.score, 4), "found_by": how[h.slug]}
            for h in found
        ]
        results = [Result(id=h["slug"], title=h["title"], url=self.page_url(h["slug"])) for h in hits]
        if offset == 0 and plain_words(query) and not filters:  # meaning cannot honour operators
            results += self._documents_results(query, scope, limit, pages_found=by_words or bool(hits))
        return {
            "hits": hits,
            "results": results,
            "more": more,
            # Past the deepest offset a caller may ask for, the way on is a narrower query, not paging.
            "next_offset": offset + len(hits) if more and offset + len(hits) <= MAX_SEARCH_OFFSET else None,
        }

    @staticmethod
    def _held_by_words(backend: SearchBackend, query: str, scope: frozenset[str] | None, filters: SearchFilters, offset: int) -> bool:
        """Whether any page passing the filters holds the words of ``query`` (known without asking
        when the first page of its hits was empty: ``offset`` 0)."""
        return bool(offset) and bool(backend.search(query, namespaces=scope, offset=0, limit=1, filters=filters).hits)

    def _fused(
        self, backend: SearchBackend, query: str, scope: frozenset[str] | None, filters: SearchFilters, offset: int, limit: int
    ) -> tuple[list[SearchHit], bool, dict[str, str]]:
        """Hits ranked by keyword and meaning together: (this page's hits, whether more follow,
        how each was found: "words", "meaning" or "words and meaning").

        The first places fuse the backend's FUSE_DEPTH best hits with the FUSE_DEPTH pages nearest
        in meaning at least the embedder's ``relevant`` similarity (the relevance floor) and passing
        the filters: the hits whose title holds every word first, in the backend's order, then
        the rest by reciprocal rank fusion (score: its sum; a title match's score is 1 less a
        thousandth per place). Past them, the backend's order goes
        on without the pages already shown. Both rankings are the indexes' own, so every worker
        pages through the same order."""
        marked = offset + limit  # the words' hits that can be shown without a page near in meaning above them
        words = backend.ranked(query, namespaces=scope, limit=FUSE_DEPTH, marked=marked, filters=filters)
        by_words = {h.slug: h for h in words.hits}
        near = self._pages_by_meaning(self.host.indexes.passage_index(), query, scope, FUSE_DEPTH)
        passing = {n.slug for n in self._passing([n for n in near if n.slug not in by_words], filters)}
        near = [n for n in near if n.slug in by_words or n.slug in passing]  # the engine's hits passed the filters
        titled = [h for h in words.hits if title_holds(h.title, query)]
        fused: dict[str, float] = {}
        placed = {h.slug for h in titled}
        for ranking in ([h.slug for h in words.hits if h.slug not in placed], [n.slug for n in near if n.slug not in placed]):
            for rank, slug in enumerate(ranking):
                fused[slug] = fused.get(slug, 0.0) + 1 / (RRF_K + rank + 1)
        nearest = {n.slug: n for n in near}
        order = sorted(fused, key=lambda slug: (-fused[slug], slug not in by_words, slug))  # a tie: words' find first
        # (slug, score, the engine's hit): a page found by meaning alone gets its hit only when shown
        first: list[tuple[str, float, SearchHit | None]] = [(h.slug, 1.0 - i / 1000, h) for i, h in enumerate(titled)]
        first += [(slug, fused[slug], by_words.get(slug)) for slug in order]  # title matches score above any fused (at most 2 / (RRF_K + 1))
        wanted = offset + limit + 1
        rest: list[SearchHit] = []
        if wanted > len(first) and words.more:
            shown, at = {slug for slug, _, _ in first}, FUSE_DEPTH
            while len(first) + len(rest) < wanted:
                batch = backend.search(query, namespaces=scope, offset=at, limit=CONTINUE_BATCH, filters=filters)
                rest += [h for h in batch.hits if h.slug not in shown]
                at += len(batch.hits)
                if not batch.more:
                    break
        ranked = first + [(h.slug, 1 / (RRF_K + FUSE_DEPTH + i + 1), h) for i, h in enumerate(rest)]  # below every fused score
        asked = ranked[offset : offset + limit]
        indexed = backend.documents([slug for slug, _, hit in asked if hit is None]) or {}
        snippets = self._deeper_snippets(backend, query, scope, filters, [hit for _, _, hit in asked if hit is not None], words.hits, marked)
        page = [
            replace(hit, score=score, snippet=snippets.get(slug, hit.snippet)) if hit is not None
            else self._meaning_hit(nearest[slug], score, indexed.get(slug))
            for slug, score, hit in asked
        ]
        close, worded = {n.slug for n in near}, set(by_words) | {h.slug for h in rest}
        how = {h.slug: ("words and meaning" if h.slug in close else "words") if h.slug in worded else "meaning" for h in page}
        return page, len(ranked) > offset + limit, how

    @staticmethod
    def _deeper_snippets(
        backend: SearchBackend, query: str, scope: frozenset[str] | None, filters: SearchFilters, shown: list[SearchHit],
        words: Sequence[SearchHit], marked: int,
    ) -> dict[str, str]:
        """Slug -> snippet of the hits ``shown`` among ``words`` past the ``marked`` first (which
        alone came with their snippets: meaning lifted them onto this page): the engine's hits
        again from the ``marked``-th down to the deepest of them, marked. Few calls need it."""
        rank = {h.slug: i for i, h in enumerate(words) if i >= marked}
        deepest = max((rank[h.slug] for h in shown if h.slug in rank), default=None)
        if deepest is None:
            return {}
        again = backend.search(query, namespaces=scope, offset=marked, limit=deepest + 1 - marked, filters=filters)
        return {h.slug: h.snippet for h in again.hits if h.slug in rank}

    def _passing(self, near: list[Near], filters: SearchFilters) -> list[Near]:
        """The pages of ``near`` that pass ``filters``: their tags, last author and time as the
        search index records them (from the page and the storage)."""
        if not filters or not near:
            return near
        paths = [page_path(n.slug) for n in near]
        times = self.host.storage.last_changed(paths) if filters.since is not None or filters.before is not None else {}
        authors = self.host.storage.last_authors(paths) if filters.author is not None else {}
        kept = []
        for n, path in zip(near, paths, strict=True):
            try:
                page = self._load(n.slug)
            except NotFound:
                continue
            when = times.get(path)
            if not set(filters.tags) <= {tag.lower() for tag in page.tags}:
                continue
            if filters.author is not None and authors.get(path, "").lower() != filters.author.lower():
                continue
            if filters.since is not None and (when is None or when.timestamp() < filters.since):
                continue
            if filters.before is not None and (when is None or when.timestamp() >= filters.before):
                continue
            kept.append(n)
        return kept

    def _meaning_hit(self, near: Near, score: float, indexed: SearchDoc | None) -> SearchHit:
        """A hit for a page found by meaning alone: no word to mark, so the start of its body. Its
        body and tags as the search index holds them (``indexed``: caught up with the saves
        acknowledged before this search), else as storage does (an engine that keeps no text)."""
        if indexed is not None:
            body, tags = indexed.body, indexed.tags
        else:
            try:
                page = self._load(near.slug)
                body, tags = page.body, tuple(page.tags)
            except NotFound:  # deleted since the meaning index saw it
                body, tags = "", ()
        body = " ".join(body.split())
        snippet = html.escape(body[:SNIPPET_CHARS]) + ("…" if len(body) > SNIPPET_CHARS else "")
        return SearchHit(near.slug, near.title, tags, snippet, score)

    def fetch(self, id: str) -> Fetched:
        """A page by its slug, or an attachment's text by its URL path (:meth:`_fetch_attachment`):
        the two kinds of ``id`` that search's ``results`` hold."""
        if id.startswith(URL_PREFIX):
            return self._fetch_attachment(id)
        self._access("read", id, "id")
        try:
            page = self._load(id)
        except NotFound:
            raise NotFound(f"no page {id!r}; pass an id from search's results", field="id") from None
        return {
            "id": page.slug,
            "title": page.title or page.slug,
            "text": page.body,
            "url": self.page_url(page.slug),
            "metadata": {"slug": page.slug, "namespace": page.namespace, "tags": list(page.tags), "hash": page.hash},
        }
