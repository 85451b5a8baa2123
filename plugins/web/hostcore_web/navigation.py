"""Where a person is and where they can go: the namespace's page tree in the sidebar, and the
breadcrumbs above every page.

The tree follows the namespace's ``tree`` setting (listed pages and folders first), then every
other page in natural order (:func:`hostcore_web.widgets.ordered`), as the pages widget does. Its
facts come from the link graph, so drawing it reads no page.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from .widgets import ordered

SIDEBAR_PAGES = 300
"""Pages the sidebar lists; the rest are a link away (``/_/pages/<namespace>``), so a big namespace's pages stay small."""


@dataclass
class Node:
    """A page, a folder, or both (a page ``a`` beside a folder ``a/``): what the sidebar draws."""

    name: str
    path: str  # slug of the page (or folder) it stands for
    title: str = ""
    page: bool = False
    current: bool = False  # the page being read
    open: bool = False  # a folder holding the page being read
    children: list[Node] = field(default_factory=list)

    @property
    def href(self) -> str:
        return "/" + quote(self.path)


@dataclass
class Tree:
    nodes: list[Node]
    total: int  # pages in the namespace
    shown: int
    titles: dict[str, str] = field(default_factory=dict)  # slug -> title of the pages shown


def page_tree(facts: Sequence[Mapping[str, Any]], tree: list[str], namespace: str, current: str | None) -> Tree:
    """The namespace's pages as nested folders, in ``tree`` order then natural order; the folders on
    the way to ``current`` (a slug) are open and its node is marked."""
    chosen = ordered(facts, tree, namespace)[:SIDEBAR_PAGES]
    root = Node(namespace, namespace)
    folders: dict[str, Node] = {namespace: root}
    for fact in chosen:
        slug = fact["slug"]
        parts = slug.split("/")
        parent = root
        for depth in range(1, len(parts)):
            path = "/".join(parts[: depth + 1])
            node = folders.get(path)
            if node is None:
                node = Node(parts[depth], path)
                folders[path] = node
                parent.children.append(node)
            parent = node
        parent.page, parent.title = True, fact["title"] or parts[-1]
    if current and current in folders:
        folders[current].current = True
        parts = current.split("/")
        for depth in range(1, len(parts)):
            folders["/".join(parts[: depth + 1])].open = True
    return Tree(root.children, len(facts), len(chosen), {f["slug"]: f["title"] for f in chosen})


@dataclass(frozen=True)
class Crumb:
    label: str
    href: str | None  # None: where the reader is


def crumbs(
    namespace: str | None, namespace_title: str, slug: str | None, page_title: str | None, here: str | None
) -> list[Crumb]:
    """Wiki › namespace › folders › page › ``here`` (what is shown, when it is not the page itself:
    "Edit", "History" ...). The last crumb is where the reader is, without a link."""
    out = [Crumb("Wiki", "/")]
    if namespace:
        out.append(Crumb(namespace_title or namespace, f"/{quote(namespace)}/"))
    if slug:
        parts = slug.split("/")
        for depth in range(1, len(parts) - 1):
            out.append(Crumb(parts[depth], None))  # a folder: no page of its own to go to
        out.append(Crumb(page_title or parts[-1], "/" + quote(slug)))
    if here:
        out.append(Crumb(here, None))
    out[-1] = Crumb(out[-1].label, None)
    return out
