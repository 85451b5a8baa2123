"""Finding pages: full-text search and ChatGPT-style fetch, limited to what the caller may read."""

from __future__ import annotations

from urllib.parse import quote

from typing_extensions import TypedDict

from hostcore.domain.pages import check_namespace
from hostcore.errors import NotFound, Unavailable, ValidationError
from hostcore.service.base import WikiBase

MAX_SEARCH_OFFSET = 1000
MAX_SEARCH_LIMIT = 50


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


class SearchMixin(WikiBase):
    """search and fetch; mixed into :class:`~hostcore.service.wiki.Wiki`."""

    def page_url(self, slug: str) -> str:
        return f"{self.host.config['PUBLIC_URL'].rstrip('/')}/{quote(slug)}"

    def _scope(self, query: str, namespace: str | None, limit: int, max_limit: int) -> frozenset[str] | None:
        """The namespaces a search of the caller covers (None: all); checks query, namespace and limit."""
        if not query.strip():
            raise ValidationError("is empty; give words to search for", field="query")
        if not 1 <= limit <= max_limit:
            raise ValidationError(f"must be between 1 and {max_limit}", field="limit")
        if namespace is None:
            return self.principal.namespaces
        check_namespace(namespace, "namespace")
        self.principal.require_namespace(namespace, "namespace")
        return frozenset({namespace})

    def search(self, query: str, namespace: str | None = None, offset: int = 0, limit: int = 20) -> SearchResult:
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
        return {
            "hits": hits,
            "results": [Result(id=h["slug"], title=h["title"], url=self.page_url(h["slug"])) for h in hits],
            "more": found.more,
            # Past the deepest offset a caller may ask for, the way on is a narrower query, not paging.
            "next_offset": offset + len(hits) if found.more and offset + len(hits) <= MAX_SEARCH_OFFSET else None,
        }

    def fetch(self, id: str) -> Fetched:
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
