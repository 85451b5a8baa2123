"""Editing one section of a page in the browser, checked against that section's rev (as the
section tools do for assistants): a person editing one section never collides with anyone
editing another; a lost race on the same section shows both sides, as the page editor does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flask import abort, redirect, request

from hostcore import Conflict, NotFound, ValidationError, check_csrf

from . import render
from .access import host, require_writer
from .views import bp, diff_lines, page, slug_or_404


def _form(slug: str, namespace: str, source: Mapping[str, Any], text: str, error: str | None = None) -> str:
    return page("section_edit.html", namespace, slug=slug, section=source, text=text, error=error,
                title=f"Edit {source['title'] or 'the top'} in {slug}")  # fmt: skip


@bp.route("/_/edit-section/<path:slug>", methods=["GET", "POST"])
def edit_section(slug: str) -> Any:
    slug = slug_or_404(slug)
    namespace = slug.split("/", 1)[0]
    wiki = host().wiki(require_writer(namespace))
    section_id = request.values.get("section", "")
    if request.method == "GET":
        try:
            source = wiki.section_source(slug, section_id)
        except NotFound:
            abort(404)
        return _form(slug, namespace, source, source["text"])
    check_csrf()
    text = request.form.get("text", "").replace("\r\n", "\n")
    rev = request.form.get("rev", "")
    try:
        saved = wiki.save_section(slug, section_id, rev, text)
    except Conflict as exc:
        theirs = str(exc.data.get("text", ""))
        current = {"section_id": section_id, "rev": exc.data.get("rev", ""), "title": section_id}
        return page("section_conflict.html", namespace, slug=slug, section=current, mine=text, theirs=theirs,
                    lines=diff_lines(theirs, text, "their version", "your version"), title=f"Edit {slug}"), 409  # fmt: skip
    except NotFound as exc:
        if exc.field == "slug":
            abort(404)
        current = {"section_id": section_id, "rev": "", "title": section_id}
        return page("section_conflict.html", namespace, slug=slug, section=current, mine=text, theirs="", gone=True,
                    lines=[], title=f"Edit {slug}"), 409  # fmt: skip
    except ValidationError as exc:
        failed: Mapping[str, Any] = {"section_id": section_id, "rev": rev, "title": section_id}
        return _form(slug, namespace, failed, text, str(exc)), 400
    target = saved["section_id"]  # the web numbers a heading's repeats -2, -3 where section ids have ~2, ~3
    return redirect(render.page_href(slug) + (f"#{target.replace('~', '-')}" if target != "_top" else ""))
