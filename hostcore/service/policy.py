"""Who may do what, how often, and how a change is made: decided here, once, for every adapter.

The adapters parse, authenticate and format; what they let through is this module's to say, so
the MCP endpoint, the file routes, every plugin's web pages and the CLI follow one rule each:

- **Which requests the wiki serves** (:func:`refusal`): a ``Host`` header that names it (else
  421: DNS rebinding) and, when a browser says where a request comes from, one of its own
  origins (else 403). The MCP transport and the file routes ask it first; web pages ask it
  through :func:`hostcore.admit_page`.
- **Access**: the scope a tool, resource or prompt declares, asked once per call before its
  arguments are read (:func:`admit`; an OAuth client is told over HTTP what to ask for,
  :func:`missing_scopes`); a page's or namespace's (:func:`require_page`, the service's
  ``_access``; :func:`require_in` and :func:`may` for what a page offers); what a caller reads on
  pages open to the public (:func:`browsing`: its own namespaces and every public one).
- **Limits**: every HTTP request that reaches the wiki (an MCP message, a web page, a file, an
  upload) counts against the caller's ``requests`` limit, by principal name or, for a caller
  without one, by address (:func:`spend_request`); every change against its ``writes`` limit.
- **The change path** (:func:`change`): every write of the service makes its
  :class:`~hostcore.seams.storage.Change` here, within the writes limit and with room on the
  disk, before anything is written (``hostcore import`` alone replays recorded changes as they
  were made). The CLI and jobs act as ``hostcore.SYSTEM``, which no limit counts.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from hostcore.domain.pages import check_slug, namespace_of
from hostcore.domain.principal import Principal
from hostcore.errors import RateLimited
from hostcore.seams import activity
from hostcore.seams.storage import Change

if TYPE_CHECKING:
    from hostcore.host.host import Host
    from hostcore.seams.host import PluginHost

LOOPBACK = ("127.0.0.1", "localhost", "[::1]")
ANONYMOUS = "anonymous"
"""The name of the principal a visitor who is not signed in reads public namespaces as."""


# --- which requests the wiki serves -----------------------------------------------------------


def _public(host: PluginHost) -> tuple[str, str]:
    """(origin, host:port) of PUBLIC_URL."""
    parts = urlsplit(host.config["PUBLIC_URL"])
    return f"{parts.scheme}://{parts.netloc}", parts.netloc


def _split_port(netloc: str) -> str:
    if netloc.startswith("["):
        return netloc.split("]")[0] + "]"
    return netloc.rsplit(":", 1)[0] if ":" in netloc else netloc


def host_allowed(host: PluginHost, value: str) -> bool:
    """Whether ``value`` (a ``Host`` header) names this wiki: PUBLIC_URL's, ALLOWED_HOSTS, or loopback."""
    allowed = set(host.config["ALLOWED_HOSTS"]) | {_public(host)[1]}
    return value in allowed or _split_port(value) in LOOPBACK or _split_port(value) in allowed


def origin_allowed(host: PluginHost, origin: str) -> bool:
    """Whether a browser's ``Origin`` is this wiki's own (or in ALLOWED_ORIGINS); any loopback
    origin while PUBLIC_URL is loopback."""
    public_origin, public_netloc = _public(host)
    if origin in host.config["ALLOWED_ORIGINS"] or origin == public_origin:
        return True
    if _split_port(public_netloc) in LOOPBACK:
        netloc = urlsplit(origin).netloc
        return urlsplit(origin).scheme in ("http", "https") and _split_port(netloc) in LOOPBACK
    return False


def refusal(host: PluginHost, host_header: str, origin: str | None, *, opaque_origin: bool = False) -> tuple[int, str] | None:
    """(status, message) refusing a request whose ``Host`` the wiki does not serve (421) or whose
    ``Origin`` is foreign (403); None for one it serves. ``opaque_origin``: let ``Origin: null``
    through, as pages do (a browser sends it after a redirect from another site; a form's CSRF
    token still guards the change), while a program's endpoint refuses it."""
    if not host_allowed(host, host_header):
        return 421, f"Host {host_header!r} is not served here; add it to ALLOWED_HOSTS"
    if origin and not (opaque_origin and origin == "null") and not origin_allowed(host, origin):
        return 403, f"Origin {origin!r} is not allowed; an operator can add it to ALLOWED_ORIGINS"
    return None


