"""Passages: attachments' text and pages cut into chunks, each found by its words and its meaning.

``passages.sqlite`` in the instance folder holds, for every attachment with text (and every page,
with an ``EMBEDDER``), its passages (about :data:`CHUNK_CHARS` characters, cut at paragraph or
sentence ends, with their offset in the text, so ``read_attachment`` can start there), an FTS5
keyword index over them, and one vector per passage from the ``EMBEDDER``. A search ranks passages
by keyword (BM25; every word of the query) and by meaning (cosine of the vectors, brute force with
numpy over the caller's namespaces; only passages at least the embedder's ``relevant`` similarity
from the query, so a query unrelated to every document finds nothing), and fuses the two rankings
by reciprocal rank fusion (:data:`RRF_K`): a passage ranked high by either comes first, one ranked
high by both before it. Without an embedder the keyword ranking alone answers. A document storage
no longer holds is never answered, even before the index drops it.

It is derived state, kept off the request path: a background thread of each process
(:meth:`PassageIndex.kick`, after every page event, upload and search) compares storage's files
with what is indexed and indexes what differs in bounded steps (:data:`STEP_DOCUMENTS` documents
a step, one transaction each, under ``passages.lock`` so one process indexes at a time); searches
answer from what is indexed meanwhile and say how many documents are pending. Under a stream of
changes a round of indexing starts at most every :data:`ROUND_SECONDS`, so a page saved again and
again meanwhile is embedded once per round, not once per save (a change after a quiet spell is
taken at once). Without an embedder only attachments are indexed, and only an upload or a search
wakes the thread (a page event need not: nothing of a page is indexed, and a search leaves out what
storage no longer holds). A damaged file is set aside and a deleted one recreated; either way it
fills again from storage.
"""

from __future__ import annotations

import fcntl
import html
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from hostcore.domain.attachments import sniff, split_attachment_path
from hostcore.domain.pages import Page, slug_from_path
from hostcore.errors import DiskFull, NotFound, Unavailable
from hostcore.seams.derived import connect, damaged, file_id, recover_sqlite, wal
from hostcore.seams.embed import Embedder, Vectors
from hostcore.seams.hookspecs import hookimpl
from hostcore.seams.storage import disk_full

if TYPE_CHECKING:
    from hostcore.host.host import Host

log = logging.getLogger("hostcore.passages")

Kind = Literal["page", "attachment"]
Mode = Literal["keyword", "meaning"]
MODES: tuple[Mode, ...] = ("keyword", "meaning")
CHUNK_CHARS = 600  # a static embedding averages its words: short passages keep their meaning sharp
MAX_CHUNKS = 2000  # per document (about 1.2 million characters); the rest of a longer text is not indexed
STEP_DOCUMENTS = 16  # documents indexed in one bounded step
ROUND_SECONDS = 2.0  # under a stream of changes, a round of indexing starts at most this often
CANDIDATES = 100  # passages taken from each ranking into the fusion
MAX_FOLLOWED = 1000  # changed paths looked up one by one; beyond, storage is listed whole
RRF_K = 60  # reciprocal rank fusion: score = sum of 1 / (RRF_K + rank)
MAX_QUERY_WORDS = 32
EXCERPT_CHARS = 300

