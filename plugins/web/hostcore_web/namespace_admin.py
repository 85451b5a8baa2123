"""The namespace pages of an admin: list, create, change every setting, delete with its pages
(after a page naming what goes) and restore a deleted one.

Every check is the service's, as the person (``save_namespace``, ``namespace_contents``,
``delete_namespace``, ``restore_namespace``: the ``admin`` scope and access to the namespace):
these views turn a form into the settings the service takes and its errors into a note beside
the field they name. A stale form (another admin saved meanwhile) shows what each of them set,
as the page editor's conflict page does, and saves only when sent again.
"""

from __future__ import annotations

from typing import Any, Protocol

from flask import abort, redirect, request, url_for

from hostcore import (
    NAMESPACE_CHOICES,
    NAMESPACE_DEFAULTS,
    Conflict,
    Forbidden,
    HostcoreError,
    NotFound,
    Principal,
    ServiceKey,
    ValidationError,
    check_csrf,
)

from . import access
from .access import SignInFirst, host
from .views import bp, page


class PeoplePages(Protocol):
    """The accounts plugin's pages of every account (``people-pages``): the admin's links name them."""

    path: str


PEOPLE_PAGES: ServiceKey[PeoplePages] = ServiceKey("people-pages", PeoplePages)


@bp.app_template_global("people_path")
def people_path() -> str | None:
    """Where an admin manages people, when a plugin serves those pages."""
    pages = host().service(PEOPLE_PAGES)
    return pages.path if pages is not None else None


TEXT = ("title", "description", "image", "index", "guide", "inbox")
"""Plain text settings, a form field each of the same name."""
LABELS = {
    "name": "Name", "title": "Title", "description": "Description", "public": "Public", "image": "Link preview image",
    "skin": "Skin", "palette": "Palette", "index": "Index page", "guide": "Guide page", "inbox": "Inbox page",
    "widgets": "Widgets", "tree": "Page tree", "new.template": "New page template", "new.slug": "New page name",
    "export.base_url": "Export base URL", "export.sitemap": "Sitemap", "export.robots_allow": "Allow crawling",
    "export.links": "Export links", "basehash": "Settings",
}  # fmt: skip


def admin() -> tuple[Principal, Any]:
    """(person, the person's service as the web's author) of a signed-in person; sign-in otherwise.
    Whether they may is the service's to say (the admin scope, namespace access)."""
    person = access.viewer()
    if person is None:
        raise SignInFirst()
    return person, host().wiki(access.web_principal(person))


def settings_from(form: Any) -> dict[str, Any]:
    """The settings a form sends, every one of them (lists and objects whole, as save_namespace replaces them)."""
    fields: dict[str, Any] = {key: form.get(key, "") for key in TEXT}
    fields["description"] = fields["description"].replace("\r\n", "\n")
    fields["public"] = form.get("public") == "on"
    fields["skin"] = form.get("skin", "")
    fields["palette"] = form.get("palette", "")
    fields["widgets"] = [w for w in form.get("widgets", "").replace(",", " ").split() if w]
    fields["tree"] = [line.strip() for line in form.get("tree", "").splitlines() if line.strip()]
    template, slug = form.get("new_template", "").replace("\r\n", "\n"), form.get("new_slug", "").strip()
    fields["new"] = {"template": template, "slug": slug} if template or slug else {}
    export = {
        "base_url": form.get("export_base_url", "").strip(), "sitemap": form.get("export_sitemap") == "on",
        "robots_allow": form.get("export_robots_allow") == "on", "links": form.get("export_links", "").strip(),
    }  # fmt: skip
    fields["export"] = {k: v for k, v in export.items() if v} if any(export.values()) else {}
    return fields


def error_field(exc: HostcoreError) -> str:
    """The form field an error of the service names: ``tree[3]`` is the tree's."""
    return (exc.field or "").split("[", 1)[0]


