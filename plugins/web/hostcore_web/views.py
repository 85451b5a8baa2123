"""The pages people reach: read, browse, search, history, edit, tokens.

Every view asks the service layer (``host.wiki(principal)``) as the caller; access, validation and
the basehash rule are the service's, exactly as over MCP. Forms that change anything carry the
session's CSRF token and each such view calls :func:`hostcore.check_csrf` first.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping, Sequence
from typing import Any

from flask import Blueprint, Response, abort, jsonify, redirect, render_template, request, url_for
from werkzeug.exceptions import HTTPException
from werkzeug.routing import BaseConverter

import hostcore
from hostcore import (
    SYSTEM,
    Conflict,
    HostcoreError,
    NotFound,
    PluginHost,
    Principal,
    Slot,
    ValidationError,
    check_csrf,
    check_slug,
    serving_headers,
)

from . import access, assets, diffs, navigation, render, sections, widgets, words
from .access import SignInFirst, host, require_reader, require_writer

log = logging.getLogger("hostcore.web")
RENDER: Slot[render.RenderCache] = Slot(
    "web.render", lambda h: render.RenderCache(store=render.BlockStore(h.instance_path / "web-blocks.sqlite"))
)
PRERENDER: Slot[render.Prerender] = Slot("web.prerender", lambda h: render.Prerender(render_cache(h)), close=render.Prerender.close)


class NamespaceConverter(BaseConverter):
    """A namespace in a URL: never ``_`` or ``.`` first, so ``/_/...`` routes of any plugin (and
    their 404s and 405s) stay theirs."""

    regex = r"[^_./][^/]*"


bp = Blueprint("web", __name__, template_folder="templates")
STATIC = assets.Assets()
MERMAID_CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)  # mermaid draws SVG with inline styles; scripts stay 'self' only
_RESERVED = re.compile(r"^[_.]")
bp.add_app_template_filter(render.snippet_text, "snippet_text")
bp.add_app_template_global(lambda name: STATIC.get(name) is not None, "static_exists")


UNCOUNTED = frozenset({"web.static", "web.favicon", "web.highlight_css"})
"""Endpoints serving what is the same for everyone (style, scripts, icons): no request counted."""


@bp.before_request
def _admit() -> None:
    """Every route of the site refuses a foreign Host or Origin, and its pages and files count
    against the caller's ``requests`` limit, as MCP requests do (:func:`hostcore.admit_page`)."""
    hostcore.admit_page(host(), count=request.endpoint not in UNCOUNTED)


@bp.errorhandler(SignInFirst)
def _sign_in_first(_exc: SignInFirst) -> Any:
    return hostcore.login_redirect()


@bp.errorhandler(404)
def _not_found(_exc: Exception) -> Any:
    return page("not_found.html", title="Not found"), 404


@bp.errorhandler(HostcoreError)
def _refused(exc: HostcoreError) -> Any:
    """A request of the site's own refused by the service (a stale form token, too many requests,
    a file too large ...): the site's page saying so, with its header, for a browser; the error
    as JSON for the editor's requests and other programs."""
    status = hostcore.HTTP_STATUS.get(exc.code, 400)
    headers = {"Retry-After": str(exc.data["retry_after"])} if exc.data.get("retry_after") else {}
    if _wants_page():
        try:
            return page("message.html", title="Not done", message=str(exc)), status, headers
        except Exception:  # the page itself failed (shared state out, ...): the plain answer, never a second error
            log.exception("web: drawing the page of a refused request failed")
    response = jsonify({"error": exc.to_dict()})
    response.status_code = status
    response.headers.update(headers)
    return response


def _wants_page() -> bool:
    return not request.path.startswith(MACHINE_PATHS) and (
        request.accept_mimetypes.best_match(["application/json", "text/html"]) == "text/html"
    )


MACHINE_PATHS = ("/_/mcp", "/_/files/", "/_/upload/", "/_/health", "/.well-known/")
"""Paths whose clients are programs: their HTTP errors stay JSON, whatever the Accept header."""


