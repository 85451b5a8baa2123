"""The two homes of shared state (see :mod:`hostcore.seams.shared`): SQLite in the instance folder
for the workers of one machine, Redis when ``REDIS_URL`` is set for every host of the wiki.

Unlike the indexes, shared state is not derived from storage: accounts, tokens and OAuth grants
exist nowhere else. So a damaged ``shared.sqlite`` is never set aside on its own: every call that
meets the damage answers ``unavailable`` naming the file and the damage, the health check and
``hostcore check`` say so, and ``hostcore doctor`` salvages what SQLite can still read into a
fresh file. A Redis that would lose the records at a restart is refused at start-up
(:meth:`RedisShared.check`) unless the operator accepts it. ``hostcore backup`` and ``hostcore
restore`` copy the records of either home to a file and back (:mod:`hostcore.host.backups`).
"""

from __future__ import annotations

import functools
import json
import logging
import math
import sqlite3
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, TypeVar

from hostcore.errors import Unavailable
from hostcore.seams.derived import damaged, file_id, quick_check
from hostcore.seams.shared import Finding, Record, Row, SharedState, check_kind_key
from hostcore.seams.sqlite import DerivedDB

if TYPE_CHECKING:
    import redis

T = TypeVar("T")
P = ParamSpec("P")
log = logging.getLogger("hostcore.shared")

