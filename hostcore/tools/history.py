"""History tools, registered only when the storage keeps history (the git storage does)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Annotated

from pydantic import Field

from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.tool import Tool, tool
from hostcore.service.history import Commits, PageHistory, Restored
from hostcore.service.wiki import Wiki
from hostcore.tools.args import Slug

if TYPE_CHECKING:
    from hostcore.host.host import Host


@tool(read_only=True, scope="read", title="Recent changes")
def recent_changes(
    limit: Annotated[int, Field(ge=1, le=200, description="maximum commits to return")] = 20,
    *,
    wiki: Wiki,
) -> Commits:
    """List the newest wiki commits first, with author, time (UTC) and changed files (the first 100; file_count has the total).

    Arguments: limit (1-200, default 20). A commit that touches any file outside your namespace access
    is left out whole. Hidden files (.wiki.yaml, names starting with _ or .) are never listed, and
    one at the top of the repository hides no commit. A slug in a namespace you cannot read shows
    as … in a message.
    """
    return wiki.recent_changes(limit)


@tool(read_only=True, scope="read", title="Page history")
def page_history(
    slug: Slug,
    offset: Annotated[int, Field(ge=0, description="commits to skip; pass next_offset from the previous call")] = 0,
    limit: Annotated[int, Field(ge=1, le=200, description="maximum commits to return")] = 20,
    *,
    wiki: Wiki,
) -> PageHistory:
    """List the commits that changed one page, newest first (also for a deleted page), following it back across moves and renames.

    Arguments: slug; offset (default 0); limit (1-200, default 20). When more is true, pass
    next_offset as offset. Read an old version with read_page and revision set to a commit id;
    bring one back with restore_page.
    """
    return wiki.page_history(slug, offset, limit)


@tool(scope="write", destructive=True, title="Restore a page")
def restore_page(
    slug: Slug,
    revision: Annotated[
        str | None,
        Field(
            description="commit id from page_history (40 hex digits, or the first 7 or more); omit to bring back "
            "a deleted page's last version"
        ),
    ] = None,
    basehash: Annotated[
        str | None, Field(description="the page's current hash, required when the page exists; omit for a deleted page")
    ] = None,
    *,
    wiki: Wiki,
) -> Restored:
    """Bring back a deleted page, or an older revision of a page, as a new recorded change.

    Arguments: slug; revision (a commit id from this page's page_history, whole or its first 7 or more
    digits; omit to restore a deleted page's last version); basehash (required when the page exists:
    the hash from read_page; omit when it was deleted). Nothing in history is rewritten: the restore
    is a new change on top. A stale basehash fails with a conflict carrying the current hash.
    """
    return wiki.restore_page(slug, revision, basehash)


@hookimpl
def register_tools(register: Callable[[Tool], None], host: Host) -> None:
    if host.storage.has_history:
        for fn in (recent_changes, page_history, restore_page):
            register(fn)
