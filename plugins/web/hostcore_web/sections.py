"""The "edit" link beside each heading that starts a section of a page, to the section editor
(:mod:`hostcore_web.section_edit`)."""

from __future__ import annotations

from dataclasses import replace
from html import escape
from typing import Any
from urllib.parse import quote

from . import render

OUTLINE_LIMIT = 5000  # headings that get an edit link on one page view


def edit_href(slug: str, section_id: str) -> str:
    return f"/_/edit-section/{quote(slug)}?section={quote(section_id)}"


def heading_places(body: render.Rendered, sections: list[Any]) -> list[tuple[str, int, str, int]]:
    """(section_id, level, text, offset of its ``<hN>`` in ``body.html``) of each heading that starts
    one of ``sections`` (an outline's entries, in order). Headings are matched in order by level
    and text: the renderer also makes headings that start no section (setext ones, and those
    inside lists or quotes)."""
    wanted = [(s["level"], s["title"], s["section_id"]) for s in sections if s["level"]]
    found: list[tuple[str, int, str, int]] = []
    at, i = 0, 0
    for level, text, ident in body.headings:
        if i >= len(wanted):
            break
        if (level, text) != wanted[i][:2]:
            continue
        section_id = wanted[i][2]
        i += 1
        start = body.html.find(f'<h{level} id="{escape(ident)}">', at)
        if start == -1:
            continue
        found.append((section_id, level, text, start))
        at = start
    return found


def with_edit_links(body: render.Rendered, slug: str, wiki: Any, digest: str) -> render.Rendered:
    """``body`` with an edit link before each heading that starts a section of the page whose hash is
    ``digest``; unchanged when the page changed since it was read."""
    outline = wiki.outline(slug, 0, OUTLINE_LIMIT)
    if outline["hash"] != digest:
        return body
    parts: list[str] = []
    html, at = body.html, 0
    for section_id, level, text, start in heading_places(body, outline["sections"]):
        label = escape(f"Edit section “{text}”")
        # just before the heading (the stylesheet shows it on the heading's line), so the heading's own HTML stays as rendered
        link = f'<a class="section-edit l{level}" href="{escape(edit_href(slug, section_id))}" aria-label="{label}">edit</a>'
        parts += [html[at:start], link]
        at = start
    parts.append(html[at:])
    return replace(body, html="".join(parts))
