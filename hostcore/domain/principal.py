"""Principals: who is calling, with which scopes, limited to which namespaces.

Scopes are ordered, each implying the ones before it: ``read``; ``propose`` (read, and make change
requests, never writing a page itself); ``write`` (a writer must read a page's hash before changing
it, and may propose); ``review`` (write, and apply or reject anyone's change requests, whatever
their risk); ``admin``. A principal limited to namespaces lists, reads and writes only
those, whatever its scopes.
"""

from __future__ import annotations

from dataclasses import dataclass

from hostcore.errors import Forbidden, InsufficientScope

SCOPES = ("read", "propose", "write", "review", "admin")
"""Every scope, weakest first: each implies the ones before it."""
SCOPE_ORDER = {scope: rank for rank, scope in enumerate(SCOPES, 1)}


def check_scope(scope: str) -> str:
    """``scope`` if it is one of SCOPES; raises ValueError naming them (a plugin author's mistake)."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {SCOPES}, not {scope!r}")
    return scope


@dataclass(frozen=True)
class Principal:
    """The caller. ``namespaces`` None means every namespace; ``client`` is the MCP client's declared
    name and version (see :mod:`hostcore.mcp.clients`); ``rate_limited`` False exempts it from
    RATE_LIMITS (counted per ``name``); ``grant`` names the OAuth grant its token comes from (None
    for a personal token): a call beyond an OAuth grant's scopes is refused with HTTP 403
    ``insufficient_scope`` so the client can ask for more."""

    name: str
    scopes: frozenset[str]
    namespaces: frozenset[str] | None = None
    client: str | None = None
    rate_limited: bool = True
    grant: str | None = None

    def has_scope(self, scope: str) -> bool:
        need = SCOPE_ORDER[scope]
        return any(SCOPE_ORDER.get(s, 0) >= need for s in self.scopes)

    def require(self, scope: str) -> None:
        """Raise InsufficientScope naming ``scope`` unless the principal holds it."""
        if not self.has_scope(scope):
            held = ", ".join(sorted(self.scopes)) or "none"
            hint = " It may propose changes instead: create_change_request." if scope == "write" and self.has_scope("propose") else ""
            raise InsufficientScope(
                f"this call needs the {scope!r} scope; your token has: {held}. "
                f"Ask an admin for a token with the {scope!r} scope.{hint}",
                required_scope=scope,
            )

    def can_access(self, namespace: str) -> bool:
        return self.namespaces is None or namespace in self.namespaces

    def require_namespace(self, namespace: str, field: str = "slug") -> None:
        if not self.can_access(namespace):
            raise Forbidden(f"your token is limited to other namespaces than {namespace!r}", field=field)


SYSTEM = Principal("hostcore", frozenset({"admin"}), rate_limited=False)
