"""Who may see what, for the web pages: the same principals and service checks as MCP.

- A person (session or bearer token, :func:`hostcore.person`) reads with their own scopes and
  namespaces, plus every ``public`` namespace (read only).
- A visitor who is not signed in reads the ``public`` namespaces and nothing else.
- A page outside what the caller may read answers 404 for a person, and a redirect to sign-in for
  a visitor: the same answer whether it exists or not, so URL guessing tells nothing.
"""

from __future__ import annotations

from flask import abort, current_app

import hostcore
from hostcore import SYSTEM, PluginHost, Principal, Unavailable

ANONYMOUS = "anonymous"


class SignInFirst(Exception):
    """The visitor is not signed in and the page is not public: send them to sign in."""


def host() -> PluginHost:
    """The host of the app serving this request."""
    host: PluginHost = current_app.extensions["hostcore"]
    return host


def public_namespaces() -> frozenset[str]:
    listed = host().wiki(SYSTEM).list_namespaces()["namespaces"]
    return frozenset(n["name"] for n in listed if n["public"])


def viewer() -> Principal | None:
    """The person calling, or None for a visitor who is not signed in. When who they are cannot be
    told (the shared state is damaged or cannot be reached), they read as a visitor: public pages
    are still served, and signing in says what is wrong."""
    try:
        return hostcore.person(host())
    except Unavailable:
        return None


def reader(person: Principal | None) -> Principal:
    """The principal pages are read as: the person's read access widened by the public namespaces;
    for a visitor, the public namespaces only."""
    public = public_namespaces()
    if person is None or not person.has_scope("read"):
        return Principal(ANONYMOUS, frozenset({"read"}), public)
    namespaces = None if person.namespaces is None else person.namespaces | public
    return Principal(person.name, frozenset({"read"}), namespaces, client="web")


def require_reader(namespace: str) -> tuple[Principal | None, Principal]:
    """(person, reader) for a page in ``namespace``; SignInFirst for a visitor, 404 for a person without access."""
    person = viewer()
    read_as = reader(person)
    if not read_as.can_access(namespace):
        if person is None:
            raise SignInFirst()
        abort(404)
    return person, read_as


def require_writer(namespace: str) -> Principal:
    """The person, when they may write in ``namespace``: SignInFirst for a visitor, 404 for a person
    without access to it, InsufficientScope (403) for a person who may only read."""
    person = viewer()
    if person is None:
        raise SignInFirst()
    if not person.can_access(namespace):
        abort(404)
    person.require("write")
    return web_principal(person)


def web_principal(person: Principal) -> Principal:
    """The person as the author of changes made in the browser (recorded as ``via web``)."""
    return Principal(person.name, person.scopes, person.namespaces, client=person.client or "web",
                     rate_limited=person.rate_limited)  # fmt: skip
