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
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

Record = dict[str, Any]
Row = tuple[str, str, Record, "float | None"]
"""One record as :meth:`SharedState.records` gives it: kind, key, value, when it expires (a Unix
time) or None."""


@dataclass(frozen=True)
class Finding:
    """What :meth:`SharedState.check` found: a sentence for ``hostcore check``; the problem, with
    its fix, or None; whether the wiki must not start on it."""

    found: str
    problem: str | None = None
    refuse: bool = False


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

    @abstractmethod
    def records(self) -> list[Row]:
        """Every live record, for a backup (see ``hostcore backup``)."""

    @abstractmethod
    def load(self, rows: Iterable[Row]) -> int:
        """Write ``rows`` (from :meth:`records`, of this store or another) in one step, each
        replacing the record of its kind and key; those expired are skipped. Returns how many were
        written. Records not in ``rows`` are kept."""

    def check(self) -> Finding:
        """Look at the store as start-up and ``hostcore check`` do: whether its records are safe
        (a damaged file, a store that would lose them at a restart)."""
        return Finding(f"shared state: {self.name}")

    def damage(self) -> str | None:
        """The damage found in the store (by any process, at start-up or since), in a sentence
        naming it and what does not work; None when none. Cheap enough for every health check."""
        return None

    def close(self) -> None:
        """Release connections."""


def check_kind_key(kind: str, key: str) -> None:
    """Raise ValueError for an empty kind or key, or a kind with ``:`` (a plugin author's mistake)."""
    if not kind or ":" in kind:
        raise ValueError(f"a shared-state kind is a non-empty name without ':', not {kind!r}")
    if not key:
        raise ValueError(f"a shared-state key is a non-empty string, not {key!r}")
