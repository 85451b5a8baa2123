"""Change requests: page operations proposed together, validated, dry-run, reviewed, then applied as
one change or rejected.

Thin, typed functions over :mod:`hostcore.service.change_requests`, where who may do what is decided.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal, NotRequired

from pydantic import ConfigDict, Field, with_config

from hostcore.domain import change_requests as dom
from hostcore.domain.pages import MAX_BODY_BYTES
from hostcore.domain.sections import Position
from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.tool import Tool, tool
from hostcore.service.change_requests import MAX_LIST, Created, Decided, DryRun, RequestList, RequestView, Validation
from hostcore.service.changes import MAX_CHANGES
from hostcore.service.wiki import Wiki
from hostcore.tools.changes import PageFields, plain
from hostcore.tools.sections import Rev, SectionId


@with_config(ConfigDict(extra="forbid"))
class RequestChange(PageFields):
    op: Annotated[
        Literal["save", "edit", "append", "section", "move", "rename", "delete"],
        Field(description="save (create or update), edit (exact-text edits), append (add Markdown), section (replace a "
              "section's text), move, rename (new title and the slug it gives; links to it rewritten) or delete"),
    ]  # fmt: skip
    markdown: NotRequired[Annotated[str, Field(min_length=1, max_length=MAX_BODY_BYTES, description="append: Markdown to add")]]
    section_id: NotRequired[SectionId]
    position: NotRequired[Annotated[Position, Field(description="append: end (default), start, before or after")]]
    rev: NotRequired[Rev]
    text: NotRequired[
        Annotated[str, Field(max_length=MAX_BODY_BYTES, description="section: the section's new text, heading line included")]
    ]


Changes = Annotated[
    list[RequestChange],
    Field(min_length=1, max_length=MAX_CHANGES, description="the operations, each to a different page"),
]
RequestTitle = Annotated[str, Field(min_length=1, max_length=dom.MAX_TITLE, description="what the change does, in a line")]
Reason = Annotated[
    str, Field(min_length=1, max_length=dom.MAX_REASON, description="why: the assistant's stated reason, in the person's terms")
]
Description = Annotated[str, Field(max_length=dom.MAX_DESCRIPTION, description="more detail for the reviewer (Markdown)")]
Source = Annotated[str, Field(max_length=dom.MAX_SOURCE, description="a link to where the change comes from (a URL or a page)")]
RequestId = Annotated[str, Field(min_length=1, max_length=40, description="change request id (cr-...) from list_change_requests")]
Note = Annotated[str, Field(max_length=dom.MAX_NOTE, description="a note kept with the decision (the person's words)")]


@tool(read_only=True, scope="propose", title="Validate a change request")
def validate_change_request(
    changes: Changes, title: RequestTitle, reason: Reason, description: Description = "", source: Source = "", *, wiki: Wiki
) -> Validation:
    """Check a change request without saving it: every problem, each with field, code, message and a suggested fix.

    Arguments: changes, title, reason, description and source, as create_change_request. Each operation is checked against the current pages as its
    own tool would check it (a stale basehash or rev is an error with code conflict). The result says
    valid, the risk the server computes (additive: new pages and appends; structural: saves over
    pages, edits, section edits, moves; destructive: deletes, renames, and moves of pages other pages link to),
    the namespaces touched, errors and warnings. Nothing is stored.
    """
    return wiki.validate_change_request([plain(c) for c in changes], title, reason, description, source)


@tool(scope="propose", destructive=False, title="Propose a change request")
def create_change_request(
    changes: Changes, title: RequestTitle, reason: Reason, description: Description = "", source: Source = "", *, wiki: Wiki
) -> Created:
    """Propose several page changes for a person to review, instead of writing them: nothing on the pages changes yet.

    Arguments: changes (1 to 64, each to a different page): {op: "save", slug, basehash (omit to
    create), body, title, tags, pin}; {op: "edit", slug, basehash, edits}; {op: "append", slug,
    markdown, section_id, position}; {op: "section", slug, section_id, rev, text}; {op: "move", slug,
    new_slug, basehash}; {op: "rename", slug, basehash, title} (the slug follows the title, and the
    links to it in its namespace are rewritten in the same change); {op: "delete", slug, basehash};
    title; reason (why, in the person's terms);
    description and source (a link) optional. It is validated first (see validate_change_request);
    when invalid, the error lists every problem and nothing is saved. The result has the id, the
    risk and warnings. Tell the person the id: apply_change_request applies it once they agree (a
    structural or destructive one takes someone with the review scope), reject_change_request drops it.
    """
    return wiki.create_change_request([plain(c) for c in changes], title, reason, description, source)


@tool(read_only=True, scope="read", title="Dry-run a change request")
def dry_run_change_request(id: RequestId, *, wiki: Wiki) -> DryRun:
    """What applying a change request would do now, on the current pages, operation by operation; writes nothing.

    Arguments: id. Each operation's outcome: ok, unchanged, rebased (the page changed since its
    basehash and the edits carry over safely), needs_refresh (its basehash or rev drifted: the author
    must read the page again and make a new change request), error (with code and message), or closed
    once the request is applied or rejected. ready says whether it can be applied as it is.
    """
    return wiki.dry_run_change_request(id)


@tool(read_only=True, scope="read", title="List change requests")
def list_change_requests(
    state: Annotated[
        Literal["open", "applied", "rejected"] | None, Field(description="open (default), applied or rejected; null for all")
    ] = "open",
    namespace: Annotated[str | None, Field(description="only those touching this namespace")] = None,
    author: Annotated[str | None, Field(max_length=200, description="only those made by this principal")] = None,
    offset: Annotated[int, Field(ge=0, description="how many to skip (next_offset of the last page)")] = 0,
    limit: Annotated[int, Field(ge=1, le=MAX_LIST, description="how many to return")] = 20,
    *,
    wiki: Wiki,
) -> RequestList:
    """List change requests, newest first: id, title, state, risk, author, client, created, namespaces, slugs and change_count.

    Arguments: state (open by default; null for all), namespace, author, offset, limit (1 to 100).
    Only change requests whose every namespace your token may read are listed.
    """
    return wiki.list_change_requests(state, namespace, author, offset, limit)


@tool(read_only=True, scope="read", title="Read a change request", user_content=True)
def read_change_request(id: RequestId, *, wiki: Wiki) -> RequestView:
    """One change request in full: title, description, reason, source, author, state, decision, its operations, and each page's diff.

    Arguments: id. pages lists each operation's outcome now (as dry_run_change_request) with a unified
    diff of its page against the current text (for a save whose basehash drifted: against the text it
    was made on); applied, once it is, lists each page's hash after it ("" when deleted).
    """
    return wiki.read_change_request(id)


@tool(scope="write", destructive=True, title="Apply a change request")
def apply_change_request(id: RequestId, note: Note = "", *, wiki: Wiki) -> Decided:
    """Apply an open change request as one recorded change, all or nothing, once the person said so.

    Arguments: id; note (the person's go-ahead, in their words). An additive request (new pages,
    appends) may be applied by any writer of its namespaces; a structural or destructive one needs
    the review scope (admin has it): otherwise the error says so, and someone with it must apply it. Every operation is checked again on the current pages: an edit whose page changed is
    rebased when safe; anything else that drifted fails with needs_refresh and nothing is written.
    The change is recorded with the request's id, reason, author and you as approver.
    """
    return wiki.apply_change_request(id, note)


@tool(scope="propose", destructive=False, title="Reject a change request")
def reject_change_request(id: RequestId, note: Note = "", *, wiki: Wiki) -> Decided:
    """Reject an open change request with a note; no page changes.

    Arguments: id; note (why, in the person's words). Its author may withdraw it; otherwise it takes
    whoever may apply it (see apply_change_request).
    """
    return wiki.reject_change_request(id, note)


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    for made in (
        create_change_request, validate_change_request, dry_run_change_request, list_change_requests, read_change_request,
        apply_change_request, reject_change_request,
    ):  # fmt: skip
        register(made)
