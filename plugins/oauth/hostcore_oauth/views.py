"""The HTTP side of the authorization server: RFC 8414 metadata, the token, registration and
revocation endpoints (Authlib answers them), the consent page and the connected apps page.

The consent page needs a signed-in person, names the app by its name *and* where it sends the
person back and where its metadata document lives, lets the person narrow the scopes (never beyond
their own) and the namespaces, and takes a CSRF-checked POST. Its only redirect goes to a redirect
URI the client registered (exact match), so it redirects nowhere else. A malformed request whose
client or redirect URI cannot be trusted gets the OAuth error page (RFC 6749 4.1.2.1), never a
redirect; one with a known client and redirect URI goes back to the app with ``error``.

Both pages sit in the site's frame (header, navigation) when a plugin answers the ``frame_page``
hook (the web plugin does), else they are plain pages of their own.
"""

from __future__ import annotations

import re
import time
from typing import Any
from urllib.parse import urlsplit

from authlib.oauth2.rfc6749.errors import OAuth2Error
from flask import Blueprint, Flask, Response, jsonify, render_template, request, session, url_for
from markupsafe import Markup

from hostcore import CSP, SCOPES, Forbidden, ValidationError, check_csrf, login_redirect, person
from hostcore_oauth import APPS_PATH
from hostcore_oauth.server import PATHS, OAuthServer, scope_list

AUTHORIZE = PATHS["authorization_endpoint"]
METADATA_PATHS = (
    "/.well-known/oauth-authorization-server",
    "/.well-known/oauth-authorization-server/_/mcp",
    "/.well-known/openid-configuration",
)
ALL = "*"


def _open(response: Response) -> Response:
    """Endpoints a browser-based MCP client calls from its own origin (no cookies are involved)."""
    response.headers["Access-Control-Allow-Origin"] = "*"
    response.headers["Access-Control-Allow-Headers"] = "Authorization, Content-Type, MCP-Protocol-Version"
    response.headers["Access-Control-Allow-Methods"] = "GET, POST, OPTIONS"
    response.headers["Cache-Control"] = response.headers.get("Cache-Control", "no-store")
    return response


def _when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(t)) if t else "never"


def make_blueprint(server_of: Any) -> Blueprint:
    bp = Blueprint("hostcore_oauth", __name__, template_folder="templates", static_folder="static", static_url_path="/_/static/oauth")

    def server() -> OAuthServer:
        return server_of()

    def metadata() -> Response:
        return _open(jsonify(server().metadata()))

    for number, path in enumerate(METADATA_PATHS):
        bp.add_url_rule(path, f"metadata{number}", metadata)

    def endpoint(name: str) -> Any:
        def view() -> Response:
            if request.method == "OPTIONS":
                return _open(Response(status=204))
            if name == "token":
                return _open(server().create_token_response())
            return _open(server().create_endpoint_response(name))

        return view

    for key, name in (("token_endpoint", "token"), ("revocation_endpoint", "revocation"),
                      ("registration_endpoint", "client_registration")):  # fmt: skip
        bp.add_url_rule(PATHS[key], name, endpoint(name), methods=["POST", "OPTIONS"])

    @bp.route(AUTHORIZE, methods=["GET", "POST"])
    def authorize() -> Any:
        who, name = _signed_in()
        if who is None:
            return login_redirect()
        srv = server()
        try:
            grant = srv.consent_request()
        except OAuth2Error as error:
            if error.redirect_uri:  # a registered redirect URI (exact match): tell the client
                return srv.handle_error_response(None, error)
            return _error_page(srv, error)
        client = grant.request.client
        asked = scope_list(grant.request.scope or "")
        offered = [s for s in asked if who.has_scope(s)]
        namespaces = _namespaces(srv, who)
        problem = None
        if request.method == "POST":
            check_csrf()
            if request.form.get("decision") != "approve":
                return srv.create_authorization_response(grant=grant, grant_user=None)
            chosen = [s for s in request.form.getlist("grant_scope") if s in offered]
            picked = request.form.getlist("grant_namespace")
            if not chosen:
                problem = "Choose at least one permission, or deny."
            elif not picked:
                problem = "Choose the namespaces the app may use, or deny."
            elif ALL in picked and who.namespaces is not None:
                raise Forbidden("you may not give an app every namespace: you are limited to some", field="grant_namespace")
            elif ALL not in picked and not set(picked) <= {n["name"] for n in namespaces}:
                raise Forbidden("you may only give an app namespaces you can use", field="grant_namespace")
            else:
                consent = {"person": name, "scopes": chosen, "namespaces": None if ALL in picked else sorted(set(picked))}
                return srv.create_authorization_response(grant=grant, grant_user=consent)
        redirect_uri = grant.request.payload.redirect_uri or client.get_default_redirect_uri() or ""
        html = _page(
            srv,
            f"Connect {client.name}?",
            "oauth_consent.html",
            client=client,
            client_id=client.client_id,
            redirect_host=urlsplit(redirect_uri).netloc,
            redirect_uri=redirect_uri,
            metadata_host=client.record.get("metadata_host"),
            registered=_when(client.record.get("created")),
            offered=offered,
            refused=[s for s in asked if s not in offered],
            scopes_help=SCOPE_HELP,
            namespaces=namespaces,
            every_namespace=who.namespaces is None,
            person=name,
            action=request.full_path,
            problem=problem,
        )
        response = Response(html, 400 if problem else 200, mimetype="text/html")
        # The approval redirects to the client: a browser applies form-action to that redirect too.
        response.headers["Content-Security-Policy"] = CSP.replace("form-action 'self'", f"form-action 'self' {_source(redirect_uri)}")
        return response

    @bp.route(APPS_PATH, methods=["GET", "POST"])
    def apps() -> Any:
        who, name = _signed_in()
        if who is None:
            return login_redirect()
        grants = server().grants
        done = None
        if request.method == "POST":
            check_csrf()
            client_id = request.form.get("client_id", "")
            mine = [g for g in grants.grants_of(name) if g["client_id"] == client_id]
            if not mine:
                raise ValidationError("that app is not connected (any more); reload the page", field="client_id")
            for g in mine:
                grants.revoke_grant(g["id"])
            done = mine[0]["client_name"]
        apps = _apps(grants.grants_of(name))
        html = _page(server(), "Connected apps", "oauth_apps.html", apps=apps, done=done, person=name)
        return Response(html, mimetype="text/html")

    return bp


