"""S3 storage: each stored path is one object, ``<prefix><path>``, in an S3-compatible bucket.

What it relies on: conditional writes, i.e. ``PutObject`` with ``If-Match: <etag>`` and
``If-None-Match: *`` and ``DeleteObject`` with ``If-Match: <etag>``, answered with 412 when the
condition fails (AWS S3 has conditional puts since 2024, MinIO and moto have both; a server
that ignores them loses the compare-and-set). Nothing else: no bucket versioning, no locks, no clock agreement beyond
``repair_after``. (A server that answers a conditional delete with ``NotImplemented`` gets a HEAD
just before an unconditional delete instead.)

**Compare-and-set.** Every object carries the git blob id of its bytes as metadata
(``x-amz-meta-hash``); a write first reads the object's metadata (HEAD), compares the hash with
the one expected, then writes with ``If-Match`` on the ETag it saw (``If-None-Match: *`` to
create). Of several writers that saw the same ETag exactly one wins; the others get 412 and a
``Conflict`` with the hash the winner wrote.

**Changes and the log.** hostcore keeps its own objects under ``<prefix>.hostcore/`` (a path there
is refused): ``objects/<hash>`` holds every blob ever written (content-addressed, immutable),
``pending/<id>.json`` the change records of changes in progress, ``log/<id>.json`` the change log,
one entry per change (author, time, message naming the tool and client, moves, and every path
with its old and new hash), and ``head``, rewritten after every log entry, so that a reader learns
from one HEAD whether the log grew. ``<id>`` is 40 hex digits that sort newest first. A change
runs:

1. check every expectation (HEAD each path); a stale one raises Conflict, nothing is written;
2. store the new blobs under ``objects/`` (and, for a batch, the old ones: a rollback needs them);
3. write the change record ``pending/<id>.json`` (the ops with old and new hash, the writer's host
   and process);
4. apply the ops in order, each conditional on the ETag seen in step 1;
5. write the log entry ``log/<id>.json`` (under an id made now, so the log lists changes in the
   order they landed), rewrite ``head``, then delete the record.

If a foreign write wins a race in step 4, the writer marks the record ``abort``, undoes the ops
it applied (each conditional on its own ETag), deletes the record and raises Conflict. If the
writer dies, its record stays: the next writer (every write looks) or reader (at most once a
second per process) that finds a record whose writer is gone (a process of this host that no
longer runs, a record older than ``repair_after`` seconds, or one this process gave up on when S3
failed halfway) repairs it: when the record is ``pending`` and every path holds its old or its
new hash, it completes the change (applies the missing ops, writes the log entry); otherwise it
rolls back the ops that landed. Either way it
deletes the record, so a batch (a move, a rename) ends applied whole or not at all. While a live
writer is between steps 4 and 5 (milliseconds), a reader can see part of its batch.

**Versions** (how each host's search index and link graph follow the others):
:meth:`S3Storage.version` is ``<newest change id>.<number of changes>`` of the log, one HEAD of
``head`` when nothing changed; :meth:`S3Storage.changed_since` names the paths of the entries
logged in between (every entry down to ``LOG_MARGIN`` before, when one landed late).

**History** comes from the log: :meth:`S3Storage.history` lists entries newest first (following a
page back across moves), :meth:`S3Storage.read_at` reads the blob a change left at a path.
Entries are immutable, so each process keeps those it has read, and lists the log again only
when ``head`` changed, and then only its newest part.
"""

from __future__ import annotations

import builtins
import json
import logging
import os
import re
import secrets
import socket
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, ClassVar

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

from hostcore import (
    ANY,
    Change,
    ConfigError,
    Conflict,
    Delete,
    NotFound,
    Operation,
    Put,
    Revision,
    Setting,
    Storage,
    Unavailable,
    ValidationError,
    blob_hash,
)

log = logging.getLogger(__name__)

INTERNAL = ".hostcore"  # the top-level folder of hostcore's own objects under the prefix
REPAIR_LOOK_EVERY = 1.0  # seconds between a reader's looks for unfinished changes, per process
# Listing the log stops at entries this much older than the newest one known: later listings find
# entries written meanwhile with a clock up to this far behind (another host's).
LOG_MARGIN = 300.0
_BLOB_ID = re.compile(r"[0-9a-f]{40}")

