"""Comments per heading on the page view: under each heading, a toggle with its count opens the
thread (newest last) and, for a person who may read the namespace, a form to add to it; authors
edit and delete their own comments, admins delete any. Plain text: Jinja escapes every comment.

The threads come from the service (:mod:`hostcore.service.comments`) as the reader; posts, edits
and deletes go through it as the person, with the form's CSRF token. No script: each thread is a
``<details>``, open after a post so the person sees where it landed.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote

from flask import abort, get_template_attribute, redirect, request

from hostcore import HostcoreError, NotFound, Principal, check_csrf

from . import render
from .access import SignInFirst, host, viewer, web_principal
from .sections import OUTLINE_LIMIT, heading_places
from .views import bp, page, slug_or_404

SHOWN = 100  # newest comments of a thread shown on the page


@dataclass
class ShownThread:
    """One heading's thread as the page shows it."""

    section_id: str
    heading: str
    orphaned: bool = False
    count: int = 0
    comments: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class PageThreads:
    """The threads of one page view: the heading's ones go into the body, the rest below it."""

    by_section: dict[str, ShownThread]
    can_post: bool
    me: str
    admin: bool
    open: str
    placed: set[str] = field(default_factory=set)

    def top(self) -> ShownThread | None:
        return self.by_section.get("_top") or (ShownThread("_top", "") if self.can_post else None)

    def unplaced(self) -> list[ShownThread]:
        """Threads of headings the page has but the body shows no heading for (the heading the
        page's title stands in for)."""
        return [t for t in self.by_section.values() if not t.orphaned and t.section_id != "_top" and t.section_id not in self.placed]

    def orphaned(self) -> list[ShownThread]:
        return [t for t in self.by_section.values() if t.orphaned]


def threads_of(reader: Principal, person: Principal | None, slug: str) -> PageThreads:
    """The page's threads as ``reader`` sees them, each with its newest :data:`SHOWN` comments."""
    wiki = host().wiki(reader)
    by_section: dict[str, ShownThread] = {}
    for t in wiki.comment_threads(slug, SHOWN):
        by_section[t["section_id"]] = ShownThread(t["section_id"], t["heading"], t["orphaned"], t["total"],
                                                  [dict(c) for c in t["comments"]])
    namespace = slug.split("/", 1)[0]
    can_post = person is not None and bool(host().wiki(person).may("read", namespace))
    return PageThreads(by_section, can_post, person.name if person else "", bool(person and person.has_scope("admin")),
                       request.args.get("thread", ""))  # fmt: skip


def with_threads(body: render.Rendered, slug: str, wiki: Any, threads: PageThreads) -> render.Rendered:
    """``body`` with each heading's thread right after the heading: a heading with no comments gets
    one only when the person may post."""
    if not threads.by_section and not threads.can_post:
        return body
    outline = wiki.outline(slug, 0, OUTLINE_LIMIT)
    macro = get_template_attribute("comments.html", "thread")
    parts: list[str] = []
    html, at = body.html, 0
    for section_id, level, text, start in heading_places(body, outline["sections"]):
        shown = threads.by_section.get(section_id)
        if shown is None:
            if not threads.can_post:
                continue
            shown = ShownThread(section_id, text)
        end = html.find(f"</h{level}>", start)
        if end == -1:
            continue
        end += len(f"</h{level}>")
        parts += [html[at:end], str(macro(slug, shown, threads))]
        threads.placed.add(section_id)
        at = end
    parts.append(html[at:])
    return replace(body, html="".join(parts))


def _back(slug: str, section_id: str) -> Any:
    anchor = "comments-" + section_id.replace("~", "-")
    return redirect(f"{render.page_href(slug)}?thread={quote(section_id)}#{quote(anchor)}", 303)


@bp.route("/_/comments/<path:slug>", methods=["POST"])
def change_comments(slug: str) -> Any:
    """A thread's forms (``action``: post, edit or delete), then back to the thread, open."""
    slug = slug_or_404(slug)
    person = viewer()
    if person is None:
        raise SignInFirst()
    check_csrf()
    wiki = host().wiki(web_principal(person))
    action = request.form.get("action", "")
    section_id = request.form.get("section", "")
    text = request.form.get("text", "")
    comment_id = request.form.get("comment_id", "")
    try:
        if action == "post":
            wiki.post_comment(slug, section_id, text)
        elif action == "edit":
            section_id = wiki.edit_comment(slug, comment_id, text)["section_id"]
        elif action == "delete":
            section_id = wiki.delete_comment(slug, comment_id)["section_id"]
        else:
            abort(400)
    except HostcoreError as exc:
        if (isinstance(exc, NotFound) and exc.field == "slug") or (exc.code == "forbidden" and exc.field == "slug"):
            abort(404)
        return page("message.html", slug.split("/", 1)[0], slug=slug, title="Comment not saved",
                    message=f"{exc}. Nothing was changed."), 409 if exc.code == "conflict" else 400  # fmt: skip
    return _back(slug, section_id)
