"""The wordllama embedder: the model's own vectors, each word tokenized once per process, the
table as float32 in one file of the instance folder."""

from __future__ import annotations

import logging
import os
import shutil

import numpy as np
import pytest
from hostcore_wordllama import TABLE_FILE, WEIGHTS, WordLlamaEmbedder, Words, load_model, mapped_table, model_folder

from hostcore.testing.disks import small_disk

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


def test_vectors_from_the_instance_folders_table_are_the_models_own(tmp_path):
    expected = WordLlamaEmbedder().embed(TEXTS)  # the table in memory
    embedder = WordLlamaEmbedder()
    embedder.folder = tmp_path
    words = Words(folder=tmp_path)
    assert np.array_equal(words.sums(TEXTS), Words().sums(TEXTS))
    assert (tmp_path / TABLE_FILE).exists() and np.allclose(embedder.embed(TEXTS), expected, atol=1e-6)


def test_the_table_is_one_float32_file_every_process_maps(tmp_path):
    wheel = mapped_table(model_folder() / WEIGHTS)
    first = Words(folder=tmp_path).table
    made = os.stat(tmp_path / TABLE_FILE)
    again = Words(folder=tmp_path).table  # another process's start: checked, not written again
    for table in (first, again):
        assert isinstance(table, np.memmap) and table.dtype == np.float32 and table.shape == (32000, 256)
        assert not table.flags.writeable and np.array_equal(table, wheel.astype(np.float32))
    after = os.stat(tmp_path / TABLE_FILE)
    assert (after.st_ino, after.st_mtime_ns) == (made.st_ino, made.st_mtime_ns)
    assert sorted(p.name for p in tmp_path.iterdir()) == [TABLE_FILE]  # nothing left beside it


@pytest.mark.parametrize("damage", ["a changed number", "cut short", "not a table", "another shape", "deleted"])
def test_a_damaged_or_missing_table_file_is_written_again(tmp_path, caplog, damage):
    wheel = mapped_table(model_folder() / WEIGHTS).astype(np.float32)
    path = tmp_path / TABLE_FILE
    replaced = damage in ("another shape", "deleted")  # a new file, where the others change it in place
    held = Words(folder=tmp_path).table if replaced else Words(folder=tmp_path) and None  # mapped before
    if damage == "a changed number":
        with open(path, "r+b") as f:
            f.seek(os.path.getsize(path) - 4 * 1000)
            f.write(np.float32(123.0).tobytes())
        path.chmod(0o600)
    elif damage == "cut short":
        os.truncate(path, os.path.getsize(path) // 2)
    elif damage == "not a table":
        path.write_bytes(b"junk" * 100)
    elif damage == "another shape":
        path.unlink()
        np.save(path, np.zeros((10, 256), dtype=np.float32))
    else:
        path.unlink()
    with caplog.at_level(logging.WARNING, logger="hostcore.wordllama"):
        table = Words(folder=tmp_path).table
    assert isinstance(table, np.memmap) and np.array_equal(table, wheel)
    assert np.array_equal(np.load(path, mmap_mode="r"), wheel)
    assert (damage == "deleted") == (not caplog.records), caplog.text  # damage is told, a missing file made quietly
    if held is not None:  # a process that mapped the file before still reads the table whole
        assert np.array_equal(held, wheel)
    assert sorted(p.name for p in tmp_path.iterdir()) == [TABLE_FILE]


def test_a_folder_it_cannot_write_leaves_the_table_in_memory(tmp_path, caplog):
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    with caplog.at_level(logging.WARNING, logger="hostcore.wordllama"):
        words = Words(folder=blocked)
    assert not isinstance(words.table, np.memmap) and words.table.dtype == np.float32
    assert np.array_equal(words.sums(TEXTS), Words().sums(TEXTS))
    assert "keeps the table in memory" in caplog.text and blocked.read_text() == "not a folder"


def test_each_word_is_tokenized_once_and_the_cache_is_bounded():
    words = Words(limit=50)
    asked: list[list[str]] = []
    encode = words.tokenizer.encode

    def counted(word, **kwargs):
        asked.append(word)
        return encode(word, **kwargs)

    words.tokenizer = type("Counted", (), {"encode": staticmethod(counted)})()
    first = words.tokens(["the cat sat on the mat", "the dog"])
    assert sorted(asked) == ["cat", "dog", "mat", "on", "sat", "the"]
    assert words.tokens(["the cat sat on the mat", "the dog"]) == first and len(asked) == 6
    words.tokens([" ".join(f"w{i}" for i in range(60))])
    words.tokens(["fresh"])
    assert len(words.ids) <= 51  # started again past the limit


def test_a_disk_short_of_room_is_left_to_the_wiki(tmp_path, caplog):
    """A 24 MB disk has less room than the 32 MB table needs four times over: nothing is written
    there (a full-disk wiki's saves came first), and the process keeps the table in memory."""
    with small_disk(tmp_path / "disk", 24) as disk:
        free = shutil.disk_usage(disk).free
        with caplog.at_level(logging.WARNING, logger="hostcore.wordllama"):
            words = Words(folder=disk)
        assert not isinstance(words.table, np.memmap) and words.table.dtype == np.float32
        assert np.array_equal(words.sums(TEXTS), Words().sums(TEXTS))
        assert list(disk.iterdir()) == [] and shutil.disk_usage(disk).free == free
        assert "too little to write" in caplog.text
