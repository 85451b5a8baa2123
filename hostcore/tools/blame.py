"""The blame tool: each line of a page with the change that last wrote it.

A thin, typed function over :mod:`hostcore.service.blame`; registered on every storage, so a
storage without history (fs) answers ``no_history`` rather than leaving the tool out unexplained.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.tool import Tool, tool
from hostcore.service.blame import MAX_BLAME_LINES, Blame
from hostcore.service.wiki import Wiki
from hostcore.tools.args import Slug


@tool(read_only=True, scope="read", title="Blame a page", user_content=True)
def blame_page(
    slug: Slug,
    start_line: Annotated[int, Field(ge=1, description="first line to return (1-based); pass next_line from the previous call")] = 1,
    limit: Annotated[int, Field(ge=1, le=MAX_BLAME_LINES, description=f"maximum lines to return (1-{MAX_BLAME_LINES})")] = 500,
    *,
    wiki: Wiki,
) -> Blame:
    """Show who last changed each line of a page: per line the change id, and per change its author, client, time (UTC), message and stated reason.

    Arguments: slug; start_line (default 1); limit (1-2000, default 500). Lines are the page as
    stored, front matter first: body_line is the body's first line. History is followed across
    moves and renames. When more is true, pass next_line as start_line. complete is false when
    the page has more than 1000 recorded changes: its oldest lines may be older than shown. Read
    a change's version with read_page and revision. A storage without history (fs) answers the
    error code no_history.
    """
    return wiki.blame_page(slug, start_line, limit)


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(blame_page)