def shown(value: Any) -> str:
    """A setting's value as a person reads it: yes/no, a list joined, an object as its fields."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(str(v) for v in value) or "(none)"
    if isinstance(value, dict):
        return "; ".join(f"{k}: {shown(v)}" for k, v in value.items() if v not in ("", None)) or "(none)"
    return str(value) if value not in ("", None) else "(empty)"


def form_page(
    name: str, settings: dict[str, Any], *, creating: bool, basehash: str = "", error: HostcoreError | None = None,
    theirs: dict[str, Any] | None = None, status: int = 200,
) -> Any:  # fmt: skip
    title = "New namespace" if creating else f"Settings of {settings.get('title') or name}"
    changed = [] if theirs is None else [
        {"field": LABELS.get(k, k), "theirs": shown(theirs.get(k)), "yours": shown(settings.get(k))}
        for k in ("title", "description", "public", "image", "skin", "palette", "index", "guide", "inbox", "widgets", "tree",
                  "new", "export")
        if theirs.get(k) != settings.get(k)
    ]  # fmt: skip
    html = page(
        "namespace_settings.html", None if creating else name, name=name, values=settings, creating=creating,
        basehash=basehash, error=str(error) if error else None, error_field=error_field(error) if error else "",
        labels=LABELS, choices=NAMESPACE_CHOICES, title=title, changed=changed, stale=theirs is not None,
    )  # fmt: skip
    return html, status, {"Cache-Control": "no-store"}


@bp.route("/_/namespaces")
def namespaces() -> Any:
    person, wiki = admin()
    wiki.principal.require("admin")
    listed = [ns for ns in wiki.list_namespaces()["namespaces"] if wiki.may("admin", ns["name"])]
    deleted = request.args.get("deleted", "")
    counts = [int(request.args.get(k, "0")) if request.args.get(k, "0").isdigit() else 0 for k in ("pages", "attachments")]
    return page("namespaces.html", person=person, namespaces=listed, title="Namespaces", deleted=deleted, counts=counts,
                recoverable=request.args.get("recoverable") == "1", error=None, gone=wiki.deleted_namespaces()), 200, {
                "Cache-Control": "no-store"}  # fmt: skip


@bp.route("/_/namespaces/new", methods=["GET", "POST"])
def new_namespace() -> Any:
    _person, wiki = admin()
    wiki.principal.require("admin")
    if request.method == "GET":
        return form_page("", dict(NAMESPACE_DEFAULTS), creating=True)
    check_csrf()
    name = request.form.get("name", "").strip()
    fields = settings_from(request.form)
    try:
        wiki.save_namespace(name, None, **fields)
    except HostcoreError as exc:
        return form_page(name, fields, creating=True, error=exc, status=409 if isinstance(exc, Conflict) else 400)
    return redirect(url_for("web.namespace_index", namespace=name), 303)


def _settings(wiki: Any, name: str) -> dict[str, Any]:
    """The namespace's settings, for an admin of it; 404 when it does not exist or is not theirs."""
    try:
        return dict(wiki.read_namespace(name))
    except (NotFound, Forbidden, ValidationError):
        abort(404)


@bp.route("/_/namespaces/<name>/settings", methods=["GET", "POST"])
def namespace_settings(name: str) -> Any:
    _person, wiki = admin()
    current = _settings(wiki, name)
    if request.method == "GET":
        return form_page(name, current, creating=False, basehash=current["hash"])
    check_csrf()
    fields = settings_from(request.form)
    basehash = request.form.get("basehash", "")
    try:
        wiki.save_namespace(name, basehash, **fields)
    except Conflict as exc:
        theirs = _settings(wiki, name)
        return form_page(name, fields, creating=False, basehash=theirs["hash"], error=exc, theirs=theirs, status=409)
    except HostcoreError as exc:
        return form_page(name, fields, creating=False, basehash=basehash, error=exc, status=400)
    return redirect(url_for("web.namespace_index", namespace=name), 303)


@bp.route("/_/namespaces/<name>/delete", methods=["GET", "POST"])
def delete_namespace(name: str) -> Any:
    person, wiki = admin()
    settings = _settings(wiki, name)
    error, status = None, 200
    if request.method == "POST":
        check_csrf()
        try:
            done = wiki.delete_namespace(name, request.form.get("digest", ""))
        except Conflict as exc:
            error, status = str(exc), 409
        else:
            return redirect(url_for("web.namespaces", deleted=name, pages=done["pages"], attachments=done["attachments"],
                                    recoverable="1" if done["revision"] else "0"), 303)  # fmt: skip
    contents = wiki.namespace_contents(name)
    html = page("namespace_delete.html", name, person=person, name=name, ns_title=settings.get("title") or name,
                contents=contents, error=error, title=f"Delete namespace {name}")  # fmt: skip
    return html, status, {"Cache-Control": "no-store"}


@bp.route("/_/namespaces/restore", methods=["POST"])
def restore_namespace() -> Any:
    person, wiki = admin()
    check_csrf()
    name = request.form.get("name", "").strip()
    try:
        done = wiki.restore_namespace(name)
    except HostcoreError as exc:
        listed = [ns for ns in wiki.list_namespaces()["namespaces"] if wiki.may("admin", ns["name"])]
        html = page("namespaces.html", person=person, namespaces=listed, title="Namespaces", error=str(exc), restore_name=name,
                    gone=wiki.deleted_namespaces())  # fmt: skip
        return html, 409 if isinstance(exc, Conflict) else 400, {"Cache-Control": "no-store"}
    return redirect(url_for("web.namespace_index", namespace=done["name"]), 303)
