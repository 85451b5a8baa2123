"""The account pages: a person's personal access tokens (create, shown once, list, revoke; an
admin sees and revokes everyone's, those made with ``hostcore token`` included), their browser
sessions (see and end them), their password (with the ``accounts`` plugin) and a link to the
connected apps (``/_/apps``, the OAuth plugin's page).

The tokens, accounts and oauth plugins own their stores and pages; these pages reach them
through the services they register (``host().service(KEY)``: None when the plugin is not
enabled), as the person, and never grant more than the person holds. This plugin imports no
other plugin's code: it asks with keys of its own, whose Protocols name just what it calls.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from flask import abort, redirect, request, session, url_for

import hostcore
from hostcore import SCOPES, HostcoreError, Principal, RateLimited, ServiceKey, ValidationError, check_csrf

from . import words
from .access import SignInFirst, host, reader, viewer
from .views import bp, page

BROWSERS = (("Edg/", "Edge"), ("OPR/", "Opera"), ("Firefox/", "Firefox"), ("Chrome/", "Chrome"),
            ("Safari/", "Safari"), ("curl/", "curl"))  # fmt: skip
SYSTEMS = (("Android", "Android"), ("iPhone", "iOS"), ("iPad", "iOS"), ("Mac OS X", "macOS"),
           ("Windows", "Windows"), ("CrOS", "ChromeOS"), ("Linux", "Linux"))  # fmt: skip


class Tokens(Protocol):
    """What the token pages need of the tokens plugin's ``tokens`` service (which decides what a person may see and do)."""

    def create_for(self, person: Principal, owner: str, name: str, scopes: list[str], namespaces: list[str] | None = None) -> str: ...

    def list_for(self, person: Principal, owner: str) -> list[dict[str, Any]]: ...

    def revoke_for(self, person: Principal, owner: str, name_or_id: str) -> None: ...


class Passwords(Protocol):
    """What the password page needs of the accounts plugin's ``accounts`` service."""

    def get(self, name: str) -> dict[str, Any] | None: ...

    def change_password(self, name: str, current: str, new: str, address: str) -> int: ...


class ConnectedApps(Protocol):
    """The oauth plugin's page of a person's connected apps."""

    path: str


TOKENS: ServiceKey[Tokens] = ServiceKey("tokens", Tokens)
PASSWORDS: ServiceKey[Passwords] = ServiceKey("accounts", Passwords)
CONNECTED_APPS: ServiceKey[ConnectedApps] = ServiceKey("connected-apps", ConnectedApps)
APPS_PATH = "/_/apps"  # the tokens page names it, whichever plugins are enabled


def token_store() -> Tokens | None:
    return host().service(TOKENS)


def signed_in() -> tuple[Principal, str]:
    """(person, account name) of the person signed in to this browser session. Tokens, sessions
    and passwords are managed in a session only: a bearer token may not change them."""
    person = viewer()
    name = session.get("person")
    if person is None or request.headers.get("Authorization") or not isinstance(name, str):
        raise SignInFirst()
    return person, name


def is_admin(person: Principal) -> bool:
    """An admin of the whole wiki (not one limited to some namespaces): the tokens page says they
    see every token (the tokens plugin decides what they list and revoke: ``list_for``)."""
    return person.has_scope("admin") and person.namespaces is None


def when(t: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.gmtime(t)) if t else "never"


def browser_of(agent: str) -> str:
    """A User-Agent, roughly: "Firefox on Linux"; the agent itself, cut short, when unknown."""
    found = next((label for mark, label in BROWSERS if mark in agent), None)
    system = next((label for mark, label in SYSTEMS if mark in agent), None)
    if found is None:
        return agent[:40] or "unknown"
    return f"{found} on {system}" if system else found


def account_page(template: str, person: Principal, title: str, status: int = 200, **context: Any) -> Any:
    """A page of the account's section, with its own navigation; never cached (tokens, sessions)."""
    apps = host().service(CONNECTED_APPS)  # None: the oauth plugin is not enabled
    sections = [("Access tokens", url_for("web.tokens")) if token_store() is not None else None,
                ("Sessions", url_for("web.sessions")),
                ("Activity", url_for("web.activity")),
                ("Password", url_for("web.password")) if host().service(PASSWORDS) is not None else None,
                ("Connected apps", apps.path) if apps is not None else None]  # fmt: skip
    html = page(template, person=person, title=title, sections=[s for s in sections if s], here=request.path, **context)
    return html, status, {"Cache-Control": "no-store"}