@bp.app_errorhandler(HTTPException)
def _http_error(exc: HTTPException) -> Any:
    """An HTTP error no view answered (an unknown ``/_/...`` path, a method a route does not take,
    any plugin's ``abort``): the site's own page for a browser, ``{"error": ...}`` for a program."""
    status = exc.code or 500
    headers = {k: v for k, v in exc.get_headers() if k.lower() != "content-type"}  # e.g. a 405's Allow
    if _wants_page():
        template = "not_found.html" if status == 404 else "message.html"
        try:
            return page(template, title=exc.name, message=exc.description), status, headers
        except Exception:  # the page itself failed (shared state out, ...): the plain answer, never a second error
            log.exception("web: drawing the page of an HTTP %s failed", status)
            return exc
    code = {400: "validation_error", 401: "unauthorized", 403: "forbidden", 404: "not_found", 409: "conflict",
            413: "too_large", 429: "rate_limited", 500: "internal_error", 503: "unavailable"}  # fmt: skip
    response = jsonify({"error": {"code": code.get(status, "http_error"), "message": exc.description, "status": status}})
    response.status_code = status
    response.headers.update(headers)
    return response


def settings_of(namespace: str) -> dict[str, Any]:
    """The namespace's settings (presentation only: read as the system, after the caller's access was checked)."""
    try:
        return dict(host().wiki(SYSTEM).read_namespace(namespace))
    except (NotFound, ValidationError):
        return {}


def namespace_image(namespace: str, settings: dict[str, Any]) -> str | None:
    """The web URL of the namespace's ``image`` (``page/filename`` of an attachment in it), or
    None: when none is set, or its page or file is gone (moved or deleted since), rather than a
    broken image."""
    page_name, _, filename = str(settings.get("image") or "").rpartition("/")
    if not (page_name and filename):
        return None
    slug = f"{namespace}/{page_name}"
    try:
        present = filename in host().wiki(SYSTEM).attachment_names(slug)
    except (NotFound, ValidationError):
        present = False
    return render.file_href(slug, filename) if present else None


HERE = {
    "edit.html": "Edit", "conflict.html": "Edit", "section_edit.html": "Edit a section", "section_conflict.html": "Edit a section",
    "history.html": "History", "diff.html": "Changes", "move.html": "Move or rename", "delete.html": "Delete",
    "page.html": None, "missing.html": None, "namespace.html": None, "home.html": None,
}  # fmt: skip
"""The last breadcrumb of a template about a page (None: the page, or namespace, is itself the last); others end with their title."""


def sidebar(person: Principal | None, namespace: str, settings: dict[str, Any], slug: str | None) -> navigation.Tree | None:
    """The namespace's page tree as ``person`` may see it, or None when they may not read it."""
    reader = access.reader(person)
    if not reader.can_access(namespace):
        return None
    try:
        facts = host().wiki(reader).page_facts(namespace)
    except HostcoreError:
        return None
    return navigation.page_tree(facts, settings.get("tree") or [], namespace, slug)


def page(template: str, namespace: str | None = None, **context: Any) -> str:
    """A page of the site, with the site's header, breadcrumbs and, in a namespace, its page tree.
    ``preview``: (slug, filename) of the page's own image, which its link preview shows instead of
    the namespace's ``image``."""
    settings = settings_of(namespace) if namespace else {}
    image = namespace_image(namespace, settings) if namespace else None
    preview = context.pop("preview", None)
    shown = render.file_href(*preview) if preview else image
    person = context.pop("person", None)
    if person is None:
        try:
            person = access.viewer()
        except HostcoreError:
            person = None
    slug = context.get("slug")
    doc = context.get("doc")
    here = HERE[template] if template in HERE else str(context.get("title") or "")
    tree = sidebar(person, namespace, settings, slug) if namespace else None
    doc_title = doc.get("title") if isinstance(doc, Mapping) else getattr(doc, "title", None)
    if not doc_title and tree and slug:
        doc_title = tree.titles.get(slug)
    crumbs = navigation.crumbs(namespace, settings.get("title") or "", slug if namespace else None, doc_title, here)
    return render_template(
        template,
        person=person,
        crumbs=crumbs,
        tree=tree,
        namespace=namespace,
        settings=settings,
        **render.look(settings),
        login_path=hostcore.LOGIN_PATH,
        logout_path=hostcore.LOGOUT_PATH,
        namespace_image=image,
        preview_image=host().config["PUBLIC_URL"].rstrip("/") + shown if shown else None,
        noindex=render.noindex(settings),
        **context,
    )


