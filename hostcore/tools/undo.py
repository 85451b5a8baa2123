"""Undo a session: what one principal, agent session or OAuth grant changed since a time, reverted
as one change request for a person to apply.

A thin, typed function over :mod:`hostcore.service.undo`, where what reverts and who may is decided.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.tool import Tool, tool
from hostcore.service.undo import Undone
from hostcore.service.wiki import Wiki

When = Annotated[str, Field(min_length=1, max_length=40, description="undo changes at or after this time, ISO 8601, e.g. 2026-01-31T09:00:00Z")]
Who = Annotated[str | None, Field(min_length=1, max_length=200, description="whose changes: a token's name or a person (person:ann), as history names authors")]
Session = Annotated[str | None, Field(min_length=1, max_length=200, description="an agent session id from list_agent_sessions: only the pages its calls touched")]
Grant = Annotated[str | None, Field(min_length=1, max_length=200, description="an OAuth grant id from read_activity: only the pages its calls touched")]


@tool(scope="propose", destructive=False, title="Undo a session")
def undo_session(
    since: When, principal: Who = None, session: Session = None, grant: Grant = None, dry_run: bool = True, *, wiki: Wiki
) -> Undone:
    """Revert what one token, person, agent session or OAuth grant changed since a time, as one change request.

    Arguments: since; principal, session or grant (at least one; a session or grant keeps to the
    pages its calls touched, from the activity log, which only a wiki-wide admin reads for others);
    dry_run (default true: nothing is saved). Per page it changed since then: reverts lists those
    that go back cleanly to how they were before its first change (op save, delete for a page it
    made, create for one it deleted); conflicts lists those someone else changed since (reverting
    would undo their work too) or that it moved, with who. Show the person the dry run; with
    dry_run false the clean reverts become one change request (proposed, review_url) that a person
    applies with apply_change_request (a save over a page needs the review scope). Needs storage
    with history. Only pages in namespaces your token may use are looked at.
    """
    return wiki.undo_session(since, principal, session, grant, dry_run)


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(undo_session)
