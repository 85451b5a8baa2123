"""Full-text search on tantivy (a Rust search library), kept in the instance folder.

Why tantivy: measured with ``bench/search_engines.py`` (docs/operators.md has the figures) it
answers fast at 50,000 pages whatever the query and ranks every match (SQLite FTS5 ranks a capped
candidate set of a broad query to stay as fast), builds faster and takes less disk.

Processes share the index through the folder:

- Writers (gunicorn workers, the CLI) take one ``FileLock``; under it a short-lived tantivy writer
  deletes and adds the pages and commits. Segment merges the commit starts finish in a background
  thread that keeps the lock until they are done, so the save path pays for the commit only.
- Before each search the reader compares ``meta.json`` (rewritten atomically by every commit) with
  the one it loaded, and reloads when it differs: a write is visible to the very next search in
  any process, for the price of reading one small file.
- Files found damaged or missing (the folder, ``meta.json``) are set aside and the index rebuilt
  from storage; a version file that holds no version is set aside and read as unknown (the host
  then compares the index with storage); what a writer killed mid-commit left is collected by
  the next commit.
"""

from __future__ import annotations

import html
import logging
import os
import re
import threading
import time
from collections.abc import Collection, Mapping, Sequence
from itertools import pairwise
from pathlib import Path
from typing import Any

import tantivy
from tantivy import Occur, Query

from hostcore import (
    NO_FILTERS,
    And,
    FileLock,
    Not,
    Phrase,
    QueryNode,
    SearchBackend,
    SearchDoc,
    SearchFilters,
    SearchHit,
    SearchResults,
    Tag,
    Term,
    Unavailable,
    ValidationError,
    drop_older_formats,
    file_id,
    hookimpl,
    parse_query,
    positive_leaves,
    set_aside,
    stem,
)

log = logging.getLogger(__name__)

FORMAT = 3  # bump when the schema or analyser changes: a new folder is built from storage
ANALYSER = "hostcore"
TITLE_BOOST = 4.0
TAGS_BOOST = 2.0
STEMS_BOOST = 0.5  # a word matched through its stem only (another inflection): below the word as typed
SNIPPET_CHARS = 200
LEAD_CHARS = 40  # of a snippet's characters, at most these before its first mark
MAX_MARKS = 64  # a body's first matches of each word a snippet's place is chosen among
PREFIX_MARKS = 16  # prefix expansions marked in snippets (matching uses all of them)
MAX_LIMIT = 1000
_DAMAGE = ("An IO error occurred", "Data corrupted")  # how tantivy reports files it cannot decode
_CORRUPT = "Data corrupted"  # of those, what no concurrent commit causes
_LEFT_OVER = "FileAlreadyExists"  # a file of a commit that a killed writer began
# The words English text is most made of: a phrase holding one ("and design", "in the cluster")
# matches only where that word meets its neighbour, and those meetings are indexed (``pairs``).
COMMON_WORDS = frozenset(
    "a about after all also an and any are as at be been before between but by can could did do does each "
    "for from had has have he her his how i if in into is it its may more most must no not of on one only or "
    "other our out over should so some such than that the their them then there these they this those through "
    "to up use used was we were what when where which while who will with would you your".split()
)
_VERSION = re.compile(r"[\x21-\x7e]{1,200}")  # what a storage version looks like: one word of visible ASCII
_SPACES = re.compile(r"\s+")
_NOT_SPACE = re.compile(r"\S")
_ALNUM_RUN = re.compile(r"[a-z0-9]*")


def _analyser() -> tantivy.TextAnalyzer:
    return (
        tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple())
        .filter(tantivy.Filter.remove_long(40))
        .filter(tantivy.Filter.lowercase())
        .filter(tantivy.Filter.ascii_fold())
        .build()
    )