def check_namespace_name(namespace: str) -> None:
    if _RESERVED.match(namespace):
        abort(404)


def slug_or_404(slug: str) -> str:
    try:
        return check_slug(slug)
    except ValidationError:
        abort(404)


def existing_for(reader: Principal) -> Any:
    wiki = host().wiki(reader)
    return lambda slugs: wiki.pages_existing(slugs) if slugs else set()


def render_cache(h: PluginHost) -> render.RenderCache:
    """The host's rendered pages and blocks (made on first use; blocks shared through the instance folder)."""
    return h.slot(RENDER)


def prerender(h: PluginHost) -> render.Prerender:
    """The host's background renderer of big saved pages (made on first use, stopped when the host closes)."""
    return h.slot(PRERENDER)


def rendered(reader: Principal, slug: str, body: str, digest: str) -> render.Rendered:
    return render_cache(host()).render(body, slug, digest, existing_for(reader))


def html_response(html: str, mermaid: bool, status: int = 200) -> Response:
    response = Response(html, status, mimetype="text/html")
    if mermaid:
        response.headers["Content-Security-Policy"] = MERMAID_CSP
    return response


def slug_of_path(path: str) -> str | None:
    return path[:-3] if path.endswith(".md") and "/." not in path and not path.startswith(".") else None


def decorate(commits: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{**c, "pages": [s for s in (slug_of_path(f) for f in c["files"]) if s]} for c in commits]


@bp.route("/_/web/static/<path:filename>", endpoint="static")
def static_file(filename: str) -> Any:
    asset = STATIC.get(filename)
    if asset is None:
        abort(404)
    return assets.respond(asset, request)


@bp.url_defaults
def _versioned(endpoint: str, values: dict[str, Any]) -> None:
    """``url_for("web.static", filename=...)`` names the file's content hash (see :mod:`hostcore_web.assets`)."""
    if endpoint == "web.static" and "v" not in values:
        version = STATIC.version(values.get("filename", ""))
        if version is not None:
            values["v"] = version


@bp.route("/favicon.ico")
def favicon() -> Any:
    """What browsers ask every site for (pages name the SVG one too)."""
    asset = STATIC.get("favicon.ico")
    assert asset is not None  # shipped with the package
    return assets.respond(asset, request, cache="public, max-age=86400")


@bp.route("/_/web/highlight.css")
def highlight_css() -> Any:
    response = Response(render.pygments_css(), mimetype="text/css")
    response.headers["Cache-Control"] = "public, max-age=86400"
    return response


def readable_attachment(rest: str) -> tuple[str, bytes, str, str]:
    """(filename, bytes, sniffed media type, blob id) of the attachment ``rest`` names
    (``namespace/page/filename``), when the caller may read its page; sign-in or 404 otherwise."""
    page_slug, _, filename = rest.rpartition("/")
    slug = slug_or_404(page_slug)
    _person, reader = require_reader(slug.split("/", 1)[0])
    try:
        return (filename, *host().wiki(reader).attachment(slug, filename))
    except (NotFound, ValidationError):
        abort(404)


@bp.route(render.FILES_PATH + "<path:rest>", methods=["GET", "HEAD"])
def attachment(rest: str) -> Any:
    """An attachment, for whoever may read its page here (a person's session or a public namespace)."""
    filename, data, media_type, digest = readable_attachment(rest)
    response = Response(data, headers=serving_headers(media_type, filename))
    response.set_etag(digest)
    return response.make_conditional(request)


# --- reading -------------------------------------------------------------------------------


