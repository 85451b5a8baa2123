"""People's browser sessions, and what every HTML page of every plugin shares.

- A signed session cookie (Flask's, HttpOnly, SameSite=Lax, Secure behind https) holds who signed
  in. Only the core writes it: a sign-in plugin (local accounts, OpenID Connect) checks the person
  and calls :func:`sign_in`; every request asks the ``find_person`` hook whether that person may
  still come in (an account disabled since is signed out at once).
- :func:`person` is who is calling from a browser: the session's person, or the owner of a valid
  bearer token (scripts and ``curl``).
- :func:`csrf_token` / :func:`check_csrf`: every form that changes something carries the token.
- :func:`safe_next`: redirects after sign-in go only to a path on this site.
- HTML responses get a content security policy, anti-framing and no-sniff headers.
"""

from __future__ import annotations

import hmac
import logging
import secrets
import sqlite3
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urlsplit

from flask import Flask, Response, jsonify, redirect, request, session
from markupsafe import escape

from hostcore.domain.principal import Principal, Unauthorized
from hostcore.errors import HTTP_STATUS, Forbidden, HostcoreError, RateLimited

if TYPE_CHECKING:
    from hostcore.host.host import Host

log = logging.getLogger(__name__)

LOGIN_PATH = "/_/login"
LOGOUT_PATH = "/_/logout"
SESSION_COOKIE = "hostcore_session"
SESSION_DAYS = 14
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def host_of() -> Host:
    # imported here: `import hostcore` (which every plugin and the extraction subprocess does)
    # must not load the MCP SDK, 0.5 s of imports
    from hostcore.mcp.transport import host_of as current_host

    return current_host()


def secret_key(host: Host) -> str:
    """The key that signs session cookies: made once, kept in shared state, so every worker (and,
    with REDIS_URL, every host) signs and checks alike. When shared state cannot be written (a
    full disk, Redis down) the wiki still starts: this process signs with a key of its own, so
    sessions last until it restarts and hold on this worker only (logged as a warning)."""
    try:
        record = host.shared.get("web", "secret-key")
        if record is None:
            host.shared.add("web", "secret-key", {"key": secrets.token_urlsafe(48)})
            record = host.shared.get("web", "secret-key")
    except (sqlite3.Error, OSError, HostcoreError) as exc:
        log.warning("session key not shared (%s): sessions hold on this worker until it restarts", exc)
        record = {"key": secrets.token_urlsafe(48)}
    finally:
        host.shared.close()  # this thread's connection: start-up opens nothing it keeps
    assert record is not None
    return str(record["key"])


def install(app: Flask, host: Host) -> None:
    from datetime import timedelta

    app.secret_key = secret_key(host)
    app.config.update(
        SESSION_COOKIE_NAME=SESSION_COOKIE,
        SESSION_COOKIE_HTTPONLY=True,
        SESSION_COOKIE_SAMESITE="Lax",
        SESSION_COOKIE_SECURE=host.config["PUBLIC_URL"].startswith("https://"),
        PERMANENT_SESSION_LIFETIME=timedelta(days=SESSION_DAYS),
    )
    app.after_request(security_headers)
    app.register_error_handler(HostcoreError, error_page)
    app.jinja_env.globals["csrf_token"] = csrf_token


def error_page(exc: HostcoreError) -> Response:
    """A HostcoreError raised by a plugin's page: its HTTP status, as a small HTML page for a
    browser and as ``{"error": {...}}`` for anything else."""
    status = HTTP_STATUS.get(exc.code, 400)
    if request.accept_mimetypes.accept_html and not request.accept_mimetypes.accept_json:
        body = (f"<!doctype html><title>{status}</title><h1>{status}</h1>"
                f"<p>{escape(str(exc))}</p><p><a href=\"/\">Home</a></p>")  # fmt: skip
        response = Response(body, status, mimetype="text/html")
    else:
        response = jsonify({"error": exc.to_dict()})
        response.status_code = status
    if isinstance(exc, RateLimited) and exc.data.get("retry_after"):
        response.headers["Retry-After"] = str(exc.data["retry_after"])
    return response


def security_headers(response: Response) -> Response:
    """Headers for every HTML page (a plugin may set its own CSP first)."""
    if response.mimetype == "text/html":
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    return response


def sign_in(name: str) -> None:
    """Start a session for the person ``name`` (already checked by the caller): a new session, so
    nothing set before signing in (a fixed session, an old CSRF token) survives."""
    session.clear()
    session["person"] = name
    session["csrf"] = secrets.token_urlsafe(32)
    session.permanent = True


def sign_out() -> None:
    session.clear()


def person(host: Host | None = None) -> Principal | None:
    """Who is calling from a browser: the owner of a bearer token sent with the request, else the
    person signed in to this session (if the ``find_person`` hook still knows them), else None.
    Raises Unauthorized for a bearer token that is invalid."""
    host = host or host_of()
    if request.headers.get("Authorization"):
        principal = host.pm.hook.authenticate(request=request, host=host)
        if principal is None:
            raise Unauthorized("the bearer token is not recognised")
        return principal
    name = session.get("person")
    if not isinstance(name, str):
        return None
    found = host.pm.hook.find_person(name=name, host=host)
    if found is None:
        sign_out()
    return found


def csrf_token() -> str:
    """This session's CSRF token, for a hidden ``csrf_token`` field of every form."""
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    return str(session["csrf"])


def check_csrf(host: Host | None = None) -> None:
    """Raise Forbidden unless this POST carries this session's CSRF token and, where the browser
    says where it comes from, an allowed Origin."""
    host = host or host_of()
    origin = request.headers.get("Origin")
    from hostcore.mcp.transport import origin_allowed

    if origin and origin != "null" and not origin_allowed(host, origin):
        raise Forbidden(f"a form posted from {origin!r} is refused; post it from this site", field="Origin")
    sent = request.form.get("csrf_token", "")
    known = session.get("csrf")
    if not known or not hmac.compare_digest(str(known), sent):
        raise Forbidden("the form's CSRF token is missing or stale; reload the page and submit again", field="csrf_token")


def safe_next(target: str | None, default: str = "/") -> str:
    """``target`` if it is a path on this site (not ``//evil``, ``/\\evil``, a scheme or a host), else ``default``."""
    if not target or not target.startswith("/") or target.startswith(("//", "/\\")):
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or any(c in target for c in "\r\n\t\\"):
        return default
    return target


def login_redirect(target: str | None = None) -> Any:
    """A redirect to the sign-in page that comes back to ``target`` (this request's path by default)."""
    here = target if target is not None else (request.full_path.rstrip("?") or "/")
    return redirect(f"{LOGIN_PATH}?next={quote(safe_next(here), safe='/')}")
