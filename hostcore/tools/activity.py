"""Activity tools: the log of calls and web actions, and the agent sessions it groups.

Thin, typed functions over :mod:`hostcore.service.activity`, which decides who sees what.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import Field

from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.tool import Tool, tool
from hostcore.service.activity import MAX_ACTIVITY, ActivityPage, AgentSessions
from hostcore.service.wiki import Wiki

Who = Annotated[
    str | None,
    Field(max_length=200, description="only this principal's (a token's or person's name); only an admin of the whole wiki may name another than themselves"),
]
Client = Annotated[str | None, Field(max_length=100, description="only this client, exactly as records name it, e.g. 'Claude Desktop 0.9.3'")]
Since = Annotated[str | None, Field(max_length=40, description="only at or after this time, ISO 8601, e.g. 2026-01-31T09:00:00Z")]
Limit = Annotated[int, Field(ge=1, le=MAX_ACTIVITY, description=f"maximum entries to return (1-{MAX_ACTIVITY})")]


@tool(read_only=True, scope="read", title="Read the activity log")
def read_activity(
    principal: Who = None,
    client: Client = None,
    tool: Annotated[str | None, Field(max_length=100, description="only calls of this tool (or web action, e.g. web:read)")] = None,
    since: Since = None,
    cursor: Annotated[str | None, Field(max_length=50, description="next_cursor from the previous answer, for the next page")] = None,
    limit: Limit = 50,
    *,
    wiki: Wiki,
) -> ActivityPage:
    """List recorded MCP calls and web actions, newest first: time, principal, auth method, client, session, tool, slugs, outcome (ok or the error code) and duration in ms.

    Arguments: principal, client, tool, since (each optional, exact match); cursor; limit (1-200,
    default 50). When more is true, pass next_cursor as cursor. An admin of the whole wiki reads
    everyone's records; anyone else reads only their own. Slugs in namespaces you may not use are
    left out. Records never hold arguments or page text.
    """
    return wiki.read_activity(principal, client, tool, since, cursor, limit)


@tool(read_only=True, scope="read", title="List agent sessions")
def list_agent_sessions(
    principal: Who = None,
    client: Client = None,
    since: Since = None,
    limit: Limit = 50,
    *,
    wiki: Wiki,
) -> AgentSessions:
    """List MCP client sessions, most recently active first: session id, principal, auth method, client, first and last activity, calls and errors.

    Arguments: principal, client, since (each optional); limit (1-200, default 50). A client that
    keeps no session id (protocol 2026-07-28) is grouped by principal and client (session null).
    An admin of the whole wiki sees everyone's sessions; anyone else only their own.
    """
    return wiki.list_agent_sessions(principal, client, since, limit)


@hookimpl
def register_tools(register: Callable[[Tool], None]) -> None:
    for fn in (read_activity, list_agent_sessions):
        register(fn)
