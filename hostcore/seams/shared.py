"""Shared state: small records every worker and every host of one wiki must see alike.

Tokens, people's accounts, OAuth clients, codes and grants, one-use URLs: each is a JSON record
under a ``kind`` and a ``key``, optionally expiring. The host keeps them in SQLite in the instance
folder (every worker of one machine), or in Redis when ``REDIS_URL`` is set (every host). A plugin
reaches them as ``host.shared`` and never knows which.

Every operation is atomic on its own: ``add`` creates only if absent (of two racers exactly one
wins), ``take`` reads and deletes in one step (a one-use code is used once), and an expired
record is gone for every operation. Keys are opaque strings: store a digest, never a secret.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

Record = dict[str, Any]


class SharedState(ABC):
    """Records by ``(kind, key)``; ``ttl`` in seconds (None: kept until deleted).

    Raises ``hostcore.Unavailable`` when the store cannot be reached (Redis down).
    """

    name = ""

    @abstractmethod
    def get(self, kind: str, key: str) -> Record | None:
        """The record, or None if there is none or it expired."""

    @abstractmethod
    def put(self, kind: str, key: str, value: Record, ttl: float | None = None) -> None:
        """Create or replace the record."""

    @abstractmethod
    def add(self, kind: str, key: str, value: Record, ttl: float | None = None) -> bool:
        """Create the record only if there is none (or it expired); True if this call created it."""

    @abstractmethod
    def take(self, kind: str, key: str) -> Record | None:
        """Delete the record and return it (None if there was none): of two callers, one gets it."""

    @abstractmethod
    def delete(self, kind: str, key: str) -> bool:
        """Delete the record; True if there was one."""

    @abstractmethod
    def scan(self, kind: str) -> list[tuple[str, Record]]:
        """Every live record of ``kind`` as ``(key, value)``, ordered by key."""

    def close(self) -> None:
        """Release connections."""


def check_kind_key(kind: str, key: str) -> None:
    """Raise ValueError for an empty kind or key, or a kind with ``:`` (a plugin author's mistake)."""
    if not kind or ":" in kind:
        raise ValueError(f"a shared-state kind is a non-empty name without ':', not {kind!r}")
    if not key:
        raise ValueError(f"a shared-state key is a non-empty string, not {key!r}")
