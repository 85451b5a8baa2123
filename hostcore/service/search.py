"""Finding pages and documents: search and ChatGPT-style fetch, limited to what the caller may read.

:meth:`SearchMixin.search` is where keyword and meaning meet: the search backend's full-text hits
on pages, then what :mod:`hostcore.service.documents` adds (pages near in meaning, attachments'
passages), composed in that one method.
"""

from __future__ import annotations

import re

from typing_extensions import TypedDict

from hostcore.domain.attachments import URL_PREFIX
from hostcore.errors import NotFound, Unavailable, ValidationError
from hostcore.service.documents import DocumentsMixin

MAX_SEARCH_OFFSET = 1000
MAX_SEARCH_LIMIT = 50


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


class SearchMixin(DocumentsMixin):
    """search and fetch; mixed into :class:`~hostcore.service.wiki.Wiki`. Both read pages and
    documents alike, and say here how each answer is made of the two."""

    def search(self, query: str, namespace: str | None = None, offset: int = 0, limit: int = 20) -> SearchResult:
        """Pages whose words match ``query``, ranked by the search backend: ``hits`` keep the
        full-text contract (every word matches), and ``results`` (for ChatGPT-style connectors,
        which ask in plain language) list the same pages first. The first page of ``results`` of
        a plain query goes on with what the documents add (:meth:`_documents_results`): when no
        page holds every word, the pages near it in meaning (with an ``EMBEDDER``); then the
        attachments with the best passages, each with its URL path as ``id`` for :meth:`fetch`.
        docs/operators.md says what the bench found."""
        self.principal.require("read")
        if self.host.indexes.search is None:
            raise Unavailable("search is not enabled on this wiki (SEARCH is empty); use list_pages")
        scope = self._scope(query, namespace, limit, MAX_SEARCH_LIMIT)
        if not 0 <= offset <= MAX_SEARCH_OFFSET:
            raise ValidationError(f"must be between 0 and {MAX_SEARCH_OFFSET}; narrow the query instead", field="offset")
        backend = self.host.indexes.search_backend()  # caught up: never older than the writes acknowledged
        assert backend is not None
        found = backend.search(query, namespaces=scope, offset=offset, limit=limit)
        hits: list[Hit] = [
            {"slug": h.slug, "title": h.title, "tags": list(h.tags), "snippet": h.snippet, "score": round(h.score, 4)}
            for h in found.hits
        ]
        results = [Result(id=h["slug"], title=h["title"], url=self.page_url(h["slug"])) for h in hits]
        if offset == 0 and plain_words(query):  # meaning cannot honour operators
            results += self._documents_results(query, scope, limit, pages_found=bool(hits))
        return {
            "hits": hits,
            "results": results,
            "more": found.more,
            # Past the deepest offset a caller may ask for, the way on is a narrower query, not paging.
            "next_offset": offset + len(hits) if found.more and offset + len(hits) <= MAX_SEARCH_OFFSET else None,
        }

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