# A question's function words match every passage; left out, the keyword ranking is by subject.
STOP_WORDS = frozenset(
    "a an and are as at be been but by can do does for from had has have how i if in into is it its me my no not "
    "of on or our should so than that the their them then there these they this to was we were what when where "
    "which who why will with would you your".split()
)

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS docs (
    path TEXT PRIMARY KEY, hash TEXT NOT NULL, kind TEXT NOT NULL, slug TEXT NOT NULL, filename TEXT NOT NULL,
    namespace TEXT NOT NULL, title TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start INTEGER NOT NULL, text TEXT NOT NULL, vector BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks (path);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
INSERT OR IGNORE INTO meta (key, value) VALUES ('generation', '0');
"""


@dataclass(frozen=True)
class Passage:
    """One passage found: its document, where it starts in the document's text, its fused score."""

    kind: Kind
    slug: str
    filename: str
    title: str
    start: int
    text: str
    score: float


@dataclass(frozen=True)
class Near:
    """A document near a vector: its best passage's cosine similarity."""

    kind: Kind
    slug: str
    filename: str
    title: str
    similarity: float


def split_passages(text: str, size: int = CHUNK_CHARS) -> list[tuple[int, str]]:
    """(offset, passage) of ``text`` cut into pieces of at most ``size`` characters, at a blank
    line, else a sentence end, else a space in the second half of the window."""
    out: list[tuple[int, str]] = []
    start, n = 0, len(text)
    while start < n and len(out) < MAX_CHUNKS:
        while start < n and text[start].isspace():
            start += 1
        end = min(n, start + size)
        if end < n:
            low = start + size // 2
            for sep in ("\n\n", ". ", "\n", " "):
                cut = text.rfind(sep, low, end)
                if cut > start:
                    end = cut + len(sep)
                    break
        piece = text[start:end].strip()
        if piece:
            out.append((start, piece))
        start = end
    return out


def query_words(query: str) -> list[str]:
    """The words of a free-text query that carry its subject (letters and digits, English function
    words left out unless there is nothing else), at most MAX_QUERY_WORDS, once each."""
    words = list(dict.fromkeys(re.findall(r"\w+", query.casefold())))
    return ([w for w in words if w not in STOP_WORDS] or words)[:MAX_QUERY_WORDS]


def excerpt(text: str, words: list[str], size: int = EXCERPT_CHARS) -> str:
    """Escaped HTML of about ``size`` characters of ``text`` around the first of ``words`` (its start
    when none occurs), with ``<mark>`` around each occurrence of a word."""
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b", re.IGNORECASE) if words else None
    first = pattern.search(text) if pattern else None
    start = 0
    if first is not None and first.start() > size // 3:
        start = text.rfind(" ", 0, first.start() - size // 3) + 1
    end = min(len(text), start + size)
    if end < len(text):
        end = max(text.rfind(" ", start, end), start + size // 2)
    piece = " ".join(text[start:end].split())
    parts, last = [], 0
    for m in pattern.finditer(piece) if pattern else ():
        parts += [html.escape(piece[last : m.start()]), "<mark>", html.escape(m.group()), "</mark>"]
        last = m.end()
    parts.append(html.escape(piece[last:]))
    return ("…" if start else "") + "".join(parts) + ("…" if end < len(text) else "")


Document = tuple[str, Kind, str, str]  # (hash, kind, slug, filename)


def _document(path: str, pages: bool) -> tuple[Kind, str, str] | None:
    """(kind, slug, filename) of the document stored at ``path``, None when it is none (or a page, unless ``pages``)."""
    slug = slug_from_path(path)
    if slug is not None:
        return ("page", slug, "") if pages else None
    owner = split_attachment_path(path)
    return ("attachment", owner[0], owner[1]) if owner is not None else None


def listed_documents(host: Host, pages: bool) -> dict[str, Document]:
    """Storage path -> (hash, kind, slug, filename) of every visible attachment (and page, when ``pages``)."""
    out: dict[str, Document] = {}
    for path, digest in host.storage.hashes().items():
        found = _document(path, pages)
        if found is not None:
            out[path] = (digest, *found)
    return out


class _Matrix:
    """Every passage vector of one generation of the file, for brute-force nearest neighbours."""

    def __init__(self, rows: list[tuple[int, str, str, str, bytes]], dimensions: int) -> None:
        self.ids = np.array([r[0] for r in rows], dtype=np.int64)
        self.kinds = np.array([r[1] for r in rows], dtype=object)
        self.namespaces = np.array([r[2] for r in rows], dtype=object)
        self.paths = np.array([r[3] for r in rows], dtype=object)
        self.vectors = (
            np.frombuffer(b"".join(r[4] for r in rows), dtype=np.float32).reshape(len(rows), dimensions)
            if rows
            else np.zeros((0, dimensions), dtype=np.float32)
        )

    def mask(self, kind: Kind, namespaces: Collection[str] | None) -> np.ndarray:
        keep = self.kinds == kind
        if namespaces is not None:
            keep &= np.isin(self.namespaces, list(namespaces))
        return keep


class PassageIndex:
    """The passages of pages and attachments, their keyword index and vectors (``path``, SQLite)."""

    def __init__(self, host: Host, path: Path, embedder: Embedder | None) -> None:
        self.host = host
        self.path = Path(path)
        self.embedder = embedder  # None: keyword only
        self.signature = f"{embedder.name}/{embedder.dimensions}" if embedder is not None else "keyword"
        self._local = threading.local()
        self._lock = threading.Condition()
        self._thread: threading.Thread | None = None
        self._again = False
        self._hurry = False  # wait() or close(): take the next round now
        self._closed = False
        self._load = False  # prepare(): the background thread loads the embedder's model first
        self.round_seconds = ROUND_SECONDS
        self._plan: tuple[tuple[object, ...], tuple[list[str], list[str], dict[str, Document]]] | None = None
        self._stored: tuple[str, dict[str, Document]] | None = None  # (storage version, its documents)
        self._matrix: tuple[tuple[tuple[int, int] | None, str], _Matrix] | None = None

    # --- the file ------------------------------------------------------------------------

    def _db(self) -> sqlite3.Connection:
        """This thread's connection, reopened when the file was replaced (set aside, deleted)."""
        current = file_id(self.path)
        db, opened = getattr(self._local, "db", None), getattr(self._local, "opened", None)
        if db is None or current is None or opened != current:
            if db is not None:
                db.close()
            existed = current is not None
            if not existed and disk_full(self.path.parent):  # an empty file SQLite could not even switch to WAL
                raise DiskFull("the passage index is made once there is space on the wiki's disk")
            db, opened = connect(self.path, timeout=30, isolation_level=None, check_same_thread=False)
            if opened is not None or not existed:  # writable, not a full disk's read-only snapshot
                wal(db)
                db.execute("PRAGMA synchronous=NORMAL")  # derived: what a power cut loses is indexed again
                db.executescript(_SCHEMA)
                opened = file_id(self.path)
            self._local.db, self._local.opened = db, opened
        return db

    @contextmanager
    def _guard(self) -> Iterator[sqlite3.Connection]:
        """This thread's connection; a damaged file met meanwhile is set aside, to refill from storage."""
        db = self._db()
        try:
            yield db
        except sqlite3.DatabaseError as exc:
            if db.in_transaction:
                db.execute("ROLLBACK")
            if not damaged(exc):
                raise
            recover_sqlite(self.path, "passage index", error=exc, opened=getattr(self._local, "opened", None))
            self.kick()
            raise Unavailable("the passage index was damaged and is being rebuilt from storage; try again in a minute") from exc

    def prepare(self, start: bool = True) -> None:
        """At start-up: set a damaged file aside; then (``start``) let the background thread
        load the embedder's model, forget vectors of another embedder and index, or do the
        second now. Never waits for another process's indexing, so a worker starts at once."""
        if self.path.exists():
            recover_sqlite(self.path, "passage index")
        if not start:
            with self._writing():
                self._forget_other_embedder()
        elif self.embedder is not None:  # keyword only: the first upload or search fills it
            self._load = True
            self.kick()

    def _forget_other_embedder(self) -> None:
        """Empty the index when its vectors come from another embedder (under ``_writing``)."""
        with self._guard() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'embedder'").fetchone()
            if row is None or row[0] != self.signature:
                if row is not None:
                    log.info("passage index: the embedder changed (%s -> %s); embedding everything again", row[0], self.signature)
                db.execute("BEGIN IMMEDIATE")
                db.execute("DELETE FROM chunks")
                db.execute("DELETE FROM docs")
                db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('embedder', ?)", (self.signature,))
                db.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
                db.execute("COMMIT")

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold ``passages.lock``: one process writes the index at a time."""
        fd = os.open(self.path.with_name("passages.lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    # --- keeping it current --------------------------------------------------------------

    def stored(self, version: str | None) -> dict[str, Document]:
        """The documents storage holds at ``version`` (its :meth:`~hostcore.Storage.version`, read
        by the caller before this): path -> (hash, kind, slug, filename). Followed from the last
        version asked along the paths changed since (cost follows the change), else listed whole;
        a storage without versions is listed every time."""
        storage, pages = self.host.storage, self.embedder is not None
        known = self._stored
        if version is not None and known is not None:
            if known[0] == version:
                return known[1]
            changed = storage.changed_since(known[0], version)
            if changed is not None and len(changed) <= MAX_FOLLOWED:
                documents = dict(known[1])
                for path in changed:
                    found = _document(path, pages)
                    digest = storage.hash(path) if found is not None else None
                    if found is None or digest is None:
                        documents.pop(path, None)
                    else:
                        documents[path] = (digest, *found)
                self._stored = (version, documents)
                return documents
        documents = listed_documents(self.host, pages)
        if version is not None:
            self._stored = (version, documents)
        return documents

    def _holds(self) -> Callable[[str], bool]:
        """Whether storage holds the document at a path now: what a search answers with must, even
        before the background thread drops what was deleted. Asked only about what would be
        answered, once a path: from the documents this process follows along the storage's
        versions when it does (cheap), else one look-up a path (never a listing of everything on
        a search's account)."""
        answers: dict[str, bool] = {}
        ask: list[Callable[[str], bool]] = []

        def holds(path: str) -> bool:
            if not ask:
                version = self.host.storage.version()
                if version is not None and self._stored is not None:
                    ask.append(self.stored(version).__contains__)
                else:
                    ask.append(self.host.storage.exists)
            if path not in answers:
                answers[path] = ask[0](path)
            return answers[path]

        return holds

    def plan(self) -> tuple[list[str], list[str], dict[str, Document]]:
        """(paths to index, paths to drop, what storage holds). Remembered while neither the
        storage's version nor the index changed (a search asks for it each time); a storage
        without versions is compared every time."""
        version = self.host.storage.version()  # before reading storage: a change meanwhile shows next time
        with self._guard() as db:
            key = (version, file_id(self.path), db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()[0])
            cached = self._plan
            if version is not None and cached is not None and cached[0] == key:
                return cached[1]
            indexed = dict(db.execute("SELECT path, hash FROM docs").fetchall())
        wanted = self.stored(version)
        todo = sorted(p for p, w in wanted.items() if indexed.get(p) != w[0])
        plan = (todo, sorted(set(indexed).difference(wanted)), wanted)
        self._plan = (key, plan)
        return plan

    def step(self, limit: int = STEP_DOCUMENTS) -> int:
        """Index up to ``limit`` documents that differ from storage (and drop those gone); returns
        how many still differ afterwards."""
        with self._writing():
            self._forget_other_embedder()  # one read; also marks a file made anew since
            todo, gone, wanted = self.plan()
            with self._guard() as db:
                if gone:
                    db.execute("BEGIN IMMEDIATE")
                    for path in gone:
                        db.execute("DELETE FROM chunks WHERE path = ?", (path,))
                        db.execute("DELETE FROM docs WHERE path = ?", (path,))
                    db.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
                    db.execute("COMMIT")
            done = 0
            for path in todo[:limit]:
                if self._closed:
                    break
                self._index(path, *wanted[path])
                done += 1
            return len(todo) - done

    def _text(self, path: str, kind: Kind, slug: str, filename: str) -> tuple[str, str, str, str]:
        """(title, text, status, reason) of the document at ``path``."""
        if kind == "page":
            page = Page.from_bytes(slug, self.host.storage.read(path))
            return page.title or slug, page.body, "extracted", ""
        data, digest = self.host.storage.read_with_hash(path)
        got = self.host.extraction.text(data, digest, sniff(data, filename))
        return filename, got.text, got.status, got.reason

    def _index(self, path: str, digest: str, kind: Kind, slug: str, filename: str) -> None:
        try:
            title, text, status, reason = self._text(path, kind, slug, filename)
        except NotFound:  # gone since the plan: the next step drops it
            return
        pieces = split_passages(text) if status == "extracted" else []
        if kind == "page":  # the title is part of what a page means
            pieces = [(start, f"{title}\n{piece}") for start, piece in pieces] or [(0, title)]
        vectors = self.embedder.embed([piece for _, piece in pieces]) if pieces and self.embedder is not None else None
        with self._guard() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM chunks WHERE path = ?", (path,))
            db.executemany(
                "INSERT INTO chunks (path, start, text, vector) VALUES (?, ?, ?, ?)",
                [
                    (path, start, piece, np.asarray(vectors[i], dtype=np.float32).tobytes() if vectors is not None else b"")
                    for i, (start, piece) in enumerate(pieces)
                ],
            )
            db.execute(
                "INSERT OR REPLACE INTO docs (path, hash, kind, slug, filename, namespace, title, status, reason) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (path, digest, kind, slug, filename, slug.split("/", 1)[0], title, status, reason),
            )
            db.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
            db.execute("COMMIT")

    def catch_up(self, progress: Callable[[int], None] | None = None) -> int:
        """Index everything that differs from storage now, in steps; returns how many documents."""
        done = 0
        while True:
            before = len(self.plan()[0])
            left = self.step()
            if progress:
                progress(before - left)
            done += before - left
            if not left:
                return done

    def clear(self) -> None:
        """Empty the index (``hostcore reindex``), keeping the file."""
        with self._writing(), self._guard() as db:
            db.execute("BEGIN IMMEDIATE")
            db.execute("DELETE FROM chunks")
            db.execute("DELETE FROM docs")
            db.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
            db.execute("COMMIT")

    def kick(self) -> None:
        """Make sure this process's background thread looks for work (it stops when there is none)."""
        with self._lock:
            self._again = True
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(target=self._run, name="passage index", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                if not self._again or self._closed:
                    self._thread, self._hurry = None, False
                    self._close_connection()
                    return
                self._again = False
            started = time.monotonic()
            try:
                if self._load and self.embedder is not None:  # once: the first save must not wait for it (see Embedder.load)
                    self._load = False
                    self.embedder.load()
                while not self._closed and self.step():
                    pass
            except DiskFull as exc:  # the next change or search, once space is freed, tries again
                log.warning("passage index: %s", exc)
            except Unavailable as exc:
                log.warning("passage index: %s", exc)
                self._again = True
            except Exception:
                log.exception("passage index: indexing failed; it is tried again at the next change or search")
            with self._lock:  # the next round, if kicked meanwhile, once round_seconds have passed
                while not (self._closed or self._hurry) and (left := started + self.round_seconds - time.monotonic()) > 0:
                    self._lock.wait(left)

    def wait(self) -> None:
        """Wait until this process's background indexing has nothing left to do (a round due
        later is taken now)."""
        while True:
            with self._lock:
                thread = self._thread
                self._hurry = thread is not None
                self._lock.notify_all()
            if thread is None:
                return
            thread.join()

    def status(self) -> dict[str, int | str]:
        """The embedder, the documents and passages indexed, and the documents still pending."""
        documents = passages = 0
        if self.path.exists():
            with self._guard() as db:
                documents = db.execute("SELECT count(*) FROM docs").fetchone()[0]
                passages = db.execute("SELECT count(*) FROM chunks").fetchone()[0]
        return {"embedder": self.embedder.name if self.embedder is not None else "", "documents": documents,
                "passages": passages, "pending": self.pending()}  # fmt: skip

    def pending(self) -> int:
        """The documents still to index or to drop (all of them while there is no file yet)."""
        if not self.path.exists():
            return len(self.stored(self.host.storage.version()))
        todo, gone, _ = self.plan()
        return len(todo) + len(gone)

    # --- searching -----------------------------------------------------------------------

    def _vectors(self, db: sqlite3.Connection) -> _Matrix:
        """Every passage vector, loaded again only when the file or its generation changed."""
        if self.embedder is None:
            return _Matrix([], 0)
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        key = (file_id(self.path), meta["generation"])
        cached = self._matrix
        if cached is not None and cached[0] == key:
            return cached[1]
        rows = (
            db.execute(
                "SELECT chunks.id, docs.kind, docs.namespace, chunks.path, chunks.vector FROM chunks JOIN docs USING (path)"
            ).fetchall()
            if meta.get("embedder") == self.signature  # else another embedder's, until the thread empties it
            else []
        )
        matrix = _Matrix(rows, self.embedder.dimensions)
        self._matrix = (key, matrix)
        return matrix

    def search(
        self,
        query: str,
        *,
        kind: Kind,
        namespaces: Collection[str] | None,
        limit: int,
        modes: Collection[Mode] = MODES,
        floor: float | None = None,
    ) -> list[Passage]:
        """The ``limit`` passages of ``kind`` documents in ``namespaces`` (None: all) best matching
        ``query`` by keyword (every word) and by meaning (a similarity of at least ``floor``, by
        default the embedder's ``relevant``), fused; best first. ``modes``: one of them alone, and
        ``floor``: another threshold, for comparisons. Only documents storage holds now."""
        words = query_words(query)
        fused: dict[int, float] = {}
        paths: dict[int, str] = {}
        if not self.path.exists():  # nothing indexed yet (on a full disk, nothing can be)
            return []
        with self._guard() as db:
            if words and "keyword" in modes:
                where, args = self._scope(kind, namespaces)
                rows = db.execute(
                    "SELECT chunks_fts.rowid, chunks.path FROM chunks_fts JOIN chunks ON chunks.id = chunks_fts.rowid "
                    f"JOIN docs USING (path) WHERE chunks_fts MATCH ? AND {where} ORDER BY bm25(chunks_fts) LIMIT ?",
                    [" ".join(f'"{w}"' for w in words), *args, CANDIDATES],
                ).fetchall()
                for rank, (rowid, path) in enumerate(rows):
                    fused[rowid] = fused.get(rowid, 0.0) + 1 / (RRF_K + rank + 1)
                    paths[rowid] = path
            if "meaning" in modes and self.embedder is not None:
                matrix = self._vectors(db)
                least = self.embedder.relevant if floor is None else floor
                near = self._near(matrix, self.embedder.embed_query(query), kind, namespaces, least)
                for rank, (i, _similarity) in enumerate(islice(near, CANDIDATES)):
                    rowid = int(matrix.ids[i])
                    fused[rowid] = fused.get(rowid, 0.0) + 1 / (RRF_K + rank + 1)
                    paths[rowid] = str(matrix.paths[i])
            holds = self._holds()
            ranked = sorted(fused.items(), key=lambda item: -item[1])
            best = list(islice((item for item in ranked if holds(paths[item[0]])), limit))
            return self._passages(db, best)

    @staticmethod
    def _near(
        matrix: _Matrix, vector: Vectors, kind: Kind, namespaces: Collection[str] | None, least: float, exclude: str = ""
    ) -> Iterator[tuple[int, float]]:
        """(row of ``matrix``, similarity) of the passages of ``kind`` documents in ``namespaces``
        at least ``least`` similar to ``vector`` (but not those of the document at ``exclude``),
        nearest first."""
        keep = np.flatnonzero(matrix.mask(kind, namespaces) & (matrix.paths != exclude))
        if not len(keep):
            return
        sims = matrix.vectors[keep] @ vector
        close = np.flatnonzero(sims >= least)
        for j in close[np.argsort(-sims[close], kind="stable")]:
            yield int(keep[j]), float(sims[j])

    @staticmethod
    def _scope(kind: Kind, namespaces: Collection[str] | None) -> tuple[str, list[str]]:
        if namespaces is None:
            return "docs.kind = ?", [kind]
        return f"docs.kind = ? AND docs.namespace IN ({','.join('?' * len(namespaces))})", [kind, *namespaces]

    @staticmethod
    def _passages(db: sqlite3.Connection, best: list[tuple[int, float]]) -> list[Passage]:
        if not best:
            return []
        rows: dict[int, tuple[Kind, str, str, str, int, str]] = {
            r[0]: r[1:]
            for r in db.execute(
                "SELECT chunks.id, docs.kind, docs.slug, docs.filename, docs.title, chunks.start, chunks.text "
                f"FROM chunks JOIN docs USING (path) WHERE chunks.id IN ({','.join('?' * len(best))})",
                [rowid for rowid, _ in best],
            )
        }
        return [Passage(*rows[rowid], score) for rowid, score in best if rowid in rows]

    def nearest(
        self, vector: Vectors, *, kind: Kind, namespaces: Collection[str] | None, limit: int, exclude: str = "",
        least: float = -1.0,
    ) -> list[Near]:
        """The ``limit`` documents of ``kind`` whose best passage is nearest ``vector``, at least
        ``least`` similar (all of them but the document at storage path ``exclude``, and only
        those storage holds now), nearest first."""
        if not self.path.exists():
            return []
        holds = self._holds()
        with self._guard() as db:
            matrix = self._vectors(db)
            best: dict[str, float] = {}
            for i, similarity in self._near(matrix, vector, kind, namespaces, least, exclude):
                path = str(matrix.paths[i])
                if path not in best and holds(path):
                    best[path] = similarity
                    if len(best) == limit:
                        break
            if not best:
                return []
            docs: dict[str, tuple[Kind, str, str, str]] = {
                r[0]: r[1:]
                for r in db.execute(
                    f"SELECT path, kind, slug, filename, title FROM docs WHERE path IN ({','.join('?' * len(best))})",
                    list(best),
                )
            }
        return [Near(*docs[p], s) for p, s in best.items() if p in docs]

    def document_vector(self, path: str) -> Vectors | None:
        """The mean of the document's passage vectors, of length 1; None when it is not indexed (or nothing is embedded)."""
        if self.embedder is None or not self.path.exists():
            return None
        with self._guard() as db:
            rows = db.execute("SELECT vector FROM chunks WHERE path = ?", (path,)).fetchall()
        if not rows:
            return None
        mean = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm else mean

    def close(self) -> None:
        with self._lock:
            self._closed = True
            self._lock.notify_all()
            thread = self._thread
        if thread is not None:
            thread.join()
        self._close_connection()

    def _close_connection(self) -> None:
        db = getattr(self._local, "db", None)
        if db is not None:
            db.close()
            self._local.db = None


@hookimpl
def startup(host: Host) -> None:
    if not host.disk_full():
        host.passages.prepare()


def _kick_for_pages(host: Host) -> None:
    if host.passages.embedder is not None:  # without one no page is indexed
        host.passages.kick()


@hookimpl
def page_saved(host: Host) -> None:
    _kick_for_pages(host)


@hookimpl
def page_deleted(host: Host) -> None:
    _kick_for_pages(host)


@hookimpl
def page_moved(host: Host) -> None:
    _kick_for_pages(host)
