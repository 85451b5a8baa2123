"""Keeps the search index in step with page events, and catches it up with storage at start-up.

An index failure never fails a write: the failure is logged, and the next start-up (or
``hostcore reindex``) repairs the index by comparing its hashes with storage's.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .hookspecs import hookimpl
from .pages import Page, page_path, slug_from_path
from .search import SearchDoc

if TYPE_CHECKING:
    from .host import Host
    from .storage import Change

log = logging.getLogger("hostcore.search")


def doc_of(page: Page) -> SearchDoc:
    return SearchDoc(slug=page.slug, title=page.title, body=page.body, tags=tuple(page.tags), hash=page.hash)


def _update(host: Host, docs: list[SearchDoc], removed: list[str]) -> None:
    if host.search is None:
        return
    try:
        host.search.update(docs, removed)
    except Exception:
        log.exception("search index update failed for %s; it is repaired at the next start-up or reindex",
                      [d.slug for d in docs] + removed)


def catch_up(host: Host, progress=None) -> tuple[int, int]:  # noqa: ANN001
    """Index what storage holds and the index lacks; drop what is gone. Returns (indexed, removed)."""
    if host.search is None:
        return 0, 0
    stored = {slug: h for path, h in host.storage.hashes().items() if (slug := slug_from_path(path))}
    indexed = host.search.hashes()
    stale = [slug for slug, h in stored.items() if indexed.get(slug) != h]
    gone = [slug for slug in indexed if slug not in stored]
    batch: list[SearchDoc] = []
    for i, slug in enumerate(stale, 1):
        batch.append(doc_of(Page.from_bytes(slug, host.storage.read(page_path(slug)))))
        if len(batch) >= 500 or i == len(stale):
            host.search.update(batch, [])
            batch = []
        if progress:
            progress(1)
    if gone:
        host.search.update([], gone)
    return len(stale), len(gone)


@hookimpl
def startup(host: Host) -> None:
    try:
        indexed, removed = catch_up(host)
    except Exception:
        log.exception("search catch-up failed; run `hostcore reindex`")
        return
    if indexed or removed:
        log.info("search index caught up: %d pages indexed, %d removed", indexed, removed)


@hookimpl
def page_saved(host: Host, page: Page, previous: Page | None, change: Change) -> None:  # noqa: ARG001
    _update(host, [doc_of(page)], [])


@hookimpl
def page_deleted(host: Host, page: Page, change: Change) -> None:  # noqa: ARG001
    _update(host, [], [page.slug])


@hookimpl
def page_moved(host: Host, page: Page, old_slug: str, change: Change) -> None:  # noqa: ARG001
    _update(host, [doc_of(page)], [old_slug])