@bp.route("/_/account", methods=["GET"])
def account() -> Any:
    return redirect(url_for("web.tokens" if token_store() is not None else "web.sessions"))


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
            created = {"name": name, "token": store.create_for(person, owner, name, scopes, namespaces)}
        except HostcoreError as exc:
            error = str(exc)
    admin = is_admin(person)
    listed = store.list_for(person, owner)
    for t in listed:
        t["created_text"], t["used_text"] = when(t["created"]), when(t["last_used"])
    held = [s for s in SCOPES if person.has_scope(s)]
    return account_page("tokens.html", person, "Access tokens", 400 if error else 200, tokens=listed, created=created,
                        error=error, scopes=held, admin=admin, owner=owner, apps_path=APPS_PATH)  # fmt: skip


@bp.route("/_/account/tokens/revoke", methods=["POST"])
def revoke_token() -> Any:
    check_csrf()
    person, owner = signed_in()
    store = token_store()
    if store is None:
        abort(404)
    store.revoke_for(person, owner, request.form.get("id", ""))
    return redirect(url_for("web.tokens"))


@bp.route("/_/account/sessions", methods=["GET", "POST"])
def sessions() -> Any:
    person, name = signed_in()
    done = None
    if request.method == "POST":
        check_csrf()
        ended = request.form.get("id", "")
        if ended == "others":
            count = sum(hostcore.end_session(host(), name, s["id"]) for s in hostcore.sessions_of(host(), name) if not s["current"])
            done = f"Signed out {count} other session{'' if count == 1 else 's'}."
        elif ended == hostcore.current_session():
            hostcore.end_session(host(), name, ended)
            return redirect(hostcore.LOGIN_PATH, 303)
        elif hostcore.end_session(host(), name, ended):
            done = "That session is signed out."
        else:
            raise ValidationError("that session has ended already; reload the page", field="id")
    listed = [{**s, "browser": browser_of(s["agent"]), "created_text": when(s["created"]), "seen_text": when(s["seen"])}
              for s in hostcore.sessions_of(host(), name)]  # fmt: skip
    return account_page("sessions.html", person, "Sessions", sessions=listed, done=done)


@bp.route("/_/account/activity", methods=["GET"])
def activity() -> Any:
    """The activity log and the agent sessions: everyone's for an admin of the whole wiki, else the
    person's own (the service decides, as for the read_activity tool)."""
    person = viewer()
    if person is None:
        raise SignInFirst()
    wiki = host().wiki(person)
    asked = {key: request.args.get(key, "").strip() or None for key in ("principal", "client", "tool", "since")}
    error = None
    try:
        found = wiki.read_activity(**asked, cursor=request.args.get("cursor") or None, limit=50)
        agents = wiki.list_agent_sessions(asked["principal"], asked["client"], asked["since"], limit=20)["sessions"]
    except HostcoreError as exc:
        found, agents, error = {"records": [], "more": False, "next_cursor": None}, [], str(exc)
    kept: dict[str, Any] = {k: v for k, v in asked.items() if v}
    older = url_for("web.activity", **kept, cursor=found["next_cursor"]) if found["more"] else None
    title_of, _heading_of = words.lookups(host().wiki(reader(person)), [s for r in found["records"] for s in r["slugs"]])
    records = [{**r, "words": words.activity_line(r, title_of)} for r in found["records"]]
    return account_page("activity.html", person, "Activity", 400 if error else 200, records=records,
                        sessions=agents, asked=asked, older=older, error=error, everyone=wiki.sees_all_activity())  # fmt: skip


@bp.route("/_/account/password", methods=["GET", "POST"])
def password() -> Any:
    person, name = signed_in()
    store = host().service(PASSWORDS)
    record = store.get(name) if store is not None else None
    if store is None or record is None:
        abort(404)  # a person known to another sign-in plugin only: no password here
    done, error, status, headers = None, None, 200, {}
    if request.method == "POST" and record.get("hash"):
        check_csrf()
        new = request.form.get("new_password", "")
        try:
            if new != request.form.get("repeat_password", ""):
                raise ValidationError("the two new passwords differ; type the same one twice", field="repeat_password")
            ended = store.change_password(name, request.form.get("current_password", ""), new, request.remote_addr or "unknown")
        except RateLimited as exc:
            error, status, headers = str(exc), 429, {"Retry-After": str(exc.data["retry_after"])}
        except HostcoreError as exc:
            error, status = str(exc), 400
        else:
            hostcore.sign_in(name, host())  # this browser goes on, in a new session
            others = max(ended - 1, 0)
            done = (f"Your password is changed and every session of yours ended: {others} other "
                    f"session{'' if others == 1 else 's'} signed out; this browser goes on in a new one.")  # fmt: skip
    html, status, cache = account_page("password.html", person, "Password", status, has_password=bool(record.get("hash")),
                                       done=done, error=error)  # fmt: skip
    return html, status, {**cache, **headers}