@bp.route("/")
def home() -> Any:
    person = access.viewer()
    reader = access.reader(person)
    namespaces = host().wiki(reader).list_namespaces()["namespaces"]
    if person is None and not namespaces:
        return hostcore.login_redirect()
    return page("home.html", person=person, namespaces=namespaces, title="Wiki")


@bp.route("/<ns:namespace>")
def namespace_redirect(namespace: str) -> Any:
    check_namespace_name(namespace)
    return redirect(url_for("web.namespace_index", namespace=namespace))


def open_namespace(namespace: str) -> tuple[Principal | None, Principal, dict[str, Any]]:
    """(person, reader, settings) of a namespace the caller may read; 404 (or sign-in) otherwise."""
    check_namespace_name(namespace)
    person, reader = require_reader(namespace)
    settings = settings_of(namespace)
    if not settings:
        abort(404)
    return person, reader, settings


@bp.route("/<ns:namespace>/")
def namespace_index(namespace: str) -> Any:
    person, reader, settings = open_namespace(namespace)
    index_slug = f"{namespace}/{settings.get('index') or 'index'}"
    try:
        index = host().wiki(reader).page(index_slug)
        body = rendered(reader, index_slug, index.body, index.hash)
    except NotFound:
        index, body = None, None
    title_anchor = None
    if body is not None:
        body, title_anchor = render.without_title(body, settings.get("title") or namespace)
    built = widgets.build(host(), reader, namespace, settings, index_slug, request.args.get("month"))
    html = page(
        "namespace.html", namespace, person=person, index=index, body=body, widgets=built, title_anchor=title_anchor,
        title=settings.get("title") or namespace, can_write=access.may_write(person, namespace),
    )  # fmt: skip
    return html_response(html, bool(body and body.mermaid))


@bp.route("/_/pages/<namespace>")
def all_pages(namespace: str) -> Any:
    person, reader, settings = open_namespace(namespace)
    offset = request.args.get("offset", "0")
    start = int(offset) if offset.isdigit() else 0
    entries = widgets.ordered(host().wiki(reader).page_facts(namespace), settings.get("tree") or [], namespace)
    shown = widgets.entries_of(entries[start : start + widgets.PAGES_SHOWN])
    more = start + widgets.PAGES_SHOWN if start + widgets.PAGES_SHOWN < len(entries) else None
    return page("all_pages.html", namespace, person=person, entries=shown, start=start, total=len(entries), more=more,
                title=f"All pages of {settings.get('title') or namespace}")  # fmt: skip


@bp.route("/<ns:namespace>/<path:rest>")
def read(namespace: str, rest: str) -> Any:
    check_namespace_name(namespace)
    person, reader = require_reader(namespace)
    slug = slug_or_404(f"{namespace}/{rest}")
    wiki = host().wiki(reader)
    revision = request.args.get("rev")
    section = request.args.get("section")
    try:
        if revision:
            window = wiki.read_page_at(slug, revision, section or None, 0, 100_000_000)
        else:
            window = wiki.read_page(slug, section or None, 0, 100_000_000)
    except NotFound as exc:
        if exc.field == "section":
            abort(404)
        html = page("missing.html", namespace, person=person, slug=slug, title=slug, can_write=access.may_write(person, namespace))
        return html_response(html, False, 404)
    except ValidationError as exc:
        if exc.field == "revision":
            abort(404)
        raise
    body = rendered(reader, slug, window["body"], f"{window['hash']}:{window.get('revision')}:{window.get('section')}")
    body, title_anchor = render.without_title(body, window["title"])
    files = None
    if not revision and not section:
        from .attachments import listing

        files = listing(wiki, slug)
    if access.may_write(person, namespace) and not revision and not section:
        body = sections.with_edit_links(body, slug, wiki, window["hash"])
    threads = None
    if not revision and not section:
        from .comments import threads_of, with_threads

        threads = threads_of(reader, person, slug)
        body = with_threads(body, slug, wiki, threads)
    html = page(
        "page.html", namespace, person=person, slug=slug, doc=window, body=body, title_anchor=title_anchor,
        revision=window.get("revision"), files=files, threads=threads,
        section=window.get("section"), title=window["title"], can_write=access.may_write(person, namespace),
        preview=body.image,
    )  # fmt: skip
    return html_response(html, body.mermaid)


