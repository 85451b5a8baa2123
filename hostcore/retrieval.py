"""Finding pages: full-text search and ChatGPT-style fetch, limited to what the caller may read."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .errors import NotFound, Unavailable, ValidationError
from .indexer import catch_up
from .pages import check_namespace

if TYPE_CHECKING:
    from .wiki import Wiki

MAX_SEARCH_OFFSET = 1000
MAX_SEARCH_LIMIT = 50


class RetrievalMixin:
    """search and fetch; mixed into :class:`hostcore.wiki.Wiki`."""

    def page_url(self: Wiki, slug: str) -> str:
        return f"{self.host.config['PUBLIC_URL'].rstrip('/')}/{quote(slug)}"

    def search(self: Wiki, query: str, namespace: str | None = None, offset: int = 0, limit: int = 20) -> dict[str, Any]:
        self.principal.require("read")
        if self.host.search is None:
            raise Unavailable("search is not enabled on this wiki (SEARCH is empty); use list_pages")
        if not query.strip():
            raise ValidationError("is empty; give words to search for", field="query")
        if not 0 <= offset <= MAX_SEARCH_OFFSET:
            raise ValidationError(f"must be between 0 and {MAX_SEARCH_OFFSET}; narrow the query instead", field="offset")
        if not 1 <= limit <= MAX_SEARCH_LIMIT:
            raise ValidationError(f"must be between 1 and {MAX_SEARCH_LIMIT}", field="limit")
        scope = self.principal.namespaces
        if namespace is not None:
            check_namespace(namespace, "namespace")
            self.principal.require_namespace(namespace, "namespace")
            scope = frozenset({namespace})
        catch_up(self.host)
        found = self.host.search.search(query, namespaces=scope, offset=offset, limit=limit)
        hits = [
            {"slug": h.slug, "title": h.title, "tags": list(h.tags), "snippet": h.snippet, "score": round(h.score, 4)}
            for h in found.hits
        ]
        return {
            "hits": hits,
            "results": [{"id": h["slug"], "title": h["title"], "url": self.page_url(h["slug"])} for h in hits],
            "more": found.more,
            # Past the deepest offset a caller may ask for, the way on is a narrower query, not paging.
            "next_offset": offset + len(hits) if found.more and offset + len(hits) <= MAX_SEARCH_OFFSET else None,
        }

    def fetch(self: Wiki, id: str) -> dict[str, Any]:  # noqa: A002 - the name ChatGPT's connectors use
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
