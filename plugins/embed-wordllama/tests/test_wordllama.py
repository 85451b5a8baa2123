"""The wordllama embedder: the model's own vectors, each word tokenized once per process."""

from __future__ import annotations

import numpy as np
from hostcore_wordllama import WordLlamaEmbedder, Words, load_model

TEXTS = [
    "Knead the dough for ten minutes, then let it rise somewhere warm until doubled.",
    "Page 12 river\nThe council met on Tuesday.\n\nMinutes: the budget for 2027 (draft) was approved, 7-2.",
    "Ünïcödé naïve café — “quotes”, 12,345.67 m² and a trailing space ",
    "a  b   c",
    " leading space, tabs\tand ▁ the model's own space mark",
    "word",
    "",
]


def test_vectors_are_the_models_own():
    model = load_model()
    expected = model.embed(TEXTS, norm=False)
    norms = np.linalg.norm(expected, axis=1, keepdims=True)
    expected = np.divide(expected, norms, out=np.zeros_like(expected), where=norms > 0)
    got = WordLlamaEmbedder().embed(TEXTS)
    assert got.shape == (len(TEXTS), 256) and got.dtype == np.float32
    assert np.allclose(got, expected, atol=1e-5), np.abs(got - expected).max(axis=1)
    assert not got[-1].any()  # no tokens: a row of zeros


def test_the_table_is_mapped_from_the_wheel_not_copied():
    assert isinstance(Words().table, np.memmap) and Words().table.shape == (32000, 256)


def test_each_word_is_tokenized_once_and_the_cache_is_bounded():
    words = Words(limit=50)
    asked: list[list[str]] = []
    encode = words.tokenizer.encode_batch_fast

    def counted(batch, **kwargs):
        asked.append(list(batch))
        return encode(batch, **kwargs)

    words.tokenizer = type("Counted", (), {"encode_batch_fast": staticmethod(counted)})()
    first = words.tokens(["the cat sat on the mat", "the dog"])
    assert sorted(asked[0]) == ["cat", "dog", "mat", "on", "sat", "the"]
    assert words.tokens(["the cat sat on the mat", "the dog"]) == first and len(asked) == 1
    words.tokens([" ".join(f"w{i}" for i in range(60))])
    words.tokens(["fresh"])
    assert len(words.ids) <= 51  # started again past the limit
