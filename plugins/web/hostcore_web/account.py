"""The account pages: a person's personal access tokens (create, shown once, list, revoke) and a
link to the connected apps (``/_/apps``, the OAuth plugin's page).

The tokens plugin owns the store; this page calls it through :func:`token_store` only, as the
person (``owner``), and never grants more than the person holds.
"""

from __future__ import annotations

import time
from typing import Any

from flask import abort, redirect, request, session, url_for

from hostcore import SCOPES, HostcoreError, Principal, ValidationError, check_csrf, check_namespace

from .access import SignInFirst, host, viewer
from .views import bp, page

APPS_PATH = "/_/apps"


def token_store() -> Any:
    """The tokens plugin's store, or None when the plugin is not enabled: asked of the plugin the
    host loaded under that name, so this plugin imports no other."""
    tokens = host().pm.get_plugin("tokens")
    return tokens.store(host()) if tokens is not None else None


def signed_in() -> tuple[Principal, str]:
    """(person, account name) of the person signed in to this browser session. Tokens are managed
    in a session only: a bearer token may not make or revoke tokens."""
    person = viewer()
    name = session.get("person")
    if person is None or request.headers.get("Authorization") or not isinstance(name, str):
        raise SignInFirst()
    return person, name


def check_grant(person: Principal, scopes: list[str], namespaces: list[str]) -> None:
    """A token may not hold a scope or namespace its person does not."""
    for scope in scopes:
        if scope not in SCOPES or not person.has_scope(scope):
            raise ValidationError(f"you do not hold the {scope!r} scope; pick among those you hold", field="scope")
    for ns in namespaces:
        check_namespace(ns, "namespace")
        if not person.can_access(ns):
            raise ValidationError(f"you have no access to namespace {ns!r}; leave it out", field="namespace")
    if person.namespaces is not None and not namespaces:
        raise ValidationError("you are limited to some namespaces: name those the token may use", field="namespace")


@bp.route("/_/account", methods=["GET"])
def account() -> Any:
    return redirect(url_for("web.tokens"))


@bp.route("/_/account/tokens", methods=["GET", "POST"])
def tokens() -> Any:
    person, owner = signed_in()
    store = token_store()
    if store is None:
        abort(404)
    created, error = None, None
    if request.method == "POST":
        check_csrf()
        name = request.form.get("name", "").strip()
        scopes = request.form.getlist("scope")
        namespaces = [n.strip() for n in request.form.get("namespaces", "").replace(",", " ").split() if n.strip()]
        try:
            check_grant(person, scopes, namespaces)
            created = {"name": name, "token": store.create(name, scopes, namespaces or None, owner=owner)}
        except HostcoreError as exc:
            error = str(exc)
    mine = store.list(owner=owner)
    for t in mine:
        t["created_text"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime(t["created"]))
        t["used_text"] = time.strftime("%Y-%m-%d %H:%M", time.gmtime(t["last_used"])) if t["last_used"] else "never"
    held = [s for s in SCOPES if person.has_scope(s)]
    response = page("tokens.html", person=person, tokens=mine, created=created, error=error, scopes=held,
                    apps_path=APPS_PATH, title="Access tokens")  # fmt: skip
    status = 400 if error else 200
    headers = {"Cache-Control": "no-store"}  # a new token is on this page once; keep it out of caches
    return response, status, headers


@bp.route("/_/account/tokens/revoke", methods=["POST"])
def revoke_token() -> Any:
    check_csrf()
    _person, owner = signed_in()
    store = token_store()
    if store is None:
        abort(404)
    store.revoke(request.form.get("id", ""), owner=owner)
    return redirect(url_for("web.tokens"))
