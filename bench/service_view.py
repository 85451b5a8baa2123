"""Bench-only plugin: the same service call as the read_page tool, behind a plain Flask view.

Loaded by ``bench/mcp_latency.py`` (``PLUGINS`` names it by module path) so the difference between
this view and ``tools/call read_page`` is the MCP layer alone: same process, same token check,
same service call, same page.
"""

from flask import jsonify, request

from hostcore import hookimpl
from hostcore.mcp.transport import authenticate


@hookimpl
def register_routes(app, host):
    @app.route("/_/bench/read_page")
    def bench_read_page():
        principal = authenticate(host)
        if not hasattr(principal, "scopes"):
            return principal  # the 401 response
        return jsonify(host.wiki(principal).read_page(request.args["slug"]))