# --- search and changes --------------------------------------------------------------------


@bp.route("/_/search")
def search() -> Any:
    person = access.viewer()
    reader = access.reader(person)
    if person is None and not reader.namespaces:
        return hostcore.login_redirect()
    query = request.args.get("q", "").strip()
    namespace = request.args.get("namespace") or None
    offset = request.args.get("offset", "0")
    # the filters of the search tool: tags separated by commas, dates as the browser's date input gives them
    filters = {name: request.args.get(name, "").strip() for name in ("tags", "author", "since", "before")}
    result, error = None, None
    if query:
        try:
            result = host().wiki(reader).search(
                query, namespace, int(offset) if offset.isdigit() else 0, 20,
                tags=[t for t in filters["tags"].split(",") if t.strip()] or None, author=filters["author"] or None,
                since=filters["since"] or None, before=filters["before"] or None,
            )  # fmt: skip
        except HostcoreError as exc:
            error = str(exc)
    namespaces = host().wiki(reader).list_namespaces()["namespaces"]
    attachments, related = _beyond_hits(result)
    return page("search.html", person=person, query=query, chosen=namespace, result=result, error=error, filters=filters,
                namespaces=namespaces, title="Search", attachments=attachments, related=related)  # fmt: skip


def _beyond_hits(result: Any) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """What search's ``results`` add after its hits, as MCP clients get them: (attachments: title,
    href to the web's copy, owning page; pages near in meaning: title, href, slug)."""
    attachments: list[dict[str, str]] = []
    related: list[dict[str, str]] = []
    for found in result["results"][len(result["hits"]) :] if result else []:
        owner = hostcore.split_attachment_url(found["id"])
        if owner is not None:
            attachments.append({"title": found["title"], "href": render.file_href(*owner), "page": owner[0]})
        else:
            related.append({"title": found["title"], "href": found["url"], "page": found["id"]})
    return attachments, related


@bp.route("/_/changes")
@bp.route("/_/changes/<namespace>")
def changes(namespace: str | None = None) -> Any:
    if namespace is not None:
        check_namespace_name(namespace)
        person, reader = require_reader(namespace)
        reader = Principal(reader.name, reader.scopes, frozenset({namespace}), client=reader.client)
    else:
        person = access.viewer()
        reader = access.reader(person)
        if person is None and not reader.namespaces:
            return hostcore.login_redirect()
    wiki = host().wiki(reader)
    commits, filters = words.described(wiki, decorate(wiki.recent_changes(100)["commits"]), request.args)
    return page("changes.html", namespace, person=person, commits=commits, filters=filters, title="Recent changes")


@bp.route("/_/history/<path:slug>")
def history(slug: str) -> Any:
    slug = slug_or_404(slug)
    namespace = slug.split("/", 1)[0]
    person, reader = require_reader(namespace)
    offset = request.args.get("offset", "0")
    wiki = host().wiki(reader)
    result = wiki.page_history(slug, int(offset) if offset.isdigit() else 0, 50)
    if not result["commits"] and not offset.strip("0"):
        abort(404)
    try:
        current_hash = wiki.read_page(slug, None, 0, 1)["hash"]
    except NotFound:
        current_hash = ""  # deleted: restoring brings it back
    described, filters = words.described(wiki, [dict(c) for c in result["commits"]], request.args)
    return page("history.html", namespace, person=person, slug=slug, history={**result, "commits": described},
                title=f"History of {slug}", can_write=access.may_write(person, namespace), current_hash=current_hash,
                filters=filters)  # fmt: skip


