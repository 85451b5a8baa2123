"""The two homes of shared state (see :mod:`hostcore.seams.shared`): SQLite in the instance folder
for the workers of one machine, Redis when ``REDIS_URL`` is set for every host of the wiki."""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from hostcore.errors import Unavailable
from hostcore.indexes.sqlite import ThreadLocalDB
from hostcore.seams.shared import Record, SharedState, check_kind_key

if TYPE_CHECKING:
    import redis

T = TypeVar("T")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS records (
    kind TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    expires REAL,
    PRIMARY KEY (kind, key)
) WITHOUT ROWID;
"""


def _expires(ttl: float | None, now: float) -> float | None:
    if ttl is None:
        return None
    if not (isinstance(ttl, (int, float)) and math.isfinite(ttl) and ttl > 0):
        raise ValueError(f"ttl is a positive number of seconds or None, not {ttl!r}")
    return now + ttl


class SqliteShared(SharedState):
    """Records in ``path`` (WAL): shared by the threads and processes of one machine. ``clock``
    (epoch seconds) is what expiry is measured by; tests give a :class:`hostcore.testing.FakeClock`."""

    name = "sqlite"

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock
        self._db = ThreadLocalDB(self.path, _SCHEMA)

    def get(self, kind: str, key: str) -> Record | None:
        check_kind_key(kind, key)
        row = self._db.db().execute(
            "SELECT value FROM records WHERE kind = ? AND key = ? AND (expires IS NULL OR expires > ?)",
            (kind, key, self.clock()),
        ).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, kind: str, key: str, value: Record, ttl: float | None = None) -> None:
        check_kind_key(kind, key)
        self._db.db().execute(
            "INSERT OR REPLACE INTO records (kind, key, value, expires) VALUES (?, ?, ?, ?)",
            (kind, key, json.dumps(value), _expires(ttl, self.clock())),
        )

    def add(self, kind: str, key: str, value: Record, ttl: float | None = None) -> bool:
        check_kind_key(kind, key)
        # One statement: an expired record is replaced, a live one is kept (and the call loses).
        cur = self._db.db().execute(
            "INSERT INTO records (kind, key, value, expires) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, expires = excluded.expires "
            "WHERE records.expires IS NOT NULL AND records.expires <= ?",
            (kind, key, json.dumps(value), _expires(ttl, now := self.clock()), now),
        )
        return cur.rowcount == 1

    def take(self, kind: str, key: str) -> Record | None:
        check_kind_key(kind, key)
        row = self._db.db().execute(
            "DELETE FROM records WHERE kind = ? AND key = ? RETURNING value, expires", (kind, key)
        ).fetchone()
        if row is None or (row[1] is not None and row[1] <= self.clock()):
            return None
        return json.loads(row[0])

    def delete(self, kind: str, key: str) -> bool:
        check_kind_key(kind, key)
        now = self.clock()
        cur = self._db.db().execute(
            "DELETE FROM records WHERE kind = ? AND key = ? RETURNING expires", (kind, key)
        ).fetchone()
        return cur is not None and (cur[0] is None or cur[0] > now)

    def scan(self, kind: str) -> list[tuple[str, Record]]:
        check_kind_key(kind, "*")
        db = self._db.db()
        now = self.clock()
        db.execute("DELETE FROM records WHERE kind = ? AND expires IS NOT NULL AND expires <= ?", (kind, now))
        rows = db.execute("SELECT key, value FROM records WHERE kind = ? ORDER BY key", (kind,))
        return [(key, json.loads(value)) for key, value in rows]

    def close(self) -> None:
        self._db.close()


def _unavailable(exc: Exception) -> Unavailable:
    return Unavailable(
        f"the shared state store (REDIS_URL) cannot be reached ({type(exc).__name__}); "
        "start Redis or check REDIS_URL, then retry"
    )


class RedisShared(SharedState):
    """Records in Redis: ``<prefix>:<kind>:<key>`` holds the JSON (with Redis's own expiry), and
    the set ``<prefix>:<kind>`` names the keys, for :meth:`scan`."""

    name = "redis"

    def __init__(self, client: redis.Redis, prefix: str = "hostcore") -> None:
        self.client = client
        self.prefix = prefix

    def _key(self, kind: str, key: str) -> str:
        check_kind_key(kind, key)
        return f"{self.prefix}:{kind}:{key}"

    def _run(self, fn: Callable[[], T]) -> T:
        import redis

        try:
            return fn()
        except redis.RedisError as exc:
            raise _unavailable(exc) from exc

    @staticmethod
    def _ms(ttl: float | None) -> int | None:
        _expires(ttl, 0.0)  # validates
        return None if ttl is None else max(1, int(ttl * 1000))

    def _write(self, kind: str, key: str, value: Record, ttl: float | None, only_new: bool) -> bool:
        name, index, ms = self._key(kind, key), f"{self.prefix}:{kind}", self._ms(ttl)

        def run() -> bool:
            pipe = self.client.pipeline(transaction=True)
            pipe.set(name, json.dumps(value), px=ms, nx=only_new)
            pipe.sadd(index, key)
            return bool(pipe.execute()[0])

        return self._run(run)

    def get(self, kind: str, key: str) -> Record | None:
        name = self._key(kind, key)
        raw = self._run(lambda: self.client.get(name))
        return json.loads(raw) if isinstance(raw, (bytes, str)) else None

    def put(self, kind: str, key: str, value: Record, ttl: float | None = None) -> None:
        self._write(kind, key, value, ttl, only_new=False)

    def add(self, kind: str, key: str, value: Record, ttl: float | None = None) -> bool:
        return self._write(kind, key, value, ttl, only_new=True)

    def _remove(self, kind: str, key: str, command: str) -> object:
        name, index = self._key(kind, key), f"{self.prefix}:{kind}"

        def run() -> object:
            pipe = self.client.pipeline(transaction=True)
            pipe.execute_command(command, name)
            pipe.srem(index, key)
            return pipe.execute()[0]

        return self._run(run)

    def take(self, kind: str, key: str) -> Record | None:
        raw = self._remove(kind, key, "GETDEL")
        return json.loads(raw) if isinstance(raw, (bytes, str)) else None

    def delete(self, kind: str, key: str) -> bool:
        return bool(self._remove(kind, key, "DEL"))

    def scan(self, kind: str) -> list[tuple[str, Record]]:
        check_kind_key(kind, "*")
        index = f"{self.prefix}:{kind}"
        members = self._run(lambda: self.client.smembers(index))
        keys = sorted(k.decode() if isinstance(k, bytes) else str(k) for k in members)  # type: ignore[union-attr]
        if not keys:
            return []
        values = self._run(lambda: self.client.mget([f"{index}:{k}" for k in keys]))
        pairs = list(zip(keys, values, strict=True))  # type: ignore[arg-type]
        gone = [k for k, v in pairs if v is None]
        if gone:
            self._run(lambda: self.client.srem(index, *gone))
        return [(k, json.loads(v)) for k, v in pairs if v is not None]