SCHEMA = """
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


def damage_message(name: str, problem: str) -> str:
    """What a caller is told when the shared state file ``name`` is damaged (``problem``)."""
    return (
        f"the wiki's shared state is damaged: {name} in its instance folder ({problem}). Signing in, tokens and "
        "OAuth do not work until the wiki's operator repairs it (`hostcore doctor`); public pages can still be read"
    )


def _guarded(method: Callable[Concatenate[SqliteShared, P], T]) -> Callable[Concatenate[SqliteShared, P], T]:
    """A SQLite error becomes ``Unavailable`` naming the file and what is wrong (not a 500)."""

    @functools.wraps(method)
    def run(self: SqliteShared, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return method(self, *args, **kwargs)
        except sqlite3.Error as exc:
            raise self.failed(exc) from exc

    return run


class SqliteShared(SharedState):
    """Records in ``path`` (WAL): shared by the threads and processes of one machine. ``clock``
    (epoch seconds) is what expiry is measured by; tests give a :class:`hostcore.testing.FakeClock`.

    Damage met by any process is recorded beside the file (``NAME.damage``, with the file's
    identity, so a file repaired or replaced since is not taken for damaged) for :meth:`damage`.
    """

    name = "sqlite"

    def __init__(self, path: Path, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self.clock = clock
        self._db = DerivedDB(self.path, "shared state", SCHEMA, pragmas=(), meta=False)
        self._marker = self.path.with_name(self.path.name + ".damage")
        self._logged = False

    def failed(self, exc: sqlite3.Error) -> Unavailable:
        """The error to raise for ``exc``, met while using the file (damage is recorded and logged)."""
        if damaged(exc):
            self._db.reset()  # this thread reopens at its next use: the file may have been repaired meanwhile
            self._note(str(exc))
            if not self._logged:
                self._logged = True
                log.error("%s", self._problem(str(exc)))
            return Unavailable(damage_message(self.path.name, str(exc)))
        return Unavailable(
            f"the wiki's shared state ({self.path.name} in its instance folder) cannot be used: {exc}; try again, "
            "and if it lasts, ask the wiki's operator to run `hostcore check`"
        )

    def _note(self, problem: str) -> None:
        opened = file_id(self.path)
        if opened is None:
            return
        with suppress(OSError):  # a full disk: the health check does not know, the calls still say so
            self._marker.write_text(json.dumps({"file": list(opened), "problem": problem}))

    def damage(self) -> str | None:
        try:
            found = json.loads(self._marker.read_text())
        except (OSError, ValueError):  # none recorded (the usual case), or unreadable
            return None
        opened = file_id(self.path)
        if not isinstance(found, dict) or opened is None or found.get("file") != list(opened):
            return None  # repaired or replaced since
        return damage_message(self.path.name, str(found.get("problem")))

    def check(self) -> Finding:
        """``PRAGMA quick_check`` of the file (it reads the whole file: shared state is small)."""
        if not self.path.exists():
            self._marker.unlink(missing_ok=True)
            return Finding(f"shared state: {self.path} (not made yet)")
        try:
            problem = quick_check(self.path)
        except sqlite3.Error as exc:
            return Finding(f"shared state: {self.path} cannot be read", problem=f"{self.path} cannot be read: {exc}")
        if problem is None:
            self._marker.unlink(missing_ok=True)
            return Finding(f"shared state: {self.path} (sound)")
        self._note(problem)
        return Finding(f"shared state: {self.path} is damaged", problem=self._problem(problem))

    def _problem(self, problem: str) -> str:
        """The damage ``problem`` as the log and ``hostcore check`` say it, with the fix."""
        return (
            f"{self.path} is damaged ({problem}): signing in, tokens and OAuth are refused; run `hostcore doctor` "
            "to salvage what can be read into a new file"
        )

    @_guarded
    def get(self, kind: str, key: str) -> Record | None:
        check_kind_key(kind, key)
        row = self._db.connection().execute(
            "SELECT value FROM records WHERE kind = ? AND key = ? AND (expires IS NULL OR expires > ?)",
            (kind, key, self.clock()),
        ).fetchone()
        return json.loads(row[0]) if row else None

    @_guarded
    def put(self, kind: str, key: str, value: Record, ttl: float | None = None) -> None:
        check_kind_key(kind, key)
        self._db.connection().execute(
            "INSERT OR REPLACE INTO records (kind, key, value, expires) VALUES (?, ?, ?, ?)",
            (kind, key, json.dumps(value), _expires(ttl, self.clock())),
        )

    @_guarded
    def add(self, kind: str, key: str, value: Record, ttl: float | None = None) -> bool:
        check_kind_key(kind, key)
        # One statement: an expired record is replaced, a live one is kept (and the call loses).
        cur = self._db.connection().execute(
            "INSERT INTO records (kind, key, value, expires) VALUES (?, ?, ?, ?) "
            "ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value, expires = excluded.expires "
            "WHERE records.expires IS NOT NULL AND records.expires <= ?",
            (kind, key, json.dumps(value), _expires(ttl, now := self.clock()), now),
        )
        return cur.rowcount == 1

    @_guarded
    def take(self, kind: str, key: str) -> Record | None:
        check_kind_key(kind, key)
        row = self._db.connection().execute(
            "DELETE FROM records WHERE kind = ? AND key = ? RETURNING value, expires", (kind, key)
        ).fetchone()
        if row is None or (row[1] is not None and row[1] <= self.clock()):
            return None
        return json.loads(row[0])

    @_guarded
    def delete(self, kind: str, key: str) -> bool:
        check_kind_key(kind, key)
        now = self.clock()
        cur = self._db.connection().execute(
            "DELETE FROM records WHERE kind = ? AND key = ? RETURNING expires", (kind, key)
        ).fetchone()
        return cur is not None and (cur[0] is None or cur[0] > now)

    @_guarded
    def scan(self, kind: str) -> list[tuple[str, Record]]:
        check_kind_key(kind, "*")
        db = self._db.connection()
        now = self.clock()
        db.execute("DELETE FROM records WHERE kind = ? AND expires IS NOT NULL AND expires <= ?", (kind, now))
        rows = db.execute("SELECT key, value FROM records WHERE kind = ? ORDER BY key", (kind,))
        return [(key, json.loads(value)) for key, value in rows]

    @_guarded
    def records(self) -> list[Row]:
        rows = self._db.connection().execute(
            "SELECT kind, key, value, expires FROM records WHERE expires IS NULL OR expires > ? ORDER BY kind, key",
            (self.clock(),),
        )
        return [(kind, key, json.loads(value), expires) for kind, key, value, expires in rows]

    @_guarded
    def load(self, rows: Iterable[Row]) -> int:
        live = live_rows(rows)
        db = self._db.connection()
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(
                "INSERT OR REPLACE INTO records (kind, key, value, expires) VALUES (?, ?, ?, ?)",
                [(kind, key, json.dumps(value), expires) for kind, key, value, expires in live],
            )
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")
        return len(live)

    @_guarded
    def copy_to(self, target: sqlite3.Connection) -> None:
        """Copy the whole file into ``target`` with SQLite's backup API: consistent while others write."""
        self._db.connection().backup(target)

    def close(self) -> None:
        self._db.close()


def live_rows(rows: Iterable[Row]) -> list[Row]:
    """``rows`` not yet expired, each checked (a kind or key that could not be stored is a ValueError)."""
    now, live = time.time(), []
    for kind, key, value, expires in rows:
        check_kind_key(kind, key)
        if expires is None or expires > now:
            live.append((kind, key, value, expires))
    return live


