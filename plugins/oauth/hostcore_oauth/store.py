"""What the authorization server keeps, all of it in ``host.shared`` (SQLite on one machine,
Redis with ``REDIS_URL``), so every worker and host sees a grant, a code or a revocation at once.

Kinds (keys are digests of secrets, never the secrets):

- ``oauth-client``: a registered (RFC 7591) client by its client_id, for ``pending_client_seconds``
  (a day) until a token is issued to it, then as long as a grant of it may live; a client ID
  metadata document's client is kept under ``oauth-cimd`` by its URL, for as long as its
  Cache-Control says.
- ``oauth-code``: an authorization code by its SHA-256, for ``code_seconds``; taken once.
- ``oauth-grant``: what a person approved for one app (scopes, namespaces, audience), by grant id,
  for as long as its refresh token lives. Revoking it deletes it and its access tokens.
- ``oauth-access``: an access token by its SHA-256, for ``access_token_seconds``, with what a call
  needs (person, scopes, namespaces, audience): one look-up per call.
- ``oauth-refresh``: a refresh token by its SHA-256: its grant and whether it was used (rotated).
- ``oauth-used``: when a grant was last used (written at most once a minute per worker).
"""

from __future__ import annotations

import hashlib
import secrets
import time
from typing import Any

from hostcore import SharedState

ACCESS_PREFIX = "hco_"
REFRESH_PREFIX = "hcr_"
CLIENT = "oauth-client"
CIMD = "oauth-cimd"
CODE = "oauth-code"
GRANT = "oauth-grant"
ACCESS = "oauth-access"
REFRESH = "oauth-refresh"
USED = "oauth-used"
USED_EVERY = 60.0


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


def new_access_token() -> str:
    return ACCESS_PREFIX + secrets.token_urlsafe(32)


def new_refresh_token() -> str:
    return REFRESH_PREFIX + secrets.token_urlsafe(32)


def save_registered_client(shared: SharedState, client_id: str, record: dict[str, Any], ttl: float) -> None:
    """Keep a registered client for ``ttl`` seconds (a token issued to it keeps it as long as its
    grants), once the expired clients are gone: SQLite keeps an expired record's bytes until its
    kind is scanned, and clients are never scanned otherwise."""
    for kind in (CLIENT, CIMD):
        shared.scan(kind)
    shared.put(CLIENT, client_id, record, ttl=ttl)


class GrantStore:
    """Grants and their tokens over one SharedState."""

    def __init__(self, shared: SharedState, access_seconds: int, refresh_seconds: int) -> None:
        self.shared = shared
        self.access_seconds = access_seconds
        self.refresh_seconds = refresh_seconds
        self._used: dict[str, float] = {}

    def create_grant(self, *, person: str, client_id: str, client_name: str, scopes: list[str],
                     namespaces: list[str] | None, audience: str) -> str:  # fmt: skip
        grant_id = secrets.token_urlsafe(16)
        record = {
            "person": person, "client_id": client_id, "client_name": client_name, "scopes": scopes,
            "namespaces": namespaces, "audience": audience, "created": time.time(),
        }  # fmt: skip
        self.shared.put(GRANT, grant_id, record, ttl=self.refresh_seconds)
        return grant_id

    def grant(self, grant_id: str) -> dict[str, Any] | None:
        return self.shared.get(GRANT, grant_id)

    def issue(self, grant_id: str, access: str, refresh: str | None, scopes: list[str]) -> None:
        """Record a new access token (and refresh token) of the grant; a refresh extends the grant.

        The access record carries what a call needs (person, scopes, namespaces, audience), so
        validating a token is one look-up; revoking a grant deletes its access records, and a
        token issued while its grant was being revoked is deleted here."""
        grant = self.grant(grant_id)
        if grant is None:
            return
        record = {"grant": grant_id, "scopes": scopes, **{k: grant[k] for k in ("person", "namespaces", "audience")}}
        self.shared.put(ACCESS, digest(access), record, ttl=self.access_seconds)
        if refresh:
            self.shared.put(REFRESH, digest(refresh), {"grant": grant_id, "used": False}, ttl=self.refresh_seconds)
            self.shared.put(GRANT, grant_id, grant, ttl=self.refresh_seconds)
        if self.grant(grant_id) is None:  # revoked meanwhile: revoke_grant's sweep may have missed it
            self.shared.delete(ACCESS, digest(access))

    def access(self, token: str) -> dict[str, Any] | None:
        """The record of a live access token (its ``grant``, ``person``, ``scopes``, ``namespaces``,
        ``audience``), else None."""
        found = self.shared.get(ACCESS, digest(token))
        if found is None:
            return None
        now = time.time()
        if now - self._used.get(found["grant"], 0.0) > USED_EVERY:
            self._used[found["grant"]] = now
            self.shared.put(USED, found["grant"], {"at": now}, ttl=self.refresh_seconds)
        return found

    def refresh(self, token: str) -> dict[str, Any] | None:
        """The refresh token's record (``grant``, ``used``), or None when unknown or expired."""
        return self.shared.get(REFRESH, digest(token))

    def mark_used(self, token: str) -> bool:
        """Mark a refresh token rotated; False if it was already (a replay: the caller revokes)."""
        key = digest(token)
        record = self.shared.take(REFRESH, key)
        if record is None or record.get("used"):
            if record is not None:
                self.shared.put(REFRESH, key, record, ttl=self.refresh_seconds)
            return False
        self.shared.put(REFRESH, key, {**record, "used": True}, ttl=self.refresh_seconds)
        return True

    def revoke_grant(self, grant_id: str) -> None:
        """Revoke the grant: every access and refresh token of it stops working at once."""
        self.shared.delete(GRANT, grant_id)
        self.shared.delete(USED, grant_id)
        for key, record in self.shared.scan(ACCESS):
            if record.get("grant") == grant_id:
                self.shared.delete(ACCESS, key)

    def revoke_access(self, token: str) -> None:
        self.shared.delete(ACCESS, digest(token))

    def grants_of(self, person: str) -> list[dict[str, Any]]:
        """The person's live grants, each with its ``id`` and ``last_used`` (None: never)."""
        found = []
        for grant_id, record in self.shared.scan(GRANT):
            if record.get("person") == person:
                used = self.shared.get(USED, grant_id)
                found.append({**record, "id": grant_id, "last_used": used["at"] if used else None})
        return sorted(found, key=lambda g: (g["client_name"].lower(), g["created"]))
