"""apply_changes: several pages saved, edited, moved or deleted in one change, all or nothing.

A thin, typed function over :mod:`hostcore.service.changes`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Annotated, Any, NotRequired

from pydantic import ConfigDict, Field, with_config
from typing_extensions import TypedDict

from hostcore.domain.pages import MAX_BODY_BYTES, MAX_TAG, MAX_TAGS, MAX_TITLE
from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.tool import Tool, tool
from hostcore.service.changes import MAX_CHANGES, ChangesResult, Op
from hostcore.service.pages import MAX_EDITS
from hostcore.service.wiki import Wiki
from hostcore.tools.args import Slug
from hostcore.tools.pages import Edit

BaseHash = Annotated[str, Field(description="hash from read_page; required for edit and move, and to update with save")]
Body = Annotated[str, Field(max_length=MAX_BODY_BYTES, description="save: complete Markdown body")]
Title = Annotated[str, Field(max_length=MAX_TITLE, description="save: page title")]
Tags = Annotated[list[Annotated[str, Field(max_length=MAX_TAG)]], Field(max_length=MAX_TAGS, description="save: complete tag list")]
Pin = Annotated[bool, Field(description="save: show the page in the pinned widget")]
Edits = Annotated[list[Edit], Field(min_length=1, max_length=MAX_EDITS, description="edit: replacements, applied in order")]
NewSlug = Annotated[str, Field(description="move: destination page identifier in namespace/page form")]


class PageFields(TypedDict):
    """What apply_changes' operations and a change request's share: the page and each op's fields."""

    slug: Slug
    basehash: NotRequired[BaseHash]
    body: NotRequired[Body]
    title: NotRequired[Title]
    tags: NotRequired[Tags]
    pin: NotRequired[Pin]
    edits: NotRequired[Edits]
    new_slug: NotRequired[NewSlug]


@with_config(ConfigDict(extra="forbid"))
class PageChange(PageFields):
    op: Annotated[Op, Field(description="save (create or update), edit (exact-text edits), move or delete")]


@tool(scope="write", destructive=True, title="Change several pages at once", proposes=True)
def apply_changes(
    changes: Annotated[
        list[PageChange],
        Field(min_length=1, max_length=MAX_CHANGES, description="the changes, each to a different page, applied together"),
    ],
    *,
    wiki: Wiki,
) -> ChangesResult:
    """Save, edit, move or delete several pages in one recorded change, all or nothing, each checked against its own basehash.

    Arguments: changes (1 to 64 objects, each to a different page): {op: "save", slug, basehash
    (omit to create), body, title, tags, pin} as save_page; {op: "edit", slug, basehash, edits} as
    edit_page; {op: "move", slug, new_slug, basehash} as move_page (links to it are not rewritten);
    {op: "delete", slug, basehash (optional)} as delete_page. Every change is checked first, the way
    its own tool checks it; any failure (an error naming changes[i] and the field, or a conflict
    carrying that page's current hash and index i) cancels the whole call and nothing is written.
    With git storage the call is one commit. The result lists each page's new hash ("" when deleted)
    and whether it changed.
    """
    return wiki.apply_changes([plain(c) for c in changes])


def plain(change: Mapping[str, Any]) -> dict[str, Any]:
    """A change as the service takes it: plain dicts, the keys given."""
    out: dict[str, Any] = dict(change)
    if "edits" in change:
        out["edits"] = [{"oldText": e["oldText"], "newText": e["newText"]} for e in change["edits"]]
    return out


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    register(apply_changes)