SCOPE_HELP = {
    "read": "read and search pages",
    "propose": "propose changes to pages for a person to review (change requests), without changing any",
    "write": "create, change, move and delete pages",
    "review": "apply or reject anyone's change requests",
    "admin": "change namespace settings",
}


def _page(srv: OAuthServer, title: str, template: str, **context: Any) -> str:
    """The page ``template`` renders, in the site's frame when a plugin gives one (``frame_page``),
    else as a plain page of this plugin's."""
    main = Markup(render_template(template, **context))  # Jinja escaped what the template holds
    head = Markup('<link rel="stylesheet" href="{}">').format(url_for("hostcore_oauth.static", filename="oauth.css"))
    framed = srv.host.pm.hook.frame_page(title=title, main=main, head=head, host=srv.host)
    return str(framed) if framed is not None else render_template("oauth_page.html", title=title, main=main, head=head)


def _error_page(srv: OAuthServer, error: OAuth2Error) -> Response:
    """An authorization request that cannot go back to its app (no client, an unknown one, a
    redirect URI it did not register): the person is told here, with what the app sent wrong."""
    html = _page(srv, "The app's request cannot be used", "oauth_error.html", error=error.error,
                 description=error.description or "the app sent an invalid request")  # fmt: skip
    return Response(html, 400, mimetype="text/html", headers={"Cache-Control": "no-store"})


def _apps(grants: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """One entry per app: an app approved again (a step-up to more scopes, another device of the
    same app) holds several grants, shown as one, with everything it may do through any of them."""
    connected: dict[str, dict[str, Any]] = {}
    for g in grants:
        connected.setdefault(g["client_id"], {"name": g["client_name"], "client_id": g["client_id"], "grants": []})["grants"].append(g)
    apps = []
    for app in connected.values():
        held = app.pop("grants")
        newest = max(held, key=lambda g: g["created"])
        scopes = {s for g in held for s in g["scopes"]}
        every = any(g["namespaces"] is None for g in held)
        used = [g["last_used"] for g in held if g["last_used"]]
        apps.append({**app, "name": newest["client_name"], "host": _client_host(app["client_id"]),
                     "scopes": " ".join(s for s in SCOPES if s in scopes),
                     "namespaces": "every namespace" if every else ", ".join(sorted({n for g in held for n in g["namespaces"]})),
                     "created": _when(newest["created"]), "last_used": _when(max(used) if used else None)})  # fmt: skip
    return apps


def _source(uri: str) -> str:
    """The CSP source of a redirect URI: its origin, or its scheme for an app's own (``cursor:``)."""
    parts = urlsplit(uri)
    source = f"{parts.scheme}://{parts.netloc}" if parts.scheme in ("http", "https") else f"{parts.scheme}:"
    return source if re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]*:(//[A-Za-z0-9.:\[\]-]+)?", source) else ""


def _signed_in() -> tuple[Any, str]:
    """(Principal, the name find_person knows them by) of the person signed in to this browser
    session, or (None, "")."""
    who, name = person(), session.get("person")
    return (who, name) if who is not None and isinstance(name, str) else (None, "")


def _client_host(client_id: str) -> str:
    return urlsplit(client_id).netloc if client_id.startswith(("https://", "http://")) else "registered here"


def _namespaces(srv: OAuthServer, who: Any) -> list[dict[str, Any]]:
    if not who.has_scope("read"):
        return []
    return [dict(entry) for entry in srv.host.wiki(who).list_namespaces()["namespaces"]]


def install(app: Flask, server_of: Any) -> None:
    app.register_blueprint(make_blueprint(server_of))