def _schema() -> tantivy.Schema:
    builder = tantivy.SchemaBuilder()
    builder.add_text_field("slug", stored=True, tokenizer_name="raw")
    builder.add_text_field("namespace", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("tag", tokenizer_name="raw", index_option="basic")
    builder.add_text_field("title", stored=True, tokenizer_name=ANALYSER)
    builder.add_text_field("body", stored=True, tokenizer_name=ANALYSER)
    builder.add_text_field("tags", stored=True, tokenizer_name=ANALYSER)
    builder.add_text_field("hash", stored=True, tokenizer_name="raw", index_option="basic")
    builder.add_text_field("author", tokenizer_name="raw", index_option="basic")
    builder.add_float_field("changed", indexed=True, fast=True)
    builder.add_text_field("stems", tokenizer_name=ANALYSER)  # title, body and tags, each word stemmed (hostcore.stem)
    builder.add_text_field("pairs", tokenizer_name="whitespace", index_option="basic")  # the body's common words and their neighbours: see _phrase
    return builder.build()


def _version_in(data: bytes) -> str | None:
    """The storage version a version file holds; None when it holds none (damaged)."""
    text = data.decode("ascii", "replace").strip()
    return text if _VERSION.fullmatch(text) else None


def _stat(path: Path) -> tuple[int, int, int, int] | None:
    """Which file or folder is at ``path`` and when it last changed; None when there is none."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return st.st_dev, st.st_ino, st.st_ctime_ns, st.st_mtime_ns


def _finish_merges(writer: tantivy.IndexWriter, lock: FileLock) -> None:
    try:
        writer.wait_merging_threads()
    except Exception:  # the index stays valid; the next commit merges again
        log.warning("tantivy: a segment merge failed", exc_info=True)
    finally:
        lock.__exit__(None, None, None)


class TantivySearch(SearchBackend):
    """Full-text search over title, body and tags; the best match first, title matches boosted.

    Query syntax: :mod:`hostcore.domain.query`, shared by every hostcore search backend.
    """

    name = "tantivy"

    def __init__(self, root: Path, config: Mapping[str, Any] | None = None) -> None:
        super().__init__(root, config)
        self.root.mkdir(parents=True, exist_ok=True)
        self._folder = self.root / f"tantivy-v{FORMAT}"
        self._lock_path = self.root / "tantivy.lock"
        self._version_path = self.root / f"tantivy-v{FORMAT}.storage-version"
        self._schema = _schema()
        self._analyser = _analyser()
        self._merges: threading.Thread | None = None
        self._opened: tuple[int, ...] | None = None
        with FileLock(self._lock_path):
            self._open()

    def _open(self, damage: Exception | None = None) -> None:
        """Open the index folder (under the lock); a damaged one is set aside and started anew.

        ``damage``: what a search met in the folder opened before, set aside unless another
        process has done so already.
        """
        self._folder.mkdir(exist_ok=True)
        if damage is not None and file_id(self._folder) == self._opened:
            self._set_aside(damage)
        try:
            index = tantivy.Index(self._schema, path=str(self._folder), reuse=True)
        except ValueError as exc:  # damaged files (tantivy checks their footers) or another schema
            self._set_aside(exc)
            index = tantivy.Index(self._schema, path=str(self._folder), reuse=True)
        index.register_tokenizer(ANALYSER, self._analyser)
        index.config_reader(reload_policy="manual")
        self._index, self._opened, self._loaded_meta = index, file_id(self._folder), b""

    def _reopen(self) -> bool:
        """Open the folder anew (under the lock): it is not the one opened. True when its files
        went missing (deleted while the wiki ran, not set aside by a process that found them
        damaged: that one marks the rebuild first), so it is started anew and rebuilt."""
        lost = not (self._folder / "meta.json").exists() and not self.rebuild.pending
        if lost:
            self._set_aside(f"{self._folder / 'meta.json'} went missing", self.rebuild.MISSING)
        self._open()
        return lost

    def _set_aside(self, problem: Exception | str, reason: str = "") -> None:
        """Set the folder aside (what is left of it) and start anew, marked as being rebuilt from
        storage: marked first, so a process that finds the folder replaced meanwhile knows why."""
        self.rebuild.mark(reason)
        if self._folder.exists():
            set_aside(self._folder, "search index", str(problem))
        else:
            log.warning("search index: %s; rebuilding it from storage", problem)
        self._version_path.unlink(missing_ok=True)  # the new, empty index reflects no storage version
        self._folder.mkdir(exist_ok=True)
        self.rebuild.resume()

    def _recover(self, exc: ValueError) -> Exception:
        """What to raise for ``exc``, an error reading the index: damage found in the files
        (checked only when read) sets the folder aside and says the index is being rebuilt."""
        if not str(exc).startswith(_DAMAGE):
            return exc
        with FileLock(self._lock_path):
            self._open(damage=exc)
        return self.rebuild.error()

    # writing

    def update(self, docs: Sequence[SearchDoc] = (), removed: Sequence[str] = ()) -> None:
        if docs or removed:
            self._write(docs, removed, clear=False)

    def clear(self) -> None:
        self._version_path.unlink(missing_ok=True)
        self._write((), (), clear=True)

    def storage_version(self) -> str | None:
        """None when unknown: no file, or one that holds no version (damaged: set aside, so the
        host compares the index with storage, once)."""
        try:
            version = _version_in(self._version_path.read_bytes())
        except FileNotFoundError:
            return None
        if version is None:
            with FileLock(self._lock_path):  # one process sets it aside
                try:
                    version = _version_in(self._version_path.read_bytes())
                except FileNotFoundError:
                    return None
                if version is None:
                    set_aside(self._version_path, "search index", "it holds no storage version",
                              then="comparing the index with storage")  # fmt: skip
        return version

    def identity(self) -> object:
        """The folder and the version file (replaced by every new version, rewritten by nothing
        else): another folder, or a version file deleted, replaced or written over, changes it."""
        return _stat(self._folder), _stat(self._version_path)

    def set_storage_version(self, version: str | None) -> None:
        """Kept in a small file beside the index, replaced atomically."""
        if version is None:
            self._version_path.unlink(missing_ok=True)
            return
        partial = self._version_path.with_name(f"{self._version_path.name}.{os.getpid()}.{threading.get_ident()}")
        partial.write_text(version)
        os.replace(partial, self._version_path)
        drop_older_formats(self.root, "tantivy-v", FORMAT)  # this format reflects storage: an older one is dead weight

    def _write(self, docs: Sequence[SearchDoc], removed: Sequence[str], *, clear: bool) -> None:
        lock = FileLock(self._lock_path)
        lock.__enter__()  # released by _finish_merges once merges started by this commit are done
        try:
            if file_id(self._folder) != self._opened:  # set aside by another process, or deleted
                self._reopen()
            writer = self._commit(docs, removed, clear=clear)
        except BaseException:
            lock.__exit__(None, None, None)
            raise
        self._merges = threading.Thread(target=_finish_merges, args=(writer, lock), name="tantivy-merge", daemon=True)
        self._merges.start()

    def _commit(self, docs: Sequence[SearchDoc], removed: Sequence[str], *, clear: bool) -> tantivy.IndexWriter:
        """One commit (under the lock); returns its writer, whose merges may still run.

        A writer killed mid-commit (a worker's SIGKILL) leaves files that the same commit makes
        again (``FileAlreadyExists``): they are garbage collected and the commit made once more.
        Damage met on the way sets the folder aside (Unavailable: it is rebuilt)."""
        for attempt in range(3):
            try:
                writer = self._writer(len(docs))
            except ValueError as exc:
                if not str(exc).startswith(_DAMAGE):
                    raise
                self._open(damage=exc)
                raise self.rebuild.error() from exc
            try:
                if clear:
                    writer.delete_all_documents()
                for slug in removed:
                    writer.delete_documents_by_term("slug", slug)
                for doc in docs:
                    writer.delete_documents_by_term("slug", doc.slug)
                    writer.add_document(self._document(doc))
                writer.commit()
                return writer
            except BaseException as exc:
                writer.rollback()
                left = attempt < 2 and isinstance(exc, ValueError) and _LEFT_OVER in str(exc)
                if left:
                    writer.garbage_collect_files()
                    self._remove_left_over(str(exc))
                writer.wait_merging_threads()
                if left:
                    log.warning("search index: %s: left by a writer stopped mid-commit; removed, committing again", exc)
                    continue
                if isinstance(exc, ValueError) and str(exc).startswith(_DAMAGE):
                    self._open(damage=exc)
                    raise self.rebuild.error() from exc
                raise
        raise AssertionError("unreachable")

    def _remove_left_over(self, message: str) -> None:
        """Remove the file a ``FileAlreadyExists`` names when no commit refers to it: tantivy's
        garbage collection can keep it (a commit's file names repeat at the same opstamp), and
        the retried commit would meet it again. Called under the lock, after the rollback."""
        found = re.search(r'FileAlreadyExists\("([0-9a-f]{32})\.([^"/]+)"\)', message)
        if found is None:
            return
        segment, rest = found.groups()
        meta = (self._folder / "meta.json").read_text(errors="replace")
        if rest.endswith(".del") and segment in meta.replace("-", ""):  # a live segment: only an older .del is referenced
            referenced = re.search(rf'"{re.escape(segment)}".{{0,400}}?"opstamp":\s*{re.escape(rest[:-4])}\b', meta.replace("-", ""), re.S)
            if referenced:
                return
        elif segment in meta.replace("-", ""):
            return
        (self._folder / f"{segment}.{rest}").unlink(missing_ok=True)

    def _writer(self, batch: int) -> tantivy.IndexWriter:
        """A writer; tantivy's own lock can only be busy if something outside hostcore holds it."""
        big = batch > 200
        for attempt in range(100):
            try:
                if big:
                    return self._index.writer(heap_size=256_000_000, num_threads=0)
                return self._index.writer(heap_size=20_000_000, num_threads=1)
            except ValueError as exc:
                if "lock" not in str(exc).lower():
                    raise
                time.sleep(min(0.01 * (attempt + 1), 0.2))
        raise Unavailable("the search index stays locked by another program; try again later")

    def _document(self, doc: SearchDoc) -> tantivy.Document:
        out = tantivy.Document()
        out.add_text("slug", doc.slug)
        out.add_text("namespace", doc.namespace)
        out.add_text("title", doc.title)
        out.add_text("body", doc.body)
        out.add_text("hash", doc.hash)
        for tag in doc.tags:
            out.add_text("tags", tag)
            out.add_text("tag", tag.lower())
        if doc.author:
            out.add_text("author", doc.author.lower())
        if doc.changed is not None:
            out.add_float("changed", float(doc.changed))
        body = self._analyser.analyze(doc.body)
        words = [*self._analyser.analyze("\n".join([doc.title, *doc.tags])), *body]
        out.add_text("stems", " ".join(stem(word) for word in words))
        out.add_text("pairs", " ".join(dict.fromkeys(_pairs(body))))
        return out

    # reading

    def _searcher(self) -> tantivy.Searcher:
        """A searcher that sees every commit made before this call, by any process.

        Files found missing or damaged set the folder aside (Unavailable: it is rebuilt); a
        reload that fails while a commit or merge of another process removes files is tried again,
        and once more under the lock, where none runs: failing then, the files are damaged."""
        if file_id(self._folder) != self._opened:  # set aside by another process, or deleted
            with FileLock(self._lock_path):
                if self._reopen():
                    raise self.rebuild.error()
        for attempt in range(20):
            try:
                meta = (self._folder / "meta.json").read_bytes()
            except FileNotFoundError:
                with FileLock(self._lock_path):
                    self._reopen()
                raise self.rebuild.error() from None
            if meta == self._loaded_meta:
                return self._index.searcher()
            try:
                self._index.reload()
            except ValueError as exc:
                if str(exc).startswith(_CORRUPT):
                    raise self._recover(exc) from exc
                time.sleep(0.002 * attempt)  # a concurrent merge removed files of the meta we read: read it again
                continue
            self._loaded_meta = meta
            return self._index.searcher()
        with FileLock(self._lock_path):
            try:
                meta = (self._folder / "meta.json").read_bytes()
                self._index.reload()
            except (OSError, ValueError) as exc:
                self._open(damage=exc)
                raise self.rebuild.error() from exc
        self._loaded_meta = meta
        return self._index.searcher()

    def search(
        self, query: str, *, namespaces: Collection[str] | None, offset: int = 0, limit: int = 20,
        filters: SearchFilters = NO_FILTERS,
    ) -> SearchResults:
        return self.ranked(query, namespaces=namespaces, offset=offset, limit=limit, marked=limit, filters=filters)

    def ranked(
        self, query: str, *, namespaces: Collection[str] | None, offset: int = 0, limit: int, marked: int,
        filters: SearchFilters = NO_FILTERS,
    ) -> SearchResults:
        if offset < 0:
            raise ValidationError("must be 0 or more", field="offset")
        if not 1 <= limit <= MAX_LIMIT:
            raise ValidationError(f"must be between 1 and {MAX_LIMIT}", field="limit")
        node = parse_query(query, self._analyser.analyze)
        if namespaces is not None and not namespaces:
            return SearchResults([], False)
        searcher = self._searcher()
        compiled = self._compile(node)
        if namespaces is not None:
            only = Query.term_set_query(self._schema, "namespace", sorted(namespaces))
            compiled = Query.boolean_query([(Occur.Must, compiled), (Occur.Must, Query.const_score_query(only, 0.0))])
        if filters:
            compiled = Query.boolean_query([(Occur.Must, compiled), *((Occur.Must, q) for q in self._filters(filters))])
        try:
            found = searcher.search(compiled, limit=limit + 1, offset=offset, count=False).hits
            marker = _Marker(self, searcher, node)
            hits = [marker.hit(score, searcher.doc(address), marked=i < marked) for i, (score, address) in enumerate(found[:limit])]
        except ValueError as exc:
            raise self._recover(exc) from exc
        return SearchResults(hits, len(found) > limit)

    def documents(self, slugs: Sequence[str]) -> dict[str, SearchDoc]:
        wanted = sorted(set(slugs))
        if not wanted:
            return {}
        searcher = self._searcher()
        try:
            found = searcher.search(Query.term_set_query(self._schema, "slug", wanted), limit=len(wanted), count=False).hits
            stored = [searcher.doc(address) for _, address in found]
        except ValueError as exc:
            raise self._recover(exc) from exc
        docs = (
            SearchDoc(
                str(doc.get_first("slug")), doc.get_first("title") or "", doc.get_first("body") or "", tuple(doc.get_all("tags")),
                doc.get_first("hash") or "",
            )
            for doc in stored
        )
        return {doc.slug: doc for doc in docs}

    def _filters(self, filters: SearchFilters) -> list[Query]:
        """What pages passing ``filters`` match, scoring nothing."""
        schema, out = self._schema, []
        for tag in sorted(set(filters.tags)):
            out.append(Query.term_query(schema, "tag", tag.lower()))
        if filters.author is not None:
            out.append(Query.term_query(schema, "author", filters.author.lower()))
        if filters.since is not None or filters.before is not None:
            out.append(Query.range_query(schema, "changed", tantivy.FieldType.Float, filters.since, filters.before,
                                         include_upper=filters.before is None))  # fmt: skip
        return [Query.const_score_query(q, 0.0) for q in out]

    def _compile(self, node: QueryNode) -> Query:
        schema = self._schema
        if isinstance(node, Term):
            if node.prefix:
                return self._any_field(lambda f: Query.phrase_prefix_query(schema, f, [node.text]))
            # one flat disjunction: tantivy scores it in half the time of the same clauses nested
            exact = self._fields(lambda f: Query.term_query(schema, f, node.text))
            inflected = Query.boost_query(Query.term_query(schema, "stems", stem(node.text)), STEMS_BOOST)
            return Query.boolean_query([*exact, (Occur.Should, inflected)])
        if isinstance(node, Phrase):
            words: list[str | tuple[int, str]] = list(node.words)
            if node.prefix:
                return self._any_field(lambda f: Query.phrase_prefix_query(schema, f, words))
            return self._any_field(lambda f: self._phrase(f, node.words))
        if isinstance(node, Tag):
            return Query.const_score_query(Query.term_query(schema, "tag", node.name), 0.0)
        if isinstance(node, Not):
            return Query.boolean_query([(Occur.Must, Query.all_query()), (Occur.MustNot, self._compile(node.node))])
        if isinstance(node, And):
            return Query.boolean_query(
                [
                    (Occur.MustNot, self._compile(n.node)) if isinstance(n, Not) else (Occur.Must, self._compile(n))
                    for n in node.nodes
                ]
            )
        return Query.boolean_query([(Occur.Should, self._compile(n)) for n in node.nodes])

    def _phrase(self, field: str, words: Sequence[str]) -> Query:
        """The pages whose ``field`` holds ``words`` in a row. In the body, a phrase with a common
        word looks only at the pages holding it beside its neighbour (a term each in ``pairs``,
        scoring nothing): "and design" checks the positions of far fewer pages than hold both
        words, in a tenth of the time; the phrase itself decides and scores as before."""
        phrase = Query.phrase_query(self._schema, field, list(words))
        pairs = dict.fromkeys(_pairs(words)) if field == "body" else {}
        if not pairs:
            return phrase
        held = [(Occur.Must, Query.const_score_query(Query.term_query(self._schema, "pairs", pair), 0.0)) for pair in pairs]
        return Query.boolean_query([*held, (Occur.Must, phrase)])

    @classmethod
    def _any_field(cls, make: Any) -> Query:
        return Query.boolean_query(cls._fields(make))

    @staticmethod
    def _fields(make: Any) -> list[tuple[Occur, Query]]:
        """``make(field)`` for the title, the body and the tags, each with its weight, any of them."""
        return [
            (Occur.Should, Query.boost_query(make("title"), TITLE_BOOST)),
            (Occur.Should, make("body")),
            (Occur.Should, Query.boost_query(make("tags"), TAGS_BOOST)),
        ]

    def hashes(self) -> dict[str, str]:
        searcher = self._searcher()
        if not searcher.num_docs:
            return {}
        out: dict[str, str] = {}
        try:
            for _score, address in searcher.search(Query.all_query(), limit=searcher.num_docs, count=False).hits:
                doc = searcher.doc(address)
                out[str(doc.get_first("slug"))] = str(doc.get_first("hash"))
        except ValueError as exc:
            raise self._recover(exc) from exc
        return out

    def close(self) -> None:
        if self._merges is not None:
            self._merges.join()
            self._merges = None


class _Marker:
    """Builds escaped snippets with ``<mark>`` around the words one search looked for."""

    def __init__(self, backend: TantivySearch, searcher: tantivy.Searcher, node: QueryNode) -> None:
        self.backend = backend
        self.words: set[str] = set()
        self.prefixes: list[str] = []
        expanded: set[str] = set()
        for leaf in positive_leaves(node):
            words = [leaf.text] if isinstance(leaf, Term) else list(leaf.words)
            if leaf.prefix:
                self.prefixes.append(words.pop())
                for term, _count in searcher.terms_with_prefix("body", self.prefixes[-1], limit=PREFIX_MARKS):
                    expanded.add(term)
            elif isinstance(leaf, Term):  # the other forms of the word the body holds
                root = stem(leaf.text)
                for term, _count in searcher.terms_with_prefix("body", root[:-1] if len(root) > 3 else root, limit=PREFIX_MARKS * 4):
                    if stem(term) == root:
                        expanded.add(term)
                        self.words.add(term)
            self.words.update(words)
        self._searcher, self._terms = searcher, sorted(self.words | expanded)
        self._generator: tantivy.SnippetGenerator | None = None  # made for the first body not plain ASCII
        # In plain ASCII the analyser's tokens are the runs of letters and digits, lowercased: a
        # word it found is one of these, whole (a prefix: the start of one), in the body lowercased.
        self._needles = [(w, False) for w in sorted(self.words) if w.isascii() and w]
        self._needles += [(p, True) for p in self.prefixes if p.isascii() and p]

    def hit(self, score: float, doc: tantivy.Document, *, marked: bool = True) -> SearchHit:
        title = doc.get_first("title") or ""
        return SearchHit(
            slug=str(doc.get_first("slug")),
            title=title,
            tags=tuple(doc.get_all("tags")),
            snippet=self.snippet(doc, title, doc.get_first("body") or "") if marked else "",
            score=float(score),
        )

    def snippet(self, doc: tantivy.Document, title: str, body: str) -> str:
        found = self._window(body) if body.isascii() else self._generated(doc, body)
        if found:
            return found
        marks = [
            (t.char_offset_from, t.char_offset_to)
            for t in self.backend._analyser.pre_tokenize(title).tokens
            if t.text in self.words or t.text.startswith(tuple(self.prefixes))
        ]
        if marks:
            return _marked(title, marks)
        excerpt = " ".join(body[: SNIPPET_CHARS * 2].split())
        return html.escape(excerpt[:SNIPPET_CHARS]) + (" …" if len(excerpt) > SNIPPET_CHARS else "")

    def _window(self, body: str) -> str | None:
        """The marked snippet of a plain ASCII ``body``: the SNIPPET_CHARS that hold the most of
        the words looked for (then the most marks; the first such), opening a few words before
        the first (more near the body's end) and ending between two words; None when it holds
        none of them.

        It marks what tantivy's snippet generator would mark in such a body, at a fraction of the
        cost (the generator analyses the whole body again for every hit)."""
        spans = self._spans(body)
        if not spans:
            return None
        best, most, reach = 0, (0, 0), spans[0][1]
        held: dict[str, int] = {}  # the words of spans[i:j], each with its count
        j = 0
        for i, (first, _end, _word) in enumerate(spans):  # each span opening a window: the spans it holds
            while j < len(spans) and (j <= i or spans[j][1] - first <= SNIPPET_CHARS):
                held[spans[j][2]] = held.get(spans[j][2], 0) + 1
                j += 1
            if (len(held), j - i) > most:
                best, most, reach = i, (len(held), j - i), spans[j - 1][1]
            word = spans[i][2]
            held[word] -= 1
            if not held[word]:
                del held[word]
        first = spans[best][0]
        start = 0
        # before the first mark: a few words, or what the body's end leaves room for; never so
        # many that a mark of the window falls out of it
        lead = max(0, min(SNIPPET_CHARS - (reach - first), max(LEAD_CHARS, SNIPPET_CHARS - (len(body) - first))))
        if first > lead:
            gap = _SPACES.search(body, first - lead, first)
            start = gap.end() if gap is not None else first
        end = min(len(body), start + SNIPPET_CHARS)
        if end < len(body) and not (body[end].isspace() or body[end - 1].isspace()):  # in a word: end before it
            last = max((e for s, e, _w in spans if s >= start and e <= end), default=start)
            cut = end - 1
            while cut > last and not body[cut].isspace():
                cut -= 1
            end = cut if cut > last else end  # the last break after the last mark that fits
        marks = [(s - start, e - start) for s, e, _w in spans if s >= start and e <= end]
        opening = "… " if start > 0 else ""
        tail = " …" if _NOT_SPACE.search(body, end) is not None else ""
        return opening + _marked(body[start:end], marks) + tail

    def _spans(self, body: str) -> list[tuple[int, int, str]]:
        """(start, end, word) of the tokens of a plain ASCII ``body`` that are a word looked for or
        begin with a prefix looked for (the first MAX_MARKS of each), in order (``str.find``: a scan in C
        per word, several times faster than tantivy's snippet generator or a regular expression)."""
        low = body.lower()
        found: list[tuple[int, int, str]] = []
        for needle, prefix in self._needles:
            at, taken = low.find(needle), 0
            while at >= 0 and taken < MAX_MARKS:
                end = at + len(needle)
                if at == 0 or not low[at - 1].isalnum():
                    if prefix:
                        end = _ALNUM_RUN.match(low, end).end()  # type: ignore[union-attr]  # it matches the empty run
                    if end == len(low) or not low[end].isalnum():
                        found.append((at, end, low[at:end]))
                        taken += 1
                at = low.find(needle, at + 1)
        found.sort(key=lambda span: (span[0], -span[1]))
        spans: list[tuple[int, int, str]] = []
        for span in found:  # a word and a prefix may both find a token: once
            if not spans or span[0] >= spans[-1][1]:
                spans.append(span)
        return spans

    def _generated(self, doc: tantivy.Document, body: str) -> str | None:
        """The marked snippet tantivy's snippet generator makes of ``doc`` (a body not plain
        ASCII: its analyser folds accents, ``Crème`` is ``creme``); None when it marks nothing."""
        if not self._terms:
            return None
        if self._generator is None:
            schema = self.backend._schema
            query = Query.boolean_query([(Occur.Should, Query.term_query(schema, "body", t)) for t in self._terms])
            self._generator = tantivy.SnippetGenerator.create(self._searcher, query, schema, "body")
            self._generator.set_max_num_chars(SNIPPET_CHARS)
        snippet = self._generator.snippet_from_doc(doc)
        ranges = [(r.start, r.end) for r in snippet.highlighted()]
        if not ranges:
            return None
        whole = snippet.fragment_range()
        lead = "… " if whole.start > 0 else ""
        tail = " …" if whole.end < len(body.encode()) else ""
        return lead + _marked(snippet.fragment().encode(), ranges) + tail


def _pairs(words: Sequence[str]) -> list[str]:
    """Each word that is or meets a common word joined to the next (``pairs``' terms; the
    analyser's words hold no ``_``). Pairs of other words are not indexed: a phrase of them is
    fast without (few pages hold both), and they made the index about a quarter bigger."""
    return [f"{a}_{b}" for a, b in pairwise(words) if a in COMMON_WORDS or b in COMMON_WORDS]


def _marked(text: str | bytes, ranges: list[tuple[int, int]]) -> str:
    """Escape every piece of ``text`` and wrap ``ranges`` (offsets into ``text``) in ``<mark>``;
    each run of white space one space, none at either end (once, over the whole: neither a mark nor an
    escape holds any)."""

    def piece(start: int, end: int) -> str:
        part = text[start:end]
        return html.escape(part.decode() if isinstance(part, bytes) else part)

    out, pos = [], 0
    for start, end in sorted(ranges):
        if start < pos:
            continue
        out += [piece(pos, start), "<mark>", piece(start, end), "</mark>"]
        pos = end
    out.append(piece(pos, len(text)))
    return " ".join("".join(out).split())  # what a regular expression does, several times faster


@hookimpl
def register_search_backends(register: Any) -> None:
    register(TantivySearch)