HEAD_EACH_UP_TO = 20  # last_changed asks for so few paths: one HEAD each instead of a listing
_PRECONDITION = {"PreconditionFailed", "412", "ConditionalRequestConflict", "409"}
_MISSING = {"NoSuchKey", "404", "NotFound"}
_REFUSED = {"AccessDenied", "403", "InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "NoSuchBucket"}


@dataclass(frozen=True)
class Head:
    """What a HEAD tells about an object: the blob id of its bytes and its ETag."""

    hash: str
    etag: str


class Found(str):
    """An ETag a step found in place: the path already held the step's new bytes (another
    writer's change of the same content, or a retried put of this one that had landed), so the
    step wrote nothing, and undoing a batch that lost a later race leaves it as it is: putting
    the old bytes back would undo another writer's acknowledged change."""


class S3Storage(Storage):
    """Objects in an S3-compatible bucket; the module docstring says what is atomic.

    Its settings (``PLUGIN_CONFIG.s3``) are declared in :attr:`settings`; credentials come from
    boto3's usual chain (``AWS_ACCESS_KEY_ID``/``AWS_SECRET_ACCESS_KEY``, ``~/.aws``, an
    instance role), or ``{"$env": NAME}`` in the config for the settings.
    """

    name = "s3"
    has_history = True
    settings: ClassVar[Mapping[str, Setting]] = {
        "bucket": Setting(str, None, "the bucket that holds the wiki (required; it must exist)"),
        "prefix": Setting(str, "", "key prefix of every object, e.g. \"wiki/\", so one bucket can hold several wikis"),
        "endpoint_url": Setting(str, None, "the server's URL for S3-compatible stores (MinIO, Ceph, R2, ...); AWS when absent"),
        "region": Setting(str, None, "the bucket's region; from the AWS config when absent"),
        "repair_after": Setting(
            float, 30.0, "seconds after which a change left unfinished by a writer on another host is completed or rolled back"
        ),
    }

    def __init__(self, root: Path, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(root, config)
        bucket = self.config["bucket"]
        if not bucket:
            raise ConfigError(
                "PLUGIN_CONFIG.s3.bucket is not set; name the bucket that holds the wiki", field="PLUGIN_CONFIG.s3.bucket"
            )
        self.bucket: str = bucket
        prefix = self.config["prefix"].strip("/")
        self.prefix = f"{prefix}/" if prefix else ""
        self.repair_after = float(self.config["repair_after"])
        self._pid: int | None = None
        self._client: Any = None
        self._etag_hashes: dict[str, str] = {}  # an ETag names one content, so its blob id never changes
        self._entries: dict[str, dict[str, Any]] = {}  # log entries read so far; they never change
        self._ids: builtins.list[str] = []  # the log's ids listed so far, newest first
        self._id_set: set[str] = set()
        self._log_head = ""  # the ETag of .hostcore/head when the log was last listed
        self._looked = 0.0
        self._writer = {"host": socket.gethostname(), "pid": os.getpid()}
        self._lock = threading.Lock()
        self._abandoned: set[str] = set()  # records of changes this process gave up halfway
        self._unconditional_deletes = False  # the server refuses DeleteObject with If-Match
        try:
            self._s3().head_bucket(Bucket=self.bucket)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                raise ConfigError(
                    f"bucket {self.bucket!r} does not exist at {self.config['endpoint_url'] or 'AWS'}; create it, or "
                    "name an existing one in PLUGIN_CONFIG.s3.bucket",
                    field="PLUGIN_CONFIG.s3.bucket",
                ) from None
            raise ConfigError(f"bucket {self.bucket!r} cannot be used ({exc}); check the credentials and the bucket policy") from None
        except BotoCoreError as exc:
            raise ConfigError(f"S3 at {self.config['endpoint_url'] or 'AWS'} cannot be reached ({exc}); check endpoint_url, region and credentials", field="PLUGIN_CONFIG.s3.endpoint_url") from None

    # --- the client ------------------------------------------------------------------------

    def _s3(self) -> Any:
        """This process's client (boto3 clients are thread-safe, but not to be shared over fork)."""
        if self._pid != os.getpid():
            self._client = boto3.client(
                "s3",
                endpoint_url=self.config["endpoint_url"],
                region_name=self.config["region"],
                config=Config(retries={"max_attempts": 4, "mode": "standard"}, connect_timeout=5, read_timeout=30),
            )
            self._pid = os.getpid()
            self._writer = {"host": socket.gethostname(), "pid": self._pid}
        return self._client

    def _call(self, method: str, **kwargs: Any) -> Any:
        """One S3 request (boto3 retries throttling and server errors). An unreachable or failing
        server is Unavailable, and so is a refusal (credentials, policy); other ClientErrors (412,
        404) pass to the caller."""
        try:
            return getattr(self._s3(), method)(Bucket=self.bucket, **kwargs)
        except BotoCoreError as exc:
            raise _unreachable(exc) from exc
        except ClientError as exc:
            status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
            if _code(exc) in _REFUSED:
                raise Unavailable(f"S3 refused the request ({_code(exc)}); check the credentials and the bucket policy") from exc
            if status >= 500 and _code(exc) != "NotImplemented":
                raise Unavailable(f"the S3 storage failed ({_code(exc)}); try again") from exc
            raise

    def _key(self, path: str) -> str:
        return self.prefix + path

    def _page_key(self, path: str) -> str:
        """The key of a stored path (checked by the seam); ValidationError for one in hostcore's folder."""
        if path.split("/", 1)[0] == INTERNAL:
            raise ValidationError(f"{path!r} is inside {INTERNAL}/, which the s3 storage keeps for itself", field="path")
        return self._key(path)

    # --- reading ---------------------------------------------------------------------------

    def _read(self, path: str) -> bytes:
        return self._read_with_hash(path)[0]

    def _read_with_hash(self, path: str) -> tuple[bytes, str]:
        key = self._readable_key(path)
        self._look_for_unfinished()
        data, etag = self._get(key)
        digest = blob_hash(data)
        self._etag_hashes[etag] = digest
        return data, digest

    def _readable_key(self, path: str) -> str:
        try:
            return self._page_key(path)
        except ValidationError:
            if path.split("/", 1)[0] == INTERNAL:
                raise NotFound(f"{path} does not exist") from None
            raise

    def _get(self, key: str) -> tuple[bytes, str]:
        """The bytes and ETag of ``key``. Raises NotFound."""
        try:
            answer = self._call("get_object", Key=key)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                raise NotFound(f"{key.removeprefix(self.prefix)} does not exist") from None
            raise
        try:
            return answer["Body"].read(), answer["ETag"]
        except (BotoCoreError, OSError) as exc:  # the answer was cut after its headers
            raise _unreachable(exc) from exc

    def _head(self, path: str) -> Head | None:
        """The blob id and ETag of the object at ``path``, None when absent."""
        key = self._key(path)
        try:
            answer = self._call("head_object", Key=key)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return None
            raise
        etag = answer["ETag"]
        digest = answer.get("Metadata", {}).get("hash") or self._etag_hashes.get(etag)
        if digest is None:  # written from outside hostcore: no hash recorded
            try:
                data, etag = self._get(key)
            except NotFound:
                return None
            digest = blob_hash(data)
        self._etag_hashes[etag] = digest
        return Head(digest, etag)

    def _hash(self, path: str) -> str | None:
        try:
            self._readable_key(path)
        except NotFound:
            return None
        self._look_for_unfinished()
        head = self._head(path)
        return head.hash if head else None

    def _listing(self, prefix: str, delimiter: str = "", first: int = 1000) -> Iterator[dict[str, Any]]:
        """Every page of a ListObjectsV2 answer for ``prefix`` (a key prefix); the first page
        holds at most ``first`` keys, the others 1000."""
        kwargs: dict[str, Any] = {"Prefix": prefix, "MaxKeys": first}
        if delimiter:
            kwargs["Delimiter"] = delimiter
        while True:
            answer = self._call("list_objects_v2", **kwargs)
            yield answer
            if not answer.get("IsTruncated"):
                return
            kwargs["ContinuationToken"] = answer["NextContinuationToken"]
            kwargs["MaxKeys"] = 1000

    def _objects(self, prefix: str) -> Iterator[tuple[str, dict[str, Any]]]:
        """(path, listing item: ETag, LastModified, ...) of every stored file under the folder
        ``prefix`` ("" for all)."""
        if prefix and prefix.split("/", 1)[0] == INTERNAL:
            return
        if not prefix:  # the top level, then each folder but hostcore's own (its log and blobs grow with history)
            folders = []
            for answer in self._listing(self.prefix, delimiter="/"):
                for item in answer.get("Contents", ()):
                    yield item["Key"][len(self.prefix) :], item
                folders += [p["Prefix"][len(self.prefix) :].rstrip("/") for p in answer.get("CommonPrefixes", ())]
            for folder in folders:
                if folder != INTERNAL:
                    yield from self._objects(folder)
            return
        start = self._key(prefix + "/")
        for answer in self._listing(start):
            for item in answer.get("Contents", ()):
                yield item["Key"][len(self.prefix) :], item

    def _list(self, prefix: str) -> builtins.list[str]:
        self._look_for_unfinished()
        return sorted(path for path, _ in self._objects(prefix))

    def _hashes(self, prefix: str) -> dict[str, str]:
        """Path -> blob id, from one listing; an ETag not seen before costs one HEAD."""
        self._look_for_unfinished()
        out = {}
        for path, item in self._objects(prefix):
            digest = self._etag_hashes.get(item["ETag"])
            if digest is None:
                head = self._head(path)
                if head is None:
                    continue
                digest = head.hash
            out[path] = digest
        return dict(sorted(out.items()))

    def _folders(self, prefix: str) -> builtins.list[str]:
        if prefix and prefix.split("/", 1)[0] == INTERNAL:
            return []
        start = self._key(prefix + "/") if prefix else self.prefix
        found = set()
        for answer in self._listing(start, delimiter="/"):
            for item in answer.get("CommonPrefixes", ()):
                found.add(item["Prefix"][len(start) :].rstrip("/"))
        found.discard(INTERNAL if not prefix else "")
        return sorted(found)

    # --- writing ---------------------------------------------------------------------------

    def _apply(self, ops: Sequence[Operation], change: Change) -> dict[str, str | None]:
        """See :meth:`Storage.apply` and the module docstring for how a batch stays whole.

        Also raises ValidationError when a file would replace a folder (or a folder a file), and
        Unavailable when S3 cannot be reached (a change then ends applied whole or not at all,
        repaired by the next writer when it was cut halfway).
        """
        for op in ops:
            self._page_key(op.path)
        self._repair_unfinished()
        current = {op.path: self._head(op.path) for op in ops}
        for op in ops:
            self._check(op, current[op.path])
        result: dict[str, str | None] = {op.path: blob_hash(op.data) if isinstance(op, Put) else None for op in ops}
        steps: builtins.list[dict[str, Any]] = [
            {"path": op.path, "old": head.hash if head else None, "new": result[op.path]}
            for op in ops
            if (head := current[op.path]) is None or head.hash != result[op.path]
        ]
        if not steps:
            return result
        data = {op.path: op.data for op in ops if isinstance(op, Put)}
        for step in steps:
            if step["new"] is not None:
                self._store_blob(step["new"], data[step["path"]])
            if step["old"] is not None and len(steps) > 1:
                self._keep_old(step["path"], current[step["path"]])
        entry: dict[str, Any] = {
            "id": _new_id(),
            "author": change.author,
            "email": change.email,
            "message": change.message,
            "time": change.time.timestamp() if change.time else time.time(),
            "moves": [list(move) for move in change.moves],
            "ops": steps,
            **({"replayed": True} if change.time else {}),  # an import's: keeps the time it was made at
        }
        record = self._internal("pending", entry["id"])
        try:
            self._put_json(record, {**entry, "state": "pending", "writer": self._writer})
            self._run(entry, {path: head.etag for path, head in current.items() if head is not None}, data, record)
        except Conflict:
            raise
        except Exception as exc:  # cut halfway (S3 unreachable; the record may have landed even if its put failed)
            self._abandoned.add(record)  # so this process's next look repairs it
            if isinstance(exc, Unavailable):
                raise Unavailable(f"{exc}. The change may have been cut halfway: it is then completed or undone as "
                                  "soon as S3 answers, so read the page again before you retry") from exc  # fmt: skip
            raise
        return result

    def _check(self, op: Operation, head: Head | None) -> None:
        current = head.hash if head else None
        if op.expect is ANY:
            if isinstance(op, Delete) and current is None:
                raise NotFound(f"{op.path} does not exist")
        elif current != op.expect:
            raise Conflict(f"{op.path} has changed since it was read; read it again and retry", path=op.path, hash=current or "")
        if isinstance(op, Put) and current is None:
            self._check_no_clash(op.path)

    def _check_no_clash(self, path: str) -> None:
        """ValidationError when a new file at ``path`` would sit on a file or above files."""
        parts = path.split("/")
        for depth in range(1, len(parts)):
            folder = "/".join(parts[:depth])
            if self._head(folder) is not None:
                raise ValidationError(f"{folder!r} is a file, so {path!r} cannot be created inside it", field="path")
        answer = self._call("list_objects_v2", Prefix=self._key(path + "/"), MaxKeys=1)
        if answer.get("KeyCount", 0):
            raise ValidationError(f"{path!r} is a folder; a file cannot replace it", field="path")

    def _run(self, entry: dict[str, Any], etags: dict[str, str], data: dict[str, bytes], record: str) -> None:
        """Apply the steps in order; on a lost race undo those applied and raise Conflict."""
        applied: builtins.list[tuple[dict[str, Any], str | None]] = []
        for step in entry["ops"]:
            try:
                applied.append((step, self._step(step, etags.get(step["path"]), data.get(step["path"]))))
            except Conflict:
                if applied:
                    self._put_json(record, {**entry, "state": "abort", "writer": self._writer})
                    for done, etag in reversed(applied):
                        if not isinstance(etag, Found):  # found in place: another writer's, not undone
                            self._undo(done, etag)
                self._call("delete_object", Key=record)
                raise
        self._finish(entry, record)

    def _step(self, step: dict[str, Any], etag: str | None, data: bytes | None) -> str | None:
        """Move ``step["path"]`` from its old hash (ETag ``etag``) to its new one; the new ETag
        (a :class:`Found` one when the path already held the new bytes and nothing was written).

        Raises Conflict when another writer changed the path first.
        """
        path, new = step["path"], step["new"]
        try:
            if new is None:
                self._delete(path, etag)
                return None
            body = data if data is not None else self._get(self._internal("objects", new))[0]
            condition = {"IfMatch": etag} if etag else {"IfNoneMatch": "*"}
            answer = self._call("put_object", Key=self._key(path), Body=body, Metadata={"hash": new}, **condition)
            self._etag_hashes[answer["ETag"]] = new
            return str(answer["ETag"])
        except ClientError as exc:
            if _code(exc) not in _PRECONDITION and not (etag and _code(exc) in _MISSING):
                raise
        head = self._head(path)
        if head is not None and head.hash == new:  # a retry of a put that had landed, or the same bytes
            return Found(head.etag)
        raise Conflict(f"{path} was changed by another writer meanwhile; read it again and retry", path=path, hash=head.hash if head else "")

    def _delete(self, path: str, etag: str | None) -> None:
        """Delete with ``If-Match: etag``; where the server refuses conditional deletes (S3
        buckets before they had them), check the ETag with a HEAD just before deleting instead."""
        if etag and not self._unconditional_deletes:
            try:
                self._call("delete_object", Key=self._key(path), IfMatch=etag)
                return
            except ClientError as exc:
                if _code(exc) != "NotImplemented":
                    raise
                log.warning("this S3 server refuses conditional deletes; deletes check the ETag just before instead")
                self._unconditional_deletes = True
        head = self._head(path)
        if etag and (head is None or head.etag != etag):
            raise Conflict(f"{path} was changed by another writer meanwhile; read it again and retry", path=path, hash=head.hash if head else "")
        self._call("delete_object", Key=self._key(path))

    def _undo(self, step: dict[str, Any], etag: str | None) -> None:
        """Put back the old content of a step that landed, unless someone changed it since."""
        try:
            self._step({"path": step["path"], "old": step["new"], "new": step["old"]}, etag, None)
        except Conflict:
            log.warning("%s changed after a change that is being undone wrote it; left as it is", step["path"])

    def _finish(self, entry: dict[str, Any], record: str) -> None:
        """Log the change under a new id (so the log lists changes in the order they landed,
        a repaired one too), then delete its record."""
        entry = {**entry, "id": _new_id(), "time": entry["time"] if entry.get("replayed") else time.time()}
        self._put_json(self._internal("log", entry["id"]), entry)
        self._entries[entry["id"]] = entry
        self._call("put_object", Key=self._key(f"{INTERNAL}/head"), Body=entry["id"].encode())
        self._call("delete_object", Key=record)

    def _store_blob(self, digest: str, data: bytes) -> None:
        try:
            self._call("put_object", Key=self._internal("objects", digest), Body=data, IfNoneMatch="*")
        except ClientError as exc:
            if _code(exc) not in _PRECONDITION:
                raise

    def _keep_old(self, path: str, head: Head | None) -> None:
        """Copy the current object to ``objects/`` so a rollback can put it back."""
        if head is None:
            return
        try:
            self._call("head_object", Key=self._internal("objects", head.hash))
            return
        except ClientError as exc:
            if _code(exc) not in _MISSING:
                raise
        try:
            self._call(
                "copy_object", Key=self._internal("objects", head.hash), CopySource={"Bucket": self.bucket, "Key": self._key(path)},
                CopySourceIfMatch=head.etag,
            )  # fmt: skip
        except ClientError as exc:
            if _code(exc) in _PRECONDITION | _MISSING:
                raise Conflict(f"{path} has changed since it was read; read it again and retry", path=path, hash="") from None
            raise

    def _internal(self, kind: str, name: str) -> str:
        suffix = ".json" if kind in ("pending", "log") else ""
        return self._key(f"{INTERNAL}/{kind}/{name}{suffix}")

    def _put_json(self, key: str, value: dict[str, Any]) -> None:
        self._call("put_object", Key=key, Body=json.dumps(value, sort_keys=True).encode(), ContentType="application/json")

    # --- repairing changes cut halfway -----------------------------------------------------

    def _look_for_unfinished(self) -> None:
        """For readers: repair cut changes, at most once a second per process."""
        now = time.monotonic()
        if now - self._looked >= REPAIR_LOOK_EVERY:
            self._looked = now
            self._repair_unfinished()

    def _repair_unfinished(self) -> None:
        """Complete or roll back every change record whose writer is gone."""
        for answer in self._listing(self._key(f"{INTERNAL}/pending/")):
            for item in answer.get("Contents", ()):
                try:
                    record = json.loads(self._get(item["Key"])[0])
                except NotFound:
                    continue  # finished meanwhile
                if item["Key"] in self._abandoned or self._writer_gone(record):
                    with self._lock:
                        self._repair(record, item["Key"])

    def _writer_gone(self, record: dict[str, Any]) -> bool:
        writer = record.get("writer", {})
        if time.time() - float(record.get("time", 0)) > self.repair_after:
            return True
        if writer.get("host") != self._writer["host"] or writer.get("pid") == os.getpid():
            return False
        try:
            os.kill(int(writer["pid"]), 0)
        except ProcessLookupError:
            return True
        except (OSError, ValueError, KeyError):
            return False
        return False

    def _repair(self, record: dict[str, Any], key: str) -> None:
        """Complete a cut change when every path holds its old or new hash; else roll it back."""
        heads = {step["path"]: self._head(step["path"]) for step in record["ops"]}
        now = {path: head.hash if head else None for path, head in heads.items()}
        whole = record.get("state") == "pending" and all(now[s["path"]] in (s["old"], s["new"]) for s in record["ops"])
        entry = {k: v for k, v in record.items() if k not in ("state", "writer")}
        for step in record["ops"]:
            path, head = step["path"], heads[step["path"]]
            etag = head.etag if head else None
            try:
                if whole and now[path] == step["old"]:
                    self._step(step, etag, None)
                elif not whole and now[path] == step["new"] and step["old"] != step["new"]:
                    self._step({"path": path, "old": step["new"], "new": step["old"]}, etag, None)
            except (Conflict, NotFound):
                log.warning("%s changed while change %s was being repaired; left as it is", path, record["id"])
        log.warning("change %s was cut halfway by its writer; %s", record["id"], "completed" if whole else "rolled back")
        if whole:
            self._finish(entry, key)
        else:
            self._call("delete_object", Key=key)
        self._abandoned.discard(key)

    # --- versions: how each host's indexes catch up with changes made through other hosts ---

    def version(self) -> str:
        """``<newest change id>.<number of changes>`` of the change log: new after every change,
        whichever host made it, and one HEAD of ``head`` when nothing was logged since this
        process last looked. The count makes a late entry (one whose id is older than the newest
        one known: its writer's clock or upload was slower) a new version too."""
        ids = self._log_ids()
        return f"{ids[0] if ids else ''}.{len(ids)}"

    def changed_since(self, version: str, until: str) -> builtins.list[str] | None:
        """The paths of the changes logged between two versions, or None for a version this
        process cannot place (the indexes then compare every page).

        The changes are the log entries newer than ``version``'s newest one, up to ``until``'s;
        when their number is not the difference of the two counts, some entry landed late, so
        every entry down to ``LOG_MARGIN`` seconds before ``version``'s newest is taken (a few
        pages indexed again, never one missed)."""
        since, to = _parse_version(version), _parse_version(until)
        if since is None or to is None or to[1] < since[1]:
            return None
        with self._lock:
            ids = self._ids  # ``until`` is usually what this process just listed: no HEAD then
        if to != (ids[0] if ids else "", len(ids)):
            ids = self._log_ids()
        place = {change_id: i for i, change_id in enumerate(ids)}
        if any(newest and newest not in place for newest in (since[0], to[0])):
            return None
        start = place[to[0]] if to[0] else len(ids)
        end = place[since[0]] if since[0] else len(ids)
        fresh = ids[start:end]
        if len(fresh) != to[1] - since[1] and since[0]:
            horizon = _id_time(since[0]) - LOG_MARGIN
            fresh = [change_id for change_id in ids[start:] if _id_time(change_id) >= horizon]
        return sorted({step["path"] for change_id in fresh for step in self._entry(change_id)["ops"]})

    # --- history ---------------------------------------------------------------------------

    def _log_ids(self) -> builtins.list[str]:
        """Every change id in the log, newest first (ids sort that way).

        Every change rewrites ``.hostcore/head`` after its log entry, so while that object's ETag
        stays the one seen before the last listing, nothing was logged since: one HEAD. Otherwise
        lists only the log's newest part, down to ``LOG_MARGIN`` seconds before the newest entry
        this process knows; the older ones it listed before never change.
        """
        start = self._key(f"{INTERNAL}/log/")
        try:
            head = str(self._call("head_object", Key=self._key(f"{INTERNAL}/head"))["ETag"])
        except ClientError as exc:
            if _code(exc) not in _MISSING:
                raise
            head = ""
        with self._lock:
            known, seen = self._ids, self._id_set
            if head and head == self._log_head:
                return known
        horizon = _id_time(known[0]) - LOG_MARGIN if known else None
        fresh = []
        for answer in self._listing(start, first=50 if known else 1000):
            ids = [item["Key"][len(start) : -len(".json")] for item in answer.get("Contents", ())]
            fresh += [change_id for change_id in ids if change_id not in seen]
            if horizon is not None and ids and _id_time(ids[-1]) < horizon:
                break
        with self._lock:
            self._log_head = head
            if not fresh:
                return known
            self._id_set = self._id_set | set(fresh)
            self._ids = sorted(self._id_set)
            return self._ids

    def _entry(self, change_id: str) -> dict[str, Any]:
        entry = self._entries.get(change_id)
        if entry is None:
            entry = json.loads(self._get(self._internal("log", change_id))[0])
            self._entries[change_id] = entry
        return entry

    def _entries_touching(self, path: str | None, ids: builtins.list[str]) -> Iterator[tuple[dict[str, Any], str | None]]:
        """(entry, the path's name in it) of the entries touching ``path``, following moves back."""
        for change_id in ids:
            entry = self._entry(change_id)
            if path is None:
                yield entry, None
                continue
            if any(step["path"] == path for step in entry["ops"]):
                yield entry, path
            for old, new in entry.get("moves", ()):
                if new == path:
                    path = old
                    break

    def _history(self, path: str | None, *, offset: int, limit: int) -> builtins.list[Revision]:
        """Changes newest first (only those touching ``path`` when given, following moves back)."""
        self._look_for_unfinished()
        found: builtins.list[Revision] = []
        for entry, _name in self._entries_touching(path, self._log_ids()):
            if len(found) == offset + limit:
                break
            found.append(_revision(entry))
        return found[offset:]

    def _last_changed(self, paths: Sequence[str]) -> dict[str, datetime]:
        """Path -> when its object was last written (S3's LastModified): a HEAD each for a few
        paths (a catch-up after a change), else from one listing of the pages' folders."""
        wanted = set(paths)
        if len(wanted) <= HEAD_EACH_UP_TO:
            found = {}
            for path in sorted(wanted):
                try:
                    found[path] = self._call("head_object", Key=self._page_key(path))["LastModified"]
                except ClientError as exc:
                    if _code(exc) not in _MISSING:
                        raise
            return found
        folders = sorted({path.split("/", 1)[0] for path in wanted if "/" in path})
        listed = self._objects("") if any("/" not in path for path in wanted) else (
            item for folder in folders for item in self._objects(folder))  # fmt: skip
        return {path: item["LastModified"] for path, item in listed if path in wanted}

    def _read_at(self, path: str, revision: str) -> bytes:
        """The bytes ``path`` held after change ``revision`` (at the path it had then, when it
        moved since). Raises NotFound when the revision does not exist or left no file there."""
        ids = self._log_ids()
        if revision not in ids:
            raise NotFound(f"revision {revision!r} does not exist", field="revision")
        at = ids.index(revision)
        for change_id in ids[:at]:
            for old, new in self._entry(change_id).get("moves", ()):
                if new == path:
                    path = old
        for entry, name in self._entries_touching(path, ids[at:]):
            digest = next(step["new"] for step in entry["ops"] if step["path"] == name)
            if digest is None:
                break
            return self._get(self._internal("objects", digest))[0]
        raise NotFound(f"{path} does not exist at revision {revision}")

    def _list_at(self, prefix: str, revision: str) -> builtins.list[str]:
        """The files under the folder ``prefix`` as of change ``revision``, from the change log:
        each path's newest logged change at or before it says whether it was there. Raises
        NotFound for an unknown revision."""
        ids = self._log_ids()
        if revision not in ids:
            raise NotFound(f"revision {revision!r} does not exist", field="revision")
        folder = prefix.rstrip("/") + "/"
        present: dict[str, bool] = {}
        for change_id in ids[ids.index(revision) :]:
            for step in self._entry(change_id)["ops"]:
                if step["path"].startswith(folder):
                    present.setdefault(step["path"], step["new"] is not None)
        return sorted(path for path, there in present.items() if there)

    def changes_in(self, revision: str) -> tuple[Change, dict[str, str | None]]:
        """The log entry of change ``revision``: its Change and every path with its new hash.
        Raises NotFound for an unknown revision."""
        if revision not in self._id_set and revision not in self._log_ids():
            raise NotFound(f"revision {revision!r} does not exist", field="revision")
        entry = self._entry(revision)
        moves = tuple((old, new) for old, new in entry.get("moves", ()))
        change = Change(entry["author"], entry["message"], entry.get("email", ""), moves, datetime.fromtimestamp(entry["time"], UTC))
        return change, {step["path"]: step["new"] for step in entry["ops"]}

    def read_blob(self, digest: str) -> bytes:
        """A stored version from ``.hostcore/objects/``. Raises NotFound."""
        if not _BLOB_ID.fullmatch(digest):
            raise NotFound(f"no stored version has the hash {digest!r}", field="hash")
        try:
            return self._get(self._internal("objects", digest))[0]
        except NotFound:
            raise NotFound(f"no stored version has the hash {digest!r}", field="hash") from None

    def close(self) -> None:
        if self._client is not None and self._pid == os.getpid():
            self._client.close()
        self._client, self._pid = None, None


def _unreachable(exc: Exception) -> Unavailable:
    """What a request (or the reading of its answer) that met no working S3 raises."""
    return Unavailable(f"the S3 storage cannot be reached ({exc}); try again")


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _new_id() -> str:
    """40 hex digits that sort newest first: the inverted time in microseconds, then random ones."""
    inverted = (1 << 56) - time.time_ns() // 1000
    return f"{inverted:014x}{secrets.token_hex(13)}"


def _id_time(change_id: str) -> float:
    """The time (seconds since the epoch) a change id was made at."""
    return ((1 << 56) - int(change_id[:14], 16)) / 1e6


def _parse_version(version: str) -> tuple[str, int] | None:
    """(newest change id, number of changes) of a :meth:`S3Storage.version`, None if it is none."""
    newest, dot, count = version.partition(".")
    if not dot or not count.isdigit() or (newest and len(newest) != 40):
        return None
    return newest, int(count)


def _revision(entry: dict[str, Any]) -> Revision:
    return Revision(
        id=entry["id"],
        author=entry["author"],
        time=datetime.fromtimestamp(entry["time"], UTC),
        message=entry["message"],
        paths=tuple(sorted(step["path"] for step in entry["ops"])),
    )
