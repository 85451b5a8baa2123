"""The search backend (``SEARCH``) as a derived index: pages in, documents for the engine out.

A :class:`~hostcore.seams.search.SearchBackend` keeps its own seam (``update``, ``hashes``, the
optional storage version), so search plugins need nothing of the derived-index protocol; this
adapter reads the changed pages and hands the backend their documents.
"""

from __future__ import annotations

from hostcore.domain.pages import Page, page_path
from hostcore.seams.derived import Rebuild
from hostcore.seams.index import Changes, DerivedIndex
from hostcore.seams.search import SearchBackend, SearchDoc

OPTIMIZE_AFTER = 1000  # pages indexed in one catch-up that make compacting the index worth it


def doc_of(page: Page) -> SearchDoc:
    return SearchDoc(slug=page.slug, title=page.title, body=page.body, tags=tuple(page.tags), hash=page.hash)


class SearchIndex(DerivedIndex):
    """``backend`` kept in step with storage's pages."""

    name = "search index"

    def __init__(self, backend: SearchBackend) -> None:
        self.backend = backend

    @property
    def lock(self) -> str:
        return "indexes.lock"

    @property
    def rebuild(self) -> Rebuild | None:
        return self.backend.rebuild

    def storage_version(self) -> str | None:
        return self.backend.storage_version()

    def set_storage_version(self, version: str | None) -> None:
        self.backend.set_storage_version(version)

    def identity(self) -> object:
        return self.backend.identity()

    def indexed(self) -> dict[str, str]:
        return {page_path(slug): digest for slug, digest in self.backend.hashes().items()}

    def apply(self, changes: Changes) -> None:
        indexed = 0
        for pages, removed in changes.pages():
            if pages or removed:
                self.backend.update([doc_of(p) for p in pages], removed)
            indexed += len(pages)
        if indexed >= OPTIMIZE_AFTER:
            self.backend.optimize()

    def clear(self) -> None:
        self.backend.clear()

    def close(self) -> None:
        self.backend.close()
