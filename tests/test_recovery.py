"""Damaged derived files (search index, link graph, history index) never stop the wiki.

Each file is damaged the three ways a disk or an operator damages files: overwritten with garbage,
truncated, and with pages in the middle overwritten. The host then starts (the file is set aside
and rebuilt from storage), recovers from damage found at run time, and ``hostcore reindex`` works.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from hostcore import SYSTEM, Unavailable, create_app
from hostcore.cli import main
from hostcore.host.host import Host
from hostcore_sqlite_search import FORMAT
from hostcore_tantivy import FORMAT as TANTIVY_FORMAT

CONFIG = {"PLUGINS": ["git", "tokens", "sqlite"], "STORAGE": "git", "SEARCH": "sqlite"}
PAGES = 120
FILES = {
    "search": f"search/sqlite-search-v{FORMAT}.db",
    "links": "links.sqlite",
    "history": "wiki/hostcore-history.sqlite",
}
PAGE_SIZE = 4096


def damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "garbage":
        path.write_bytes(b"this is not a database " * 200)
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2 + 100])
    else:  # the middle half of the pages overwritten, the header and schema page intact
        pages = len(data) // PAGE_SIZE
        assert pages >= 8, f"{path} is too small to damage mid-way"
        start, end = pages // 4 * PAGE_SIZE, pages * 3 // 4 * PAGE_SIZE
        path.write_bytes(data[:start] + b"\xa5" * (end - start) + data[end:])


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An instance with PAGES linked pages, closed (so no -wal files linger)."""
    instance = tmp_path_factory.mktemp("recovery") / "instance"
    app = create_app(CONFIG, instance_path=instance)
    host: Host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("notes", title="Notes")
    for i in range(PAGES):
        wiki.save_page(f"notes/p{i}", title=f"Page {i}", body=f"word{i} lorem ipsum dolor [[notes/p{(i + 1) % PAGES}]]\n" * 40)
    host.close()
    (instance / "hostcore.toml").write_text('PLUGINS = ["git", "tokens", "sqlite"]\nSTORAGE = "git"\nSEARCH = "sqlite"\n')
    return instance


