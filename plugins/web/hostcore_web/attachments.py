"""A page's attachments on the page: listed, images shown, PDFs previewed in the browser's own
viewer inside a sandbox, other documents' extracted text shown; and, for a writer, upload,
replace and delete, through the service (its access checks, its basehash rule) with the form's
CSRF token.

The PDF preview is the file served inline under ``Content-Security-Policy: sandbox`` (a unique
origin, no script of the page's, nothing it may reach), framed by this site only; Chromium's
viewer shows a PDF so, while an ``<iframe sandbox>`` attribute would make it refuse to.
"""

from __future__ import annotations

import mimetypes
from dataclasses import dataclass
from typing import Any

from flask import Response, abort, redirect, request

from hostcore import Conflict, HostcoreError, NotFound, Unavailable, ValidationError

from . import render
from .access import host
from .editor import posted_file, upload, writer_of
from .views import bp, page, readable_attachment

IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
TEXT_SHOWN = 2000  # characters of a document's extracted text shown on its page
TEXTS_SHOWN = 10  # documents per page whose text is shown (each is a read of the file; its text is cached)
PDF_CSP = "sandbox; default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; frame-ancestors 'self'"


@dataclass
class Shown:
    """An attachment as its page shows it."""

    filename: str
    hash: str
    kind: str  # image, pdf, text (its extracted text below) or file
    href: str  # the web's copy (/_/web/files/...)
    view: str = ""  # the PDF preview's URL
    text: str = ""
    more: bool = False  # the text goes on past what is shown


def listing(wiki: Any, slug: str) -> list[Shown]:
    """The page's attachments by name, each with what shows it."""
    out: list[Shown] = []
    texts = 0
    for filename, digest in sorted(wiki.attachment_hashes(slug).items()):
        guessed = mimetypes.guess_type(filename)[0] or ""
        href = render.file_href(slug, filename)
        if guessed in IMAGES:
            out.append(Shown(filename, digest, "image", href))
        elif guessed == "application/pdf":
            out.append(Shown(filename, digest, "pdf", href, view=f"/_/web/pdf/{href.removeprefix(render.FILES_PATH)}"))
        else:
            shown = Shown(filename, digest, "file", href)
            if texts < TEXTS_SHOWN:
                try:
                    window = wiki.read_attachment(slug, filename, 0, TEXT_SHOWN)
                    shown.kind, shown.text, shown.more = "text", window["body"], bool(window["truncated"])
                    texts += 1
                except (Unavailable, NotFound, ValidationError):
                    pass  # no text to show (an archive, a binary): a link to download it is what there is
            out.append(shown)
    return out


@bp.route("/_/web/pdf/<path:rest>")
def pdf_view(rest: str) -> Any:
    """A PDF attachment inline, for the page's preview frame: sandboxed, framed by this site only."""
    filename, data, media_type, digest = readable_attachment(rest)
    if media_type != "application/pdf":
        abort(404)
    response = Response(data, mimetype="application/pdf")
    response.headers.update({
        "Content-Disposition": f'inline; filename="{filename}"', "Content-Security-Policy": PDF_CSP,
        "X-Content-Type-Options": "nosniff", "Cache-Control": "private, no-cache",
    })  # fmt: skip
    response.set_etag(digest)
    return response.make_conditional(request)


@bp.route("/_/web/attachments/<path:slug>", methods=["POST"])
def change_attachments(slug: str) -> Any:
    """The page's upload, replace and delete forms (``action``): then back to the page's attachments."""
    slug, wiki = writer_of(slug)
    action = request.form.get("action", "")
    filename = request.form.get("filename", "")
    basehash = request.form.get("basehash", "")
    namespace = slug.split("/", 1)[0]
    try:
        if action == "upload":
            upload(wiki, slug)
        elif action == "replace":
            sent = posted_file(host().config["MAX_ATTACHMENT_BYTES"])
            wiki.replace_attachment(slug, filename, basehash, sent.stream.read(host().config["MAX_ATTACHMENT_BYTES"] + 1))
        elif action == "delete":
            wiki.delete_attachment(slug, filename, basehash)
        else:
            raise ValidationError("must be upload, replace or delete", field="action")
    except Conflict as exc:
        return page("message.html", namespace, slug=slug, title="Not changed",
                    message=f"{exc}. Nothing was changed; open the page again to see the file as it is."), 409  # fmt: skip
    except HostcoreError as exc:
        if isinstance(exc, NotFound) and exc.field == "slug":
            abort(404)
        return page("message.html", namespace, slug=slug, title="Not changed", message=f"{exc}. Nothing was changed."), 400
    return redirect(render.page_href(slug) + "#attachments", 303)
