"""A full disk: writes fail clearly and change nothing; reads, search and start-up go on.

These tests fill a real filesystem (:func:`hostcore.testing.small_disk`, a small tmpfs), so every
failure is a real ENOSPC from the kernel. Mounting needs root, as CI has; where it is refused the
tests fail rather than skip, so the behaviour never goes untested unseen.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from hostcore import SYSTEM, Change, DiskFull, Put, create_app
from hostcore.host.host import Host
from hostcore.testing import fill_disk, small_disk
from hostcore_git import GitStorage

CONFIG = {"PLUGINS": ["git", "tokens", "sqlite"], "STORAGE": "git", "SEARCH": "sqlite", "MIN_FREE_BYTES": 1024 * 1024}
DISK_MB = 24
NO_SPACE = "no space left on the wiki's disk; nothing was changed"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    """A fresh, small, real filesystem."""
    with small_disk(tmp_path / "disk", DISK_MB) as folder:
        yield folder


def start(instance: Path, **config: object) -> Host:
    return create_app({**CONFIG, **config}, instance_path=instance).extensions["hostcore"]


def make_wiki(instance: Path) -> Host:
    host = start(instance)
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("notes", title="Notes")
    for i in range(10):
        wiki.save_page(f"notes/p{i}", title=f"Page {i}", body=f"word{i} lorem ipsum [[notes/p{(i + 1) % 10}]]\n" * 20)
    return host


def snapshot(host: Host) -> dict[str, object]:
    """Everything a failed write must leave as it was: storage, search, links, history."""
    wiki = host.wiki(SYSTEM)
    return {
        "head": subprocess.run(["git", "-C", str(host.storage.root), "rev-parse", "HEAD"], capture_output=True, text=True).stdout,
        "files": host.storage.hashes(),
        "search": [h["slug"] for h in wiki.search("lorem", limit=50)["hits"]],
        "new word": wiki.search("zeppelin")["hits"],
        "backlinks": wiki.backlinks("notes/p1")["backlinks"],
        "history": wiki.page_history("notes/p1")["commits"],
        "recent": wiki.recent_changes(),
    }


def test_writes_on_a_full_disk_fail_clearly_and_change_nothing(disk: Path) -> None:
    host = make_wiki(disk / "instance")
    try:
        wiki = host.wiki(SYSTEM)
        page = wiki.read_page("notes/p1")
        before = snapshot(host)
        fill_disk(disk)
        writes = {
            "save_page (new)": lambda: wiki.save_page("notes/new", body="zeppelin " * 500),
            "save_page": lambda: wiki.save_page("notes/p1", basehash=page["hash"], body="zeppelin"),
            "edit_page": lambda: wiki.edit_page("notes/p1", page["hash"], [{"oldText": page["body"], "newText": "zeppelin"}]),
            "delete_page": lambda: wiki.delete_page("notes/p1", page["hash"]),
            "move_page": lambda: wiki.move_page("notes/p1", "notes/zeppelin", page["hash"]),
            "save_namespace": lambda: wiki.save_namespace("zeppelin", title="Zeppelin"),
        }
        for name, write in writes.items():
            with pytest.raises(DiskFull) as caught:
                write()
            error = caught.value.to_dict()
            assert error["code"] == "unavailable" and "field" not in error, (name, error)
            assert error["message"].startswith(NO_SPACE) and "free space" in error["message"], (name, error)
        assert snapshot(host) == before
        assert wiki.read_page("notes/p1")["body"] == page["body"]
        assert [h["slug"] for h in wiki.search("word3")["hits"]] == ["notes/p3"]
        assert len(wiki.list_pages("notes")["pages"]) == 10
        assert wiki.health()["counts"]["missing"] == 0
    finally:
        host.close()


def test_git_storage_turns_a_real_enospc_into_disk_full(disk: Path) -> None:
    storage = GitStorage(disk / "repo", {})
    try:
        storage.apply([Put("notes/a.md", b"first\n", expect=None)], Change("tester", "first"))
        head = (disk / "repo" / "refs" / "heads" / "main").read_text()
        fill_disk(disk)
        with pytest.raises(DiskFull, match=NO_SPACE):  # no reserve here: libgit2 itself hits ENOSPC
            storage.apply([Put("notes/b.md", os.urandom(200_000), expect=None)], Change("tester", "second"))
        assert (disk / "repo" / "refs" / "heads" / "main").read_text() == head
        assert storage.list() == ["notes/a.md"] and storage.read("notes/a.md") == b"first\n"
        assert [r.message for r in storage.history()] == ["first"]
    finally:
        storage.close()


def test_start_up_on_a_full_disk_serves_reads_until_space_is_freed(disk: Path, caplog: pytest.LogCaptureFixture) -> None:
    instance = disk / "instance"
    make_wiki(instance).close()  # a clean stop: SQLite's -wal and -shm files are gone
    fill_disk(disk)
    host = start(instance)
    try:
        assert "the wiki's disk is full" in caplog.text and "serving reads and searches only" in caplog.text
        wiki = host.wiki(SYSTEM)
        assert wiki.read_page("notes/p2")["title"] == "Page 2"
        assert [h["slug"] for h in wiki.search("word3")["hits"]] == ["notes/p3"]
        assert wiki.backlinks("notes/p1")["backlinks"] == [{"slug": "notes/p0", "title": "Page 0"}]
        assert len(wiki.page_history("notes/p1")["commits"]) == 1
        assert wiki.list_namespaces()["namespaces"][0]["pages"] == 10
        with pytest.raises(DiskFull, match=NO_SPACE):
            wiki.save_page("notes/new", body="zeppelin")
        (disk / "filler").unlink()
        wiki.save_page("notes/new", body="zeppelin")  # space again: writes and their indexes go on
        assert [h["slug"] for h in wiki.search("zeppelin")["hits"]] == ["notes/new"]
        assert [c["slug"] for c in wiki.backlinks("notes/p1")["backlinks"]] == ["notes/p0"]
        assert len(wiki.page_history("notes/new")["commits"]) == 1
    finally:
        host.close()
