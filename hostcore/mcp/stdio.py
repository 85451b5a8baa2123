"""``hostcore mcp --stdio``: the MCP server over stdin and stdout, for local clients that start
the server themselves (Claude Desktop, Claude Code, Cursor) without an HTTP bridge.

One process serves one token, against the same instance as ``hostcore serve`` and beside it: it
builds and starts the host as each of serve's workers does (the derived indexes caught up under
their inter-process locks, storage written under its own), so a stdio client and the HTTP
clients see and change the same wiki. Every request is authenticated again with the token (a
revoked token stops working at the next call) and counted against the token's ``requests``
limit; writes go through the service's change path (the ``writes`` limit, history with the
client's declared name). Stdout carries the protocol alone: logs go to stderr.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio
from mcp.server.stdio import stdio_server

from hostcore.domain.principal import Principal
from hostcore.errors import Unauthorized
from hostcore.mcp.endpoint import McpEndpoint
from hostcore.service import policy

if TYPE_CHECKING:
    from hostcore.host.host import Host

TOKEN_VARIABLE = "HOSTCORE_TOKEN"
"""The environment variable ``hostcore mcp --stdio`` reads the token from when ``--token`` is not given."""


class _Bearer:
    """What the ``authenticate`` hook reads of a request, for a token that came without one."""

    remote_addr = None

    def __init__(self, token: str) -> None:
        self.headers = {"Authorization": f"Bearer {token}"}


def authenticate(host: Host, token: str) -> Principal:
    """The principal of ``token`` by the same ``authenticate`` hook as HTTP requests (personal
    tokens, OAuth access tokens); raises Unauthorized for one no plugin accepts."""
    principal = host.pm.hook.authenticate(request=_Bearer(token), host=host)
    if principal is None:
        raise Unauthorized("the token is unknown or revoked; create one with `hostcore token create`")
    return principal


def serve(host: Host, token: str) -> None:
    """Serve MCP for ``token`` on stdin and stdout until the client closes its side. Raises
    Unauthorized at once for a bad token."""
    first = authenticate(host, token)

    def each_request() -> Principal:
        principal = authenticate(host, token)
        policy.spend_request(host, principal, None)
        return principal

    endpoint = McpEndpoint(host, principal=each_request)

    async def run() -> None:
        async with stdio_server() as (read_stream, write_stream):
            await endpoint.serve(read_stream, write_stream, first)

    anyio.run(run)