def _unavailable(exc: Exception) -> Unavailable:
    return Unavailable(
        f"the shared state store (REDIS_URL) cannot be reached ({type(exc).__name__}); "
        "start Redis or check REDIS_URL, then retry"
    )


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _config(client: redis.Redis, name: str) -> str:
    answer: dict[object, object] = client.config_get(name)  # type: ignore[assignment]
    return _text(answer.get(name, answer.get(name.encode(), "")))


def _glob(text: str) -> str:
    """``text`` as a Redis glob pattern matching only itself (a PUBLIC_URL may hold ``[``)."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)


class RedisShared(SharedState):
    """Records in Redis: ``<prefix>:<kind>:<key>`` holds the JSON (with Redis's own expiry), and
    the set ``<prefix>:<kind>`` names the keys, for :meth:`scan`.

    ``require_persistence``: :meth:`check` refuses a Redis that keeps nothing on disk (or will not
    say), since accounts, tokens and grants live only here.
    """

    name = "redis"

    def __init__(self, client: redis.Redis, prefix: str = "hostcore", require_persistence: bool = True) -> None:
        self.client = client
        self.prefix = prefix
        self.require_persistence = require_persistence

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

    def _kinds(self) -> list[str]:
        """Every kind with records: the index sets ``<prefix>:<kind>``."""
        names = self.client.scan_iter(match=_glob(self.prefix) + ":*", count=1000, _type="set")
        rests = (_text(name)[len(self.prefix) + 1 :] for name in names)
        return sorted(rest for rest in rests if rest and ":" not in rest)

    def records(self) -> list[Row]:
        def run() -> list[Row]:
            rows: list[Row] = []
            for kind in self._kinds():
                index = f"{self.prefix}:{kind}"
                keys = sorted(_text(k) for k in self.client.smembers(index))  # type: ignore[union-attr]
                pipe = self.client.pipeline(transaction=False)
                for key in keys:
                    pipe.get(f"{index}:{key}")
                    pipe.pttl(f"{index}:{key}")
                answers, now = pipe.execute(), time.time()
                for key, raw, ms in zip(keys, answers[::2], answers[1::2], strict=True):
                    if raw is not None:  # gone meanwhile
                        rows.append((kind, key, json.loads(raw), None if ms < 0 else now + ms / 1000))
            return rows

        return self._run(run)

    def load(self, rows: Iterable[Row]) -> int:
        live = live_rows(rows)

        def run() -> None:
            pipe, now = self.client.pipeline(transaction=True), time.time()
            for kind, key, value, expires in live:
                ms = None if expires is None else max(1, int((expires - now) * 1000))
                pipe.set(self._key(kind, key), json.dumps(value), px=ms)
                pipe.sadd(f"{self.prefix}:{kind}", key)
            pipe.execute()

        self._run(run)
        return len(live)

    def check(self) -> Finding:
        """Whether Redis keeps its data at a restart, as ``CONFIG GET appendonly`` and ``save`` say."""
        import redis

        lost = "a Redis restarted without its data loses every account, token, OAuth client and grant (kept only there)"
        try:
            aof, save = _config(self.client, "appendonly"), _config(self.client, "save")
        except redis.ResponseError as exc:  # CONFIG renamed away or denied by an ACL, as managed Redis services do
            found = f"Redis (REDIS_URL) refuses CONFIG GET ({exc}), so whether it keeps its data at a restart is unknown"
            fix = ("if it does (a managed Redis with persistence), set REDIS_REQUIRE_PERSISTENCE = false to say so; "
                   "else give it persistence (appendonly yes)")  # fmt: skip
        except redis.RedisError as exc:
            return Finding(
                f"shared state: Redis (REDIS_URL) cannot be reached ({type(exc).__name__})",
                problem=f"the shared state store (REDIS_URL) cannot be reached ({exc}); start Redis or check REDIS_URL",
            )
        else:
            if aof == "yes":
                return Finding(f"shared state: Redis (REDIS_URL) keeps its data (appendonly yes, save {save!r})")
            if save:
                return Finding(
                    f"shared state: Redis (REDIS_URL) keeps snapshots (save {save!r}) but no append-only file: a restart "
                    "loses what changed since the last snapshot (appendonly yes loses at most a second)"
                )
            found = "Redis (REDIS_URL) keeps nothing on disk (appendonly no, save '')"
            fix = "give it persistence (appendonly yes), or set REDIS_REQUIRE_PERSISTENCE = false to accept the loss"
        if not self.require_persistence:
            return Finding(f"shared state: {found}; accepted (REDIS_REQUIRE_PERSISTENCE = false): {lost}")
        return Finding(f"shared state: {found}", problem=f"{found}: {lost}. {fix[0].upper()}{fix[1:]}", refuse=True)
