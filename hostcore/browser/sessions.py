"""People's browser sessions, and what every HTML page of every plugin shares.

- A signed session cookie (Flask's, HttpOnly, SameSite=Lax, Secure behind https) holds who signed
  in and a session id. Only the core writes it: a sign-in plugin (local accounts, OpenID Connect)
  checks the person and calls :func:`sign_in`; every request asks the ``find_person`` hook whether
  that person may still come in (an account disabled since is signed out at once).
- Each session is also a record in ``host.shared`` (kind ``web-session``, keyed by the SHA-256 of
  its id), so every worker and host knows which sessions are live: a cookie whose record is gone
  opens nothing, whoever kept a copy of it. :func:`sign_out` deletes the record;
  :func:`end_sessions` ends every session of a person (a changed password);
  :func:`sessions_of` / :func:`end_session` let a person see and end their own.
- :func:`person` is who is calling from a browser: the session's person, or the owner of a valid
  bearer token (scripts and ``curl``).
- :func:`csrf_token` / :func:`check_csrf`: every form that changes something carries the token.
- :func:`safe_next`: redirects after sign-in go only to a path on this site.
- :func:`admit_page`: a page refuses a foreign ``Host`` or ``Origin`` and counts against the
  caller's ``requests`` limit, as the MCP endpoint and the file routes do.
- HTML responses get a content security policy, anti-framing and no-sniff headers.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
import sqlite3
import time
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import quote, urlsplit

from flask import Flask, Response, abort, current_app, g, has_request_context, jsonify, redirect, request, session
from markupsafe import escape

from hostcore.domain.principal import Principal
from hostcore.errors import HTTP_STATUS, Forbidden, HostcoreError, RateLimited, Unauthorized, Unavailable
from hostcore.mcp.clients import from_user_agent
from hostcore.seams.activity import WEB, Activity, start_collecting
from hostcore.service.policy import ANONYMOUS, origin_allowed, refusal, spend_request

if TYPE_CHECKING:
    from hostcore.host.host import Host
    from hostcore.seams.host import PluginHost

log = logging.getLogger(__name__)

LOGIN_PATH = "/_/login"
LOGOUT_PATH = "/_/logout"
SESSION_COOKIE = "hostcore_session"
SESSION_DAYS = 14
SESSIONS = "web-session"
SEEN_EVERY = 60.0  # seconds between two writes of a session's "last seen" (and its renewed expiry)
AGENT_CHARS = 200
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)


def host_of() -> Host:
    return cast("Host", current_app.extensions["hostcore"])


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
    app.after_request(record_action)
    app.register_error_handler(HostcoreError, error_page)
    app.jinja_env.globals["csrf_token"] = csrf_token


def error_page(exc: HostcoreError) -> Response:
    """A HostcoreError raised by a plugin's page: its HTTP status, as a small HTML page for a
    browser and as ``{"error": {...}}`` for anything else."""
    g.hostcore_outcome = exc.code
    response = _error_response(HTTP_STATUS.get(exc.code, 400), str(exc), exc.to_dict())
    if isinstance(exc, RateLimited) and exc.data.get("retry_after"):
        response.headers["Retry-After"] = str(exc.data["retry_after"])
    return response


def _error_response(status: int, message: str, error: dict[str, Any]) -> Response:
    if request.accept_mimetypes.accept_html and not request.accept_mimetypes.accept_json:
        body = (f"<!doctype html><title>{status}</title><h1>{status}</h1>"
                f"<p>{escape(message)}</p><p><a href=\"/\">Home</a></p>")  # fmt: skip
        return Response(body, status, mimetype="text/html")
    response = jsonify({"error": error})
    response.status_code = status
    return response


def admit_page(host: PluginHost | None = None, *, count: bool = True) -> None:
    """Let this request reach a page only as every HTTP route of the wiki is reached
    (:mod:`hostcore.service.policy`): a ``Host`` the wiki does not serve is refused with 421, a
    foreign ``Origin`` with 403 (``Origin: null`` goes on to :func:`check_csrf`), and, when
    ``count``, the request counts against the caller's ``requests`` limit: a person (session or
    bearer token) by name, a visitor by address; over it, 429 with ``Retry-After``. Each refusal
    is a small HTML page for a browser, ``{"error": {...}}`` for a program. Call it before a
    page answers (a blueprint's ``before_request``); assets that are the same for everyone need
    no ``count``."""
    host = host or host_of()
    refused = refusal(host, request.host, request.headers.get("Origin"), opaque_origin=True)
    if refused is not None:
        status, message = refused
        abort(_error_response(status, message, {"code": "forbidden" if status == 403 else "misdirected", "message": message}))
    if count:
        g.hostcore_activity = (time.time(), time.perf_counter(), start_collecting())
        try:
            caller = person(host)
        except Unavailable:  # who it is cannot be told: counted as a visitor, as pages read it
            caller = None
        spend_request(cast("Host", host), caller, request.remote_addr)


def record_action(response: Response) -> Response:
    """Put a page :func:`admit_page` counted in the activity log: who (as the page found them:
    nobody asks again), how they came in, the browser (its ``User-Agent``'s first product), a
    digest of the browser session, the page's endpoint, the pages it touched, the outcome (``ok``,
    the error's code, else ``http_<status>``) and the time it took."""
    started = g.pop("hostcore_activity", None)
    if started is None:
        return response
    begun, clock, slugs = started
    known = g.get("hostcore_person")
    caller: Principal | None = known[1] if known is not None else None
    status = response.status_code
    outcome = g.get("hostcore_outcome") or ("ok" if status < 400 else f"http_{status}")
    auth = "token" if request.headers.get("Authorization") else "session" if caller is not None else "none"
    endpoint = (request.endpoint or "unknown").rsplit(".", 1)[-1]
    host_of().activity.record(Activity(
        begun, caller.name if caller is not None else ANONYMOUS, auth, from_user_agent(request.headers.get("User-Agent")) or "",
        (current_session() or "")[:16], f"{WEB}{endpoint}", tuple(slugs), outcome, round((time.perf_counter() - clock) * 1000, 3),
    ))  # fmt: skip
    return response


def security_headers(response: Response) -> Response:
    """Headers for every HTML page (a plugin may set its own CSP first)."""
    if response.mimetype == "text/html":
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Frame-Options", "DENY")
        response.headers.setdefault("Referrer-Policy", "same-origin")
    response.headers.setdefault("X-Content-Type-Options", "nosniff")
    return response


def _session_key(session_id: str) -> str:
    return hashlib.sha256(session_id.encode()).hexdigest()


def _client() -> dict[str, str]:
    """Where this request comes from, roughly, for a person's list of their sessions."""
    return {"agent": request.headers.get("User-Agent", "")[:AGENT_CHARS], "address": request.remote_addr or ""}


def sign_in(name: str, host: PluginHost | None = None) -> None:
    """Start a session for the person ``name`` (already checked by the caller): a new session, so
    nothing set before signing in (a fixed session, an old CSRF token) survives, and a new record
    in shared state that every worker checks."""
    host = host or host_of()
    sign_out(host)
    session_id = secrets.token_urlsafe(32)
    now = time.time()
    record = {"person": name, "created": now, "seen": now, **_client()}
    host.shared.put(SESSIONS, _session_key(session_id), record, ttl=SESSION_DAYS * 86400)
    session["person"] = name
    session["sid"] = session_id
    session["csrf"] = secrets.token_urlsafe(32)
    session.permanent = True
    g.hostcore_session = record


def sign_out(host: PluginHost | None = None) -> None:
    """End this browser's session: its record goes (so a copy of the cookie opens nothing,
    on any worker or host) and the cookie is emptied."""
    session_id = session.get("sid")
    if isinstance(session_id, str) and session_id:
        (host or host_of()).shared.delete(SESSIONS, _session_key(session_id))
    session.clear()
    g.pop("hostcore_session", None)


def _live_session(host: PluginHost, name: str) -> dict[str, Any] | None:
    """This browser's session record, if it is live and belongs to ``name``; notes when it was
    last seen (at most every :data:`SEEN_EVERY` seconds, renewing its expiry as the cookie's is)."""
    if "hostcore_session" in g:
        return g.hostcore_session
    session_id = session.get("sid")
    if not isinstance(session_id, str) or not session_id:
        return None  # no id: a cookie from before sessions were recorded, or a forged one
    key = _session_key(session_id)
    record = host.shared.get(SESSIONS, key)
    if record is None or record.get("person") != name:
        return None
    now = time.time()
    if now - float(record.get("seen", 0)) > SEEN_EVERY:
        record.update(seen=now, **_client())
        try:
            host.shared.put(SESSIONS, key, record, ttl=SESSION_DAYS * 86400)
        except (sqlite3.Error, OSError, HostcoreError) as exc:  # a full disk: the session still works
            log.warning("last use of a session of %r not recorded (tried again at its next request): %s", name, exc)
    g.hostcore_session = record
    return record


def person(host: PluginHost | None = None) -> Principal | None:
    """Who is calling from a browser: the owner of a bearer token sent with the request, else the
    person signed in to this session (if its record is live and the ``find_person`` hook still
    knows them), else None. Raises Unauthorized for a bearer token that is invalid. Asked once
    a request (:func:`admit_page` counts the caller, then the page reads who it is): the answer is
    kept until the credentials it came from change (a sign-in, a sign-out)."""
    host = host or host_of()
    asked = (request.headers.get("Authorization"), session.get("person"), session.get("sid"))
    known = g.get("hostcore_person")
    if known is not None and known[0] == asked:
        return cast("Principal | None", known[1])
    found = _person(host)
    g.hostcore_person = (asked, found)
    return found


def _person(host: PluginHost) -> Principal | None:
    if request.headers.get("Authorization"):
        principal = host.pm.hook.authenticate(request=request, host=host)
        if principal is None:
            raise Unauthorized("the bearer token is not recognised")
        return principal
    name = session.get("person")
    if not isinstance(name, str):
        return None
    if _live_session(host, name) is None:
        session.clear()  # ended elsewhere (signed out, a changed password): nothing left to delete
        return None
    found = host.pm.hook.find_person(name=name, host=host)
    if found is None:
        sign_out(host)
    return found


def current_session() -> str | None:
    """The id (as :func:`sessions_of` lists it) of this browser's session, or None."""
    session_id = session.get("sid") if has_request_context() else None
    return _session_key(session_id) if isinstance(session_id, str) and session_id else None


def sessions_of(host: PluginHost, name: str) -> list[dict[str, Any]]:
    """The live sessions of the person ``name``, most recently seen first: ``id``, ``created``,
    ``seen`` (epoch seconds), ``agent`` (the browser's User-Agent, cut short), ``address`` (as
    last seen) and ``current`` (this browser's)."""
    here = current_session()
    found = [{"id": key, "created": r["created"], "seen": r["seen"], "agent": r.get("agent", ""),
              "address": r.get("address", ""), "current": key == here}
             for key, r in host.shared.scan(SESSIONS) if r.get("person") == name]  # fmt: skip
    return sorted(found, key=lambda s: s["seen"], reverse=True)


def end_session(host: PluginHost, name: str, session_id: str) -> bool:
    """End the session ``session_id`` (an id from :func:`sessions_of`) if it is one of ``name``'s;
    True if it was. Ending this browser's own session signs it out."""
    record = host.shared.get(SESSIONS, session_id) if session_id else None
    if record is None or record.get("person") != name:
        return False
    if session_id == current_session():
        sign_out(host)
        return True
    return host.shared.delete(SESSIONS, session_id)


def end_sessions(host: PluginHost, name: str) -> int:
    """End every session of the person ``name``, on every worker and host (their password changed,
    say); returns how many there were. Works outside a request (the CLI)."""
    ended = sum(host.shared.delete(SESSIONS, s["id"]) for s in sessions_of(host, name))
    if current_session() is not None and session.get("person") == name:
        session.clear()
        g.pop("hostcore_session", None)
    return ended


def csrf_token() -> str:
    """This session's CSRF token, for a hidden ``csrf_token`` field of every form."""
    if "csrf" not in session:
        session["csrf"] = secrets.token_urlsafe(32)
    return str(session["csrf"])


def check_csrf(host: PluginHost | None = None) -> None:
    """Raise Forbidden unless this POST carries this session's CSRF token and, where the browser
    says where it comes from, an allowed Origin."""
    host = host or host_of()
    origin = request.headers.get("Origin")
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
