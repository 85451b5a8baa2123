"""HTTP routes of the core: the MCP endpoint with its Host, Origin, size and auth checks, the
OAuth protected-resource metadata (RFC 9728) that a 401 points clients to, and ``/_/health``, the
liveness check for load balancers."""

from __future__ import annotations

import io
import json
import time
from contextlib import suppress
from functools import partial
from typing import TYPE_CHECKING, Any

from flask import Blueprint, Response, current_app, jsonify, request

from hostcore.domain.principal import SCOPES, Principal
from hostcore.errors import RateLimited, Unauthorized
from hostcore.mcp import batches, clients
from hostcore.mcp.endpoint import MAX_ACTION, PRINCIPAL_KEY, McpEndpoint
from hostcore.seams.activity import Activity
from hostcore.service import policy

if TYPE_CHECKING:
    from hostcore.host.host import Host

MCP_PATH = "/_/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
HEALTH_PATH = "/_/health"

bp = Blueprint("hostcore_transport", __name__)


def host_of(app: Any = None) -> Host:
    return (app or current_app).extensions["hostcore"]


def resource_url(host: Host) -> str:
    return host.config["PUBLIC_URL"].rstrip("/") + MCP_PATH


def _json_error(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    response = jsonify(batches.error_object(message))
    response.status_code = status
    response.headers.update(headers or {})
    return response


def check_origin() -> Response | None:
    """403 for a foreign Origin, 421 for a Host we do not serve (DNS rebinding): the policy's
    :func:`~hostcore.service.policy.refusal`, answered as JSON."""
    refused = policy.refusal(host_of(), request.host, request.headers.get("Origin"))
    return _json_error(*refused) if refused is not None else None


def _challenge(host: Host) -> str:
    return f'Bearer resource_metadata="{host.config["PUBLIC_URL"].rstrip("/")}{METADATA_PATH}{MCP_PATH}"'


def authenticate(host: Host) -> Principal | Response:
    """The caller's Principal, or a 401 response pointing at the resource metadata."""
    sent = "Authorization" in request.headers
    try:
        principal = host.pm.hook.authenticate(request=request, host=host)
    except Unauthorized as exc:
        principal, reason = None, exc.message
    else:
        reason = "invalid or expired token" if sent else "a bearer token is required"
    if principal is not None:
        return principal
    challenge = _challenge(host) + ', scope="read write"'
    if sent:
        challenge += ', error="invalid_token"'
    return _json_error(401, f"Unauthorized: {reason}", {"WWW-Authenticate": challenge})


def step_up(host: Host, principal: Principal, data: bytes) -> Response | None:
    """403 ``insufficient_scope`` for a tools/call beyond an OAuth grant's scopes, so the client
    asks the person for more (MCP authorization, scope challenge); the tool's scope is known
    before dispatch. A personal token gets the tool error instead: it cannot step up."""
    try:
        body = json.loads(data)
    except ValueError:
        return None  # the SDK answers the parse error
    declared = set()
    for message in body if isinstance(body, list) else [body]:
        params = message.get("params") if isinstance(message, dict) and message.get("method") == "tools/call" else None
        name = params.get("name") if isinstance(params, dict) else None
        t = host.tools.get(name) if isinstance(name, str) else None
        if t is not None:
            declared.add(policy.call_scope(principal, t.scope, t.admits))
    needed = policy.missing_scopes(principal, declared)
    if not needed:
        return None
    scope = " ".join(s for s in SCOPES if s in needed or s in principal.scopes)
    message = f"insufficient_scope: this call needs the {' '.join(sorted(needed))!s} scope, which was not granted; approve it again with {scope!r}"
    challenge = _challenge(host) + f', error="insufficient_scope", scope="{scope}", error_description="{message}"'
    return _json_error(403, message, {"WWW-Authenticate": challenge})


@bp.route(MCP_PATH, methods=["GET", "POST", "DELETE"])
def mcp_endpoint() -> Any:
    refused = check_origin()
    if refused is not None:
        return refused
    host = host_of()
    limit = host.config["MAX_REQUEST_BYTES"]
    if request.content_length is not None and request.content_length > limit:
        return _json_error(413, f"Request body is {request.content_length} bytes; the limit is {limit} bytes")
    principal = authenticate(host)
    if isinstance(principal, Response):
        return principal
    refused = _spend(host, principal)
    if refused is not None:
        _record_refusal(host, principal, "rate_limited")
        return refused
    if request.method != "POST":
        # Stateless: no session to delete and no standalone stream that anything could reach, so
        # say so instead of holding a worker thread open on an idle SSE stream.
        return _json_error(405, "this endpoint is stateless: send requests with POST", {"Allow": "POST"})
    # The body is read only now, once the caller is known (a 401 waits for no body), and here in
    # the view, where a body that does not arrive in time becomes the server's 408 (see operators.md).
    # A chunked one is bounded by the limit; the bridge passes on CONTENT_LENGTH bytes.
    data = request.environ["wsgi.input"].read(limit + 1 if request.content_length is None else request.content_length)
    if len(data) > limit:
        return _json_error(413, f"Request body is over the limit of {limit} bytes")
    request.environ["wsgi.input"] = io.BytesIO(data)
    request.environ["CONTENT_LENGTH"] = str(len(data))
    if principal.grant is not None:
        refused = step_up(host, principal, data)
        if refused is not None:
            _record_refusal(host, principal, "insufficient_scope")
            return refused
    request.environ[PRINCIPAL_KEY] = principal
    endpoint = current_app.extensions["hostcore.mcp"]
    if batches.is_batch(data):
        answered = batches.answer(request.environ, data, partial(endpoint.answer_one, request.environ), partial(_spend, host, principal))
        if answered is not None:
            return answered
    return endpoint


def _record_refusal(host: Host, principal: Principal, outcome: str) -> None:
    """Put a request refused before any tool ran (over the requests limit, beyond an OAuth grant's
    scopes) in the activity log: the tool its ``Mcp-Name`` header names (2026-07-28), else
    ``mcp``; the client its session id or ``User-Agent`` names (the body is not read for it)."""
    environ = request.environ
    session = environ.get("HTTP_MCP_SESSION_ID")
    client = clients.from_session_id(session) or clients.from_user_agent(environ.get("HTTP_USER_AGENT")) or ""
    tool = (environ.get("HTTP_MCP_NAME") or "mcp")[:MAX_ACTION]
    host.activity.record(Activity(time.time(), principal.name, "oauth" if principal.grant else "token", client,
                                  clients.session_key(session), tool, (), outcome, 0.0, grant=principal.grant or ""))  # fmt: skip


def _spend(host: Host, principal: Principal) -> Response | None:
    """Count one request against the caller's ``requests`` limit: None within it, else the 429."""
    try:
        policy.spend_request(host, principal, request.remote_addr)
    except RateLimited as exc:
        return _json_error(429, exc.message, {"Retry-After": str(exc.data["retry_after"])})
    return None


@bp.route(METADATA_PATH)
@bp.route(METADATA_PATH + MCP_PATH)
def resource_metadata() -> Response:
    host = host_of()
    return jsonify(
        {
            "resource": resource_url(host),
            "authorization_servers": host.config.get("AUTHORIZATION_SERVERS", []),
            "bearer_methods_supported": ["header"],
            "resource_name": host.config.get("TITLE", "hostcore"),
            "scopes_supported": list(SCOPES),
        }
    )


@bp.route(HEALTH_PATH, methods=["GET", "HEAD"])
def liveness() -> Response:
    """200 while this process serves requests: it answers without a token, whatever the Host,
    and touches neither storage nor shared state (so a load balancer's probes cost nothing and an
    S3 or Redis outage, which every host shares, does not take every host out of rotation). A
    storage or shared-state outage shows in the requests themselves (503 ``unavailable``).

    503 ``damaged`` when this machine's ``shared.sqlite`` was found damaged (at start-up or by a
    request since; one look at a marker file): nobody can sign in or use a token here until it is
    repaired, though public pages are still served. ``rebuilding`` (200) while a derived index is
    rebuilt from storage (a look at each one's marker file): the reads that need it answer
    ``unavailable`` meanwhile. ``passages`` while the passage index has documents waiting to be
    indexed (embedded): how many are indexed, how many wait, and the pace (documents a second);
    one count of a small table when none wait."""
    host = host_of()
    body: dict[str, Any] = {"status": "ok", "storage": host.config["STORAGE"], "shared": host.shared.name}
    rebuilding = host.indexes.rebuilding(progress=False)
    if rebuilding:  # still 200: the worker serves, and a restart would only start the rebuild again
        body.update(status="rebuilding", rebuilding=rebuilding)
    with suppress(Exception):  # a damaged passage index is repaired by the reads that meet it, not here
        embedding = host.passages.progress()
        if embedding is not None:  # still "ok": searches answer meanwhile, from what is indexed
            body["passages"] = embedding
    problem = host.shared.damage()
    if problem is not None:
        body.update(status="damaged", problems=[problem])
    response = jsonify(body)
    response.status_code = 200 if problem is None else 503
    response.headers["Cache-Control"] = "no-store"
    return response


def install(app: Any, host: Host) -> None:
    app.extensions["hostcore.mcp"] = McpEndpoint(host)
    app.register_blueprint(bp)
