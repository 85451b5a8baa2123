"""Passages: attachments' text and pages cut into chunks, each found by its words and its meaning.

``passages.sqlite`` in the instance folder holds, for every attachment with text (and every page,
with an ``EMBEDDER``), its passages (about :data:`CHUNK_CHARS` characters, cut at paragraph or
sentence ends, with their offset in the text, so ``read_attachment`` can start there) and an FTS5
keyword index over them; ``passages.vectors`` beside it holds one vector per passage from the
``EMBEDDER``, quantised to int8 with a scale per passage (a quarter of float32, the same
rankings), read through a memory map (:class:`VectorFile`): the page cache holds it once per
machine, and a worker searches what another process indexed without loading anything. A search
ranks passages by keyword (BM25; every word of the query) and by meaning (cosine of the vectors,
brute force with numpy over the caller's namespaces; only passages at least the embedder's
``relevant`` similarity from the query, so a query unrelated to every document finds nothing),
and fuses the two rankings by reciprocal rank fusion (:data:`RRF_K`): a passage ranked high by
either comes first, one ranked high by both before it. Without an embedder the keyword ranking
alone answers. A document storage no longer holds is never answered, even before the index
drops it. A wiki without attachments spends nothing on their passages (:meth:`PassageIndex.has`).

It is a derived index (:class:`~hostcore.seams.index.DerivedIndex`), kept off the request path:
the host hands it the paths that changed in storage, in commit order (:meth:`PassageIndex.apply`),
which it only notes as pending; a background thread of each process then indexes what is pending
in steps of :data:`STEP_DOCUMENTS` documents (each step reads only its documents from storage,
embeds all their passages in one call and writes them in one transaction). The processes' steps go
side by side, one a core: a step claims its documents (``taken``: its process, until
:data:`CLAIM_SECONDS`; a dead process's claims are taken over at once) and another step takes
others; a document indexed by another step since this one read it is left as that step wrote it,
so an older text never replaces a newer one. Searches answer from what is indexed meanwhile and say how
many documents are pending, and ``health`` shows the pace. Under a stream of changes a round of
indexing starts at most every :data:`ROUND_SECONDS`, so a page saved again and again meanwhile is
embedded once per round, not once per save (a change after a quiet spell is taken at once).
Without an embedder only attachments are indexed. A damaged ``passages.sqlite`` is set aside and a
deleted one recreated, a lost or foreign ``passages.vectors`` made anew; either way it fills
again from storage.
"""

from __future__ import annotations

import html
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from hostcore.domain.attachments import sniff, split_attachment_path
from hostcore.domain.pages import Page, slug_from_path
from hostcore.errors import NotFound
from hostcore.indexes.vectors import VectorFile, dot_products, quantise, record_type
from hostcore.seams.derived import generation
from hostcore.seams.embed import Embedder, Vectors
from hostcore.seams.index import Changes, DerivedIndex
from hostcore.seams.locks import FileLock
from hostcore.seams.sqlite import STORAGE_VERSION, DerivedDB, rows_in
from hostcore.seams.worker import CoalescingWorker

if TYPE_CHECKING:
    from hostcore.host.host import Host

log = logging.getLogger("hostcore.passages")

Kind = Literal["page", "attachment"]
Mode = Literal["keyword", "meaning"]
MODES: tuple[Mode, ...] = ("keyword", "meaning")
CHUNK_CHARS = 600  # a static embedding averages its words: short passages keep their meaning sharp
MAX_CHUNKS = 2000  # per document (about 1.2 million characters); the rest of a longer text is not indexed
STEP_DOCUMENTS = 256  # documents indexed in one bounded step: one storage pass, one embedding call, one transaction
CLAIM_SECONDS = 600.0  # a step's claim on its documents lapses after this (its process died unseen)
TAKEN_WAIT = 0.2  # while every pending document is another step's, look again this much later
ROUND_SECONDS = 2.0  # under a stream of changes, a round of indexing starts at most this often
PRELOAD_SECONDS = 2.0  # after a start with nothing to embed, the model is loaded this much later
EMBED_SLICE = 8  # passages embedded between two looks at the requests in flight (a few milliseconds)
BACKGROUND_NICE = 10  # the embedding thread's nice value above the process's: searches and saves come first
CANDIDATES = 100  # passages taken from each ranking into the fusion
MAX_FOLLOWED = 1000  # changed paths looked up one by one for the answers' check; beyond, storage is listed whole
RRF_K = 60  # reciprocal rank fusion: score = sum of 1 / (RRF_K + rank)
MAX_QUERY_WORDS = 32
EXCERPT_CHARS = 300

# A question's function words match every passage; left out, the keyword ranking is by subject.
STOP_WORDS = frozenset(
    "a an and are as at be been but by can do does for from had has have how i if in into is it its me my no not "
    "of on or our should so than that the their them then there these they this to was we were what when where "
    "which who why will with would you your".split()
)

