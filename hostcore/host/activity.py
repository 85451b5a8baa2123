"""The activity log (:mod:`hostcore.seams.activity`): records queued in memory, written in batches.

A call only appends its record to this process's queue (a list under a lock) and kicks the
writer, a background thread (:class:`~hostcore.seams.worker.CoalescingWorker`) that takes the
whole queue at most every :data:`FLUSH_SECONDS` and writes it in one transaction (SQLite) or one
pipeline (Redis). Reads first wait for this process's queue to be written, so a caller sees its
own calls at once; another worker's or host's arrive within :data:`FLUSH_SECONDS`. Closing the
host writes what is queued, so a clean shutdown loses nothing. The log is bounded by age
(``ACTIVITY_DAYS``) and size (``ACTIVITY_MAX_RECORDS``), trimmed by the writer.

Two stores: ``activity.sqlite`` in the instance folder (every worker of one machine), or a Redis
stream when ``REDIS_URL`` is set (every host: the log is the wiki's, not one machine's).
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from hostcore.errors import Unavailable
from hostcore.seams.activity import Activity, ActivityQuery, ActivityStore, AgentSession, sessions_of
from hostcore.seams.sqlite import DerivedDB
from hostcore.seams.worker import CoalescingWorker

if TYPE_CHECKING:
    import redis

T = TypeVar("T")
log = logging.getLogger("hostcore.activity")

FLUSH_SECONDS = 0.5  # the writer takes the queue at most this often
TRIM_SECONDS = 60.0  # and trims the store at most this often
MAX_QUEUED = 20_000  # records held while the store cannot be written (Redis down); the oldest go first
SESSION_SCAN = 20_000  # records at most that list_agent_sessions groups, newest first
READ_SCAN = 50_000  # records at most a filtered read of the Redis stream examines

SCHEMA = """
CREATE TABLE IF NOT EXISTS activity (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    time REAL NOT NULL,
    principal TEXT NOT NULL,
    auth TEXT NOT NULL,
    client TEXT NOT NULL,
    session TEXT NOT NULL,
    action TEXT NOT NULL,
    slugs TEXT NOT NULL,
    outcome TEXT NOT NULL,
    ms REAL NOT NULL,
    grant_id TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS activity_time ON activity (time);
CREATE INDEX IF NOT EXISTS activity_principal ON activity (principal, id);
"""
_COLUMNS = "id, time, principal, auth, client, session, action, slugs, outcome, ms, grant_id"


def _row(row: tuple[object, ...]) -> Activity:
    rid, t, principal, auth, client, session, action, slugs, outcome, ms, grant = row
    return Activity(float(t), str(principal), str(auth), str(client), str(session), str(action),  # type: ignore[arg-type]
                    tuple(json.loads(str(slugs))), str(outcome), float(ms), str(rid), str(grant))  # type: ignore[arg-type]  # fmt: skip


class SqliteActivityStore(ActivityStore):
    """The log in ``path`` (WAL): shared by the workers of one machine. Damage sets the file aside
    and the log starts anew (it is a record of calls, not the wiki's content)."""

    name = "sqlite"

    def __init__(self, path: Path) -> None:
        self._db = DerivedDB(Path(path), "activity log", SCHEMA, version=1, meta=False)

    def _run(self, fn: Callable[[sqlite3.Connection], T], write: bool = False) -> T:
        try:
            if write:
                with self._db.transaction(mark=False) as db:
                    return fn(db)
            with self._db.guard() as db:
                return fn(db)
        except sqlite3.Error as exc:
            raise Unavailable(f"the activity log (activity.sqlite in the instance folder) cannot be used: {exc}") from exc

    def append(self, records: Sequence[Activity]) -> None:
        rows = [(a.time, a.principal, a.auth, a.client, a.session, a.action, json.dumps(list(a.slugs)), a.outcome, a.ms,
                 a.grant) for a in records]  # fmt: skip
        self._run(lambda db: db.executemany(
            "INSERT INTO activity (time, principal, auth, client, session, action, slugs, outcome, ms, grant_id) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", rows), write=True)  # fmt: skip

    def _select(self, query: ActivityQuery, limit: int) -> list[Activity]:
        where: list[str] = []
        args: list[object] = []
        for column, value in (("principal", query.principal), ("client", query.client), ("action", query.action)):
            if value is not None:
                where.append(f"{column} = ?")
                args.append(value)
        if query.since is not None:
            where.append("time >= ?")
            args.append(query.since)
        if query.before is not None:
            where.append("id < ?")
            args.append(int(query.before) if query.before.isdigit() else 0)
        sql = f"SELECT {_COLUMNS} FROM activity {'WHERE ' + ' AND '.join(where) if where else ''} ORDER BY id DESC LIMIT ?"
        return self._run(lambda db: [_row(r) for r in db.execute(sql, (*args, limit))])

    def read(self, query: ActivityQuery) -> list[Activity]:
        return self._select(query, query.limit)

    def scan(self, query: ActivityQuery, most: int) -> list[Activity]:
        return self._select(query, most)

    def trim(self, oldest: float, keep: int) -> None:
        def run(db: sqlite3.Connection) -> None:
            db.execute("DELETE FROM activity WHERE time < ?", (oldest,))
            db.execute("DELETE FROM activity WHERE id <= (SELECT id FROM activity ORDER BY id DESC LIMIT 1 OFFSET ?)", (keep,))

        self._run(run, write=True)

    def close(self) -> None:
        self._db.close()


class RedisActivityStore(ActivityStore):
    """The log as the Redis stream ``<prefix>:activity`` (one JSON field an entry), which every
    host appends to and reads; its entry ids (the Redis server's milliseconds) are the cursors."""

    name = "redis"

    def __init__(self, client: redis.Redis, prefix: str) -> None:
        self.client = client
        self.key = f"{prefix}:activity"

    def _run(self, fn: Callable[[], T]) -> T:
        import redis

        try:
            return fn()
        except redis.RedisError as exc:
            raise Unavailable(
                f"the activity log (in REDIS_URL) cannot be reached ({type(exc).__name__}); start Redis or check REDIS_URL"
            ) from exc

    def append(self, records: Sequence[Activity]) -> None:
        def run() -> None:
            pipe = self.client.pipeline(transaction=False)
            for a in records:
                pipe.xadd(self.key, {"r": json.dumps(a.as_dict(), separators=(",", ":"))})
            pipe.execute()

        self._run(run)

    def _entries(self, query: ActivityQuery, most: int, wanted: int) -> list[Activity]:
        """Up to ``wanted`` matching records, newest first, examining at most ``most`` entries."""
        found: list[Activity] = []
        top = f"({query.before}" if query.before else "+"
        bottom = str(int(query.since * 1000)) if query.since is not None else "-"  # ids are never older than their record
        examined = 0
        while len(found) < wanted and examined < most:
            chunk = min(1000, most - examined)
            entries: list[tuple[object, dict[object, object]]] = self._run(
                partial(self.client.xrevrange, self.key, top, bottom, count=chunk)  # type: ignore[arg-type]
            )
            if not entries:
                break
            examined += len(entries)
            for entry_id, fields in entries:
                eid = entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id)
                raw = fields.get(b"r") or fields.get("r")
                try:
                    a = Activity.from_dict({**json.loads(raw), "id": eid})  # type: ignore[arg-type]
                except (TypeError, ValueError, KeyError):
                    continue  # not ours: skipped, never fatal to a read
                if query.matches(a):
                    found.append(a)
                    if len(found) == wanted:
                        break
            top = f"({eid}"
        return found

    def read(self, query: ActivityQuery) -> list[Activity]:
        return self._entries(query, READ_SCAN, query.limit)

    def scan(self, query: ActivityQuery, most: int) -> list[Activity]:
        return self._entries(query, most, most)

    def trim(self, oldest: float, keep: int) -> None:
        def run() -> None:
            pipe = self.client.pipeline(transaction=False)
            pipe.xtrim(self.key, minid=str(int(oldest * 1000)), approximate=False)
            pipe.xtrim(self.key, maxlen=keep, approximate=False)
            pipe.execute()

        self._run(run)


class ActivityLog:
    """This process's side of the log: :meth:`record` queues, a background thread writes.

    ``enabled`` False (``ACTIVITY_LOG = false``) records nothing and reads answer ``unavailable``.
    """

    def __init__(self, store: ActivityStore, *, days: float, keep: int, enabled: bool = True) -> None:
        self.store, self.days, self.keep, self.enabled = store, days, keep, enabled
        self._queue: list[Activity] = []
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._trimmed = 0.0
        self._dropped = 0
        self._writer = CoalescingWorker(self._write, "hostcore-activity", what="the activity log's writer",
                                        gap=FLUSH_SECONDS, retry=1.0, retry_max=30.0, logger=log)  # fmt: skip

    def record(self, activity: Activity) -> None:
        """Queue ``activity`` for the writer (cheap: an append under a lock; the first of a batch
        also wakes the writer)."""
        if not self.enabled:
            return
        with self._lock:
            if self._pid != os.getpid():  # a forked child: the parent writes what it queued
                self._pid, self._queue = os.getpid(), []
            first = not self._queue
            self._queue.append(activity)
            if len(self._queue) > MAX_QUEUED:
                del self._queue[0]
                self._dropped += 1
        if first:  # the run asked for then takes the whole queue: waking the writer once a batch is enough
            self._writer.kick()

    def _write(self) -> None:
        with self._lock:
            batch, self._queue = self._queue, []
            dropped, self._dropped = self._dropped, 0
        if dropped:
            log.warning("the activity log lost %d records while it could not be written", dropped)
        if batch:
            try:
                self.store.append(batch)
            except Exception:
                with self._lock:  # kept for the retry, the oldest going first beyond the bound
                    self._queue[:0] = batch
                    excess = len(self._queue) - MAX_QUEUED
                    if excess > 0:
                        del self._queue[:excess]
                        self._dropped += excess
                raise
        now = time.time()
        if now - self._trimmed >= TRIM_SECONDS:
            self._trimmed = now
            self.store.trim(now - self.days * 86400, self.keep)

    def flush(self, timeout: float = 10.0) -> None:
        """Wait until what this process queued is written (up to ``timeout`` seconds)."""
        if self.enabled:
            self._writer.kick()
            self._writer.wait(timeout)

    def _require(self) -> None:
        if not self.enabled:
            raise Unavailable("the activity log is off on this wiki (ACTIVITY_LOG = false); ask its operator to turn it on")

    def read(self, query: ActivityQuery) -> list[Activity]:
        """Records matching ``query``, newest first (this process's queue written first)."""
        self._require()
        self.flush()
        return self.store.read(query)

    def sessions(self, query: ActivityQuery) -> list[AgentSession]:
        """The agent sessions among the newest :data:`SESSION_SCAN` records matching ``query``."""
        self._require()
        self.flush()
        return sessions_of(self.store.scan(query, SESSION_SCAN))

    def close(self) -> None:
        """Write what is queued, stop the writer, release the store."""
        self._writer.stop(finish=True, timeout=30.0)
        with self._lock:
            batch, self._queue = self._queue, []
        if batch:  # the writer stopped before taking them (or had failed): one last try
            try:
                self.store.append(batch)
            except Exception as exc:
                log.warning("the activity log could not write its last %d records: %s", len(batch), exc)
        self.store.close()
