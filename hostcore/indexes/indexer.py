"""Keeps every derived index in step with storage: changes made through any process or host, and
files changed outside hostcore (a ``git push`` into the repository, a copied file).

:class:`Indexes` is the one component that owns the derived indexes of a host (the link graph,
the search index, the passage index, and those plugins register with ``register_derived_indexes``)
and their lifecycle: :meth:`~Indexes.start`, :meth:`~Indexes.kick`, :meth:`~Indexes.wait`,
:meth:`~Indexes.close`. Each index records the storage version it reflects
(``Storage.version``: the git commit); when the storage moved past it, the index is given the paths
that changed since (``Storage.changed_since``: a tree diff, so the cost follows what changed, not
the wiki's size), pages and attachments alike (:class:`~hostcore.seams.index.Changes`): at start-up,
in each process's background thread after the changes it makes (the ``storage_changed`` event; in
commit order, the changes that come together in one pass; the change does not wait), every
``CATCH_UP_SECONDS`` when set, and before any answer that reads an index (:meth:`Indexes.current`:
one read of the storage's version when nothing changed, so a read never answers from an index
older than the writes acknowledged before it). When the storage keeps no versions, or cannot diff
from the recorded one, the index is compared with storage's hashes instead (start-up, ``hostcore
reindex``), and the events hand it their paths directly. Catching up is serialised across processes
per index (each its own lock file in the instance folder).

An index failure never fails a write: it is logged, and the next read, start-up or ``hostcore
reindex`` repairs the index. A damaged index file is set aside and rebuilt at once, in the
background (:class:`hostcore.seams.derived.Rebuild`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from hostcore.errors import StartupError, Unavailable
from hostcore.indexes.search_index import SearchIndex
from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.index import Changes, DerivedIndex
from hostcore.seams.locks import FileLock
from hostcore.seams.worker import CoalescingWorker

if TYPE_CHECKING:
    from hostcore.host.host import Host
    from hostcore.indexes.link_graph import LinkGraph
    from hostcore.indexes.passages import PassageIndex
    from hostcore.seams.search import SearchBackend
    from hostcore.seams.storage import Storage

log = logging.getLogger("hostcore.index")
# Under a stream of saves, a background catch-up starts at most this often. Each pass is a commit
# of the search index, and tantivy merges its smallest segments every few commits; on a big wiki
# one of those holds thousands of pages, so passes close together cost the saves their CPU
# (docs/operators.md). Reads never wait for a pass: they catch up themselves.
GAP_SECONDS = 1.0
LINK_GRAPH, SEARCH_INDEX, PASSAGE_INDEX = "link graph", "search index", "passage index"
UNVERSIONED = "unversioned"  # what an index records once compared with a storage that keeps no versions (fs)
REINDEX = "by `hostcore reindex`"


class Indexes:
    """The derived indexes of one host (in the order they are caught up) and their lifecycle.

    A change is acknowledged once storage has it, without waiting for the indexes: the
    background catch-up (:attr:`follower`) takes it soon after, and the next read catches up
    first, in whichever process, so what it answers is never older. Changes that come while a
    catch-up runs, or within ``gap`` seconds of its start, are taken by the next one, in one pass
    (one transaction or commit per index for all of them: under 64 writers a pass per save had
    made a tantivy commit every few saves). ``every``: catch up this often unasked too (several
    hosts on one storage: the indexes follow the other hosts' changes before a read asks).
    """

    def __init__(
        self,
        storage: Storage,
        folder: Path,
        *,
        links: LinkGraph,
        search: SearchBackend | None,
        passages: PassageIndex,
        disk_full: Callable[[], bool] = lambda: False,
        every: float = 0.0,
        gap: float = GAP_SECONDS,
    ) -> None:
        self.storage, self.folder, self.disk_full = storage, Path(folder), disk_full
        self.links, self.search, self.passages = links, search, passages
        self._indexes: dict[str, DerivedIndex] = {}
        self._follows: dict[str, bool] = {}  # index -> whether it records a storage version (else: events feed it)
        self._seen: dict[str, tuple[str, object]] = {}  # index -> (storage version, its identity) a read last found it at
        self.follower = CoalescingWorker(
            self.catch_up, "hostcore-catch-up", what="background catch-up", gap=gap, every=every, logger=log
        )
        for index in (links, SearchIndex(search) if search is not None else None, passages):
            if index is not None:
                self.register(index)

    def register(self, index: DerivedIndex) -> None:
        """Add ``index`` (what ``register_derived_indexes`` hands plugins); its name must be new."""
        if not isinstance(index, DerivedIndex) or not index.name:
            raise StartupError(f"register_derived_indexes: {index!r} must be a DerivedIndex with a name")
        if index.name in self._indexes:
            raise StartupError(f"two plugins register a derived index named {index.name!r}; remove one from PLUGINS")
        self._indexes[index.name] = index
        if index.rebuild is not None:
            index.rebuild.work = partial(self._rebuild, index)

    def __iter__(self) -> Iterator[DerivedIndex]:
        return iter(list(self._indexes.values()))

    def __getitem__(self, name: str) -> DerivedIndex:
        return self._indexes[name]

    # --- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """At start-up, in every process: each index in turn (one process at a time) forgets
        what another configuration made, is caught up with storage (compared with it when it
        records no version) or, when damaged, rebuilt in the background; then its own background
        work begins, and the periodic catch-up (``every``)."""
        if self.storage.version() is not None:
            self.follower.start()
        if self.disk_full():
            log.warning(
                "the wiki's disk is full (less than MIN_FREE_BYTES free): serving reads and searches only, writes are "
                "refused until space is freed; the indexes catch up once there is space"
            )
            return
        for index in self:
            with self._lock(index):
                try:
                    index.prepare()
                    if index.rebuild is not None and index.rebuild.pending:  # set aside as damaged: the wiki serves meanwhile
                        index.rebuild.resume()
                        changed = 0
                    else:
                        changed = self._catch_up_locked(index, compare=True)
                except Exception:
                    log.exception("%s catch-up failed; run `hostcore reindex`", index.name)
                    continue
            if changed:
                log.info("%s caught up with storage: %d %s changed", index.name, changed, index.unit)
                index.kick()
            index.start()

    def kick(self) -> None:
        """Catch up in the background soon: storage changed."""
        self.follower.kick()

    def wait(self) -> None:
        """Wait until every index reflects every change so far and its background work (a rebuild
        this process runs included) is done (tests, benchmarks)."""
        self.follower.wait()
        for index in self:
            if index.rebuild is not None:
                index.rebuild.wait()
        self.catch_up()
        for index in self:
            index.wait()

    def finish(self) -> None:
        """Run the background catch-up asked for now, and no other after it (a server stopping
        cleanly: the saves of its last second leave the indexes current, whatever the gap)."""
        self.follower.stop()

    def close(self) -> None:
        """Finish the catch-up asked for (a CLI command's changes leave the indexes current), then
        stop every index's background work and close it."""
        self.finish()
        for index in self:
            if index.rebuild is not None:
                index.rebuild.wait()
        for index in self:
            try:
                index.close()
            except Exception:
                log.exception("%s: closing failed", index.name)

    # --- changes -------------------------------------------------------------------------

    def changed(self, paths: Sequence[str]) -> None:
        """``paths`` were written or deleted through this process. Indexes that record a storage
        version take them in the background, in commit order with every other process's changes;
        the others (a storage without versions, a search backend that records none) now."""
        if self.storage.version() is not None:
            self.kick()
            direct = [index for index in self if not self._followed(index)]
        else:
            direct = list(self)
        for index in direct:
            wanted = tuple(sorted(p for p in paths if index.wants(p)))
            if wanted and not (index.rebuild is not None and index.rebuild.pending):  # the rebuild takes them in
                self._safely(index, Changes(wanted, self.storage))
                index.kick()  # its background work, if any, takes over

    def _followed(self, index: DerivedIndex) -> bool:
        known = self._follows.get(index.name)
        if known is None:
            known = self._follows[index.name] = index.storage_version() is not None
        return known

    @staticmethod
    def _safely(index: DerivedIndex, changes: Changes) -> None:
        """``index`` takes ``changes`` in; a failure is logged, never raised: the change is stored."""
        try:
            index.apply(changes)
        except Unavailable as exc:  # e.g. the index was found damaged and is being rebuilt: that takes this change in
            log.warning("%s update skipped: %s", index.name, exc)
        except Exception:
            log.exception("%s update failed; it is repaired at the next start-up (or run `hostcore reindex`)", index.name)

    # --- catching up ---------------------------------------------------------------------

    def catch_up(self, *names: str, nudge: bool = True) -> None:
        """Catch the indexes named (all by default) up with what changed since, if anything, and
        (``nudge``) let the background work of those given something take over.

        Costs one read of the storage's version and a stat or two of each index's files when
        nothing changed (:meth:`_unchanged`); otherwise a read of the version the index records,
        and when storage moved past it a tree diff and the changed files. An index that records no storage
        version (events feed it), or is being rebuilt, is left alone; one that recorded a version
        before and records none now lost its files (deleted, replaced, its version unreadable):
        it is marked and rebuilt in the background (:meth:`_lost`). A failure is logged, never
        raised. Raises Unavailable when the storage cannot be reached, or when an index's file is
        found damaged (it is then rebuilt).
        """
        version = self._version()
        checked_disk = False
        for index in [self._indexes[name] for name in names] if names else self:
            changed: int | None = 0
            if not (index.rebuild is not None and index.rebuild.pending) and not self._unchanged(index, version):
                identity = index.identity()  # before the version: files replaced after it are seen next time
                recorded = index.storage_version()
                if recorded is None:
                    if self._follows.get(index.name):
                        self._lost(index)
                else:
                    self._follows[index.name] = True  # learnt here by a process that started while it was rebuilt
                    if recorded != version:
                        if not checked_disk:
                            if self.disk_full():  # an index cannot be written: it catches up once there is space again
                                return
                            checked_disk = True
                        changed = self._catch_up_one(index)
                    if changed is not None:
                        self._seen[index.name] = (version, identity)
            # what it was given, here or by another thread or process meanwhile
            if nudge and (changed or (index.eventual and index.pending())):
                index.kick()

    def _unchanged(self, index: DerivedIndex, version: str) -> bool:
        """Whether ``index`` was found at ``version`` by this process and its files are the same
        since (its :meth:`~hostcore.seams.index.DerivedIndex.identity`): then a read need not ask
        it for its recorded version (a stat or two, not a read of the file)."""
        seen = self._seen.get(index.name)
        return seen is not None and seen[0] == version and seen[1] is not None and seen[1] == index.identity()

    def _version(self) -> str:
        """The storage's version, or :data:`UNVERSIONED` for a storage that keeps none."""
        return self.storage.version() or UNVERSIONED

    def _lost(self, index: DerivedIndex) -> None:
        """``index`` recorded a storage version and records none now: its files were deleted,
        replaced or found unreadable while the wiki ran. Rebuild it in the background (a comparison
        with storage: what it still holds is kept), marked meanwhile, so no read answers from it;
        one that cannot be marked is compared with storage now."""
        lost = f"{index.name}: it records no storage version any more (its files went missing, were replaced or unreadable)"
        if index.rebuild is None:
            log.warning("%s; comparing it with storage now", lost)
            with self._lock(index):
                self._catch_up_locked(index, compare=True)
            return
        log.warning("%s; comparing it with storage in the background", lost)
        index.rebuild.start(index.rebuild.MISSING)

    def _catch_up_one(self, index: DerivedIndex) -> int | None:
        """Catch one index up under its lock: how many files it was given, None when that failed
        (logged, never raised)."""
        with self._lock(index):
            try:
                changed = self._catch_up_locked(index, compare=False)
            except Unavailable as exc:  # storage unreachable (S3 down): no stack trace for an outage
                log.warning("%s catch-up skipped: %s; it is tried again at the next read", index.name, exc)
                return None
            except Exception:
                log.exception("%s catch-up failed; it is tried again at the next read", index.name)
                return None
        if changed:
            log.debug("%s caught up with storage: %d %s changed", index.name, changed, index.unit)
        return changed

    def _catch_up_locked(
        self, index: DerivedIndex, *, compare: bool, full: bool = False, progress: Callable[[int], None] | None = None
    ) -> int:
        """Give ``index`` what changed since the version it records (under its lock); returns how
        many files. An index that records none is compared with storage when ``compare``, else
        left alone (events feed it). ``full``: compare it with storage whatever it records."""
        recorded = index.storage_version()
        if recorded is None and not (compare or full):
            return 0
        version = self._version()  # read under the lock: never older than another process caught it up to
        paths = self._changed_paths(index, recorded, version, full)
        if paths:
            index.apply(Changes(tuple(paths), self.storage, None if version == UNVERSIONED else version, progress))
        if version != recorded or full:
            index.set_storage_version(version)
        self._follows[index.name] = index.storage_version() is not None
        return len(paths)

    def _changed_paths(self, index: DerivedIndex, recorded: str | None, version: str, full: bool) -> list[str]:
        """The paths ``index`` wants that changed from ``recorded`` to ``version``: along the
        storage's changes when it can tell, else by comparing what the index holds with storage's
        hashes (an index that cannot say what it holds is emptied and given everything). Files are
        read after the version is taken, so the index holds what the version holds or newer, and
        the next catch-up covers the rest."""
        if not full and recorded is not None and version != UNVERSIONED:
            since = [] if recorded == version else self.storage.changed_since(recorded, version)
            if since is not None:
                return sorted({path for path in since if index.wants(path)})
        stored = {path: digest for path, digest in self.storage.hashes().items() if index.wants(path)}
        held = index.indexed()
        if held is None:
            index.clear()
            return sorted(stored)
        return sorted({p for p, digest in stored.items() if held.get(p) != digest} | {p for p in held if p not in stored})

    def _lock(self, index: DerivedIndex) -> FileLock:
        """The lock serialising one index's catch-ups across processes: each index its own, so a
        write that needs the link graph current never waits for the search index's commit."""
        return FileLock(self.folder / index.lock)

    def _rebuild(self, index: DerivedIndex) -> None:
        """Bring the marked ``index`` in line with storage (its :class:`~hostcore.seams.derived.Rebuild`'s
        work: emptied after damage, so filled; lost files, so compared), logging its progress and
        recording it in the mark, whence every process tells callers how long to wait; a second
        pass takes in what changed while the first one ran."""
        rebuild = index.rebuild
        assert rebuild is not None
        total = sum(1 for path in self.storage.hashes() if index.wants(path))
        log.info("%s: rebuilding from storage, %d %s", index.name, total, index.unit)
        started, done = time.monotonic(), 0
        rebuild.progress(0, total, index.unit)

        def progress(count: int) -> None:
            nonlocal done
            done += count
            rebuild.progress(done, total, index.unit)
            log.info("%s: rebuilding, %d of %d %s", index.name, done, total, index.unit)

        for report in (progress, None):
            with self._lock(index):
                if not rebuild.pending:  # done meanwhile by another process (``hostcore reindex``)
                    return
                self._catch_up_locked(index, compare=True, progress=report)
        index.kick()
        log.info("%s: rebuilt from storage, %d %s in %.1f s", index.name, total, index.unit, time.monotonic() - started)

    # --- what the service and the CLI read ------------------------------------------------

    def current(self, name: str, *, while_rebuilt: bool = False) -> DerivedIndex:
        """The index ``name``, caught up with storage for a read: Unavailable while it is rebuilt
        after damage or lost files (unless ``while_rebuilt``). An ``eventual`` index's rebuild only
        notes every document as pending (its background work indexes them), so it is short; after
        it, the index answers from what it holds, saying how much is pending, and its background
        work is nudged."""
        index = self._indexes[name]
        self.catch_up(name, nudge=not index.eventual)  # first: it finds an index whose files went missing
        if index.rebuild is not None and not while_rebuilt:
            index.rebuild.check()
        if index.eventual:
            index.kick()
        return index

    def link_graph(self, *, while_rebuilt: bool = False) -> LinkGraph:
        """The link graph, current (see :meth:`current`)."""
        return cast("LinkGraph", self.current(LINK_GRAPH, while_rebuilt=while_rebuilt))

    def search_backend(self) -> SearchBackend | None:
        """The search backend, current (see :meth:`current`); None when ``SEARCH`` is empty."""
        if self.search is None:
            return None
        self.current(SEARCH_INDEX)
        return self.search

    def passage_index(self) -> PassageIndex:
        """The passage index, with what changed taken in (its ``pending`` is exact; see :meth:`current`)."""
        return cast("PassageIndex", self.current(PASSAGE_INDEX))

    def status(self, name: str) -> dict[str, Any]:
        """``name``'s status (see :meth:`DerivedIndex.status`), caught up first (no background
        work is started for it: ``hostcore status`` only looks)."""
        self.catch_up(name, nudge=False)
        return self._indexes[name].status()

    def reindex(self, name: str, progress: Callable[[int], None] | None = None, *, empty: bool = True) -> int:
        """Compare ``name`` with storage now, in this thread (``hostcore reindex``), emptied first
        unless not ``empty``; returns how many files it was given. Clears a rebuild mark."""
        index = self._indexes[name]
        with self._lock(index):
            if empty and index.rebuild is not None:  # the servers' reads say so meanwhile, rather than answer from it
                index.rebuild.mark(REINDEX)
            index.prepare()
            if empty:
                index.clear()
            changed = self._catch_up_locked(index, compare=True, full=empty, progress=progress)
            if index.rebuild is not None:
                index.rebuild.done()
        return changed

    def rebuilding(self, *, progress: bool = True) -> list[dict[str, Any]]:
        """The indexes being rebuilt now, by any process (one look at a marker file each): each
        one's name, why, when it should be done and (``progress``) how far it got (what health shows)."""
        return [index.rebuild.state(progress) for index in self if index.rebuild is not None and index.rebuild.pending]


@hookimpl
def startup(host: Host) -> None:
    host.indexes.start()


@hookimpl
def storage_changed(host: Host, paths: list[str]) -> None:
    host.indexes.changed(paths)