@pytest.fixture
def instance(template: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "instance"
    shutil.copytree(template, copy)
    return copy


def start(instance: Path) -> Host:
    return create_app(CONFIG, instance_path=instance).extensions["hostcore"]


def wait_for_rebuilds(host: Host) -> None:
    host.links.rebuild.wait()
    host.search.rebuild.wait()


def assert_serves_everything(host: Host) -> None:
    wiki = host.wiki(SYSTEM)
    assert [h["slug"] for h in wiki.search("word77")["hits"]] == ["notes/p77"]
    assert wiki.backlinks("notes/p5")["backlinks"] == [{"slug": "notes/p4", "title": "Page 4"}]
    assert [r["message"] for r in wiki.page_history("notes/p5")["commits"]][-1:] == ["save_page: notes/p5"]
    assert wiki.health()["counts"]["orphans"] == 0


def set_aside(instance: Path, which: str) -> list[str]:
    path = instance / FILES[which]
    return sorted(p.name for p in path.parent.glob(path.name + ".damaged-*") if not p.name.endswith(("-wal", "-shm")))


@pytest.mark.parametrize("how", ["garbage", "truncated", "midway"])
@pytest.mark.parametrize("which", sorted(FILES))
def test_start_up_sets_a_damaged_file_aside_and_rebuilds_it(instance: Path, which: str, how: str, caplog) -> None:
    damage(instance / FILES[which], how)
    host = start(instance)
    try:
        wait_for_rebuilds(host)
        assert_serves_everything(host)
    finally:
        host.close()
    assert len(set_aside(instance, which)) == 1
    assert f"set aside as {set_aside(instance, which)[0]}" in caplog.text
    if which != "history":  # rebuilt in the background, with progress lines
        assert f"{'search index' if which == 'search' else 'link graph'}: rebuilding, {PAGES} of {PAGES} pages" in caplog.text
    assert not list(instance.glob("**/rebuilding")) and not list(instance.glob("*.rebuilding"))


def test_search_damaged_at_run_time_answers_unavailable_then_works(instance: Path) -> None:
    host = start(instance)
    try:
        damage(instance / FILES["search"], "midway")
        wiki = host.wiki(SYSTEM)
        with pytest.raises(Unavailable, match="the search index is being rebuilt from storage after damage; try again"):
            wiki.search("lorem")
        host.search.rebuild.wait()
        assert [h["slug"] for h in wiki.search("word77")["hits"]] == ["notes/p77"]
        assert len(wiki.search("lorem", limit=50)["hits"]) == 50
        wiki.save_page("notes/after", body="zeppelin")  # writes go on into the new file
        assert [h["slug"] for h in wiki.search("zeppelin")["hits"]] == ["notes/after"]
    finally:
        host.close()
    assert len(set_aside(instance, "search")) == 1


def test_search_during_a_rebuild_answers_unavailable(instance: Path) -> None:
    damage(instance / FILES["search"], "garbage")
    host = start(instance)
    try:
        host.search.rebuild.wait()
        host.search.rebuild.work = None  # as seen from another worker while one is rebuilding
        host.search.rebuild.marker.touch()
        with pytest.raises(Unavailable, match="being rebuilt"):
            host.wiki(SYSTEM).search("word1")
        host.search.rebuild.done()
        assert [h["slug"] for h in host.wiki(SYSTEM).search("word1")["hits"]] == ["notes/p1"]
    finally:
        host.close()


def test_link_graph_damaged_at_run_time_recovers(instance: Path) -> None:
    host = start(instance)
    try:
        host.links.close()  # a fresh connection, as a new worker thread has: no page cached
        damage(instance / FILES["links"], "midway")
        wiki = host.wiki(SYSTEM)
        with pytest.raises(Unavailable, match="the link graph is being rebuilt"):
            wiki.health()
        host.links.rebuild.wait()
        assert_serves_everything(host)
    finally:
        host.close()
    assert len(set_aside(instance, "links")) == 1


def test_history_index_damaged_at_run_time_is_rebuilt_from_the_log(instance: Path) -> None:
    host = start(instance)
    try:
        host.storage._history_index.close()  # a fresh connection: no page cached
        damage(instance / FILES["history"], "midway")
        assert_serves_everything(host)
        host.wiki(SYSTEM).save_page("notes/after", body="written after")
        assert len(host.wiki(SYSTEM).page_history("notes/after")["commits"]) == 1
    finally:
        host.close()
    assert len(set_aside(instance, "history")) == 1


@pytest.mark.parametrize("which", sorted(FILES))
def test_reindex_works_on_a_damaged_file(instance: Path, which: str) -> None:
    damage(instance / FILES[which], "garbage")
    result = CliRunner().invoke(main, ["reindex", "--instance", str(instance)])
    assert result.exit_code == 0, result.output
    assert f"indexed {PAGES + 0} pages" in result.stdout
    assert len(set_aside(instance, which)) == 1
    host = start(instance)
    try:
        assert not host.search.rebuild.pending and not host.links.rebuild.pending
        assert_serves_everything(host)
    finally:
        host.close()


@pytest.mark.parametrize("how", ["garbage", "truncated", "midway"])
def test_a_damaged_tantivy_index_is_set_aside_and_rebuilt(instance: Path, how: str) -> None:
    config = {**CONFIG, "PLUGINS": ["git", "tokens", "tantivy"], "SEARCH": "tantivy"}
    create_app(config, instance_path=instance).extensions["hostcore"].close()  # builds the tantivy index
    folder = instance / "search" / f"tantivy-v{TANTIVY_FORMAT}"
    for segment in folder.glob("*.store" if how == "midway" else "*.term"):  # midway: the stored pages, read for every hit
        if how == "midway":
            data = segment.read_bytes()
            segment.write_bytes(data[: len(data) // 4] + b"\xa5" * (len(data) // 2) + data[len(data) * 3 // 4 :])
        else:
            damage(segment, how) if how == "truncated" else segment.write_bytes(b"garbage" * 100)
    host = create_app(config, instance_path=instance).extensions["hostcore"]
    try:
        if how == "midway":  # tantivy checks a file's footer when it opens it, the middle only when reading it
            with pytest.raises(Unavailable, match="the search index is being rebuilt from storage after damage"):
                for i in range(PAGES):  # the words until one is read from the damaged middle (where depends on the layout)
                    host.wiki(SYSTEM).search(f"word{i} lorem")
        wait_for_rebuilds(host)
        assert_serves_everything(host)
    finally:
        host.close()
    assert len(list((instance / "search").glob(f"tantivy-v{TANTIVY_FORMAT}.damaged-*"))) == 1


def test_rename_waits_for_the_link_graph_rebuild_and_changes_nothing_meanwhile(instance: Path) -> None:
    host = start(instance)
    try:
        wiki = host.wiki(SYSTEM)
        page = wiki.read_page("notes/p5")
        host.links.rebuild.work = None  # another worker is rebuilding the graph
        host.links.rebuild.marker.touch()
        with pytest.raises(Unavailable, match="the link graph is being rebuilt"):
            wiki.rename_page("notes/p5", "Renamed", page["hash"])
        assert wiki.read_page("notes/p5")["hash"] == page["hash"]
        host.links.rebuild.done()
        assert wiki.rename_page("notes/p5", "Renamed", page["hash"])["rewritten"] == ["notes/p4"]
    finally:
        host.close()
