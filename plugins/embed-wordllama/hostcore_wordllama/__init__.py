"""The default embedder: WordLlama's ``l2_supercat`` 256-dimension static model, offline.

Enable with ``PLUGINS = [..., "wordllama"]`` and ``EMBEDDER = "wordllama"`` (``hostcore init``
does both). The model's weights (16 MB) and tokenizer come inside the ``wordllama`` wheel and are
read from there; nothing is fetched at run time. (``WordLlama.load()`` looks for the tokenizer
in a folder the wheel does not have and would then try to download it, so the files are opened
directly.) A static model embeds by averaging token vectors: about 600 passages of 600
characters a second on one core, a query in well under a millisecond.
"""

from __future__ import annotations

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
            import wordllama
            from safetensors import safe_open
            from tokenizers import Tokenizer
            from wordllama.inference import WordLlamaInference

            root = Path(wordllama.__file__).parent
            missing = [name for name in (WEIGHTS, TOKENIZER) if not (root / name).exists()]
            if missing:
                raise StartupError(
                    f"the wordllama package at {root} lacks {', '.join(missing)}; install the version "
                    "hostcore-embed-wordllama names (pip install 'wordllama==0.4.0.post1')"
                )
            with safe_open(str(root / WEIGHTS), framework="np", device="cpu") as f:
                weights = f.get_tensor("embedding.weight")
            _model = WordLlamaInference(weights, Tokenizer.from_file(str(root / TOKENIZER)))
    return _model


class WordLlamaEmbedder(Embedder):
    name = "wordllama"
    dimensions = 256
    relevant = 0.2  # unrelated queries peak at 0.09-0.19 on bench/labelled_set.py; paraphrases median 0.35

    def load(self) -> None:
        load_model()

    def embed(self, texts: Sequence[str]) -> Vectors:
        if not texts:
            return unit_rows(np.zeros((0, self.dimensions)))
        return unit_rows(load_model().embed(list(texts), norm=False))


@hookimpl
def register_embedders(register: Callable[[type], None]) -> None:
    register(WordLlamaEmbedder)
