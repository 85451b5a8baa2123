"""What the page editor asks the wiki while a person writes (``static/editor.js`` on EasyMDE):
the preview, rendered by the page renderer itself (so the preview is the page), page names for
wiki-link completion, and uploads of a pasted or dropped file.

Each goes through the service as the person, as the page forms do: the preview and the upload
need write access to the page's namespace and the session's CSRF token; the names are those the
person may read.
"""

from __future__ import annotations

import hashlib
import re
from typing import Any

from flask import jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from hostcore import ValidationError, check_csrf, split_attachment_url

from . import access, render
from .access import host, require_writer
from .views import bp, existing_for, render_cache, slug_or_404
from .widgets import natural

NAMES_SHOWN = 20
"""Page names one completion answer holds."""
MULTIPART_SLACK = 64 * 1024  # the form's other fields and boundaries, beyond the file itself
_UNSAFE = re.compile(r"[^\w.\-]+")


def writer_of(slug: str) -> tuple[str, Any]:
    """(slug, the writer's service) for an editor request about ``slug``, after the CSRF check."""
    check_csrf()
    slug = slug_or_404(slug)
    return slug, host().wiki(require_writer(slug.split("/", 1)[0]))


@bp.route("/_/web/preview/<path:slug>", methods=["POST"])
def preview(slug: str) -> Any:
    """``body`` (form field) rendered as the page ``slug`` would show it: an HTML fragment."""
    slug, wiki = writer_of(slug)
    body = request.form.get("body", "").replace("\r\n", "\n")
    digest = "preview:" + hashlib.blake2b(body.encode(), digest_size=16).hexdigest()
    rendered = render_cache(host()).render(body, slug, digest, existing_for(wiki.principal))
    response = jsonify({"html": rendered.html, "mermaid": rendered.mermaid})
    response.headers["Cache-Control"] = "no-store"
    return response


@bp.route("/_/web/page-names")
def page_names() -> Any:
    """Pages the person may read whose slug or title holds ``q`` (their own namespace's first):
    ``{"pages": [{"slug", "title"}]}``, at most NAMES_SHOWN."""
    person = access.viewer()
    reader = access.reader(person)
    wiki = host().wiki(reader)
    query = request.args.get("q", "").strip().casefold()
    here = request.args.get("namespace", "")
    names = [n["name"] for n in wiki.list_namespaces()["namespaces"]]
    names.sort(key=lambda n: n != here)
    found: list[dict[str, str]] = []
    for namespace in names:
        matches = [f for f in wiki.page_facts(namespace) if query in f["slug"].casefold() or query in (f["title"] or "").casefold()]
        matches.sort(key=lambda f: natural(f["slug"]))  # only the matches: a keystroke sorts no namespace whole
        found += [{"slug": f["slug"], "title": f["title"]} for f in matches[: NAMES_SHOWN - len(found)]]
        if len(found) >= NAMES_SHOWN:
            break
    response = jsonify({"pages": found})
    response.headers["Cache-Control"] = "private, no-cache"
    return response


def safe_filename(name: str) -> str:
    """A filename the wiki takes, from what a browser sent (``Screenshot 2026-11-30 at 9.05.png``
    -> ``Screenshot-2026-11-30-at-9.05.png``; a pasted image is ``image.png``)."""
    stem = _UNSAFE.sub("-", name.rsplit("/", 1)[-1].rsplit("\\", 1)[-1]).strip("-.")
    return stem[:120] or "file"


def free_filename(wiki: Any, slug: str, filename: str) -> str:
    """``filename``, or ``name-2.ext``, ``name-3.ext`` ... when the page has one by that name (an
    upload never replaces a file; a second pasted ``image.png`` is a new file)."""
    taken = {n.casefold() for n in wiki.attachment_names(slug)}
    stem, dot, ext = filename.rpartition(".") if "." in filename else (filename, "", "")
    candidate, n = filename, 1
    while candidate.casefold() in taken:
        n += 1
        candidate = f"{stem}-{n}{dot}{ext}"
    return candidate


def posted_file(limit: int) -> Any:
    """The multipart field ``file`` of this request, refused past ``limit`` bytes before it is read."""
    if request.content_length is not None and request.content_length > limit + MULTIPART_SLACK:
        raise ValidationError(f"is {request.content_length} bytes; the limit is {limit} bytes", field="file")
    request.max_content_length = limit + MULTIPART_SLACK
    try:
        sent = request.files.get("file")
    except RequestEntityTooLarge:
        raise ValidationError(f"is over the limit of {limit} bytes", field="file") from None
    if sent is None or not sent.filename:
        raise ValidationError("is missing; choose a file to upload", field="file")
    return sent


def upload(wiki: Any, slug: str) -> dict[str, Any]:
    """Store the posted file as a new attachment of ``slug`` through the path the
    ``upload_attachment`` tool takes (a one-use ticket, then the upload), under a free name."""
    limit = host().config["MAX_ATTACHMENT_BYTES"]
    sent = posted_file(limit)
    filename = free_filename(wiki, slug, safe_filename(sent.filename))
    ticket = wiki.upload_attachment(slug, filename)
    stored = wiki.complete_upload(ticket["upload_url"].rsplit("/", 1)[1], sent.stream.read(limit + 1))
    return dict(stored)


@bp.route("/_/web/upload/<path:slug>", methods=["POST"])
def editor_upload(slug: str) -> Any:
    """A file pasted or dropped in the editor: stored as an attachment of the page; answers its
    name, its link for the page (``attachment_url``, which the page shows through the web's file
    route) and the Markdown to insert (an image for an image, else a link)."""
    slug, wiki = writer_of(slug)
    stored = upload(wiki, slug)
    url = stored["attachment_url"]
    label = stored["filename"].rsplit(".", 1)[0] if stored["media_type"].startswith("image/") else stored["filename"]
    markdown = f"{'!' if stored['media_type'].startswith('image/') else ''}[{label}]({url})"
    owner = split_attachment_url(url)
    href = render.file_href(*owner) if owner else url
    response = jsonify({**stored, "markdown": markdown, "href": href})
    response.status_code = 201
    return response
