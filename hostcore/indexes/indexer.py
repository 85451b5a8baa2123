"""Keeps the link graph and the search index in step with storage: page events, other processes'
writes and pages changed outside hostcore (a ``git push`` into the repository, a copied file).

Each index records the storage version it reflects (``Storage.version``: the git commit). When the
storage moved past it, the index is caught up along ``Storage.changed_since`` (a tree diff, so
the cost follows what changed, not the wiki's size): at start-up, in each process's background
thread after its page events (:class:`Follower`: in commit order, the events that come together in
one pass; the save does not wait), and before any answer that reads an index (:func:`catch_up`:
one read of the storage's version when nothing changed, so a read never answers from an index
older than the writes acknowledged before it). When the storage
keeps no versions, or cannot diff from the recorded one, the index is compared page by page with
storage's hashes instead (start-up, ``hostcore reindex``) and page events update it directly.
Catching up is serialised across processes per index: ``links.catch-up.lock`` and ``indexes.lock``
(the search index) in the instance folder.

An index failure never fails a write: it is logged, and the next read, start-up or ``hostcore
reindex`` repairs the index. A damaged index file is set aside and rebuilt at once, in the
background (:class:`hostcore.seams.derived.Rebuild`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from hostcore.domain.pages import Page, page_path, slug_from_path
from hostcore.errors import Unavailable
from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.locks import FileLock
from hostcore.seams.search import SearchDoc

if TYPE_CHECKING:
    from hostcore.host.host import Host
    from hostcore.indexes.link_graph import LinkGraph
    from hostcore.seams.search import SearchBackend

    Index = LinkGraph | SearchBackend

log = logging.getLogger("hostcore.index")
BATCH = 500
FOLLOWER = "hostcore.indexer.follower"  # host.state key of the process's Follower
GAP_SECONDS = 0.2  # under a stream of saves, a background catch-up starts at most this often
OPTIMIZE_AFTER = 1000  # pages indexed in one catch-up that make compacting the index worth it


def doc_of(page: Page) -> SearchDoc:
    return SearchDoc(slug=page.slug, title=page.title, body=page.body, tags=tuple(page.tags), hash=page.hash)


def _differences(host: Host, indexed: dict[str, str]) -> tuple[list[str], list[str]]:
    """(slugs whose stored hash differs from the indexed one, slugs indexed but gone)."""
    stored = {slug: h for path, h in host.storage.hashes().items() if (slug := slug_from_path(path))}
    return [s for s, h in stored.items() if indexed.get(s) != h], [s for s in indexed if s not in stored]


def _pages(host: Host, slugs: list[str]) -> list[Page]:
    return [Page.from_bytes(slug, host.storage.read(page_path(slug))) for slug in slugs]


def _plan(
    host: Host, recorded: str | None, indexed: Callable[[], dict[str, str]], full: bool, version: str | None = None
) -> tuple[list[str], list[str], str | None]:
    """(slugs to index, slugs to drop, the storage version that brings the index to).

    Along the storage's changes since ``recorded`` when it can tell, else (or when ``full``) by
    comparing every page's hash with ``indexed()``. Pages are read after the version is taken,
    so the index holds what the version holds or newer, and the next catch-up covers the rest.
    """
    storage = host.storage
    version = version or storage.version()
    if not full and recorded is not None and version is not None:
        paths: list[str] | None = [] if recorded == version else storage.changed_since(recorded, version)
        if paths is not None:
            slugs = sorted({slug for path in paths if (slug := slug_from_path(path))})
            present = [slug for slug in slugs if storage.exists(page_path(slug))]
            return present, sorted(set(slugs).difference(present)), version
    stale, gone = _differences(host, indexed())
    return stale, gone, version


def catch_up_links(
    host: Host, progress: Callable[[int], None] | None = None, full: bool = False, version: str | None = None
) -> tuple[int, int]:
    """Bring the link graph up to date with storage (``version``: the storage's, when just read).
    Returns (updated, removed)."""
    recorded = host.links.storage_version()
    stale, gone, version = _plan(host, recorded, host.links.hashes, full, version)
    for start in range(0, len(stale), BATCH):
        pages = _pages(host, stale[start : start + BATCH])
        changed = host.storage.last_changed([page_path(p.slug) for p in pages])
        host.links.update(
            pages, times={p.slug: changed[page_path(p.slug)].timestamp() for p in pages if page_path(p.slug) in changed}
        )
        if progress:
            progress(len(pages))
    if gone:
        host.links.update(removed=gone)
    if version != recorded:
        host.links.set_storage_version(version)
    return len(stale), len(gone)


def catch_up_search(
    host: Host, progress: Callable[[int], None] | None = None, full: bool = False, version: str | None = None
) -> tuple[int, int]:
    """Bring the search index up to date with storage (``full``: compare every page; ``version``:
    the storage's, when just read). Returns (indexed, removed)."""
    if host.search is None:
        return 0, 0
    recorded = host.search.storage_version()
    stale, gone, version = _plan(host, recorded, host.search.hashes, full, version)
    for start in range(0, len(stale), BATCH):
        chunk = stale[start : start + BATCH]
        host.search.update([doc_of(p) for p in _pages(host, chunk)], [])
        if progress:
            progress(len(chunk))
    if gone:
        host.search.update([], gone)
    if len(stale) >= OPTIMIZE_AFTER:
        host.search.optimize()
    if version != recorded:
        host.search.set_storage_version(version)
    return len(stale), len(gone)


def _lock(host: Host, index: str) -> FileLock:
    """The lock serialising one index's catch-ups across processes: each index its own, so a write
    that needs the link graph current never waits for the search index's commit."""
    return FileLock(host.instance_path / ("links.catch-up.lock" if index == "link graph" else "indexes.lock"))


def catch_up(host: Host, level: int = logging.INFO) -> list[Index]:
    """Catch every index that records a storage version up with what changed since, if anything.

    Costs one read of the storage's version when nothing changed since this process last looked;
    otherwise a tree diff and the changed pages. Returns the indexes kept this way (an index that
    records no version is caught up at start-up only); a failure is logged, never raised, and
    what was caught up is logged at ``level``.
    """
    version = host.storage.version()
    if version is None:
        return []
    state = host.state.setdefault("hostcore.indexer", {})
    if state.get("seen") == version:
        return state["followed"]
    if host.disk_full():  # an index cannot be written: it catches up once there is space again
        return []
    followed: list[Index] = []
    failed = False
    for name, index, fn in _indexes(host):
        caught = _catch_up_one(host, name, index, fn, level)
        if caught is not None:
            followed.append(index)
            failed = failed or not caught
    if not failed:
        state["seen"], state["followed"] = version, followed
    return followed


def _catch_up_one(host: Host, name: str, index: Index, fn: Callable[..., tuple[int, int]], level: int) -> bool | None:
    """Catch one index up under its own lock: None when it records no storage version (it is not
    followed), else whether it caught up (a failure is logged, never raised)."""
    with _lock(host, name):
        try:
            if index.storage_version() is None:
                return None
            # read under the index's lock: never older than the version another process caught it up to
            updated, removed = fn(host, version=host.storage.version())
        except Unavailable as exc:  # storage unreachable (S3 down): no stack trace for an outage
            log.warning("%s catch-up skipped: %s; it is tried again at the next read", name, exc)
            return False
        except Exception:
            log.exception("%s catch-up failed; it is tried again at the next read", name)
            return False
    if updated or removed:
        log.log(level, "%s caught up with storage: %d pages updated, %d removed", name, updated, removed)
    return True


def catch_up_graph(host: Host) -> None:
    """Catch the link graph alone up with storage, now: what a write that reads it needs (a new
    page's name check), without the search index's update (a flushed commit with tantivy) in the
    request. The background catch-up still takes the search index along."""
    if host.storage.version() is not None and not host.disk_full():
        _catch_up_one(host, "link graph", host.links, catch_up_links, logging.DEBUG)


def _indexes(host: Host) -> list[tuple[str, Index, Callable[..., tuple[int, int]]]]:
    found: list[tuple[str, Index, Callable[..., tuple[int, int]]]] = [("link graph", host.links, catch_up_links)]
    if host.search is not None:
        found.append(("search index", host.search, catch_up_search))
    return found


def _safely(what: str, fn: Callable[[], object]) -> None:
    try:
        fn()
    except Unavailable as exc:  # e.g. the index was found damaged and is being rebuilt: that takes this change in
        log.warning("%s skipped: %s", what, exc)
    except Exception:
        log.exception("%s failed; it is repaired at the next start-up (or run `hostcore reindex`)", what)


def rebuild(host: Host, name: str, catch_up_index: Callable[..., tuple[int, int]]) -> None:
    """Fill the emptied ``name`` from storage, logging its progress; a second pass takes in the
    pages saved while the first one ran."""
    total = sum(1 for path in host.storage.hashes() if slug_from_path(path))
    log.info("%s: rebuilding from storage, %d pages", name, total)
    started, done = time.monotonic(), 0

    def progress(count: int) -> None:
        nonlocal done
        done += count
        log.info("%s: rebuilding, %d of %d pages", name, done, total)

    catch_up_index(host, progress)
    catch_up_index(host)
    log.info("%s: rebuilt from storage, %d pages in %.1f s", name, total, time.monotonic() - started)


class Follower:
    """Each process's background catch-up: after every page event it makes, and every
    ``CATCH_UP_SECONDS`` when that is set (with several hosts on one storage, the indexes then
    follow the other hosts' changes before a read asks).

    A save answers once storage has it, without waiting for the indexes: the next read catches up
    first, in whichever process, so what it answers is never older. Events that come while a
    catch-up runs, or within ``gap`` seconds of its start, are taken by the next one, in one pass
    (one transaction or commit per index for all of them): under many writers a pass per save had
    made a tantivy commit, with its segment files and threads, every few saves, and the gap saves
    the server that CPU (``bench/concurrent_writers.py``). An event after a quiet spell is taken at
    once. An unreachable storage is logged once.
    """

    def __init__(self, host: Host, seconds: float = 0.0, gap: float = GAP_SECONDS) -> None:
        self.host, self.seconds, self.gap = host, seconds, gap
        self._changed = threading.Condition()
        self._again = self._stopping = self._busy = self._hurry = False
        self._thread: threading.Thread | None = None
        if seconds > 0:
            self._start()

    def kick(self) -> None:
        """Catch up soon: storage changed."""
        with self._changed:
            self._again = True
            if self._thread is None and not self._stopping:
                self._start()
            self._changed.notify_all()

    def _start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="hostcore-catch-up", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        down = False
        while True:
            with self._changed:
                if self.seconds > 0 and not (self._again or self._stopping):
                    self._changed.wait(self.seconds)
                if not self._again and (self._stopping or self.seconds <= 0):  # done: kicked again, it starts anew
                    self._thread, self._hurry = None, False
                    return
                self._again, self._busy = False, True
            started = time.monotonic()
            try:
                down = self._catch_up(down)
            finally:
                with self._changed:
                    self._busy = False
                    self._changed.notify_all()
                    # the next pass once ``gap`` has passed: saves that come meanwhile share it
                    while not (self._stopping or self._hurry) and (left := started + self.gap - time.monotonic()) > 0:
                        self._changed.wait(left)

    def _catch_up(self, down: bool) -> bool:
        """One catch-up; returns whether the storage was unreachable."""
        try:
            catch_up(self.host, logging.DEBUG)
        except Unavailable as exc:
            if not down:
                log.warning("background catch-up: %s; trying again at the next change or read", exc)
            return True
        except Exception:
            log.exception("background catch-up failed; it is tried again at the next change or read")
            return down
        if down:
            log.warning("background catch-up: the storage answers again")
        return False

    def wait(self) -> None:
        """Wait until every page event so far is caught up (tests, benchmarks)."""
        with self._changed:
            while (self._again and self._thread is not None) or self._busy:  # (stopped: nothing more comes)
                self._hurry = True
                self._changed.notify_all()
                self._changed.wait()
            self._hurry = False

    def stop(self) -> None:
        """Finish what was asked (a CLI command's saves leave the indexes current) and stop."""
        with self._changed:
            self._stopping = True
            self._changed.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()


def follower(host: Host) -> Follower:
    """The host's :class:`Follower` (made at start-up, or at the first page event of a host that was not started)."""
    found = host.state.get(FOLLOWER)
    if found is None:
        found = host.state.setdefault(FOLLOWER, Follower(host))
    return found


@hookimpl
def startup(host: Host) -> None:
    seconds = host.config.get("CATCH_UP_SECONDS") or 0
    if FOLLOWER not in host.state:
        host.state[FOLLOWER] = Follower(host, seconds if host.storage.version() is not None else 0.0)
    if host.disk_full():
        log.warning(
            "the wiki's disk is full (less than MIN_FREE_BYTES free): serving reads and searches only, writes are "
            "refused until space is freed; the indexes catch up once there is space"
        )
        return
    stores = (("link graph", host.links, catch_up_links), ("search index", host.search, catch_up_search))
    for name, store, catch_up_index in stores:
        if store is None:
            continue
        with _lock(host, name):
            store.rebuild.work = partial(rebuild, host, name, catch_up_index)
            if store.rebuild.pending:  # set aside as damaged: rebuilt in the background, the wiki serves meanwhile
                store.rebuild.resume()
                continue
            try:
                updated, removed = catch_up_index(host)
            except Exception:
                log.exception("%s catch-up failed; run `hostcore reindex`", name)
                continue
        if updated or removed:
            log.info("%s caught up: %d pages updated, %d removed", name, updated, removed)


def _update(host: Host, pages: list[Page], removed: list[str]) -> None:
    # Indexes that record a storage version follow its changes in the background, in commit order,
    # whichever process made them; the others take the event's pages as they come.
    followed: list[Index] = []
    if host.storage.version() is not None:
        follower(host).kick()
        known = host.state.get("hostcore.indexer", {}).get("followed")
        followed = known if known is not None else catch_up(host, logging.DEBUG)  # a first event learns which
    if not any(index is host.links for index in followed):
        _safely("link graph update", lambda: host.links.update(pages, removed))
    search = host.search
    if search is not None and not any(index is search for index in followed):
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
