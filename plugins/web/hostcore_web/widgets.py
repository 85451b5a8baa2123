"""The widgets of a namespace's index page, each built from service calls as the reader may make them.

Page facts (slug, title, last change, tags, pin) come from the link graph: no page is read, so a
namespace of thousands of pages costs one indexed query, on the first request as on later ones.
"""

from __future__ import annotations

import re
import threading
import time
from collections import Counter, OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import Any
from urllib.parse import quote

from hostcore import PluginHost, Principal

from .dates import month_view, newest_entries

DEFAULT_WIDGETS = ["pages", "pinned", "tags", "log"]
WIDGET_TITLES = {
    "pages": "Pages", "namespaces": "Namespaces", "pinned": "Pinned", "tags": "Tags", "log": "Recent changes",
    "health": "Health", "calendar": "Calendar", "writing-stats": "Writing", "page-meta": "About this page",
    "backlinks": "Links here", "prev-entries": "Previous entries",
}  # fmt: skip
Fact = Mapping[str, Any]  # a page's facts (service.page_facts): slug, title, hash, changed, tags, pin


PAGES_SHOWN = 500
"""Pages a page of ``/_/pages/<namespace>`` (every page of a namespace, in ``tree`` order) lists."""
INDEX_PAGES_SHOWN = 200
"""Pages the index's pages widget lists; the rest are a link away (``/_/pages/<namespace>``), so a big namespace's index stays small."""


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


_DIGITS = re.compile(r"(\d+)")


def natural(slug: str) -> tuple[tuple[int | str, ...], str]:
    """The order people expect of names: numbers by value (``rl-2`` before ``rl-10``), letters
    regardless of case. (``list_pages`` keeps the contract's plain order by slug, which paging needs.)"""
    parts = _DIGITS.split(slug)
    return tuple(int(p) if i % 2 else p.casefold() for i, p in enumerate(parts)), slug


_ORDERS: OrderedDict[tuple[str, tuple[str, ...], int], list[str]] = OrderedDict()
_ORDERS_LOCK = threading.Lock()
ORDERS_KEPT = 64  # namespaces whose page order a process keeps (each a list of slugs)


def ordered(facts: Sequence[Fact], tree: list[str], namespace: str) -> list[Fact]:
    """Pages in the ``tree`` order (each entry a page or a folder of pages), then the rest in natural
    order. The order depends on the slugs alone, so it is kept per namespace until a page comes or
    goes: every page of a big namespace shows its tree, and sorting thousands of names naturally
    on each of them is what would cost."""
    by_slug = {f["slug"]: f for f in facts}
    key = (namespace, tuple(tree), hash(tuple(by_slug)))
    with _ORDERS_LOCK:
        kept = _ORDERS.get(key)
        if kept is not None:
            _ORDERS.move_to_end(key)
    if kept is not None and len(kept) == len(by_slug):
        return [by_slug[s] for s in kept]
    out = _ordered(facts, tree, namespace)
    with _ORDERS_LOCK:
        _ORDERS[key] = [f["slug"] for f in out]
        while len(_ORDERS) > ORDERS_KEPT:
            _ORDERS.popitem(last=False)
    return out


def _ordered(facts: Sequence[Fact], tree: list[str], namespace: str) -> list[Fact]:
    facts = sorted(facts, key=lambda f: natural(f["slug"]))
    by_slug = {f["slug"]: f for f in facts}
    out: list[Fact] = []
    taken: set[str] = set()
    for item in tree:
        path = f"{namespace}/{item.strip('/')}"
        chosen = [by_slug[path]] if path in by_slug else [f for f in facts if f["slug"].startswith(path + "/")]
        for f in chosen:
            if f["slug"] not in taken:
                taken.add(f["slug"])
                out.append(f)
    out += [f for f in facts if f["slug"] not in taken] if taken else facts
    return out


def entries_of(facts: Sequence[Fact]) -> list[Entry]:
    """Entries of the pages shown (made for those only: a namespace may hold thousands of pages)."""
    return [Entry(f["slug"], f["title"], f["changed"], tuple(f["tags"]), f["pin"]) for f in facts]


def build(
    host: PluginHost, reader: Principal, namespace: str, settings: dict[str, Any], index_slug: str, month: str | None = None
) -> list[Widget]:
    """The namespace's widgets, in its ``widgets`` order (the default set when empty); ``month``
    (YYYY-MM) is the one the calendar shows."""
    wiki = host.wiki(reader)
    names = [w for w in settings.get("widgets") or DEFAULT_WIDGETS if w in WIDGET_TITLES]
    facts = wiki.page_facts(namespace)
    out: list[Widget] = []
    for name in names:
        widget = Widget(name, WIDGET_TITLES[name])
        if name == "pages":
            widget.data = entries_of(ordered(facts, settings.get("tree") or [], namespace)[:INDEX_PAGES_SHOWN])
            widget.more = {"total": len(facts)}
        elif name == "namespaces":
            widget.data = wiki.list_namespaces()["namespaces"]
        elif name == "pinned":
            widget.data = entries_of(ordered([f for f in facts if f["pin"]], [], namespace))
        elif name == "tags":
            widget.data = Counter(t for f in facts for t in f["tags"]).most_common(100)
        elif name == "log":
            narrow = Principal(reader.name, reader.scopes, frozenset({namespace}), client=reader.client)
            widget.data = host.wiki(narrow).recent_changes(10)["commits"]
        elif name == "health":
            widget.data = wiki.health(namespace)
        elif name == "calendar":
            widget.data = month_view(entries_of(facts), month, date.today())
        elif name == "writing-stats":
            now = time.time()
            widget.data = {
                "pages": len(facts),
                "week": sum(1 for f in facts if now - f["changed"] < 7 * 86400),
                "month": sum(1 for f in facts if now - f["changed"] < 30 * 86400),
            }
        elif name == "page-meta":
            widget.data = next(iter(entries_of([f for f in facts if f["slug"] == index_slug])), None)
        elif name == "backlinks":
            found = wiki.backlinks(index_slug)["backlinks"] if any(f["slug"] == index_slug for f in facts) else []
            widget.data = sorted(found, key=lambda b: natural(b["slug"]))
        elif name == "prev-entries":
            widget.data = newest_entries(entries_of(facts))
        out.append(widget)
    return out
