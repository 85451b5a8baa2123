"""The activity log's seam: one record per MCP call and per web action, and the stores that keep them.

A record says who called (the principal, how they signed in), with which client (its declared
name and version), in which session, what (the tool or web action), which pages it touched, how
it ended (``ok`` or the error's code) and how long it took. It never holds argument text, page
text or credentials. The adapters (the MCP endpoint, the browser pages) make the records; the
service layer notes the pages a call touches (:func:`touch`, from the one place every page access
is checked) into the list the adapter opened for the call (:func:`collecting`), so no tool has to.

A store (:class:`ActivityStore`) keeps them: SQLite in the instance folder on one machine, a
Redis stream when the deployment shares state through Redis, so every host reads the same log.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

WEB = "web:"  # what a web action's name starts with
MAX_SLUGS = 20  # pages kept per record: a call touching more (a link rewrite) keeps the first ones


@dataclass(frozen=True)
class Activity:
    """One call or web action. ``time``: when it started (Unix seconds); ``auth``: ``token``,
    ``oauth`` (``grant``: the OAuth grant's id), ``session`` (a browser's) or ``none``; ``session``: the MCP session id's random part
    or a digest of the browser session, "" without one; ``action``: the tool's name, or ``web:``
    and the page's endpoint; ``outcome``: ``ok`` or the error's code; ``ms``: its duration."""

    time: float
    principal: str
    auth: str
    client: str
    session: str
    action: str
    slugs: tuple[str, ...]
    outcome: str
    ms: float
    id: str = ""
    grant: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "time": self.time, "principal": self.principal, "auth": self.auth, "client": self.client,
                "session": self.session, "action": self.action, "slugs": list(self.slugs), "outcome": self.outcome,
                "ms": self.ms, "grant": self.grant}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Activity:
        return cls(float(d["time"]), str(d["principal"]), str(d["auth"]), str(d["client"]), str(d["session"]),
                   str(d["action"]), tuple(d["slugs"]), str(d["outcome"]), float(d["ms"]), str(d.get("id", "")),
                   str(d.get("grant", "")))  # fmt: skip


@dataclass(frozen=True)
class ActivityQuery:
    """What a read of the log asks for: each given filter must match exactly (``since``: at or
    after, Unix seconds); ``before``: the cursor, records older than this id; newest first."""

    principal: str | None = None
    client: str | None = None
    action: str | None = None
    since: float | None = None
    before: str | None = None
    limit: int = 50

    def matches(self, a: Activity) -> bool:
        return (
            (self.principal is None or a.principal == self.principal)
            and (self.client is None or a.client == self.client)
            and (self.action is None or a.action == self.action)
            and (self.since is None or a.time >= self.since)
        )


@dataclass
class AgentSession:
    """The calls of one session: its ``key`` (the session id, or principal and client for a client
    that keeps none), who and with what, when it first and last acted, how many calls."""

    key: str
    principal: str
    auth: str
    client: str
    first: float
    last: float
    calls: int = 0
    errors: int = 0

    def add(self, a: Activity) -> None:
        self.first, self.last = min(self.first, a.time), max(self.last, a.time)
        self.calls += 1
        self.errors += a.outcome != "ok"


def session_key(a: Activity) -> str:
    """Which agent session ``a`` belongs to: its session id, else its principal and client."""
    return a.session or f"{a.principal}|{a.client}"


def sessions_of(records: Sequence[Activity]) -> list[AgentSession]:
    """The agent sessions of ``records`` (web actions left out), most recently active first."""
    found: dict[str, AgentSession] = {}
    for a in records:
        if a.action.startswith(WEB):
            continue
        key = session_key(a)
        s = found.get(key)
        if s is None:
            s = found[key] = AgentSession(key, a.principal, a.auth, a.client, a.time, a.time)
        s.add(a)
    return sorted(found.values(), key=lambda s: s.last, reverse=True)


class ActivityStore(ABC):
    """Where records are kept. ``append`` takes a batch (from the log's background writer);
    ``trim`` drops what is older than ``oldest`` (Unix seconds) and all but the newest
    ``keep``; ``read`` answers newest first, each record with its ``id`` (the cursor)."""

    name = ""

    @abstractmethod
    def append(self, records: Sequence[Activity]) -> None: ...

    @abstractmethod
    def read(self, query: ActivityQuery) -> list[Activity]: ...

    @abstractmethod
    def scan(self, query: ActivityQuery, most: int) -> list[Activity]:
        """Up to ``most`` records matching ``query`` (its ``limit`` ignored), newest first: what
        the sessions are made from."""

    @abstractmethod
    def trim(self, oldest: float, keep: int) -> None: ...

    def close(self) -> None:
        """Release connections."""


# --- the pages a call touches -------------------------------------------------------------------

_touched: ContextVar[list[str] | None] = ContextVar("hostcore_activity_touched", default=None)


@contextmanager
def collecting() -> Iterator[list[str]]:
    """Open the list of pages the call under way touches (:func:`touch` fills it), for its record."""
    slugs: list[str] = []
    token = _touched.set(slugs)
    try:
        yield slugs
    finally:
        _touched.reset(token)


def start_collecting() -> list[str]:
    """:func:`collecting` for an adapter that cannot wrap the call in a ``with`` (a page's
    before- and after-request hooks): the list is replaced by the next call's."""
    slugs: list[str] = []
    _touched.set(slugs)
    return slugs


def touch(slug: str) -> None:
    """Note that the call under way touched the page ``slug`` (nothing outside a call)."""
    slugs = _touched.get()
    if slugs is not None and len(slugs) < MAX_SLUGS and slug not in slugs:
        slugs.append(slug)

