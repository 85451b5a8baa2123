"""One-use upload URLs: tickets in SQLite in the instance folder (``uploads.sqlite``).

``upload_attachment`` issues a ticket: a random token whose SHA-256 digest is stored with the
page, the filename, who asked and when it expires; the token itself is only in the URL. Every
gunicorn worker and every restart sees the same file, so any worker honours the URL until it
expires. :meth:`UploadTickets.claim` marks a ticket used in one conditional UPDATE, so of two
posts of the same URL exactly one wins.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import time
from dataclasses import dataclass
from pathlib import Path

from hostcore.domain.principal import Principal
from hostcore.errors import HostcoreError
from hostcore.indexes.sqlite import ThreadLocalDB

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tickets (
    digest TEXT PRIMARY KEY,
    slug TEXT NOT NULL,
    filename TEXT NOT NULL,
    principal TEXT NOT NULL,
    expires REAL NOT NULL,
    used REAL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS tickets_expires ON tickets(expires);
"""
KEEP_USED = 86400.0  # how long a used or expired ticket is kept, to say why its URL is refused


class TicketRefused(HostcoreError):
    """An upload URL that cannot be used (unknown, expired or used); ``status`` is the HTTP status."""

    code = "not_found"

    def __init__(self, message: str, status: int) -> None:
        super().__init__(message)
        self.status = status


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
    """The tickets in ``path``, shared by threads and processes (SQLite, WAL)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db = ThreadLocalDB(path, _SCHEMA)


    def issue(self, slug: str, filename: str, principal: Principal, seconds: float) -> tuple[str, float]:
        """A new ticket's token and expiry (epoch seconds); old used or expired tickets are swept."""
        token = secrets.token_urlsafe(32)
        now = time.time()
        db = self._db.db()
        db.execute("DELETE FROM tickets WHERE expires < ?", (now - KEEP_USED,))
        db.execute(
            "INSERT INTO tickets (digest, slug, filename, principal, expires) VALUES (?, ?, ?, ?, ?)",
            (_digest(token), slug, filename, _dump(principal), now + seconds),
        )
        return token, now + seconds

    def check(self, token: str) -> Ticket:
        """The ticket of ``token`` if it can still be used; raises TicketRefused saying why not."""
        row = self._db.db().execute(
            "SELECT slug, filename, principal, expires, used FROM tickets WHERE digest = ?", (_digest(token),)
        ).fetchone()
        if row is None:
            raise unknown_ticket()
        slug, filename, principal, expires, used = row
        if used is not None:
            raise TicketRefused(
                f"this upload URL was already used at {_iso(used)}; each URL works once, so call upload_attachment "
                "for a new one", 410)  # fmt: skip
        if expires <= time.time():
            raise TicketRefused(f"this upload URL expired at {_iso(expires)}; call upload_attachment for a new one", 410)
        return Ticket(slug, filename, _load(principal), expires)

    def claim(self, token: str) -> Ticket:
        """Mark the ticket used, atomically: only one caller ever gets it. Raises TicketRefused."""
        ticket = self.check(token)
        now = time.time()
        cursor = self._db.db().execute(
            "UPDATE tickets SET used = ? WHERE digest = ? AND used IS NULL AND expires > ?", (now, _digest(token), now)
        )
        if cursor.rowcount != 1:
            self.check(token)  # raises with the reason: used meanwhile, or expired
            raise TicketRefused("this upload URL cannot be used; call upload_attachment for a new one", 410)
        return ticket

    def close(self) -> None:
        self._db.close()


def _iso(epoch: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))
