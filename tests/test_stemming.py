"""The English stemmer every search engine indexes and queries with."""

import pytest

from hostcore import stem


@pytest.mark.parametrize(
    ("word", "root"),
    [
        ("automobiles", "automobile"), ("automobile", "automobile"), ("running", "run"), ("runs", "run"),
        ("stopped", "stop"), ("tested", "test"), ("caresses", "caress"), ("ponies", "poni"), ("pony", "poni"),
        ("agreed", "agree"), ("hoping", "hope"), ("hopping", "hop"), ("status", "status"), ("analysis", "analysis"),
        ("organisation", "organisation"), ("sing", "sing"), ("bus", "bus"), ("qx4821", "qx4821"), ("3d", "3d"),
    ],
)  # fmt: skip
def test_inflections_fold_and_derivations_stay(word: str, root: str) -> None:
    assert stem(word) == root


def test_every_form_of_a_word_meets_at_one_stem() -> None:
    assert len({stem(w) for w in ("kitten", "kittens")}) == 1
    assert len({stem(w) for w in ("walk", "walks", "walked", "walking")}) == 1
    assert stem("organ") != stem("organisation")
