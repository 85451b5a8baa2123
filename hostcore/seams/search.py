"""The search seam: a small base class every search engine plugin implements.

The host keeps the index in step (as a derived index, :mod:`hostcore.indexes.search_index`): after
every change it calls :meth:`SearchBackend.update` with the changed pages' documents and the removed
slugs; at start-up it compares :meth:`SearchBackend.hashes`
with the storage's page hashes and indexes what differs (pages changed outside hostcore). A backend
that records the storage version it reflects (:meth:`SearchBackend.storage_version`) is caught up
along the storage's changes since that version instead, at start-up and before every search.
Access is the caller's business: :meth:`SearchBackend.search` gets the namespaces the caller may
read (None: all) and filters inside the engine, so paging stays exact. Hidden pages are never
indexed.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from hostcore.seams.derived import Rebuild
from hostcore.seams.settings import Setting, with_defaults


@dataclass(frozen=True)
class SearchDoc:
    """What the index holds for one page."""

    slug: str
    title: str
    body: str
    tags: tuple[str, ...]
    hash: str
    author: str = ""  # who last changed it ("" when the storage keeps no history)
    changed: float | None = None  # when it last changed (epoch seconds; None when unknown)

    @property
    def namespace(self) -> str:
        return self.slug.split("/", 1)[0]


@dataclass(frozen=True)
class SearchFilters:
    """What a search keeps besides its query: pages holding every tag of ``tags`` (lower case),
    last changed by ``author`` (compared case-insensitively), last changed at or after ``since``
    and strictly before ``before`` (epoch seconds). A page whose time is unknown passes no date
    filter. Engines apply them inside the engine, as the namespaces, so paging stays exact."""

    tags: tuple[str, ...] = ()
    author: str | None = None
    since: float | None = None
    before: float | None = None

    def __bool__(self) -> bool:
        return bool(self.tags) or self.author is not None or self.since is not None or self.before is not None


NO_FILTERS = SearchFilters()


@dataclass(frozen=True)
class SearchHit:
    """One match. ``snippet`` is escaped HTML with ``<mark>`` around the matched terms."""

    slug: str
    title: str
    tags: tuple[str, ...]
    snippet: str
    score: float


@dataclass(frozen=True)
class SearchResults:
    hits: list[SearchHit]
    more: bool


class SearchBackend(ABC):
    """Base class of search engines. Registered by ``name`` via ``register_search_backends``.

    Must implement :meth:`update`, :meth:`search` and :meth:`hashes`. Writes may come from several
    processes at once (gunicorn workers, the CLI): a backend serialises them itself and never lets a
    lock error reach the caller. The constructor receives the folder for its files and its config
    (``PLUGIN_CONFIG.<name>`` checked against :attr:`settings`, defaults filled in).

    Its files are derived data: when a backend finds them damaged (checked when it opens them, or
    an error at run time) it sets them aside (:func:`hostcore.set_aside`,
    :func:`hostcore.recover_sqlite`), starts again empty and calls ``self.rebuild.start()``; the
    host then refills it from storage in the background, and searches answer Unavailable
    meanwhile. A call that met the damage raises ``self.rebuild.error()``. Files found missing
    while it runs are the same (``self.rebuild.start(self.rebuild.MISSING)``), unless the
    :meth:`storage_version` it records went with them: then the host finds that it records none
    and does the same. A recorded version it cannot read is None (unknown), never an error.
    """

    name: ClassVar[str] = ""
    settings: ClassVar[Mapping[str, Setting]] = {}  # the PLUGIN_CONFIG keys it takes

    def __init__(self, root: Path, config: Mapping[str, Any] | None = None) -> None:
        self.root = Path(root)
        self.config = with_defaults(self.settings, config, f"the {self.name or type(self).__name__} search backend")
        self.rebuild = Rebuild(self.root / "rebuilding", "search index")

    @abstractmethod
    def update(self, docs: Sequence[SearchDoc] = (), removed: Sequence[str] = ()) -> None:
        """Index ``docs`` (replacing any older version of each slug) and drop ``removed`` slugs."""

    @abstractmethod
    def search(
        self, query: str, *, namespaces: Collection[str] | None, offset: int = 0, limit: int = 20,
        filters: SearchFilters = NO_FILTERS,
    ) -> SearchResults:
        """Best match first; only pages passing ``filters``. Every word matches in any of its English
        inflections (:func:`hostcore.stem`), a page holding the word as typed ranking above one
        holding another form of it. Raises ValidationError(field="query") for a query it cannot parse."""

    def ranked(
        self, query: str, *, namespaces: Collection[str] | None, offset: int = 0, limit: int, marked: int,
        filters: SearchFilters = NO_FILTERS,
    ) -> SearchResults:
        """The hits :meth:`search` gives, only the first ``marked`` of them sure to carry their
        snippets (the rest may carry ""): a search fusing the engine's ranking with the pages near
        in meaning reads the first fifty hits and shows a page of them. Optional: by default
        :meth:`search`, every snippet made; an engine that defines it can make its :meth:`search`
        this with ``marked=limit``."""
        return self.search(query, namespaces=namespaces, offset=offset, limit=limit, filters=filters)

    @abstractmethod
    def hashes(self) -> dict[str, str]:
        """Slug -> hash of every indexed page (what :meth:`update` was given)."""

    def documents(self, slugs: Sequence[str]) -> dict[str, SearchDoc] | None:
        """Slug -> the document indexed for it, for those of ``slugs`` the index holds: its title,
        body, tags and hash as the engine keeps them (``author`` and ``changed`` may be left at
        their defaults). The host shows a page found by meaning alone from it, one look-up for
        them all instead of a storage read each. Optional: None (the default), when the engine
        keeps no text to give back; the host then reads storage."""
        return None

    def clear(self) -> None:
        """Empty the index (and forget its storage version)."""
        self.update(removed=list(self.hashes()))
        self.set_storage_version(None)

    def storage_version(self) -> str | None:
        """The storage version (:meth:`hostcore.Storage.version`) the index reflects, as recorded by
        :meth:`set_storage_version`; None when unknown. Optional: without it the index is caught up
        with changes made outside hostcore at start-up only, by comparing every page's hash."""
        return None

    def set_storage_version(self, version: str | None) -> None:
        """Record the storage version the index now reflects (kept across restarts). Optional."""

    def identity(self) -> object:
        """A cheap mark (a stat or two) of the files that hold the index and its storage version,
        which changes when they are deleted or replaced; None (the default): the host reads
        :meth:`storage_version` before every search instead. Optional."""
        return None

    def optimize(self) -> None:
        """Compact the index after a bulk load (reindex, a large start-up catch-up). Optional."""

    def close(self) -> None:
        """Release resources."""
