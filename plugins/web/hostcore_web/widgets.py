"""The widgets of a namespace's index page, each built from service calls as the reader may make them.

Page facts (slug, title, hash, last change) come from the link graph without reading a page;
tags and pins, which only the pages hold, are read once per page revision and kept by hash.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from urllib.parse import quote

from hostcore import NotFound, Principal

from .dates import month_view, newest_entries

DEFAULT_WIDGETS = ["pages", "pinned", "tags", "log"]
WIDGET_TITLES = {
    "pages": "Pages", "namespaces": "Namespaces", "pinned": "Pinned", "tags": "Tags", "log": "Recent changes",
    "health": "Health", "calendar": "Calendar", "writing-stats": "Writing", "page-meta": "About this page",
    "backlinks": "Links here", "prev-entries": "Previous entries",
}  # fmt: skip
_META_LIMIT = 200_000


PAGES_SHOWN = 500
"""Pages the pages widget lists; the rest are a link away (``/_/pages/<namespace>``), so a big namespace's index stays small."""


@dataclass
class Entry:
    slug: str
    title: str
    changed: float
    tags: tuple[str, ...] = ()
    pin: bool = False

    @property
    def href(self) -> str:
        return "/" + quote(self.slug)

    @property
    def depth(self) -> int:
        return min(self.slug.count("/") - 1, 4)


@dataclass
class Widget:
    name: str
    title: str
    data: Any = None
    more: dict[str, Any] = field(default_factory=dict)


class MetaCache:
    """Tags and pin of page revisions, by hash (a hash names the stored bytes, so it never goes stale)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_hash: dict[str, tuple[tuple[str, ...], bool]] = {}

    def get(self, wiki: Any, slug: str, digest: str) -> tuple[tuple[str, ...], bool]:
        found = self._by_hash.get(digest)
        if found is None:
            try:
                page = wiki.page(slug)
                found = (page.tags, page.pin)
            except NotFound:
                found = ((), False)
            with self._lock:
                if len(self._by_hash) > _META_LIMIT:
                    self._by_hash.clear()
                self._by_hash[digest] = found
        return found


def ordered(entries: list[Entry], tree: list[str], namespace: str) -> list[Entry]:
    """Pages in the ``tree`` order (each entry a page or a folder of pages), then the rest by slug."""
    by_slug = {e.slug: e for e in entries}
    out: list[Entry] = []
    taken: set[str] = set()
    for item in tree:
        path = f"{namespace}/{item.strip('/')}"
        chosen = [by_slug[path]] if path in by_slug else [e for e in entries if e.slug.startswith(path + "/")]
        for e in chosen:
            if e.slug not in taken:
                taken.add(e.slug)
                out.append(e)
    out += [e for e in entries if e.slug not in taken]
    return out


def build(
    host: Any, reader: Principal, namespace: str, settings: dict[str, Any], index_slug: str, cache: MetaCache,
    month: str | None = None,
) -> list[Widget]:
    """The namespace's widgets, in its ``widgets`` order (the default set when empty); ``month``
    (YYYY-MM) is the one the calendar shows."""
    wiki = host.wiki(reader)
    names = [w for w in settings.get("widgets") or DEFAULT_WIDGETS if w in WIDGET_TITLES]
    facts = wiki.page_facts(namespace)
    entries = [Entry(f["slug"], f["title"], f["changed"]) for f in facts]
    if {"pinned", "tags"} & set(names):
        for entry, fact in zip(entries, facts, strict=True):
            entry.tags, entry.pin = cache.get(wiki, fact["slug"], fact["hash"])
    out: list[Widget] = []
    for name in names:
        widget = Widget(name, WIDGET_TITLES[name])
        if name == "pages":
            widget.data = ordered(entries, settings.get("tree") or [], namespace)[:PAGES_SHOWN]
            widget.more = {"total": len(entries)}
        elif name == "namespaces":
            widget.data = wiki.list_namespaces()["namespaces"]
        elif name == "pinned":
            widget.data = [e for e in entries if e.pin]
        elif name == "tags":
            widget.data = Counter(t for e in entries for t in e.tags).most_common(100)
        elif name == "log":
            narrow = Principal(reader.name, reader.scopes, frozenset({namespace}), client=reader.client)
            widget.data = host.wiki(narrow).recent_changes(10)["commits"]
        elif name == "health":
            widget.data = wiki.health(namespace)
        elif name == "calendar":
            widget.data = month_view(entries, month, date.today())
        elif name == "writing-stats":
            now = time.time()
            widget.data = {
                "pages": len(entries),
                "week": sum(1 for e in entries if now - e.changed < 7 * 86400),
                "month": sum(1 for e in entries if now - e.changed < 30 * 86400),
            }
        elif name == "page-meta":
            widget.data = next((e for e in entries if e.slug == index_slug), None)
        elif name == "backlinks":
            widget.data = wiki.backlinks(index_slug)["backlinks"] if any(e.slug == index_slug for e in entries) else []
        elif name == "prev-entries":
            widget.data = newest_entries(entries)
        out.append(widget)
    return out
