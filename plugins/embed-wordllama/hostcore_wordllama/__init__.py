"""The default embedder: WordLlama's ``l2_supercat`` 256-dimension static model, offline.

Enable with ``PLUGINS = [..., "wordllama"]`` and ``EMBEDDER = "wordllama"`` (``hostcore init``
does both). The model's weights (16 MB, float16) and tokenizer come inside the ``wordllama`` wheel
and are read from there, the weights memory-mapped as stored (:func:`mapped_table`), so every
worker shares one copy; nothing is fetched at run time. (``WordLlama.load()`` looks for the tokenizer
in a folder the wheel does not have and would then try to download it, so the files are opened
directly.) A static model embeds by averaging token vectors, cheap enough for a background
thread on one core and for a query's vector while the caller waits (``bench/document_search.py``
and ``bench/passage_catch_up.py`` measure both).

The tokenizer is a SentencePiece BPE without a pre-tokenizer: asked for a passage, it merges over
the whole passage at once, which cost most of the embedding (bench/passage_catch_up.py). Its
merges never cross a space, so each space-separated word is tokenized alone here, once per
process (:class:`Words`), and a passage's vector is the mean of its words' token vectors: the same
tokens, hence the same vector (texts of spaces only aside), at a fraction of the cost. WordLlama's
own model object (:func:`load_model`) is never built to embed: it holds a float32 copy of the table.

A text's vector sums its tokens' rows of the table, which the wheel stores as float16: numpy adds
float16 rows converting each number in software, which cost more than half of the embedding. So
the table is read as float32 from a file the plugin derives once in the instance folder
(:data:`TABLE_FILE`, 32 MB, memory-mapped: the page cache holds it once for every worker), checked
against the wheel's at each load and written again when missing or different (:func:`float32_table`);
on a disk with less than :data:`ROOM` times its size free it is not written, and the process keeps
the table in its memory.
Words new to a process are tokenized one by one: the tokenizer's batch call spreads a handful of
words over threads that then spin, using a core beside the embedding for nothing.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from hostcore import Embedder, StartupError, Vectors, disk_full, hookimpl, unit_rows

WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"
BATCH = 256  # texts embedded at once
TABLE_FILE = "wordllama.table.npy"  # in the instance folder: the table as float32 (see the module's docstring)
ROWS_AT_ONCE = 2048  # rows of the table converted or compared at once (a few MB of floats)
ROOM = 4  # the table is written only to a disk with this many times its size free: the wiki's own writes come first

log = logging.getLogger("hostcore.wordllama")
_model: Any = None
_words: Words | None = None
_loading = threading.Lock()
_PIECE = re.compile(r" *[^ ]+| +$")
INSTALL = "install the version hostcore-embed-wordllama names (pip install 'wordllama==0.4.0.post1')"
MAX_WORDS = 50_000  # words whose tokens a process keeps (a few MB); past it the cache starts again


def model_folder() -> Path:
    """The ``wordllama`` package's folder, checked to hold the model's files: found, not imported
    (importing it lengthened each worker's start; only :func:`load_model` needs the package's code)."""
    spec = importlib.util.find_spec("wordllama")
    if spec is None or spec.origin is None:
        raise StartupError(f"the wordllama package is not installed; {INSTALL}")
    root = Path(spec.origin).parent
    missing = [name for name in (WEIGHTS, TOKENIZER) if not (root / name).exists()]
    if missing:
        raise StartupError(f"the wordllama package at {root} lacks {', '.join(missing)}; {INSTALL}")
    return root


def load_model() -> Any:
    """WordLlama's own model object of this process (what :class:`Words` gives the same vectors as),
    loaded from the wheel's files on first use."""
    global _model
    with _loading:
        if _model is None:
            from safetensors import safe_open
            from tokenizers import Tokenizer

            root = model_folder()
            with safe_open(str(root / WEIGHTS), framework="np", device="cpu") as f:
                weights = f.get_tensor("embedding.weight")
            _model = _import_wordllama().inference.WordLlamaInference(weights, Tokenizer.from_file(str(root / TOKENIZER)))
    return _model


