"""The namespace tools of the contract: list, read and save namespace settings.

Thin, typed functions over :mod:`hostcore.service.namespaces`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

from pydantic import Field
from typing_extensions import TypedDict

from hostcore.domain.namespaces import (
    MAX_DESCRIPTION,
    MAX_LINKS,
    MAX_TEMPLATE_BYTES,
    MAX_TREE,
    MAX_URL,
    PALETTES,
    SKINS,
    WIDGETS,
)
from hostcore.domain.pages import MAX_SLUG, MAX_TITLE
from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.tool import Tool, tool
from hostcore.service.namespaces import (
    NamespaceList,
    NamespaceSaved,
    NamespaceSettings,
)
from hostcore.service.wiki import Wiki
from hostcore.tools.args import NamespaceName

Path = Annotated[str, Field(min_length=1, max_length=MAX_SLUG)]


# What save_namespace accepts for ``new`` and ``export``: NewTemplate and ExportSettings with their limits
# (the results keep the plain types, so a file written from outside still reads back).
class NewTemplateArgs(TypedDict, total=False):
    template: Annotated[str, Field(max_length=MAX_TEMPLATE_BYTES, description="page skeleton, at most 64 KiB as UTF-8")]
    slug: Annotated[str, Field(max_length=MAX_SLUG, description="path of new pages in this namespace; placeholders {date} {year} {month} {day} {time} {title}, e.g. journal/{date}")]


class ExportArgs(TypedDict, total=False):
    base_url: Annotated[str, Field(max_length=MAX_URL, description="http or https URL the export is served from")]
    sitemap: bool
    robots_allow: bool
    links: Annotated[str, Field(max_length=MAX_LINKS)]
@tool(read_only=True, scope="read", title="List namespaces")
def list_namespaces(*, wiki: Wiki) -> NamespaceList:
    """List accessible namespaces with their title, description, page count and whether anonymous visitors can read them.

    Takes no arguments. Use read_namespace (admin) for full settings.
    """
    return wiki.list_namespaces()


@tool(read_only=True, scope="admin", title="Read namespace settings")
def read_namespace(name: NamespaceName, *, wiki: Wiki) -> NamespaceSettings:
    """Read a namespace's full settings and hash. Needs the admin scope.

    Arguments: name (the namespace name, e.g. notes). Pass the returned hash as basehash to save_namespace.
    """
    return wiki.read_namespace(name)


@tool(scope="admin", destructive=True, title="Create or update namespace settings")
def save_namespace(
    name: NamespaceName,
    basehash: Annotated[str | None, Field(description="hash from read_namespace; required to update, omit to create")] = None,
    public: Annotated[bool | None, Field(description="whether anonymous visitors can read the namespace")] = None,
    review: Annotated[
        bool | None,
        Field(description="whether writes by tokens without the review scope become change requests instead of landing"),
    ] = None,
    title: Annotated[str | None, Field(max_length=MAX_TITLE, description="human-readable namespace title")] = None,
    description: Annotated[str | None, Field(max_length=MAX_DESCRIPTION, description="brief namespace description")] = None,
    image: Annotated[
        str | None,
        Field(
            max_length=MAX_SLUG,
            description="link preview image for pages without their own, as page/filename of a PNG or JPEG "
            "attachment in this namespace, e.g. index/hero.png",
        ),
    ] = None,
    skin: Annotated[Literal[SKINS] | None, Field(description="skin shown to visitors; empty for the default")] = None,  # type: ignore[valid-type]
    palette: Annotated[
        Literal[PALETTES] | None,  # type: ignore[valid-type]
        Field(description="colour palette shown to visitors; empty for the skin's own"),
    ] = None,
    index: Annotated[
        str | None,
        Field(max_length=100, pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="one-segment page name used as the namespace index"),
    ] = None,
    guide: Annotated[
        str | None,
        Field(
            max_length=MAX_SLUG,
            description="page in this namespace whose text is its operating guide for assistants (read_guide), "
            "e.g. guide or meta/assistants; empty for none",
        ),
    ] = None,
    inbox: Annotated[
        str | None,
        Field(max_length=MAX_SLUG, description="page in this namespace where capture adds text; default inbox"),
    ] = None,
    widgets: Annotated[
        list[Literal[WIDGETS]] | None,  # type: ignore[valid-type]
        Field(max_length=len(WIDGETS), description="complete ordered widget list, each at most once; empty for the default set"),
    ] = None,
    tree: Annotated[
        list[Path] | None,
        Field(
            max_length=MAX_TREE,
            description="complete ordered list of page or folder paths in this namespace for the page tree, "
            "e.g. guides or guides/setup",
        ),
    ] = None,
    new: Annotated[
        NewTemplateArgs | None, Field(description="new-page template {template, slug}; set both fields empty to remove it")
    ] = None,
    export: Annotated[
        ExportArgs | None,
        Field(description="static export settings {base_url, sitemap, robots_allow, links}; an empty object removes them"),
    ] = None,
    *,
    wiki: Wiki,
) -> NamespaceSaved:
    """Create a namespace's settings, or update them with the basehash from read_namespace. Needs the admin scope.

    Arguments: name; basehash (omit to create, required to update); public; review (writes by tokens
    without the review scope become change requests for a reviewer instead of landing); title (at most 256);
    description (at most 255); image (page/filename of a PNG or JPEG attachment); skin; palette; index
    (one-segment index page name); guide (a page path in this namespace holding its operating guide for
    assistants, which read_guide returns and the server's instructions point to; empty for none); inbox
    (the page path where capture adds text, default inbox); widgets; tree (at most 1000 page or folder paths in this namespace);
    new {template (at most 64 KiB), slug (a path in this namespace; {date}, {year}, {month}, {day},
    {time} and {title} are filled in when a page is made, e.g. journal/{date})}; export
    {base_url (an http or https URL), sitemap, robots_allow, links}. Text may not hold control
    characters (the template and the description may hold tabs and line breaks). Each save is one
    recorded change and never changes pages. On update, fields you omit keep their values; lists and
    objects replace the stored value whole. A stale basehash fails with a conflict carrying the current
    hash: re-read and retry.
    """
    fields = {
        "public": public, "review": review, "title": title, "description": description, "image": image, "skin": skin, "palette": palette, "index": index,
        "guide": guide, "inbox": inbox, "widgets": widgets, "tree": tree, "new": dict(new) if new is not None else None,
        "export": dict(export) if export is not None else None,
    }  # fmt: skip
    return wiki.save_namespace(name, basehash, **fields)


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    for fn in (list_namespaces, read_namespace, save_namespace):
        register(fn)