@bp.route("/_/blame/<path:slug>")
def blame(slug: str) -> Any:
    """Each line of the page with the change that last wrote it (``blame_page``), linked from the
    history; a window of lines at a time (``?line=``)."""
    slug = slug_or_404(slug)
    namespace = slug.split("/", 1)[0]
    person, reader = require_reader(namespace)
    line = request.args.get("line", "1")
    try:
        result = host().wiki(reader).blame_page(slug, int(line) if line.isdigit() and int(line) > 0 else 1, 500)
    except NotFound:
        abort(404)
    changes = {c["id"]: c for c in result["changes"]}
    rows = [{**entry, "by": changes[entry["change"]], "first": entry["change"] != previous}
            for entry, previous in zip(result["lines"], [None] + [e["change"] for e in result["lines"]], strict=False)]  # fmt: skip
    return page("blame.html", namespace, person=person, slug=slug, blame=result, rows=rows, title=f"Blame of {slug}")


def diff_lines(old: str, new: str, old_name: str, new_name: str) -> diffs.Diff:
    """The changes from ``old`` to ``new``, changed words marked (:mod:`hostcore_web.diffs`)."""
    return diffs.diff(old, new, old_name, new_name)


@bp.route("/_/diff/<path:slug>")
def diff(slug: str) -> Any:
    slug = slug_or_404(slug)
    namespace = slug.split("/", 1)[0]
    person, reader = require_reader(namespace)
    wiki = host().wiki(reader)
    old_rev, new_rev = request.args.get("from", ""), request.args.get("to", "")

    def body_at(rev: str) -> str:
        if not rev:
            return wiki.read_page(slug, None, 0, 100_000_000)["body"]
        try:
            return wiki.read_page_at(slug, rev, None, 0, 100_000_000)["body"]
        except NotFound:
            return ""  # deleted in that revision
        except ValidationError:
            abort(404)

    lines = diff_lines(body_at(old_rev), body_at(new_rev), old_rev[:12] or "current", new_rev[:12] or "current")
    view = "split" if request.args.get("view") == "split" else "inline"
    return page("diff.html", namespace, person=person, slug=slug, lines=lines, old=old_rev, new=new_rev, view=view,
                title=f"Changes to {slug}")  # fmt: skip


@bp.route("/_/restore/<path:slug>", methods=["POST"])
def restore(slug: str) -> Any:
    check_csrf()
    slug = slug_or_404(slug)
    writer = require_writer(slug.split("/", 1)[0])
    wiki = host().wiki(writer)
    revision = request.form.get("revision") or None
    basehash = request.form.get("basehash") or None
    try:
        wiki.restore_page(slug, revision, basehash)
    except Conflict as exc:
        return page("message.html", slug.split("/", 1)[0], title="Not restored",
                    message=f"{exc}. Open the history again and restore from there.", slug=slug), 409  # fmt: skip
    return redirect(render.page_href(slug))


# --- editing -------------------------------------------------------------------------------