# --- access -----------------------------------------------------------------------------------


def admit(principal: Principal, scope: str) -> None:
    """Raise InsufficientScope unless ``principal`` holds ``scope``: the gate of one call to a
    tool, resource or prompt (the scope it declares), before its arguments are read, so a caller
    without it learns nothing more. The service checks each operation's own access after it."""
    principal.require(scope)


def call_scope(principal: Principal, scope: str, least: str) -> str:
    """The scope a call of a tool declaring ``scope`` asks of ``principal``: ``least``
    (:attr:`hostcore.Tool.admits`: ``propose`` for a write tool that proposes) when it holds that,
    else ``scope``, so a refusal or an OAuth step-up asks for what does the whole job."""
    return least if principal.has_scope(least) else scope


def missing_scopes(principal: Principal, scopes: Iterable[str]) -> set[str]:
    """Those of ``scopes`` that ``principal`` does not hold: what an OAuth client must ask the
    person for before the calls it sent can be admitted."""
    return {scope for scope in scopes if not principal.has_scope(scope)}


def require_page(principal: Principal, scope: str, slug: str, field: str = "slug") -> str:
    """``slug``, checked, when ``principal`` holds ``scope`` and may use its namespace; raises
    InsufficientScope, ValidationError (naming ``field``) or Forbidden."""
    principal.require(scope)
    check_slug(slug, field)
    activity.touch(slug)  # a refused one too: the log's readers see only the slugs they may
    principal.require_namespace(namespace_of(slug), field)
    return slug


def may(principal: Principal, scope: str, namespace: str | None = None) -> bool:
    """Whether ``principal`` holds ``scope`` (in ``namespace``, when given): what a page offers
    (an edit link) before anything is asked of the service."""
    return principal.has_scope(scope) and (namespace is None or principal.can_access(namespace))


def require_in(principal: Principal, scope: str, namespace: str, field: str = "namespace") -> None:
    """Raise Forbidden unless ``principal`` may use ``namespace``, then InsufficientScope unless it
    holds ``scope`` there: in that order, so a page can answer "not found" to someone who may not
    know the namespace exists."""
    principal.require_namespace(namespace, field)
    principal.require(scope)


def browsing(principal: Principal, public: frozenset[str], client: str | None = None) -> Principal:
    """The principal ``principal`` reads as where public namespaces are open to anyone (the web
    pages): read scope only, over its own namespaces and every ``public`` one; without the read
    scope (a visitor), as ANONYMOUS over the public ones alone."""
    if not principal.has_scope("read"):
        return Principal(ANONYMOUS, frozenset({"read"}), public)
    namespaces = None if principal.namespaces is None else principal.namespaces | public
    return Principal(principal.name, frozenset({"read"}), namespaces, client=client)


# --- limits and the change path ---------------------------------------------------------------


def spend_request(host: Host, principal: Principal | None, address: str | None) -> None:
    """Count one request against the ``requests`` limit of ``principal`` or, without one, of the
    client ``address``. Raises RateLimited (``retry_after``: whole seconds) over it; nothing is
    counted for a principal whose ``rate_limited`` is False."""
    if principal is not None:
        who, wait = principal.name, host.spend("requests", principal)
    else:
        who = f"address {address or 'unknown'}"
        wait = host.limiter.wait("requests", who)
    if wait:
        raise RateLimited(
            f"Too many requests: {who} may make {host.limiter.describe('requests')}; retry after {wait} seconds",
            retry_after=wait,
        )


def change(host: Host, principal: Principal, tool: str, subject: str, *, counted: bool = True) -> Change:
    """The Change a write of ``tool`` records (author: the principal; message: the tool, the
    subject and the client). Raises RateLimited when the principal is over its writes limit
    (``counted``: this write spends one; a call's follow-on changes pass False), and DiskFull
    when the disk has no room for it; either way before anything is written."""
    wait = host.spend("writes", principal) if counted else 0
    if wait:
        raise RateLimited(
            f"too many writes: {principal.name} may make {host.limiter.describe('writes')}; "
            f"wait {wait} seconds, then try again (nothing was changed)",
            retry_after=wait,
        )
    host.require_space()
    client = f" via {principal.client}" if principal.client else ""
    return Change(author=principal.name, message=f"{tool}: {subject}{client}")
