"""One-use upload URLs: tickets in the host's shared state (``host.shared``).

``upload_attachment`` issues a ticket: a random token whose SHA-256 digest keys a record of the
page, the filename, who asked and when it expires; the token itself is only in the URL. The
record lives in ``shared.sqlite`` (every worker of one machine) or in Redis when ``REDIS_URL`` is
set (every host), so any worker of any host honours the URL until it expires.
:meth:`UploadTickets.claim` takes the record (read and delete in one step), so of two posts of the
same URL, to one host or two, exactly one wins; it leaves an ``upload-used`` record behind for a
day, to say why the URL is refused afterwards.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass

from hostcore.domain.principal import Principal
from hostcore.errors import TicketRefused
from hostcore.seams.shared import SharedState

TICKET, USED = "upload", "upload-used"
KEEP_USED = 86400.0  # how long a used or expired ticket is kept, to say why its URL is refused


def unknown_ticket() -> TicketRefused:
    return TicketRefused("this upload URL is not valid; call upload_attachment for a new one", 404)


@dataclass(frozen=True)
class Ticket:
    slug: str
    filename: str
    principal: Principal
    expires: float


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _dump(principal: Principal) -> str:
    namespaces = sorted(principal.namespaces) if principal.namespaces is not None else None
    return json.dumps({"name": principal.name, "scopes": sorted(principal.scopes), "namespaces": namespaces,
                       "client": principal.client})  # fmt: skip


def _load(text: str) -> Principal:
    raw = json.loads(text)
    namespaces = frozenset(raw["namespaces"]) if raw["namespaces"] is not None else None
    return Principal(raw["name"], frozenset(raw["scopes"]), namespaces, raw["client"])


class UploadTickets:
    """The tickets in shared state: every worker and every host sees the same ones. ``clock``
    (epoch seconds) is what a ticket's expiry is measured by."""

    def __init__(self, shared: SharedState, clock: Callable[[], float] = time.time) -> None:
        self.shared = shared
        self.clock = clock

    def issue(self, slug: str, filename: str, principal: Principal, seconds: float) -> tuple[str, float]:
        """A new ticket's token and expiry (epoch seconds); the record itself is gone a day later."""
        token = secrets.token_urlsafe(32)
        expires = self.clock() + seconds
        record = {"slug": slug, "filename": filename, "principal": _dump(principal), "expires": expires}
        self.shared.put(TICKET, _digest(token), record, ttl=seconds + KEEP_USED)
        return token, expires

    def check(self, token: str) -> Ticket:
        """The ticket of ``token`` if it can still be used; raises TicketRefused saying why not."""
        record = self.shared.get(TICKET, _digest(token))
        if record is None:
            raise self._refusal(token)
        return self._usable(record)

    def claim(self, token: str) -> Ticket:
        """Use the ticket up, atomically (``take``): only one caller on any host ever gets it.
        Raises TicketRefused."""
        record = self.shared.take(TICKET, _digest(token))
        if record is None:
            raise self._refusal(token)
        if record["expires"] <= self.clock():
            self.shared.put(TICKET, _digest(token), record, ttl=KEEP_USED)  # kept, to say it expired
            self._usable(record)
        self.shared.put(USED, _digest(token), {"used": self.clock()}, ttl=KEEP_USED)
        return self._usable(record)

    def _refusal(self, token: str) -> TicketRefused:
        used = self.shared.get(USED, _digest(token))
        if used is None:
            return unknown_ticket()
        return TicketRefused(
            f"this upload URL was already used at {_iso(used['used'])}; each URL works once, so call upload_attachment "
            "for a new one", 410)  # fmt: skip

    def _usable(self, record: dict[str, object]) -> Ticket:
        expires = float(record["expires"])  # type: ignore[arg-type]
        if expires <= self.clock():
            raise TicketRefused(f"this upload URL expired at {_iso(expires)}; call upload_attachment for a new one", 410)
        return Ticket(str(record["slug"]), str(record["filename"]), _load(str(record["principal"])), expires)

    def close(self) -> None:
        """Nothing of its own to release: the shared state is the host's."""


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