def mapped_table(path: Path, name: str = "embedding.weight") -> npt.NDArray[Any]:
    """The tensor ``name`` of the safetensors file ``path``, memory-mapped read-only as stored
    (float16 here): the page cache holds it once for every worker, where a float32 copy cost
    each worker twice the file."""
    with open(path, "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
    entry = header[name]
    first = entry["data_offsets"][0]
    dtype = np.dtype({"F16": "<f2", "F32": "<f4"}[entry["dtype"]])
    return np.memmap(path, dtype=dtype, mode="r", offset=8 + size + first, shape=tuple(entry["shape"]))


def float32_table(source: npt.NDArray[Any], path: Path | None) -> npt.NDArray[np.float32]:
    """``source`` as float32: memory-mapped from the ``.npy`` file ``path`` when it holds exactly
    that, else written there first (to a file beside it, then renamed over it: a process that
    mapped the old one keeps reading it whole); in this process's memory when ``path`` is None or
    cannot take it (too little room, an unwritable folder)."""
    found = _mapped(path, source) if path is not None else None
    if found is None and path is not None and _write(path, source):
        found = np.load(path, mmap_mode="r")
    return found if found is not None else np.asarray(source, dtype=np.float32)


def _mapped(path: Path, source: npt.NDArray[Any]) -> npt.NDArray[np.float32] | None:
    """``path`` memory-mapped when it holds ``source`` as float32; None when it does not (a damaged
    or different file is warned about)."""
    try:
        found = np.load(path, mmap_mode="r")
        if found.dtype == np.float32 and found.shape == source.shape and _same(found, source):
            return found
        log.warning("wordllama: %s is not the model's table; writing it again", path)
    except FileNotFoundError:
        pass
    except (OSError, ValueError) as exc:  # damaged: not an .npy file, or cut short
        log.warning("wordllama: %s is unreadable (%s); writing it again", path, exc)
    return None


def _write(path: Path, source: npt.NDArray[Any]) -> bool:
    """Write ``source`` as float32 to ``path``; False (warned about) where the disk has less than
    ``ROOM`` times its size free or the write fails: the wiki's own files come first."""
    size = 4 * source.size
    if disk_full(path.parent, ROOM * size):
        log.warning("wordllama: %s has less than %d MB free, too little to write %s beside the wiki; this process "
                    "keeps the table in memory", path.parent, ROOM * size // 2**20, path.name)  # fmt: skip
        return False
    partial = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.partial")
    try:
        made = np.lib.format.open_memmap(partial, mode="w+", dtype=np.float32, shape=source.shape)
        for first in range(0, source.shape[0], ROWS_AT_ONCE):
            made[first : first + ROWS_AT_ONCE] = source[first : first + ROWS_AT_ONCE]
        made.flush()
        del made
        os.replace(partial, path)
    except OSError as exc:  # a full disk or a read-only folder
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        log.warning("wordllama: could not write %s (%s); this process keeps the table in memory", path, exc)
        return False
    return True


def _same(found: npt.NDArray[Any], source: npt.NDArray[Any]) -> bool:
    """Whether every row of ``found`` is ``source``'s as float32, compared a slice at a time."""
    return all(
        np.array_equal(found[first : first + ROWS_AT_ONCE], source[first : first + ROWS_AT_ONCE].astype(np.float32))
        for first in range(0, source.shape[0], ROWS_AT_ONCE)
    )


class Words:
    """The token ids of each space-separated word, tokenized once (see the module's docstring),
    and the sum of a text's token vectors from them, from the table as float32 kept in ``folder``
    (None: in this process's memory)."""

    def __init__(self, limit: int = MAX_WORDS, folder: Path | None = None) -> None:
        from tokenizers import Tokenizer

        root = model_folder()
        self.tokenizer = Tokenizer.from_file(str(root / TOKENIZER))
        self.table = float32_table(mapped_table(root / WEIGHTS), folder / TABLE_FILE if folder is not None else None)
        self.limit = limit
        self.clip = self.tokenizer.get_vocab_size() > self.table.shape[0]
        self.ids: dict[str, list[int]] = {}
        self._space = self.tokenizer.token_to_id("\u2581")  # a lone trailing space: the tokenizer gives nothing for ""
        self._lock = threading.Lock()

    @staticmethod
    def pieces(text: str) -> list[str]:
        """``text`` cut before each word, a word's run of spaces going with it as the tokenizer
        sees them (it turns a space into the ``▁`` mark and puts one before the text): each piece,
        tokenized alone, gives the tokens the whole text gives there."""
        found = _PIECE.findall(text)
        return found[:1] + [piece[1:] for piece in found[1:]]

    def tokens(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids, as the model's tokenizer gives them for the whole text."""
        split = [self.pieces(text) for text in texts]
        with self._lock:
            if len(self.ids) > self.limit or not self.ids:
                self.ids = {"": [self._space] if self._space is not None else []}
            ids = self.ids
            new = list({word for words in split for word in words if word not in ids})
            if new:
                for word in new:  # one by one: see the module's docstring
                    ids[word] = self.tokenizer.encode(word, add_special_tokens=False).ids
            return [[token for word in words for token in ids[word]] for words in split]

    def sums(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The sum of each text's token vectors (zeros for a text without tokens)."""
        out = np.zeros((len(texts), self.table.shape[1]), dtype=np.float32)
        table, rows = self.table, self.table.shape[0]
        for row, tokens in enumerate(self.tokens(texts)):
            if tokens:  # one text at a time: numpy's reduceat over a whole batch was far slower
                ids = np.fromiter(tokens, dtype=np.intp, count=len(tokens))
                if self.clip:  # a token the table has no row for: its last row, as the model does
                    np.minimum(ids, rows - 1, out=ids)
                np.add.reduce(table.take(ids, axis=0), axis=0, out=out[row])
        return out


def words(folder: Path | None = None) -> Words:
    """This process's :class:`Words` over the model, its table kept in ``folder`` when the first
    call names one (every folder would hold the same table)."""
    global _words
    with _loading:
        if _words is None:
            _words = Words(folder=folder)
        return _words


def _import_wordllama() -> Any:
    """The ``wordllama`` package, imported without the ``logging.basicConfig(level=INFO)`` its
    ``inference`` module runs: it gave the root logger a stderr handler at INFO in every worker, so
    every library's INFO lines (the MCP SDK's, once per thread) went to the log unformatted,
    beside gunicorn's. ``basicConfig`` does nothing while the root logger has a handler, so one
    that discards is there during the import (undoing the configuration afterwards left other
    threads' lines of the import's moments going to stderr)."""
    root, placeholder = logging.getLogger(), logging.NullHandler()
    root.addHandler(placeholder)
    try:
        import wordllama
        import wordllama.inference
    finally:
        root.removeHandler(placeholder)
    return wordllama


class WordLlamaEmbedder(Embedder):
    name = "wordllama"
    dimensions = 256
    # The knee of bench/document_search.py's floor table (docs/operators.md, Document search): below
    # it unrelated queries start finding documents; above it paraphrases stop being found.
    relevant = 0.25

    def load(self) -> None:
        words(self.folder)

    def embed(self, texts: Sequence[str]) -> Vectors:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for first in range(0, len(texts), BATCH):  # bounds the token vectors gathered at once
            out[first : first + BATCH] = words(self.folder).sums(texts[first : first + BATCH])
        return unit_rows(out)


@hookimpl
def register_embedders(register: Callable[[type], None]) -> None:
    register(WordLlamaEmbedder)