LAYOUT = 2  # passages.sqlite's layout (PRAGMA user_version): another one is emptied and filled again
BLOCK = 65_536  # vectors compared with a query at once (bounds the floats made from them)
SORTED_GROUP = 1024  # passages nearest a query put in order at a time (see nearest_first)
SAMPLE_STEP, SAMPLE_GROUPS = 16, 4  # nearest_first's first bound: from every 16th similarity, about 4 groups above it
KINDS: dict[Kind, int] = {"page": 1, "attachment": 2}  # a vector record's kind; 0: a free record

_SCHEMA = """
CREATE TABLE IF NOT EXISTS docs (
    path TEXT PRIMARY KEY, hash TEXT NOT NULL, kind TEXT NOT NULL, slug TEXT NOT NULL, filename TEXT NOT NULL,
    namespace TEXT NOT NULL, title TEXT NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS docs_kind ON docs (kind);
-- with an embedder, a passage's id is also its record in the vectors file (see Vectors)
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY, path TEXT NOT NULL, start INTEGER NOT NULL, text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_path ON chunks (path);
-- records of the vectors file no passage uses (taken again first), and namespaces' numbers there
CREATE TABLE IF NOT EXISTS free (slot INTEGER PRIMARY KEY);
CREATE TABLE IF NOT EXISTS namespaces (code INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
    text, content='chunks', content_rowid='id', tokenize='unicode61 remove_diacritics 2'
);
CREATE TRIGGER IF NOT EXISTS chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, text) VALUES (new.id, new.text);
END;
CREATE TRIGGER IF NOT EXISTS chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, text) VALUES ('delete', old.id, old.text);
END;
-- paths the host handed over (apply) and not indexed yet; ask tells a path handed over again
-- while a step indexed it from the one that step took
CREATE TABLE IF NOT EXISTS pending (path TEXT PRIMARY KEY, ask INTEGER NOT NULL) WITHOUT ROWID;
-- pending paths a step is indexing now: its process, and until when the claim holds
CREATE TABLE IF NOT EXISTS taken (path TEXT PRIMARY KEY, pid INTEGER NOT NULL, until REAL NOT NULL) WITHOUT ROWID;
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


@dataclass(frozen=True)
class Columns:
    """The vectors file's records but their vectors, each a column of its own (see :meth:`PassageIndex._columns`)."""

    kind: np.ndarray
    namespace: np.ndarray
    scale: np.ndarray


