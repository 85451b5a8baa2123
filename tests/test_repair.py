"""Derived files deleted, replaced or damaged while the wiki runs are found on use and rebuilt.

Every derived file (the link graph, both search plugins' indexes and the tantivy one's storage
version, the passage index, the git history index, the extraction cache) is broken under a
running host, the way an operator or a failing disk breaks it. The next read that needs it either
answers right (from storage, or a file made anew at once) or says ``unavailable`` with the wait,
while the file is rebuilt in the background; ``health`` says what is being rebuilt meanwhile.
Never a silently empty or stale answer, never a traceback per read.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict
from pathlib import Path

import pytest
from click.testing import CliRunner
from flask import Flask

from hostcore import SYSTEM, Rebuild, Unavailable, create_app
from hostcore.cli import main
from hostcore.domain.pages import Page
from hostcore.host.host import Host
from hostcore.indexes.search_index import doc_of
from hostcore.testing import stop_process_group
from hostcore.testing.servers import start_process_group
from hostcore_tantivy import FORMAT as TANTIVY_FORMAT

from .test_search import push_from_outside

ROOT = Path(__file__).resolve().parent.parent
TANTIVY = {"PLUGINS": ["git", "tokens", "tantivy"], "STORAGE": "git", "SEARCH": "tantivy"}
SQLITE = {**TANTIVY, "PLUGINS": ["git", "tokens", "sqlite"], "SEARCH": "sqlite"}
PAGES = 30
P4 = {"slug": "notes/p4", "title": "Page 4"}
MISSING = "after its files went missing or unreadable"  # why an index whose files went missing is rebuilt


def fill(app: Flask) -> None:
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("notes", title="Notes")
    for i in range(PAGES):
        wiki.save_page(f"notes/p{i}", title=f"Page {i}", body=f"word{i} lorem [[notes/p{(i + 1) % PAGES}]]\n")
    ticket = wiki.upload_attachment("notes/p1", "memo.txt")
    wiki.complete_upload(ticket["upload_url"].rsplit("/", 1)[1], b"the quasar report\n")
    host.close()


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    instance = tmp_path_factory.mktemp("repair") / "instance"
    fill(create_app(TANTIVY, instance_path=instance))
    (instance / "hostcore.toml").write_text('PLUGINS = ["git", "tokens", "tantivy"]\nSTORAGE = "git"\nSEARCH = "tantivy"\n')
    return instance


@pytest.fixture
def instance(template: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "instance"
    shutil.copytree(template, copy)
    return copy


@pytest.fixture
def app(instance: Path) -> Iterator[Flask]:
    app = create_app(TANTIVY, instance_path=instance)
    yield app
    app.extensions["hostcore"].close()


@contextmanager
def rebuilt_elsewhere(rebuild: Rebuild | None) -> Iterator[None]:
    """Within: a rebuild begun is left to another worker, so this one sees it under way (as it
    would a long one); after: this worker takes it up, and it is waited for."""
    assert rebuild is not None
    work, rebuild.work = rebuild.work, None
    try:
        yield
    finally:
        rebuild.work = work
    rebuild.resume()
    rebuild.wait()


def unavailable(call, why: str) -> Unavailable:
    with pytest.raises(Unavailable) as caught:
        call()
    assert f"being rebuilt from storage {why}; try again in about " in str(caught.value)
    assert caught.value.data["retry_after"] >= 1
    return caught.value


def quiet(caplog: pytest.LogCaptureFixture) -> None:
    """Nothing worse than a warning was logged: no traceback."""
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info] == []


def test_a_deleted_link_graph_answers_unavailable_and_health_says_so_until_rebuilt(app: Flask, instance: Path, caplog) -> None:
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    assert wiki.backlinks("notes/p5")["backlinks"] == [P4]
    for suffix in ("", "-wal", "-shm"):
        (instance / f"links.sqlite{suffix}").unlink(missing_ok=True)
    with rebuilt_elsewhere(host.links.rebuild):
        unavailable(lambda: wiki.backlinks("notes/p5"), MISSING)
        unavailable(wiki.health, MISSING)
        answer = app.test_client().get("/_/health")
        assert answer.status_code == 200
        assert answer.get_json()["status"] == "rebuilding"
        assert [state["index"] for state in answer.get_json()["rebuilding"]] == ["link graph"]
    assert wiki.backlinks("notes/p5")["backlinks"] == [P4]
    assert wiki.health()["rebuilding"] == [] and app.test_client().get("/_/health").get_json()["status"] == "ok"
    quiet(caplog)


def test_a_deleted_link_graph_is_found_with_storage_without_versions(tmp_path: Path) -> None:
    config = {"PLUGINS": ["fs", "tokens"], "STORAGE": "fs"}
    fill(create_app(config, instance_path=tmp_path))
    host: Host = create_app(config, instance_path=tmp_path).extensions["hostcore"]
    try:
        wiki = host.wiki(SYSTEM)
        (tmp_path / "links.sqlite").unlink()
        with rebuilt_elsewhere(host.links.rebuild):
            unavailable(lambda: wiki.backlinks("notes/p5"), MISSING)
        assert wiki.backlinks("notes/p5")["backlinks"] == [P4]
    finally:
        host.close()


def test_overwritten_tantivy_files_are_set_aside_and_rebuilt_at_once(app: Flask, instance: Path, caplog) -> None:
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    for file in (instance / "search" / f"tantivy-v{TANTIVY_FORMAT}").iterdir():
        if file.is_file():
            file.write_bytes(b"garbage" * 100)
    with rebuilt_elsewhere(host.search.rebuild):
        unavailable(lambda: wiki.search("word7"), "after damage")
        assert [state["index"] for state in wiki.health()["rebuilding"]] == ["search index"]
    assert [h["slug"] for h in wiki.search("word7")["hits"]] == ["notes/p7"]
    assert len(list((instance / "search").glob(f"tantivy-v{TANTIVY_FORMAT}.damaged-*"))) == 1
    quiet(caplog)


def test_a_deleted_tantivy_folder_is_rebuilt_not_answered_from_empty(app: Flask, instance: Path, caplog) -> None:
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    assert [h["slug"] for h in wiki.search("word7")["hits"]] == ["notes/p7"]
    shutil.rmtree(instance / "search" / f"tantivy-v{TANTIVY_FORMAT}")
    with rebuilt_elsewhere(host.search.rebuild):
        unavailable(lambda: wiki.search("word7"), MISSING)
    assert [h["slug"] for h in wiki.search("word7")["hits"]] == ["notes/p7"]
    quiet(caplog)


def test_a_damaged_tantivy_storage_version_means_compare_with_storage_once(app: Flask, instance: Path, tmp_path, caplog) -> None:
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    version = instance / "search" / f"tantivy-v{TANTIVY_FORMAT}.storage-version"
    version.write_bytes(b"\xff\xfe\x00garbage")
    push_from_outside(host, tmp_path, {"notes/outside.md": "pulsar from a clone\n"})
    for _ in range(2):
        try:
            found = wiki.search("pulsar")
        except Unavailable:  # compared with storage in the background meanwhile
            host.search.rebuild.wait()
            found = wiki.search("pulsar")
        assert [h["slug"] for h in found["hits"]] == ["notes/outside"]
    assert version.read_text() == host.storage.version()
    assert len(list(version.parent.glob(f"tantivy-v{TANTIVY_FORMAT}.storage-version.damaged-*"))) == 1
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING and "storage-version" in r.getMessage()]
    assert len(warnings) == 1, warnings
    quiet(caplog)


def test_a_damaged_tantivy_storage_version_is_repaired_at_start_up(instance: Path, tmp_path, caplog) -> None:
    host: Host = create_app(TANTIVY, instance_path=instance).extensions["hostcore"]
    push_from_outside(host, tmp_path, {"notes/outside.md": "pulsar from a clone\n"})
    host.close()
    (instance / "search" / f"tantivy-v{TANTIVY_FORMAT}.storage-version").write_bytes(b"\xff\xfe\x00garbage")
    host = create_app(TANTIVY, instance_path=instance).extensions["hostcore"]
    try:
        assert [h["slug"] for h in host.wiki(SYSTEM).search("pulsar")["hits"]] == ["notes/outside"]
    finally:
        host.close()
    assert "hostcore reindex" not in caplog.text
    quiet(caplog)


def test_a_deleted_sqlite_search_file_is_rebuilt(tmp_path: Path, caplog) -> None:
    fill(create_app(SQLITE, instance_path=tmp_path))
    host: Host = create_app(SQLITE, instance_path=tmp_path).extensions["hostcore"]
    try:
        wiki = host.wiki(SYSTEM)
        for file in (tmp_path / "search").glob("sqlite-search-v*.db*"):
            file.unlink()
        with rebuilt_elsewhere(host.search.rebuild):
            unavailable(lambda: wiki.search("word7"), MISSING)
        assert [h["slug"] for h in wiki.search("word7")["hits"]] == ["notes/p7"]
    finally:
        host.close()
    quiet(caplog)


def test_a_deleted_passage_index_fills_again(app: Flask, instance: Path, caplog) -> None:
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    host.indexes.wait()  # the passage index is eventual: the attachment may still be pending on a busy machine
    assert [h["filename"] for h in wiki.search_attachments("quasar")["hits"]] == ["memo.txt"]
    for suffix in ("", "-wal", "-shm"):
        (instance / f"passages.sqlite{suffix}").unlink(missing_ok=True)
    with rebuilt_elsewhere(host.indexes["passage index"].rebuild):
        unavailable(lambda: wiki.search_attachments("quasar"), MISSING)
    host.indexes.wait()
    found = wiki.search_attachments("quasar")
    assert [h["filename"] for h in found["hits"]] == ["memo.txt"] and found["pending"] == 0
    quiet(caplog)


def test_a_deleted_history_index_is_rebuilt_by_the_read_that_needs_it(app: Flask, instance: Path, caplog) -> None:
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    before = wiki.page_history("notes/p5")["commits"]
    (instance / "wiki" / "hostcore-history.sqlite").unlink()
    assert wiki.page_history("notes/p5")["commits"] == before
    quiet(caplog)


def test_a_damaged_extraction_cache_is_made_anew_and_answers(app: Flask, instance: Path, caplog) -> None:
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    assert "quasar" in wiki.read_attachment("notes/p1", "memo.txt")["body"]
    host.extraction.close()  # a fresh connection, as a new worker thread has: no page of the file cached
    (instance / "extracted.sqlite").write_bytes(b"this is not a database " * 200)
    assert "quasar" in wiki.read_attachment("notes/p1", "memo.txt")["body"]
    assert len(list(instance.glob("extracted.sqlite.damaged-*"))) == 1


def test_reads_during_hostcore_reindex_say_so_rather_than_answer_from_a_half_index(app: Flask, instance: Path, monkeypatch) -> None:
    """``hostcore reindex`` while the server runs: the server's searches answer unavailable until
    the emptied index is full again."""
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    assert [h["slug"] for h in wiki.search("word7")["hits"]] == ["notes/p7"]
    seen: list[str] = []
    from hostcore_tantivy import TantivySearch

    update = TantivySearch.update

    def watched(self, docs=(), removed=()):
        if self is not host.search and not seen:  # the CLI's backend, halfway: ask the server
            try:
                seen.append(str(wiki.search("word7")["hits"]))
            except Unavailable as exc:
                seen.append(str(exc))
        return update(self, docs, removed)

    monkeypatch.setattr(TantivySearch, "update", watched)
    result = CliRunner().invoke(main, ["reindex", "--instance", str(instance)])
    assert result.exit_code == 0, result.output
    assert seen and "the search index is being rebuilt from storage by `hostcore reindex`" in seen[0], seen
    assert [h["slug"] for h in wiki.search("word7")["hits"]] == ["notes/p7"]


@pytest.mark.slow
def test_tantivy_heals_at_once_after_a_writer_killed_mid_commit(app: Flask, instance: Path, tmp_path, caplog) -> None:
    """A worker killed (SIGKILL) inside a tantivy commit leaves the deletion file that the same
    commit, made again by the next catch-up, writes: it is collected and the commit made again."""
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    slugs = [f"notes/p{i}" for i in range(PAGES)]
    docs = [asdict(doc_of(Page.from_bytes(slug, host.storage.read(f"{slug}.md")))) for slug in slugs]
    killer = start_process_group(
        [sys.executable, "-m", "tests.killed_writer", str(instance / "search")],
        marker="slow", what="tantivy writers killed mid-commit",
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
    )  # fmt: skip
    try:
        out, _ = killer.communicate(json.dumps(docs).encode(), timeout=300)
    finally:
        stop_process_group(killer)
    assert killer.returncode == 0, "no writer was killed mid-commit"
    assert (instance / "search" / f"tantivy-v{TANTIVY_FORMAT}" / out.decode().strip()).exists()
    # the same pages changed, in one commit: the catch-up's commit is the one the killed writer began
    push_from_outside(host, tmp_path, {f"{slug}.md": f"---\ntitle: Page {i}\n---\nzebra{i}\n" for i, slug in enumerate(slugs)})
    assert [h["slug"] for h in wiki.search("zebra7")["hits"]] == ["notes/p7"]
    assert "left by a writer stopped mid-commit" in caplog.text
    quiet(caplog)
