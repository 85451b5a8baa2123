"""HTTP routes for attachments: the one-use upload URL and serving an attachment's bytes.

``POST /_/upload/<token>`` takes the file as multipart field ``file``. The URL is the credential,
as the contract's one-use URL is meant to be: the agent that posts the file (``curl`` in a
sandbox) does not hold the MCP client's bearer token. The ticket remembers who asked for it, and
the service checks that principal's access again when the file arrives.

``GET /_/files/<namespace>/<page>/<filename>`` (an ``attachment_url``) needs a bearer token, like
the MCP endpoint, and the caller's access to the page. Both routes refuse a foreign Host or Origin
and count against the ``requests`` limit as the MCP endpoint does (an upload, whose URL is the
credential, by the client's address): :mod:`hostcore.service.policy`. Files go out with headers that let no
browser run script from them (:func:`hostcore.domain.attachments.serving_headers`).
"""

from __future__ import annotations

from typing import Any

from flask import Blueprint, Response, jsonify, request
from werkzeug.exceptions import RequestEntityTooLarge

from hostcore.domain.attachments import UPLOAD_PATH, URL_PREFIX, serving_headers, split_attachment_url
from hostcore.domain.principal import SYSTEM
from hostcore.errors import HTTP_STATUS, HostcoreError, RateLimited, TicketRefused
from hostcore.host.uploads import unknown_ticket
from hostcore.mcp.transport import authenticate, check_origin, host_of
from hostcore.service import policy
from hostcore.service.attachments import UPLOAD_FIELD, too_large

MULTIPART_SLACK = 64 * 1024  # room for the multipart envelope around a file of the largest size

bp = Blueprint("hostcore_files", __name__)


def _error(exc: HostcoreError) -> Response:
    response = jsonify({"error": exc.to_dict()})
    response.status_code = exc.status if isinstance(exc, TicketRefused) else HTTP_STATUS.get(exc.code, 400)
    if isinstance(exc, RateLimited):
        response.headers["Retry-After"] = str(exc.data["retry_after"])
    return response


@bp.route(UPLOAD_PATH + "<token>", methods=["POST"])
def upload(token: str) -> Any:
    refused = check_origin()
    if refused is not None:
        return refused
    host = host_of()
    limit = host.config["MAX_ATTACHMENT_BYTES"]
    try:
        policy.spend_request(host, None, request.remote_addr)  # the URL is the credential: counted by address
        host.uploads.check(token)
        if request.content_length is not None and request.content_length > limit + MULTIPART_SLACK:
            raise too_large(request.content_length, limit)
        request.max_content_length = limit + MULTIPART_SLACK
        try:
            sent = request.files.get(UPLOAD_FIELD)
        except RequestEntityTooLarge:
            raise too_large(request.content_length or limit + 1, limit) from None
        if sent is None:
            response = jsonify({"error": {"code": "validation_error", "field": UPLOAD_FIELD, "message": (
                f"{UPLOAD_FIELD}: no file; POST it as multipart/form-data field '{UPLOAD_FIELD}', "
                f"e.g. curl -F {UPLOAD_FIELD}=@report.pdf '<upload_url>'")}})  # fmt: skip
            response.status_code = 400
            return response
        result = host.wiki(SYSTEM).complete_upload(token, sent.stream.read(limit + 1))
    except HostcoreError as exc:
        return _error(exc)
    response = jsonify(result)
    response.status_code = 201
    return response


@bp.route(UPLOAD_PATH, methods=["POST"])
@bp.route(UPLOAD_PATH + "<path:_mangled>", methods=["POST"])
def upload_url_not_found(_mangled: str = "") -> Any:
    """A mangled upload URL (a slash or a control character in the token, a trailing slash) gets
    the route's own JSON answer rather than an HTML page. A route, not an app-wide 404 handler:
    other 404s are for the error pages of whoever draws them (the web plugin)."""
    return _error(unknown_ticket())


@bp.route(URL_PREFIX + "<path:rest>", methods=["GET", "HEAD"])
def serve_file(rest: str) -> Any:
    refused = check_origin()
    if refused is not None:
        return refused
    host = host_of()
    principal = authenticate(host)
    if isinstance(principal, Response):
        return principal
    try:
        policy.spend_request(host, principal, request.remote_addr)
        target = split_attachment_url(URL_PREFIX + rest)
        if target is None:
            raise HostcoreError("give /_/files/<namespace>/<page>/<filename>", field="url")
        data, media_type, digest = host.wiki(principal).attachment(*target)
    except HostcoreError as exc:
        return _error(exc)
    response = Response(data, headers=serving_headers(media_type, target[1]))
    response.set_etag(digest)
    return response.make_conditional(request)


def install(app: Any) -> None:
    app.register_blueprint(bp)
