"""Keeps the link graph and the search index in step with page events, and catches both up with
storage at start-up (pages changed outside hostcore: a ``git pull``, a copied file).

An index failure never fails a write: it is logged, and the next start-up (or ``hostcore
reindex``) repairs the index by comparing its hashes with storage's. A damaged index file is set
aside and rebuilt at once, in the background (:class:`hostcore.seams.derived.Rebuild`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from hostcore.domain.pages import Page, page_path, slug_from_path
from hostcore.errors import Unavailable
from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.search import SearchDoc

if TYPE_CHECKING:
    from hostcore.host.host import Host

log = logging.getLogger("hostcore.index")
BATCH = 500
OPTIMIZE_AFTER = 1000  # pages indexed in one catch-up that make compacting the index worth it


def doc_of(page: Page) -> SearchDoc:
    return SearchDoc(slug=page.slug, title=page.title, body=page.body, tags=tuple(page.tags), hash=page.hash)


def _differences(host: Host, indexed: dict[str, str]) -> tuple[list[str], list[str]]:
    """(slugs whose stored hash differs from the indexed one, slugs indexed but gone)."""
    stored = {slug: h for path, h in host.storage.hashes().items() if (slug := slug_from_path(path))}
    return [s for s, h in stored.items() if indexed.get(s) != h], [s for s in indexed if s not in stored]


def _pages(host: Host, slugs: list[str]) -> list[Page]:
    return [Page.from_bytes(slug, host.storage.read(page_path(slug))) for slug in slugs]


def catch_up_links(host: Host, progress: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Bring the link graph up to date with storage. Returns (updated, removed)."""
    stale, gone = _differences(host, host.links.hashes())
    for start in range(0, len(stale), BATCH):
        pages = _pages(host, stale[start : start + BATCH])
        changed = host.storage.last_changed([page_path(p.slug) for p in pages])
        host.links.update(pages, times={p.slug: changed[page_path(p.slug)].timestamp() for p in pages if page_path(p.slug) in changed})
        if progress:
            progress(len(pages))
    if gone:
        host.links.update(removed=gone)
    return len(stale), len(gone)


def catch_up_search(host: Host, progress: Callable[[int], None] | None = None) -> tuple[int, int]:
    """Bring the search index up to date with storage. Returns (indexed, removed)."""
    if host.search is None:
        return 0, 0
    stale, gone = _differences(host, host.search.hashes())
    for start in range(0, len(stale), BATCH):
        chunk = stale[start : start + BATCH]
        host.search.update([doc_of(p) for p in _pages(host, chunk)], [])
        if progress:
            progress(len(chunk))
    if gone:
        host.search.update([], gone)
    if len(stale) >= OPTIMIZE_AFTER:
        host.search.optimize()
    return len(stale), len(gone)


def _safely(what: str, fn: Callable[[], object]) -> None:
    try:
        fn()
    except Unavailable as exc:  # e.g. the index was found damaged and is being rebuilt: that takes this change in
        log.warning("%s skipped: %s", what, exc)
    except Exception:
        log.exception("%s failed; it is repaired at the next start-up (or run `hostcore reindex`)", what)


def rebuild(host: Host, name: str, catch_up: Callable[..., tuple[int, int]]) -> None:
    """Fill the emptied ``name`` from storage, logging its progress; a second pass takes in the
    pages saved while the first one ran."""
    total = sum(1 for path in host.storage.hashes() if slug_from_path(path))
    log.info("%s: rebuilding from storage, %d pages", name, total)
    started, done = time.monotonic(), 0

    def progress(count: int) -> None:
        nonlocal done
        done += count
        log.info("%s: rebuilding, %d of %d pages", name, done, total)

    catch_up(host, progress)
    catch_up(host)
    log.info("%s: rebuilt from storage, %d pages in %.1f s", name, total, time.monotonic() - started)


@hookimpl
def startup(host: Host) -> None:
    if host.disk_full():
        log.warning(
            "the wiki's disk is full (less than MIN_FREE_BYTES free): serving reads and searches only, writes are "
            "refused until space is freed; the indexes catch up at the next start-up"
        )
        return
    stores = (("link graph", host.links, catch_up_links), ("search index", host.search, catch_up_search))
    for name, store, catch_up in stores:
        if store is None:
            continue
        store.rebuild.work = partial(rebuild, host, name, catch_up)
        if store.rebuild.pending:  # set aside as damaged: rebuilt in the background, the wiki serves meanwhile
            store.rebuild.resume()
            continue
        try:
            updated, removed = catch_up(host)
        except Exception:
            log.exception("%s catch-up failed; run `hostcore reindex`", name)
            continue
        if updated or removed:
            log.info("%s caught up: %d pages updated, %d removed", name, updated, removed)


def _update(host: Host, pages: list[Page], removed: list[str]) -> None:
    _safely("link graph update", lambda: host.links.update(pages, removed))
    if host.search is not None:
        search = host.search
        _safely("search index update", lambda: search.update([doc_of(p) for p in pages], removed))


@hookimpl
def page_saved(host: Host, page: Page) -> None:
    _update(host, [page], [])


@hookimpl
def page_deleted(host: Host, page: Page) -> None:
    _update(host, [], [page.slug])


@hookimpl
def page_moved(host: Host, page: Page, old_slug: str) -> None:
    _update(host, [page], [old_slug])