def _tags(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


@bp.route("/_/edit/<path:slug>", methods=["GET", "POST"])
def edit(slug: str) -> Any:
    slug = slug_or_404(slug)
    namespace = slug.split("/", 1)[0]
    writer = require_writer(namespace)
    wiki = host().wiki(writer)
    if request.method == "GET":
        current = wiki.page(slug)
        return page("edit.html", namespace, slug=slug, doc=current, body=current.body, title=f"Edit {current.title}",
                    tags=", ".join(current.tags), basehash=current.hash)  # fmt: skip
    check_csrf()
    form = request.form
    body = form.get("body", "").replace("\r\n", "\n")
    title = form.get("title", "")
    tags = _tags(form.get("tags", ""))
    pin = form.get("pin") == "on"
    basehash = form.get("basehash", "")
    try:
        saved = wiki.save_page(slug, basehash, body, title, tags, pin)
    except Conflict as exc:
        theirs = str(exc.data.get("body", ""))
        return page("conflict.html", namespace, slug=slug, mine=body, theirs=theirs, title=f"Edit {title}",
                    page_title=title, tags=", ".join(tags), pin=pin, basehash=exc.data.get("hash", ""),
                    lines=diff_lines(theirs, body, "their version", "your version")), 409  # fmt: skip
    except ValidationError as exc:
        return page("edit.html", namespace, slug=slug, doc=None, body=body, title=f"Edit {title}", page_title=title,
                    tags=", ".join(tags), basehash=basehash, error=str(exc)), 400  # fmt: skip
    if saved.get("proposed"):  # a namespace that takes changes by review: the person sees their change request
        return redirect(url_for("web.review_request", request_id=saved["proposed"]))
    return redirect(render.page_href(slug))


def _new_page(wiki: Any, namespace: str, title: str = "") -> tuple[str, str, str]:
    """(pattern of new.slug, page name the form starts with, template) of a namespace the person may write in."""
    try:
        new = wiki.new_page(namespace, title)
    except HostcoreError:
        return "", "", ""
    name = new["slug"].split("/", 1)[1] if new["slug"] and "{title}" not in new["pattern"] else ""
    return new["pattern"], name, new["template"]


@bp.route("/_/new", methods=["GET", "POST"])
def new() -> Any:
    person = access.viewer()
    if person is None:
        raise SignInFirst()
    writer = access.web_principal(person)
    wiki = host().wiki(writer)
    namespaces = [n["name"] for n in wiki.list_namespaces()["namespaces"]] if wiki.may("read") else []
    chosen = request.values.get("namespace") or (namespaces[0] if namespaces else "")
    pattern, name, template = _new_page(wiki, chosen) if chosen in namespaces else ("", "", "")
    if request.method == "GET":
        return page("new.html", person=person, namespaces=namespaces, chosen=chosen, name=request.args.get("name") or name,
                    body=template, title="New page", page_title="", pattern=pattern)  # fmt: skip
    check_csrf()
    name = request.form.get("name", "").strip().strip("/")
    title = request.form.get("title", "").strip()
    body = request.form.get("body", "").replace("\r\n", "\n")
    try:
        slug = f"{chosen}/{name}" if name else wiki.new_page(chosen, title)["slug"]
        if not slug:
            raise ValidationError("is empty; give the page a name or a title", field="name")
        wiki.save_page(slug, None, body, title or slug.rsplit("/", 1)[-1], _tags(request.form.get("tags", "")))
    except HostcoreError as exc:
        return page("new.html", person=person, namespaces=namespaces, chosen=chosen, name=name, body=body,
                    title="New page", page_title=title, pattern=pattern, error=str(exc)), 400  # fmt: skip
    return redirect(render.page_href(slug))


def page_to_change(slug: str) -> tuple[str, str, Any, Any]:
    """(slug, namespace, the writer's service, the page) of a page the caller may change; 404 or sign-in otherwise."""
    slug = slug_or_404(slug)
    namespace = slug.split("/", 1)[0]
    wiki = host().wiki(require_writer(namespace))
    return slug, namespace, wiki, wiki.page(slug)


@bp.route("/_/move/<path:slug>", methods=["GET", "POST"])
def move(slug: str) -> Any:
    slug, namespace, wiki, current = page_to_change(slug)
    if request.method == "GET":
        return page("move.html", namespace, slug=slug, doc=current, title=f"Move or rename {current.title}")
    check_csrf()
    try:
        if request.form.get("action") == "rename":
            target = wiki.rename_page(slug, request.form.get("title", ""), request.form.get("basehash", ""))["slug"]
        else:
            target = wiki.move_page(slug, request.form.get("new_slug", "").strip(), request.form.get("basehash", ""))["slug"]
    except HostcoreError as exc:
        return page("move.html", namespace, slug=slug, doc=current, title=f"Move or rename {current.title}", error=str(exc)), 400
    return redirect(render.page_href(target))


@bp.route("/_/delete/<path:slug>", methods=["GET", "POST"])
def delete(slug: str) -> Any:
    slug, namespace, wiki, current = page_to_change(slug)
    if request.method == "GET":
        return page("delete.html", namespace, slug=slug, doc=current, title=f"Delete {current.title}")
    check_csrf()
    try:
        wiki.delete_page(slug, request.form.get("basehash") or None)
    except Conflict as exc:
        return page("message.html", namespace, title="Not deleted", slug=slug,
                    message=f"{exc}. Read the page again before deleting it."), 409  # fmt: skip
    return redirect(url_for("web.namespace_index", namespace=namespace))
