"""The activity log as callers read it: who called what, with which client, and the agent sessions.

Who sees what is decided here, for every adapter (the MCP tools, the browser page): an admin of
the whole wiki (the ``admin`` scope, no namespace limit) reads every record; anyone else reads
only their own (records whose principal is their name: their tokens, their OAuth grants, their
browser sessions), and asking for another principal's is ``forbidden``. In every record a reader
sees only the slugs of namespaces they may use; the others are left out.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime

from typing_extensions import TypedDict

from hostcore.domain.pages import namespace_of
from hostcore.errors import Forbidden, ValidationError
from hostcore.seams.activity import Activity, ActivityQuery, AgentSession
from hostcore.service.base import WikiBase

MAX_ACTIVITY = 200  # records or sessions per answer
_CURSOR = re.compile(r"\d{1,20}(?:-\d{1,20})?")


class ActivityRecord(TypedDict):
    id: str
    time: str
    principal: str
    auth: str
    grant: str | None
    client: str
    session: str | None
    tool: str
    slugs: list[str]
    outcome: str
    ms: float


class ActivityPage(TypedDict):
    records: list[ActivityRecord]
    more: bool
    next_cursor: str | None


class AgentSessionInfo(TypedDict):
    session: str | None
    principal: str
    auth: str
    client: str
    first: str
    last: str
    calls: int
    errors: int


class AgentSessions(TypedDict):
    sessions: list[AgentSessionInfo]


def _iso(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _since(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        raise ValidationError(
            f"{value[:40]!r} is no ISO 8601 time; give one like 2026-01-31T09:00:00Z", field="since"
        ) from None
    return (when if when.tzinfo else when.replace(tzinfo=UTC)).timestamp()


class ActivityMixin(WikiBase):
    """read_activity and list_agent_sessions; mixed into Wiki."""

    def sees_all_activity(self) -> bool:
        """Whether the caller reads everyone's activity (an admin of the whole wiki)."""
        return self.principal.has_scope("admin") and self.principal.namespaces is None

    def _activity_query(self, principal: str | None, client: str | None, tool: str | None, since: str | None,
                        cursor: str | None = None, limit: int = 50) -> ActivityQuery:  # fmt: skip
        self.principal.require("read")
        if not 1 <= limit <= MAX_ACTIVITY:
            raise ValidationError(f"must be between 1 and {MAX_ACTIVITY}", field="limit")
        if cursor is not None and not _CURSOR.fullmatch(cursor):
            raise ValidationError("is no cursor of this log; pass next_cursor from the previous answer", field="cursor")
        if not self.sees_all_activity():
            if principal is not None and principal != self.principal.name:
                raise Forbidden(
                    f"you may read only your own activity ({self.principal.name!r}); an admin of the whole wiki reads "
                    "everyone's; leave principal out",
                    field="principal",
                )
            principal = self.principal.name
        return ActivityQuery(principal, client, tool, _since(since), cursor, limit)

    def _shown_slugs(self, slugs: tuple[str, ...]) -> list[str]:
        return [slug for slug in slugs if self.principal.can_access(namespace_of(slug))]

    def _activity_record(self, a: Activity) -> ActivityRecord:
        return {"id": a.id, "time": _iso(a.time), "principal": a.principal, "auth": a.auth, "grant": a.grant or None, "client": a.client,
                "session": a.session or None, "tool": a.action, "slugs": self._shown_slugs(a.slugs),
                "outcome": a.outcome, "ms": a.ms}  # fmt: skip

    def read_activity(
        self, principal: str | None = None, client: str | None = None, tool: str | None = None,
        since: str | None = None, cursor: str | None = None, limit: int = 50,
    ) -> ActivityPage:  # fmt: skip
        """Records newest first, each filter exact (``since``: ISO 8601, at or after); ``cursor``:
        ``next_cursor`` of the previous answer. Only the caller's own unless a wiki-wide admin."""
        query = self._activity_query(principal, client, tool, since, cursor, limit)
        found = self.host.activity.read(replace(query, limit=limit + 1))  # one more: whether there are more
        more = len(found) > limit
        shown = found[:limit]
        return {"records": [self._activity_record(a) for a in shown], "more": more,
                "next_cursor": shown[-1].id if more else None}  # fmt: skip

    def list_agent_sessions(
        self, principal: str | None = None, client: str | None = None, since: str | None = None, limit: int = 50
    ) -> AgentSessions:
        """The MCP sessions (web actions left out), most recently active first: one per session id,
        or per principal and client for a client that keeps none (2026-07-28)."""
        query = self._activity_query(principal, client, None, since, None, limit)
        return {"sessions": [_session_info(s) for s in self.host.activity.sessions(query)[:limit]]}


def _session_info(s: AgentSession) -> AgentSessionInfo:
    return {"session": None if "|" in s.key else s.key, "principal": s.principal, "auth": s.auth, "client": s.client,
            "first": _iso(s.first), "last": _iso(s.last), "calls": s.calls, "errors": s.errors}  # fmt: skip
