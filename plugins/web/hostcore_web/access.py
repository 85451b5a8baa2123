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
from hostcore import Forbidden, PluginHost, Principal, Unavailable

VISITOR = Principal("anonymous", frozenset(), frozenset())
"""Who calls when nobody is signed in: no scope, no namespace of its own."""


class SignInFirst(Exception):
    """The visitor is not signed in and the page is not public: send them to sign in."""


def host() -> PluginHost:
    """The host of the app serving this request."""
    host: PluginHost = current_app.extensions["hostcore"]
    return host


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
    for a visitor, the public namespaces only (the service's rule: ``Wiki.browsing``)."""
    return host().wiki(person or VISITOR).browsing(client="web")


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
    try:
        host().wiki(person).require_in("write", namespace)
    except Forbidden:
        abort(404)
    return web_principal(person)


def may_write(person: Principal | None, namespace: str) -> bool:
    """Whether a page offers ``person`` to change what is in ``namespace``."""
    return person is not None and bool(host().wiki(person).may("write", namespace))


def web_principal(person: Principal) -> Principal:
    """The person as the author of changes made in the browser (recorded as ``via web``)."""
    return Principal(person.name, person.scopes, person.namespaces, client=person.client or "web",
                     rate_limited=person.rate_limited)  # fmt: skip
