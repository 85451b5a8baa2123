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

It is a derived index (:class:`~hostcore.seams.index.DerivedIndex`), kept off the request path:
the host hands it the paths that changed in storage, in commit order (:meth:`PassageIndex.apply`),
which it only notes as pending; a background thread of each process then indexes what is pending
in bounded steps (:data:`STEP_DOCUMENTS` documents a step, one transaction each, under
``passages.lock`` so one process indexes at a time); searches answer from what is indexed meanwhile
and say how many documents are pending. Under a stream of changes a round of indexing starts at
most every :data:`ROUND_SECONDS`, so a page saved again and again meanwhile is embedded once per
round, not once per save (a change after a quiet spell is taken at once). Without an embedder only
attachments are indexed. A damaged file is set aside and a deleted one recreated; either way it
fills again from storage.
"""

from __future__ import annotations

import html
import logging
import re
import sqlite3
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from itertools import islice
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import numpy as np

from hostcore.domain.attachments import sniff, split_attachment_path
from hostcore.domain.pages import Page, slug_from_path
from hostcore.errors import NotFound
from hostcore.seams.derived import file_id
from hostcore.seams.embed import Embedder, Vectors
from hostcore.seams.index import Changes, DerivedIndex
from hostcore.seams.locks import FileLock
from hostcore.seams.sqlite import DerivedDB
from hostcore.seams.worker import CoalescingWorker

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

_SCHEMA = """
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
-- paths the host handed over (apply) and not indexed yet; ask tells a path handed over again
-- while a step indexed it from the one that step took
CREATE TABLE IF NOT EXISTS pending (path TEXT PRIMARY KEY, ask INTEGER NOT NULL) WITHOUT ROWID;
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
        self.db = DerivedDB(self.path, self.name, _SCHEMA, rebuild=True, setup=self._sign)
        # a failed round is tried again at the next change or search (damage: by the rebuild)
        self._worker = CoalescingWorker(self._work, "passage index", what="passage index", gap=ROUND_SECONDS, logger=log)
        self._load = False  # start(): the background thread loads the embedder's model first
        self._stored: tuple[str, dict[str, Document]] | None = None  # (storage version, its documents)
        self._matrix: tuple[tuple[tuple[int, int] | None, str | None], _Matrix] | None = None

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
            db.executemany(
                "INSERT OR REPLACE INTO pending (path, ask) VALUES (?, (SELECT coalesce(max(ask), 0) + 1 FROM pending))",
                [(path,) for path in changes.paths],
            )
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

    def clear(self) -> None:
        """Empty the index and forget the storage version it reflects, keeping the file."""
        with self._writing(), self.db.transaction() as db:
            db.execute("DELETE FROM chunks")
            db.execute("DELETE FROM docs")
            db.execute("DELETE FROM pending")
            db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('embedder', ?)", (self.signature,))
            db.execute("DELETE FROM meta WHERE key = 'storage_version'")

    def _writing(self) -> FileLock:
        """``passages.lock``: one process writes the index's documents at a time."""
        return FileLock(self.path.with_name("passages.lock"))

    # --- indexing ----------------------------------------------------------------------------

    def start(self) -> None:
        """Let the background thread load the embedder's model (and index what is pending) now,
        so the first save does not wait for the model (see Embedder.load)."""
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
        """One round of the background thread: every pending document, in steps."""
        if self._load and self.embedder is not None:  # once: the first save must not wait for it
            self._load = False
            self.embedder.load()
        version = self.host.storage.version()
        if version is not None:
            self.stored(version)  # what a search checks its answers against, followed from here on
        while not self._worker.stopping and self.step():
            pass

    def step(self, limit: int = STEP_DOCUMENTS) -> int:
        """Index up to ``limit`` pending documents as storage holds them now (and drop those gone);
        returns how many are still pending afterwards."""
        with self._writing():
            with self.db.guard() as db:
                taken = db.execute("SELECT path, ask FROM pending ORDER BY path LIMIT ?", (limit,)).fetchall()
            for path, ask in taken:
                if self._worker.stopping:
                    break
                self._take(path, ask)
        return self.pending()

    def _take(self, path: str, ask: int) -> None:
        """Index the document at ``path`` as storage holds it now, or drop it (gone, or no longer
        a document this index keeps); then it is no longer pending, unless handed over again meanwhile."""
        found = _document(path, self.embedder is not None)
        digest = self.host.storage.hash(path) if found is not None else None
        made = None
        if found is not None and digest is not None and self._indexed_hash(path) != digest:
            try:
                made = self._passages_of(path, *found)
            except NotFound:  # deleted since
                digest = None
        gone = found is None or digest is None
        with self.db.transaction(mark=gone or made is not None) as db:
            if gone:
                db.execute("DELETE FROM chunks WHERE path = ?", (path,))
                db.execute("DELETE FROM docs WHERE path = ?", (path,))
            elif found is not None and made is not None:
                kind, slug, filename = found
                title, pieces, vectors, status, reason = made
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
            db.execute("DELETE FROM pending WHERE path = ? AND ask = ?", (path, ask))

    def _indexed_hash(self, path: str) -> str | None:
        with self.db.guard() as db:
            row = db.execute("SELECT hash FROM docs WHERE path = ?", (path,)).fetchone()
        return row[0] if row else None

    def _passages_of(
        self, path: str, kind: Kind, slug: str, filename: str
    ) -> tuple[str, list[tuple[int, str]], Vectors | None, str, str]:
        """(title, passages (offset, text), their vectors, status, reason) of the document at ``path``."""
        title, text, status, reason = self._text(path, kind, slug, filename)
        pieces = split_passages(text) if status == "extracted" else []
        if kind == "page":  # the title is part of what a page means
            pieces = [(start, f"{title}\n{piece}") for start, piece in pieces] or [(0, title)]
        vectors = self.embedder.embed([piece for _, piece in pieces]) if pieces and self.embedder is not None else None
        return title, pieces, vectors, status, reason

    def _text(self, path: str, kind: Kind, slug: str, filename: str) -> tuple[str, str, str, str]:
        """(title, text, status, reason) of the document at ``path``."""
        if kind == "page":
            page = Page.from_bytes(slug, self.host.storage.read(path))
            return page.title or slug, page.body, "extracted", ""
        data, digest = self.host.storage.read_with_hash(path)
        got = self.host.extraction.text(data, digest, sniff(data, filename))
        return filename, got.text, got.status, got.reason

    def catch_up(self, progress: Callable[[int], None] | None = None) -> int:
        """Index everything pending now, in steps, in this thread; returns how many documents."""
        done = 0
        before = self.pending()
        while before:
            left = self.step()
            if progress:
                progress(max(before - left, 0))
            done += max(before - left, 0)
            before = left
        return done

    def pending(self) -> int:
        with self.db.guard() as db:
            return int(db.execute("SELECT count(*) FROM pending").fetchone()[0])

    def status(self) -> dict[str, int | str]:
        """The embedder, the documents and passages indexed, and the documents still pending."""
        with self.db.guard() as db:
            documents, passages, pending = (
                db.execute(f"SELECT count(*) FROM {table}").fetchone()[0] for table in ("docs", "chunks", "pending")
            )
        return {"embedder": self.embedder.name if self.embedder is not None else "", "documents": documents,
                "passages": passages, "pending": pending}  # fmt: skip

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

    # --- searching -----------------------------------------------------------------------

    def _vectors(self, db: sqlite3.Connection) -> _Matrix:
        """Every passage vector, loaded again only when the file or its generation changed."""
        if self.embedder is None:
            return _Matrix([], 0)
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        key = (file_id(self.path), meta.get("generation"))
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
        with self.db.guard() as db:
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
        holds = self._holds()
        with self.db.guard() as db:
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
        if self.embedder is None:
            return None
        with self.db.guard() as db:
            rows = db.execute("SELECT vector FROM chunks WHERE path = ?", (path,)).fetchall()
        if not rows:
            return None
        mean = np.frombuffer(b"".join(r[0] for r in rows), dtype=np.float32).reshape(len(rows), -1).mean(axis=0)
        norm = float(np.linalg.norm(mean))
        return mean / norm if norm else mean

    def close(self) -> None:
        """Stop the background thread (after the document it is at) and close the file."""
        self._worker.stop(finish=False)
        self.db.close()
