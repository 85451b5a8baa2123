"""Tools that reorganise pages and report on links: move_page, rename_page, backlinks, health."""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from hostcore.domain.pages import MAX_TITLE
from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.tool import Tool, tool
from hostcore.service.links import Backlinks, Health, Moved, Renamed
from hostcore.service.wiki import Wiki
from hostcore.tools.args import Slug

BaseHash = Annotated[str, Field(description="hash from read_page; the page changes only if it is still that revision")]


@tool(scope="write", destructive=True, title="Move a page")
def move_page(
    slug: Slug,
    new_slug: Annotated[str, Field(description="destination page identifier in namespace/page form")],
    basehash: BaseHash,
    *,
    wiki: Wiki,
) -> Moved:
    """Move a page to a new slug as one recorded change, keeping its title, tags, pin and history.

    Arguments: slug (the page); new_slug (destination, namespace/page; its namespace must exist and it
    must not hold a page); basehash (hash from read_page). A namespace's index page cannot be moved.
    Wiki-links to the page are NOT rewritten (use rename_page for that, or check backlinks first). A
    stale basehash fails with a conflict carrying the current hash: re-read and retry.
    """
    return wiki.move_page(slug, new_slug, basehash)


@tool(scope="write", destructive=True, title="Rename a page")
def rename_page(
    slug: Slug,
    title: Annotated[str, Field(min_length=1, max_length=MAX_TITLE, description="new title; the new slug is derived from it")],
    basehash: BaseHash,
    *,
    wiki: Wiki,
) -> Renamed:
    """Change a page's title and its slug to match, in place, and rewrite wiki-links to it in other pages.

    Arguments: slug (the page); title (the new title; the new slug is its lower-case ASCII words joined
    by '-', in the same folder); basehash (hash from read_page). A namespace index page keeps its slug.
    The rename is one recorded change; each page whose links are rewritten is its own change, listed
    in rewritten. Links are rewritten in pages of the page's own namespace, and in other namespaces
    only when its namespace is public: a link from another namespace into a private one is left as
    written (its readers may not be allowed to learn the new slug, nor whether the page existed).
    failed_links lists pages you can read that were not updated, with the reason (change those
    with edit_page where their readers may know); hidden_failed_links counts pages outside your
    namespaces that link here and were left as they are (not named; someone with access to them
    can fix their links). A stale basehash fails with a conflict carrying the current hash.
    """
    return wiki.rename_page(slug, title, basehash)


@tool(read_only=True, scope="read", title="Pages linking here")
def backlinks(slug: Slug, *, wiki: Wiki) -> Backlinks:
    """List accessible pages whose [[wiki-links]] point at a page.

    Arguments: slug (the page linked to; it need not exist). Returns slug and backlinks, each with
    slug and title.
    """
    return wiki.backlinks(slug)


@tool(read_only=True, scope="read", title="Wiki health")
def health(
    namespace: Annotated[str | None, Field(description="limit the report to this namespace; omit for the whole wiki")] = None,
    *,
    wiki: Wiki,
) -> Health:
    """Report dangling [[wiki-links]] whose target page is missing, orphan pages with no incoming links, and stale pages with no change in 180 days.

    Arguments: namespace (optional: the report covers the pages in it, and their links into any
    namespace you can read). Returns missing (links {from, to}), missing_attachments
    (Markdown links and images {from, to} whose attachment URL, /_/files/namespace/page/filename,
    names no stored file), orphans (slugs; namespace index pages are never orphans), stale ({slug,
    changed}), counts of each (lists stop at 500), rebuilding (the indexes being rebuilt from
    storage now, each with index, reason and retry_after: search or backlinks answer unavailable
    until then; empty when none), and
    for callers with access to every namespace, storage facts such as the state of the push to a
    backup remote, and rate_limits (the limits per caller, where they are counted and whether that
    store answers).
    """
    return wiki.health(namespace)


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    for fn in (move_page, rename_page, backlinks, health):
        register(fn)
