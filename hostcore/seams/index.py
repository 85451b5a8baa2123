"""The derived-index seam: state kept from what storage holds, fed with what changed, in commit order.

The link graph, the search index and the passage index are derived indexes, and a plugin adds its
own with ``register_derived_indexes``. The host keeps each one current the same way
(:class:`hostcore.indexes.indexer.Indexes`): it records the storage version the index reflects
(:meth:`DerivedIndex.storage_version`) and, whenever storage moved past it, hands the index the
paths that changed since (:meth:`hostcore.Storage.changed_since`: pages, attachments, any file)
as :class:`Changes`: in a background thread after each change made through this process
(the ``storage_changed`` event), before each read that uses the index, at start-up, and every
``CATCH_UP_SECONDS``. One process at a time catches one index up. When the storage cannot tell
what changed (no recorded version, a version it cannot place, a storage without versions at
start-up) the index is compared with storage's hashes instead (:meth:`DerivedIndex.indexed`).
A storage without versions (``fs``) hands each index the event's paths as they come.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from hostcore.domain.pages import Page, slug_from_path
from hostcore.errors import NotFound

if TYPE_CHECKING:
    from hostcore.seams.derived import Rebuild
    from hostcore.seams.sqlite import DerivedDB
    from hostcore.seams.storage import Storage

BATCH = 500  # pages read and taken in at a time


@dataclass(frozen=True)
class Changes:
    """What an index takes in: ``paths``, the storage paths it wants (:meth:`DerivedIndex.wants`)
    that were written or deleted, sorted; ``version``, the storage version they bring the index to
    (None: a storage without versions). Read each path's content now (:meth:`read`): a path no
    longer there was deleted; content newer than ``version`` is fine, the next changes bring it again."""

    paths: tuple[str, ...]
    storage: Storage
    version: str | None = None
    progress: Callable[[int], None] | None = None

    def read(self, path: str) -> bytes | None:
        """The stored bytes at ``path``, or None when it was deleted."""
        try:
            return self.storage.read(path)
        except NotFound:
            return None

    def done(self, count: int) -> None:
        """Report ``count`` more paths taken in (the progress of a rebuild or ``hostcore reindex``)."""
        if self.progress is not None and count:
            self.progress(count)

    def pages(self, batch: int = BATCH) -> Iterator[tuple[list[Page], list[str]]]:
        """The changed pages, ``batch`` at a time: (pages as stored now, slugs of the pages
        deleted); each batch is reported :meth:`done` once the caller asks for the next."""
        slugs = [(path, slug) for path in self.paths if (slug := slug_from_path(path)) is not None]
        for start in range(0, len(slugs), batch):
            pages, gone = [], []
            for path, slug in slugs[start : start + batch]:
                data = self.read(path)
                if data is None:
                    gone.append(slug)
                else:
                    pages.append(Page.from_bytes(slug, data))
            yield pages, gone
            self.done(len(pages))


class DerivedIndex(ABC):
    """Base class of derived indexes. Implement :meth:`apply`; keep the index in a
    :class:`hostcore.DerivedDB` as :attr:`db` and the storage version, the rebuild after damage,
    :meth:`clear` and :meth:`close` come with it.

    ``name`` names it in logs (``"link graph"``), ``unit`` what it counts in them; it takes in the
    paths :meth:`wants` (by default the pages). An ``eventual`` index answers from what it holds
    while it works through what it was given (its :meth:`pending` says how much is left: the
    passage index embeds in the background); the others are caught up before every read that
    uses them, and answer ``unavailable`` while they are rebuilt after damage.
    """

    name: ClassVar[str] = ""
    unit: ClassVar[str] = "pages"
    eventual: ClassVar[bool] = False
    db: DerivedDB | None = None

    @property
    def lock(self) -> str:
        """The file, in the instance folder, that serialises this index's catch-ups across processes."""
        return re.sub(r"[^a-z0-9]+", "-", self.name.lower()).strip("-") + ".catch-up.lock"

    @property
    def rebuild(self) -> Rebuild | None:
        """The "being rebuilt after damage" mark; the host gives it its work and runs it."""
        return self.db.rebuild if self.db is not None else None

    def wants(self, path: str) -> bool:
        """Whether the index derives anything from the storage file at ``path``: pages, by default."""
        return slug_from_path(path) is not None

    def storage_version(self) -> str | None:
        """The storage version the index reflects, as recorded by :meth:`set_storage_version`;
        None when unknown (a new index): it is then compared with storage at start-up, and until
        it records one it is given each change made through this process as it comes."""
        return self.db.storage_version() if self.db is not None else None

    def set_storage_version(self, version: str | None) -> None:
        """Record the version the index now reflects (kept across restarts)."""
        if self.db is not None:
            self.db.set_storage_version(version)

    def identity(self) -> object:
        """A cheap mark of the index's files (a stat or two) that changes when they are deleted or
        replaced: while it and the storage's version are as a read last found them, the next read
        need not ask :meth:`storage_version` again. None: ask every time."""
        return self.db.identity() if self.db is not None else None

    def indexed(self) -> Mapping[str, str] | None:
        """Path -> hash of every file the index holds, to compare with storage's when it cannot
        tell what changed; None (the default): the index is emptied and given every file instead."""
        return None

    @abstractmethod
    def apply(self, changes: Changes) -> None:
        """Take in ``changes`` (see :class:`Changes`): update what each path gives, drop what a
        deleted one gave. Raising leaves the recorded version as it was: the same changes come again."""

    def clear(self) -> None:
        """Empty the index and forget its storage version (``hostcore reindex``, a rebuild)."""
        if self.db is None:
            raise NotImplementedError(f"{type(self).__name__} keeps no DerivedDB: implement clear()")
        self.db.clear()

    def prepare(self) -> None:
        """At start-up, before the first catch-up (one process at a time): forget what another
        configuration made (the passage index, another embedder's vectors)."""

    def start(self) -> None:
        """After the start-up catch-up: begin background work, if the index has any."""

    def kick(self) -> None:
        """Background work, if any, should look for something to do."""

    def wait(self) -> None:
        """Wait until background work, if any, has nothing left (tests, benchmarks, ``hostcore reindex``)."""

    def pending(self) -> int:
        """How many files it was given but does not reflect yet (an ``eventual`` index's work left)."""
        return 0

    def status(self) -> dict[str, Any]:
        """What ``health`` and ``hostcore status`` show of it."""
        return {"pending": self.pending()}

    def close(self) -> None:
        """Stop background work and release files (the host's close)."""
        if self.db is not None:
            self.db.close()