def nearest_first(similarities: np.ndarray, least: float, group: int = SORTED_GROUP) -> Iterator[int]:
    """The positions of ``similarities`` at least ``least``, the greatest first (equal ones in
    their order), sorted ``group`` at a time as they are taken: a caller wants the first few
    hundred, and a query of common words is near most passages (sorting all of them cost more
    than comparing them). Each group is every position whose similarity is at least the
    ``group``-th greatest left, so the order is the one a stable sort of them all gives.

    Among many, the positions at least a bound that about SAMPLE_GROUPS groups pass (guessed from
    every SAMPLE_STEP-th similarity) go first, the rest only when a caller goes on past them: a
    few thousand put in order instead of most of the array gathered and partitioned."""
    bounds = [least]
    if len(similarities) > SAMPLE_STEP * SAMPLE_GROUPS * group:
        sample = similarities[::SAMPLE_STEP]
        k = len(sample) - max(1, SAMPLE_GROUPS * group // SAMPLE_STEP)
        guess = float(np.partition(sample, k)[k])
        if guess > least:
            bounds = [guess, least]
    above = None
    for bound in bounds:
        left = np.flatnonzero(similarities >= bound if above is None else (similarities >= bound) & (similarities < above))
        above = bound
        while len(left):
            if len(left) > group:
                values = similarities[left]
                cut = np.partition(values, len(values) - group)[len(values) - group]
                upper = values >= cut
                taken, left = left[upper], left[~upper]
            else:
                taken, left = left, left[:0]
            yield from taken[np.argsort(-similarities[taken], kind="stable")].tolist()


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
Text = tuple[str, list[tuple[int, str]], str, str]  # a document's (title, passages, status, reason)
Read = tuple[tuple[Kind, str, str] | None, str | None, Text | None]  # (kind, slug, filename), hash now, Text when changed


def _document(path: str, pages: bool) -> tuple[Kind, str, str] | None:
    """(kind, slug, filename) of the document stored at ``path``, None when it is none (or a page, unless ``pages``)."""
    slug = slug_from_path(path)
    if slug is not None:
        return ("page", slug, "") if pages else None
    owner = split_attachment_path(path)
    return ("attachment", owner[0], owner[1]) if owner is not None else None


def _alive(pid: int) -> bool:
    """Whether the process ``pid`` exists (one of another user counts)."""
    if pid <= 0:  # never a process of ours: 0 and -1 would ask about whole groups
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def listed_documents(host: Host, pages: bool) -> dict[str, Document]:
    """Storage path -> (hash, kind, slug, filename) of every visible attachment (and page, when ``pages``)."""
    out: dict[str, Document] = {}
    for path, digest in host.storage.hashes().items():
        found = _document(path, pages)
        if found is not None:
            out[path] = (digest, *found)
    return out


class PassageIndex(DerivedIndex):
    """The passages of pages and attachments, their keyword index and vectors (``path``, SQLite)."""

    name = "passage index"
    unit = "documents"
    eventual = True
    db: DerivedDB

    def __init__(self, host: Host, path: Path, embedder: Embedder | None) -> None:
        self.host = host
        self.path = Path(path)
        self.embedder = embedder  # None: keyword only
        self.signature = f"{embedder.name}/{embedder.dimensions}" if embedder is not None else "keyword"
        self.db = DerivedDB(self.path, self.name, _SCHEMA, LAYOUT, rebuild=True, setup=self._sign)
        self.vectors = VectorFile(self.path.with_name("passages.vectors"), embedder.dimensions) if embedder is not None else None
        self._codes: dict[str, dict[str, int]] = {}  # vectors file token -> namespace -> its number there
        # a failed round is tried again at the next change or search (damage: by the rebuild)
        self._worker = CoalescingWorker(
            self._work, "passage index", what="passage index", gap=ROUND_SECONDS, nice=BACKGROUND_NICE, logger=log
        )
        self._load = False  # start(): the background thread loads the embedder's model first
        self._preload: threading.Timer | None = None  # or PRELOAD_SECONDS later, when nothing waits
        self._stored: tuple[str, dict[str, Document]] | None = None  # (storage version, its documents)
        self._columns_of: tuple[tuple[str, str | None, int], Columns] | None = None  # see _columns

    def _sign(self, db: sqlite3.Connection) -> None:
        """A new file's vectors are this embedder's (an older file of another one is emptied by :meth:`prepare`)."""
        db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('embedder', ?)", (self.signature,))

    @property
    def round_seconds(self) -> float:
        """Under a stream of changes, a round of indexing starts at most this often."""
        return self._worker.gap

    @round_seconds.setter
    def round_seconds(self, seconds: float) -> None:
        self._worker.gap = seconds

    # --- what the host hands over ------------------------------------------------------------

    def wants(self, path: str) -> bool:
        return _document(path, self.embedder is not None) is not None

    def indexed(self) -> dict[str, str]:
        with self.db.guard() as db:
            return dict(db.execute("SELECT path, hash FROM docs").fetchall())

    def apply(self, changes: Changes) -> None:
        """Note the changed documents as pending: the background thread indexes them (:meth:`step`)."""
        with self.db.transaction(mark=False) as db:
            ask = db.execute("SELECT coalesce(max(ask), 0) + 1 FROM pending").fetchone()[0]  # once: a hand-over of 50,000 paths
            db.executemany("INSERT OR REPLACE INTO pending (path, ask) VALUES (?, ?)", [(path, ask) for path in changes.paths])
        changes.done(len(changes.paths))

    def prepare(self) -> None:
        """At start-up (and ``hostcore reindex``): set a damaged file aside (the host rebuilds it);
        empty the index when its vectors come from another embedder: everything is embedded again."""
        if self.db.check():
            return
        found = self.db.meta("embedder")
        if found != self.signature:
            if found is not None:
                log.info("passage index: the embedder changed (%s -> %s); embedding everything again", found, self.signature)
            self.clear()
        elif self.vectors is not None and not self._vectors_intact():
            log.warning("passage index: %s is missing or not the index's own; embedding everything again", self.vectors.path)
            self.clear()

    def _vectors_intact(self) -> bool:
        """Whether the vectors file is the one ``passages.sqlite`` was written with (or nothing needs one)."""
        assert self.vectors is not None
        token = self.db.meta("vectors")
        if token is not None and self.vectors.matches(token):
            return True
        with self.db.guard() as db:
            return db.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is None

    def clear(self) -> None:
        """Empty the index and forget the storage version it reflects, keeping the file."""
        with self._writing(), self.db.transaction() as db:
            for table in ("chunks", "docs", "pending", "taken", "free", "namespaces"):
                db.execute(f"DELETE FROM {table}")
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('embedder', ?)", (self.signature,))
            db.execute("DELETE FROM meta WHERE key IN ('storage_version', 'vectors', 'slots')")
            if self.vectors is not None:
                self._new_vectors(db)
            self._codes = {}

    def _writing(self) -> FileLock:
        """``passages.lock``: one process writes the index's documents at a time."""
        return FileLock(self.path.with_name("passages.lock"))

    # --- indexing ----------------------------------------------------------------------------

    def start(self) -> None:
        """Let the background thread load the embedder's model (and index what is pending): at
        once when documents wait, else PRELOAD_SECONDS later, once the worker serves (loading
        holds the interpreter: done as the worker started, it slowed the start); either way before a
        save or a search is likely to need it (see Embedder.load)."""
        if self.embedder is not None:
            self._load = True
            self.kick()

    def kick(self) -> None:
        """Make sure this process's background thread looks for pending documents."""
        self._worker.kick()

    def wait(self) -> None:
        """Wait until this process's background indexing has nothing left to do (a round due
        later is taken now)."""
        self._worker.wait()

    def _work(self) -> None:
        """One round of the background thread: every pending document, in steps. One process's
        round at a time on the machine (``passages.rounds.lock``; a process that finds another's
        running waits for it, then looks at what is left): the embedding takes one core, and the
        other stays with the requests."""
        before = self.pending()
        if self._load and self.embedder is not None:  # once: the first save must not wait for it
            self._load = False
            if before:
                self.embedder.load()
            else:  # nothing to embed: not while the worker starts (it held the interpreter then)
                self._preload = threading.Timer(PRELOAD_SECONDS, self._load_model)
                self._preload.name, self._preload.daemon = "passage index: model", True
                self._preload.start()
        rounds = FileLock(self.path.with_name("passages.rounds.lock"))
        while not rounds.acquire(blocking=False):  # another process's round: it takes what is pending
            if self._worker.stopping:
                return
            time.sleep(TAKEN_WAIT)
        try:
            started, before = time.monotonic(), self.pending()
            done = self._steps(before, lambda: self._worker.stopping)
        finally:
            rounds.release()
        if done:  # what health and status show of the pace, whichever process asks
            self.db.set_meta("pace", f"{done / max(time.monotonic() - started, 1e-3):.1f}")

    def step(self, limit: int = STEP_DOCUMENTS) -> int:
        """Index up to ``limit`` pending documents as storage holds them now (and drop those gone),
        in one transaction, their passages embedded in one call; returns how many are still
        pending afterwards. What is pending came from the storage's changes (:meth:`apply`): a
        step reads only its documents, never a listing of storage. It takes only documents no
        other step holds (:meth:`_take`)."""
        return self._step(limit)[1]

    def _step(self, limit: int = STEP_DOCUMENTS) -> tuple[int, int]:
        """:meth:`step`: (documents taken, documents pending afterwards)."""
        taken, held = self._take(limit)
        try:
            made: list[tuple[str, int, *Read]] = []
            for path, ask in taken:
                if self._worker.stopping:
                    break
                self._worker.give_way()
                made.append((path, ask, *self._read(path, held.get(path))))
            texts = [piece for *_, got in made if got is not None for _, piece in got[1]]
            vectors = self._embed(texts) if texts and self.embedder is not None else None
            with self._writing():
                self._write(made, vectors, held)
        finally:
            self._let_go([path for path, _ in taken])
        return len(taken), self.pending()

    def _take(self, limit: int) -> tuple[list[tuple[str, int]], dict[str, str]]:
        """Claim up to ``limit`` pending documents no live step holds: their (path, ask), and the
        hash each is indexed at now (what :meth:`_write` expects to find still)."""
        me, now = os.getpid(), time.time()
        with self.db.transaction(mark=False) as db:
            for (pid,) in db.execute("SELECT DISTINCT pid FROM taken WHERE pid != ?", (me,)).fetchall():
                if not _alive(pid):
                    db.execute("DELETE FROM taken WHERE pid = ?", (pid,))
            taken = db.execute(
                "SELECT p.path, p.ask FROM pending AS p LEFT JOIN taken AS t ON t.path = p.path "
                "WHERE t.path IS NULL OR t.until < ? ORDER BY p.path LIMIT ?",
                (now, limit),
            ).fetchall()
            db.executemany(
                "INSERT OR REPLACE INTO taken (path, pid, until) VALUES (?, ?, ?)",
                [(path, me, now + CLAIM_SECONDS) for path, _ in taken],
            )
            held = self._indexed(db, [path for path, _ in taken])
        return taken, held

    def _let_go(self, paths: list[str]) -> None:
        """End this step's claim on ``paths``; when the file cannot be written (a full disk), the
        claim lapses with its process or after :data:`CLAIM_SECONDS`."""
        if not paths:
            return
        try:
            with self.db.transaction(mark=False) as db:
                db.executemany("DELETE FROM taken WHERE path = ? AND pid = ?", [(path, os.getpid()) for path in paths])
        except sqlite3.Error as exc:
            log.warning("passage index: could not end a step's claim on %d documents (%s); it lapses in %d s",
                        len(paths), exc, CLAIM_SECONDS)  # fmt: skip

    def _embed(self, texts: list[str]) -> Vectors:
        """``texts`` embedded in slices of ``EMBED_SLICE``, giving way to requests between them."""
        assert self.embedder is not None
        slices = []
        for first in range(0, len(texts), EMBED_SLICE):
            self._worker.give_way()
            slices.append(self.embedder.embed(texts[first : first + EMBED_SLICE]))
        return np.concatenate(slices) if len(slices) > 1 else slices[0]

    @staticmethod
    def _lookup(db: sqlite3.Connection, query: str, keys: Sequence[object]) -> dict:
        """``query`` (a SELECT of key and value ending ``IN``) for ``keys``: key -> value."""
        return dict(rows_in(db, query, keys))

    def _indexed(self, db: sqlite3.Connection, paths: Sequence[str]) -> dict[str, str]:
        """The hash each of ``paths`` is indexed at (those indexed)."""
        return self._lookup(db, "SELECT path, hash FROM docs WHERE path IN", paths)

    def _read(self, path: str, held: str | None) -> Read:
        """(kind, slug, filename) of the document at ``path`` (None: not one this index keeps), its
        hash now (None: gone) and, when it is not the one held (``held``), (title, passages, status, reason)."""
        found = _document(path, self.embedder is not None)
        if found is None:
            return None, None, None
        digest: str | None
        try:
            if found[0] == "page":  # one look-up for the bytes and their hash
                data, digest = self.host.storage.read_with_hash(path)
                if digest == held:
                    return found, digest, None
                title, text, status, reason = self._page_text(found[1], data)
            else:  # the hash first: an unchanged attachment is neither read nor extracted again
                digest = self.host.storage.hash(path)
                if digest is None or digest == held:
                    return found, digest, None
                title, text, status, reason = self._text(path, *found)
        except NotFound:  # deleted since
            return found, None, None
        return found, digest, (title, self._pieces(found[0], title, text, status), status, reason)

    def _write(self, made: list[tuple[str, int, *Read]], vectors: Vectors | None, held: dict[str, str]) -> None:
        """One transaction for a step's documents: each indexed anew (its vectors in the records
        it is given), or dropped when gone; each then no longer pending unless handed over again
        meanwhile. A document no longer indexed at the hash the step found (``held``) was indexed
        by another step since, from a text at least as new: it is left alone. Records are written
        before the commit (a search meets them only once the passages are committed) and freed
        after it (a search may meet a freed one until then)."""
        changed = any(digest is None or got is not None for _, _, _, digest, got in made)
        freed: list[int] = []
        records: list[tuple[list[int], tuple[int, int], int, int]] = []  # (slots, rows of vectors, namespace, kind)
        row = 0
        with self.db.transaction(mark=changed) as db:
            token = self._token(db) if self.vectors is not None and changed else None
            now = self._indexed(db, [path for path, *_ in made])
            for path, ask, found, digest, got in made:
                if now.get(path) != held.get(path):  # another step's since
                    row += len(got[1]) if got is not None else 0
                    continue
                if digest is None or got is not None:
                    freed += [r[0] for r in db.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
                    db.execute("DELETE FROM chunks WHERE path = ?", (path,))
                if digest is None:
                    db.execute("DELETE FROM docs WHERE path = ?", (path,))
                elif found is not None and got is not None:
                    kind, slug, filename = found
                    title, pieces, status, reason = got
                    namespace = slug.split("/", 1)[0]
                    # a page's passages are found by meaning only (its words: the search backend), so keep no text
                    texts = [piece if kind == "attachment" else "" for _, piece in pieces]
                    if token is not None and vectors is not None and pieces:
                        slots = self._slots(db, len(pieces))
                        records.append((slots, (row, row + len(pieces)), self._code(db, token, namespace), KINDS[kind]))
                        db.executemany("INSERT INTO chunks (id, path, start, text) VALUES (?, ?, ?, ?)",
                                       [(slot, path, start, text) for slot, (start, _), text in zip(slots, pieces, texts, strict=True)])  # fmt: skip
                    else:
                        db.executemany("INSERT INTO chunks (path, start, text) VALUES (?, ?, ?)",
                                       [(path, start, text) for (start, _), text in zip(pieces, texts, strict=True)])  # fmt: skip
                    row += len(pieces)
                    db.execute(
                        "INSERT OR REPLACE INTO docs (path, hash, kind, slug, filename, namespace, title, status, reason) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                        (path, digest, kind, slug, filename, namespace, title, status, reason),
                    )
                db.execute("DELETE FROM pending WHERE path = ? AND ask = ?", (path, ask))
            if records and self.vectors is not None and vectors is not None:
                self.vectors.write(
                    [slot for slots, *_ in records for slot in slots],
                    np.concatenate([vectors[first:last] for _, (first, last), *_ in records]),
                    [code for slots, _, code, _ in records for _ in slots],
                    [kind for slots, _, _, kind in records for _ in slots],
                )
            if freed and self.vectors is not None:
                db.executemany("INSERT OR IGNORE INTO free (slot) VALUES (?)", [(slot,) for slot in freed])
        if freed and self.vectors is not None and token is not None:
            self.vectors.free(freed)

    def _token(self, db: sqlite3.Connection) -> str:
        """The vectors file's token (in the writing transaction): a new file when the index has
        none yet; one that went missing while passages it held are indexed is made anew, and every
        document embedded again (the file's records cannot be told from storage)."""
        assert self.vectors is not None
        row = db.execute("SELECT value FROM meta WHERE key = 'vectors'").fetchone()
        if row is not None and self.vectors.matches(row[0]):
            return str(row[0])
        if row is not None and db.execute("SELECT 1 FROM chunks LIMIT 1").fetchone() is not None:
            log.warning("passage index: %s went missing; embedding every document again", self.vectors.path)
            db.execute("INSERT INTO pending (path, ask) SELECT path, 0 FROM docs WHERE true ON CONFLICT (path) DO NOTHING")
            for table in ("chunks", "docs", "free", "namespaces"):
                db.execute(f"DELETE FROM {table}")
        return self._new_vectors(db)

    def _new_vectors(self, db: sqlite3.Connection) -> str:
        """A new, empty vectors file, recorded in the writing transaction."""
        assert self.vectors is not None
        token = self.vectors.create()
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('vectors', ?)", (token,))
        db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('slots', '0')")
        db.execute("DELETE FROM free")
        self._codes = {}
        return token

    @staticmethod
    def _slots(db: sqlite3.Connection, count: int) -> list[int]:
        """``count`` records of the vectors file for new passages: free ones first, then new ones at its end."""
        slots = [r[0] for r in db.execute("SELECT slot FROM free ORDER BY slot LIMIT ?", (count,))]
        if slots:
            db.execute("DELETE FROM free WHERE slot <= ?", (slots[-1],))
        if len(slots) < count:
            end = int(db.execute("SELECT coalesce((SELECT value FROM meta WHERE key = 'slots'), 0)").fetchone()[0])
            slots += range(end, end + count - len(slots))
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('slots', ?)", (str(slots[-1] + 1),))
        return slots

    def _code(self, db: sqlite3.Connection, token: str, namespace: str) -> int:
        """The number of ``namespace`` in the vectors file ``token`` (given one in the writing transaction)."""
        codes = self._namespace_codes(db, token)
        if namespace not in codes:
            db.execute("INSERT OR IGNORE INTO namespaces (name) VALUES (?)", (namespace,))
            codes[namespace] = int(db.execute("SELECT code FROM namespaces WHERE name = ?", (namespace,)).fetchone()[0])
        return codes[namespace]

    def _namespace_codes(self, db: sqlite3.Connection, token: str, wanted: Collection[str] = ()) -> dict[str, int]:
        """Namespace -> its number in the vectors file ``token``, read again when it is another file
        than last time or a namespace ``wanted`` is not known yet (numbers, once given, stay)."""
        known = self._codes.get(token)
        if known is None or any(name not in known for name in wanted):
            self._codes = {token: dict(db.execute("SELECT name, code FROM namespaces").fetchall())}
            known = self._codes[token]
        return known

    @staticmethod
    def _pieces(kind: Kind, title: str, text: str, status: str) -> list[tuple[int, str]]:
        """The passages (offset, text) of a document: a page's with its title, which is part of what it means."""
        pieces = split_passages(text) if status == "extracted" else []
        if kind == "page":
            pieces = [(start, f"{title}\n{piece}") for start, piece in pieces] or [(0, title)]
        return pieces

    @staticmethod
    def _page_text(slug: str, data: bytes) -> tuple[str, str, str, str]:
        """(title, text, status, reason) of the page ``slug`` stored as ``data``."""
        page = Page.from_bytes(slug, data)
        return page.title or slug, page.body, "extracted", ""

    def _text(self, path: str, kind: Kind, slug: str, filename: str) -> tuple[str, str, str, str]:
        """(title, text, status, reason) of the document at ``path``."""
        if kind == "page":
            return self._page_text(slug, self.host.storage.read(path))
        data, digest = self.host.storage.read_with_hash(path)
        got = self.host.extraction.text(data, digest, sniff(data, filename))
        return filename, got.text, got.status, got.reason

    def catch_up(self, progress: Callable[[int], None] | None = None) -> int:
        """Index everything pending now, in steps, in this thread; returns how many documents."""
        return self._steps(self.pending(), lambda: False, progress)

    def _steps(self, before: int, stopping: Callable[[], bool], progress: Callable[[int], None] | None = None) -> int:
        """Steps until nothing is pending (``before`` documents now) or ``stopping()``: how many
        documents they indexed, each step's count given to ``progress``."""
        done = 0
        while before and not stopping():
            took, left = self._step()
            if progress:
                progress(max(before - left, 0))
            done += max(before - left, 0)
            before = left
            if not took and left:  # every pending document is another step's
                time.sleep(TAKEN_WAIT)
        return done

    def pending(self) -> int:
        with self.db.guard() as db:
            return int(db.execute("SELECT count(*) FROM pending").fetchone()[0])

    def status(self) -> dict[str, int | float | str]:
        """The embedder, the documents and passages indexed, the documents still pending, and
        ``per_second``, the documents indexed a second by the last round that indexed any (0: none yet)."""
        with self.db.guard() as db:
            documents, passages, pending = (
                db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ("docs", "chunks", "pending")
            )
            pace = db.execute("SELECT value FROM meta WHERE key = 'pace'").fetchone()
        return {"embedder": self.embedder.name if self.embedder is not None else "", "documents": documents,
                "passages": passages, "pending": pending, "per_second": float(pace[0]) if pace else 0.0}  # fmt: skip

    def progress(self) -> dict[str, int | float] | None:
        """While documents are pending: how many are indexed, how many wait, and the pace (what
        ``/_/health`` shows); None when none wait (one count of a small table)."""
        with self.db.guard() as db:
            pending = int(db.execute("SELECT count(*) FROM pending").fetchone()[0])
        if not pending:
            return None
        state = self.status()
        return {"documents": int(state["documents"]), "pending": int(state["pending"]), "per_second": float(state["per_second"])}

    def attachments_after(self, namespaces: Collection[str] | None, after: str, limit: int) -> list[tuple[str, str, str]]:
        """(slug, filename, hash) of up to ``limit`` indexed attachments in ``namespaces`` (None:
        all) whose ``slug/filename`` sorts after ``after``, in that order: a listing keyed by it, so
        a page of it stays in place while attachments come and go (MCP's ``resources/list``)."""
        if namespaces is not None and not namespaces:
            return []
        where, args = self._scope("attachment", namespaces)
        with self.db.guard() as db:
            rows = db.execute(
                f"SELECT slug, filename, hash FROM docs WHERE {where} AND slug || '/' || filename > ?"
                " ORDER BY slug || '/' || filename LIMIT ?",
                [*args, after, limit],
            ).fetchall()
        return [(slug, filename, digest) for slug, filename, digest in rows]

    # --- what searches check their answers against -------------------------------------------

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

    def _holds(self, db: sqlite3.Connection) -> Callable[[str], bool]:
        """Whether storage holds the document at a path now: what a search answers with must, even
        before the background thread drops what was deleted. Asked only about what would be
        answered, once a path: yes for every document indexed while the index reflects the
        storage's version with nothing waiting; else from the documents this process follows
        along the storage's versions when it does (cheap), else one look-up a path (never a
        listing of everything on a search's account; in git, a look-up parses the page's folder)."""
        answers: dict[str, bool] = {}
        ask: list[Callable[[str], bool]] = []

        def holds(path: str) -> bool:
            if not ask:
                version = self.host.storage.version()
                if version is not None and self._reflects(db, version):
                    ask.append(lambda _: True)
                elif version is not None and self._stored is not None:
                    ask.append(self.stored(version).__contains__)
                else:
                    ask.append(self.host.storage.exists)
            if path not in answers:
                answers[path] = ask[0](path)
            return answers[path]

        return holds

    # --- searching -----------------------------------------------------------------------

    def _reflects(self, db: sqlite3.Connection, version: str) -> bool:
        """Whether the index holds the documents storage holds at ``version``, no more: it
        recorded that version (recorded once every change up to it is pending) and nothing
        waits, so each document indexed is one storage holds."""
        recorded = db.execute("SELECT value FROM meta WHERE key = ?", (STORAGE_VERSION,)).fetchone()
        return recorded is not None and recorded[0] == version and db.execute("SELECT 1 FROM pending LIMIT 1").fetchone() is None

    def _records(self, db: sqlite3.Connection) -> tuple[np.ndarray, str | None]:
        """The vectors file's records (mapped, not loaded: see :class:`VectorFile`) and its token;
        none while the file holds another embedder's vectors (until the thread empties it)."""
        if self.vectors is None:
            return np.zeros(0, dtype=record_type(0)), None
        meta = dict(db.execute("SELECT key, value FROM meta WHERE key IN ('embedder', 'vectors')").fetchall())
        token = meta.get("vectors") if meta.get("embedder") == self.signature else None
        return self.vectors.records(token), token

    def _columns(self, db: sqlite3.Connection, records: np.ndarray, token: str) -> Columns:
        """Each record's kind, namespace number and scale, copied out of the mapped file once per
        generation of ``passages.sqlite``: a scan then reads the file's vectors alone, not three
        more strided passes over every record. A step writes its records before its commit (a new
        generation, so they count from then, as their passages do) and frees them after it (a
        freed record read with its old kind has a zero vector, and its passage is no longer in
        ``chunks``: it is never a hit)."""
        key = (token, generation(db), len(records))
        if self._columns_of is None or self._columns_of[0] != key:
            columns = Columns(np.array(records["kind"]), np.array(records["namespace"]), np.array(records["scale"]))
            self._columns_of = (key, columns)
        return self._columns_of[1]

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
        default the embedder's ``relevant``), fused; best first. ``modes``: one of them alone (by
        meaning alone, each passage's score is its similarity), and ``floor``: another threshold,
        for comparisons. Only documents storage holds now. When the
        index holds no document of ``kind`` (one look-up: a wiki without attachments), nothing is
        searched and the query is not embedded."""
        words = query_words(query)
        fused: dict[int, float] = {}
        paths: dict[int, str] = {}
        with self.db.guard() as db:
            if db.execute("SELECT 1 FROM docs WHERE kind = ? LIMIT 1", (kind,)).fetchone() is None:
                return []
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
                least = self.embedder.relevant if floor is None else floor
                near = list(islice(self._near(db, self.embedder.embed_query(query), kind, namespaces, least), CANDIDATES))
                found = self._lookup(db, "SELECT id, path FROM chunks WHERE id IN", [slot for slot, _ in near])
                for rank, (slot, similarity) in enumerate(near):
                    if slot in found:  # else written by a step not committed yet
                        # by meaning alone, the score is the similarity itself (a fused one is a rank's)
                        fused[slot] = fused.get(slot, 0.0) + 1 / (RRF_K + rank + 1) if "keyword" in modes else similarity
                        paths[slot] = found[slot]
            holds = self._holds(db)
            ranked = sorted(fused.items(), key=lambda item: -item[1])
            best = list(islice((item for item in ranked if holds(paths[item[0]])), limit))
            return self._passages(db, best)

    def _near(
        self, db: sqlite3.Connection, vector: Vectors, kind: Kind, namespaces: Collection[str] | None, least: float,
        exclude: Collection[int] = (),
    ) -> Iterator[tuple[int, float]]:
        """(passage id, similarity) of the passages of ``kind`` documents in ``namespaces`` at least
        ``least`` similar to ``vector`` (but not the passages ``exclude``), nearest first."""
        records, token = self._records(db)
        if not len(records) or token is None:
            return
        columns = self._columns(db, records, token)
        keep = columns.kind == KINDS[kind]
        if namespaces is not None:
            codes = self._namespace_codes(db, token, namespaces)
            keep &= np.isin(columns.namespace, [codes[n] for n in namespaces if n in codes])
        if exclude:
            keep[[slot for slot in exclude if slot < len(keep)]] = False
        quantised, scale = quantise(np.asarray(vector, dtype=np.float32).reshape(1, -1))
        query, query_scale = quantised[0], float(scale[0])
        kept = int(np.count_nonzero(keep))
        slots: np.ndarray | None = None  # the records compared, when not all of them
        if kept > len(records) // 2:  # most records: every one compared in order, the rest left out after
            sims = np.empty(len(records), dtype=np.float32)
            for first in range(0, len(records), BLOCK):
                block = slice(first, first + BLOCK)  # int8 against int8, summed in int32: no float copy of the vectors
                np.multiply(dot_products(records[block]["vector"], query), columns.scale[block], out=sims[block], casting="same_kind")
            if kept < len(records):
                sims[~keep] = -np.inf  # below any ``least``
        else:  # a few: only theirs, gathered
            slots = np.flatnonzero(keep)
            sims = np.empty(len(slots), dtype=np.float32)
            for first in range(0, len(slots), BLOCK):
                taken = slots[first : first + BLOCK]
                sims[first : first + BLOCK] = dot_products(records[taken]["vector"], query) * columns.scale[taken]
        sims *= query_scale
        for j in nearest_first(sims, least):
            yield (j if slots is None else int(slots[j])), float(sims[j])

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
        with self.db.guard() as db:
            holds = self._holds(db)
            skip = [r[0] for r in db.execute("SELECT id FROM chunks WHERE path = ?", (exclude,))] if exclude else []
            best: dict[str, float] = {}
            near = self._near(db, vector, kind, namespaces, least, skip)
            while len(best) < limit:
                batch = list(islice(near, 2 * limit))  # the paths of the nearest passages, a batch at a time
                if not batch:
                    break
                found = self._lookup(db, "SELECT id, path FROM chunks WHERE id IN", [slot for slot, _ in batch])
                for slot, similarity in batch:
                    path = found.get(slot)
                    if path is not None and path != exclude and path not in best and holds(path):
                        best[path] = similarity
                        if len(best) == limit:
                            break
            if not best:
                return []
            # two look-ups: a join looks a document up for every passage, this once for each kept
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
        if self.embedder is None:
            return None
        with self.db.guard() as db:
            slots = [r[0] for r in db.execute("SELECT id FROM chunks WHERE path = ?", (path,))]
            records, token = self._records(db)
        slots = [slot for slot in slots if slot < len(records)]
        if not slots or token is None:
            return None
        found = records[slots]
        found = found[found["kind"] != 0]
        if not len(found):
            return None
        mean = (found["vector"].astype(np.float32) * found["scale"][:, None]).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm else mean

    def _load_model(self) -> None:
        try:
            if self.embedder is not None:
                self.embedder.load()
        except Exception:  # its first use loads it again and says why it cannot
            log.exception("loading the embedder's model failed")

    def close(self) -> None:
        """Stop the background thread (after the document it is at) and close the files."""
        if self._preload is not None:
            self._preload.cancel()
        self._worker.stop(finish=False)
        self.db.close()
        if self.vectors is not None:
            self.vectors.close()
