"""The search backend (``SEARCH``) as a derived index: pages in, documents for the engine out.

Each document carries who last changed the page and when (the storage's ``last_authors`` and
``last_changed``; without history: no author, and the time it was indexed), for search's ``author``, ``since`` and ``before`` filters.

A :class:`~hostcore.seams.search.SearchBackend` keeps its own seam (``update``, ``hashes``, the
optional storage version), so search plugins need nothing of the derived-index protocol; this
adapter reads the changed pages and hands the backend their documents.
"""

from __future__ import annotations

import time

from hostcore.domain.pages import Page, page_path
from hostcore.seams.derived import Rebuild
from hostcore.seams.index import Changes, DerivedIndex
from hostcore.seams.search import SearchBackend, SearchDoc

OPTIMIZE_AFTER = 1000  # pages indexed in one catch-up that make compacting the index worth it


def doc_of(page: Page, author: str = "", changed: float | None = None) -> SearchDoc:
    return SearchDoc(slug=page.slug, title=page.title, body=page.body, tags=tuple(page.tags), hash=page.hash, author=author, changed=changed)


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
                paths = [page_path(p.slug) for p in pages]
                times = changes.storage.last_changed(paths) if paths else {}
                authors = changes.storage.last_authors(paths) if paths else {}
                now, docs = time.time(), []
                for page, path in zip(pages, paths, strict=True):
                    when = times.get(path)  # none without history: changed now, as the link graph records it
                    docs.append(doc_of(page, authors.get(path, ""), when.timestamp() if when is not None else now))
                self.backend.update(docs, removed)
            indexed += len(pages)
        if indexed >= OPTIMIZE_AFTER:
            self.backend.optimize()

    def clear(self) -> None:
        self.backend.clear()

    def close(self) -> None:
        self.backend.close()
