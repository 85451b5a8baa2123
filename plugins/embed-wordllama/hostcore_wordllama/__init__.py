"""The default embedder: WordLlama's ``l2_supercat`` 256-dimension static model, offline.

Enable with ``PLUGINS = [..., "wordllama"]`` and ``EMBEDDER = "wordllama"`` (``hostcore init``
does both). The model's weights (16 MB) and tokenizer come inside the ``wordllama`` wheel and are
read from there; nothing is fetched at run time. (``WordLlama.load()`` looks for the tokenizer
in a folder the wheel does not have and would then try to download it, so the files are opened
directly.) A static model embeds by averaging token vectors, cheap enough for a background
thread on one core and for a query's vector while the caller waits (``bench/document_search.py``
measures both).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from hostcore import Embedder, StartupError, Vectors, hookimpl, unit_rows

WEIGHTS = "weights/l2_supercat_256.safetensors"
TOKENIZER = "tokenizers/l2_supercat_tokenizer_config.json"

_model: Any = None
_loading = threading.Lock()


def load_model() -> Any:
    """The WordLlama model of this process, loaded from the wheel's files on first use."""
    global _model
    with _loading:
        if _model is None:
            from safetensors import safe_open
            from tokenizers import Tokenizer

            wordllama = _import_wordllama()
            root = Path(wordllama.__file__).parent
            missing = [name for name in (WEIGHTS, TOKENIZER) if not (root / name).exists()]
            if missing:
                raise StartupError(
                    f"the wordllama package at {root} lacks {', '.join(missing)}; install the version "
                    "hostcore-embed-wordllama names (pip install 'wordllama==0.4.0.post1')"
                )
            with safe_open(str(root / WEIGHTS), framework="np", device="cpu") as f:
                weights = f.get_tensor("embedding.weight")
            _model = wordllama.inference.WordLlamaInference(weights, Tokenizer.from_file(str(root / TOKENIZER)))
    return _model


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
        load_model()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return unit_rows(np.zeros((0, self.dimensions)))
        return unit_rows(load_model().embed(list(texts), norm=False))


@hookimpl
def register_embedders(register: Callable[[type], None]) -> None:
    register(WordLlamaEmbedder)
