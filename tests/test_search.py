"""search and fetch through the service layer, on git storage, with each search plugin."""

import subprocess
import threading
import time

import pytest
from click.testing import CliRunner

from hostcore import Unavailable, ValidationError, create_app
from hostcore.cli.commands import main
from hostcore.domain.principal import SYSTEM

from .conftest import principal

ENGINES = ["sqlite", "tantivy"]

CORPUS = {
    "notes/gardening": ("Gardening basics", "Water tomatoes in the morning. Compost helps the soil.", ["garden"]),
    "notes/cooking": ("Cooking tomatoes", "A sauce of tomatoes, garlic and basil.", ["kitchen"]),
    "notes/soil": ("Soil science", "Tomatoes are mentioned once here, among loam and clay.", ["garden", "science"]),
    "team/roadmap": ("Roadmap", "Ship the tomato tracker next quarter.", []),
}


@pytest.fixture(params=ENGINES)
def search_host(request, tmp_path):
    instance = tmp_path / "instance"
    instance.mkdir()
    (instance / "hostcore.toml").write_text(
        f'PLUGINS = ["git", "tokens", "{request.param}"]\nSTORAGE = "git"\nSEARCH = "{request.param}"\n'
        'PUBLIC_URL = "https://wiki.example.org"\n'
    )
    app = create_app(instance_path=instance)
    host = app.extensions["hostcore"]
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes")
    admin.save_namespace("team")
    for slug, (title, body, tags) in CORPUS.items():
        admin.save_page(slug, body=body, title=title, tags=tags)
    yield host
    host.close()


def slugs(result):
    return [h["slug"] for h in result["hits"]]


def test_title_match_ranks_first_and_results_for_chatgpt(search_host):
    result = search_host.wiki(principal("read")).search("soil")
    assert slugs(result)[0] == "notes/soil"
    assert result["results"][0] == {"id": "notes/soil", "title": "Soil science", "url": "https://wiki.example.org/notes/soil"}
    assert "<mark>" in result["hits"][0]["snippet"] or "<mark>" in result["hits"][0]["title"]


def test_paging_namespace_and_access(search_host):
    wiki = search_host.wiki(principal("read"))
    everything = slugs(wiki.search("tomatoes OR tomato", limit=50))
    first = wiki.search("tomatoes OR tomato", limit=2)
    assert first["more"] and first["next_offset"] == 2 and slugs(first) == everything[:2]
    rest = wiki.search("tomatoes OR tomato", offset=2, limit=50)
    assert not rest["more"] and rest["next_offset"] is None and slugs(first) + slugs(rest) == everything
    assert set(slugs(wiki.search("tomato*", namespace="team"))) == {"team/roadmap"}
    limited = search_host.wiki(principal("read", namespaces=["team"]))
    assert slugs(limited.search("tomatoes OR tomato")) == ["team/roadmap"]
    assert slugs(wiki.search("tomatoes tag:garden")) != [] and all(
        s in ("notes/gardening", "notes/soil") for s in slugs(wiki.search("tomatoes tag:garden"))
    )


def test_filters_by_tags_author_and_dates(search_host):
    search_host.wiki(principal("write", name="alice")).save_page("notes/alice", body="tomatoes by alice", title="A", tags=["garden"])
    wiki = search_host.wiki(principal("read"))
    assert set(slugs(wiki.search("tomatoes", tags=["GARDEN"]))) == {"notes/gardening", "notes/soil", "notes/alice"}
    assert slugs(wiki.search("tomatoes", tags=["garden", "science"])) == ["notes/soil"]
    assert slugs(wiki.search("tomatoes", author="Alice")) == ["notes/alice"]
    assert slugs(wiki.search("tomatoes", author="bob")) == []
    hour_ago = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - 3600))
    tomorrow = time.strftime("%Y-%m-%d", time.gmtime(time.time() + 86400))
    assert set(slugs(wiki.search("tomatoes", since=hour_ago))) == {"notes/gardening", "notes/cooking", "notes/soil", "notes/alice"}
    assert slugs(wiki.search("tomatoes", before=hour_ago)) == []
    assert slugs(wiki.search("tomatoes", since=tomorrow)) == []
    assert len(slugs(wiki.search("tomatoes", before=tomorrow, author="alice", tags=["garden"]))) == 1
    cases = [({"since": "last week"}, "since"), ({"before": "2026-13-01"}, "before"), ({"tags": [" "]}, "tags"),
             ({"tags": [f"t{i}" for i in range(11)]}, "tags"), ({"author": " "}, "author"),
             ({"since": "2026-05-02", "before": "2026-05-01"}, "before")]  # fmt: skip
    for filters, field in cases:
        with pytest.raises(ValidationError) as err:
            wiki.search("tomatoes", **filters)
        assert err.value.field == field


def test_other_forms_of_a_word_are_found_the_typed_one_first(search_host):
    admin = search_host.wiki(SYSTEM)
    admin.save_page("notes/one", body="An automobile in the garage.", title="One")
    admin.save_page("notes/many", body="Automobiles in the garage.", title="Many")
    assert slugs(search_host.wiki(principal("read")).search("automobiles")) == ["notes/many", "notes/one"]
    assert slugs(search_host.wiki(principal("read")).search("automobile")) == ["notes/one", "notes/many"]


def test_snippets_are_escaped(search_host):
    admin = search_host.wiki(SYSTEM)
    admin.save_page("notes/xss", body='Danger <script>alert("x")</script> zebra & <b>bold</b>', title="<img src=x>")
    hit = search_host.wiki(principal("read")).search("zebra")["hits"][0]
    assert "<script>" not in hit["snippet"] and "&lt;script&gt;" in hit["snippet"]
    assert "<mark>zebra</mark>" in hit["snippet"] and "<b>" not in hit["snippet"]


def test_in_step_with_every_kind_of_write(search_host):
    wiki = search_host.wiki(SYSTEM)
    h = wiki.save_page("notes/new", body="quasar")["hash"]
    assert slugs(wiki.search("quasar")) == ["notes/new"]
    h = wiki.edit_page("notes/new", h, [{"oldText": "quasar", "newText": "pulsar"}])["hash"]
    assert slugs(wiki.search("quasar")) == [] and slugs(wiki.search("pulsar")) == ["notes/new"]
    moved = wiki.move_page("notes/new", "team/new", h)
    assert slugs(wiki.search("pulsar")) == ["team/new"]
    renamed = wiki.rename_page("team/new", "Neutron Star", moved["hash"])
    assert slugs(wiki.search("neutron")) == ["team/neutron-star"]
    wiki.delete_page("team/neutron-star", renamed["hash"])
    assert slugs(wiki.search("pulsar")) == []


def push_from_outside(host, tmp_path, files):
    """Commit ``files`` (path -> text, None to remove) in a clone and push it into the wiki's repository."""
    clone = tmp_path / f"clone-{len(list(tmp_path.glob('clone-*')))}"
    subprocess.run(["git", "clone", "-q", str(host.storage.root), str(clone)], check=True)
    for path, text in files.items():
        if text is None:
            (clone / path).unlink()
        else:
            (clone / path).write_text(text)
    subprocess.run(["git", "-C", str(clone), "add", "-A"], check=True)
    subprocess.run(["git", "-C", str(clone), "-c", "user.name=o", "-c", "user.email=o@x", "commit", "-qm", "outside"], check=True)
    subprocess.run(["git", "-C", str(clone), "push", "-q", "origin", "HEAD:main"], check=True)


def test_catch_up_after_outside_commit_and_reindex(search_host, tmp_path, monkeypatch):
    """A push from outside reaches search on the next read, along the tree diff since the commit
    the index recorded; an index whose recorded commit is unknown is compared page by page. (The
    passage index's thread, which a search wakes, lists storage once per process on its own
    account: not counted.)"""
    full_comparisons = []
    hashes = search_host.storage.hashes

    def counted(prefix: str = "") -> dict[str, str]:
        if threading.current_thread().name != "passage index":
            full_comparisons.append(prefix)
        return hashes(prefix)

    monkeypatch.setattr(search_host.storage, "hashes", counted)
    push_from_outside(
        search_host, tmp_path, {"notes/outside.md": "---\ntitle: From outside\n---\nmagnetar\n", "notes/cooking.md": None}
    )
    wiki = search_host.wiki(SYSTEM)
    assert slugs(wiki.search("magnetar")) == ["notes/outside"]
    assert "notes/cooking" not in slugs(wiki.search("garlic OR tomatoes"))
    assert search_host.search.storage_version() == search_host.storage.version()
    assert full_comparisons == []

    search_host.search.set_storage_version("0" * 40)  # a commit the repository does not hold
    push_from_outside(search_host, tmp_path, {"notes/later.md": "pulsar\n"})
    assert slugs(wiki.search("pulsar")) == ["notes/later"] and full_comparisons == [""]

    result = CliRunner().invoke(main, ["reindex", "--instance", str(search_host.instance_path)])
    assert result.exit_code == 0, result.output
    assert "indexed 5 pages" in result.stdout and "indexing pages" in result.stderr


def test_index_records_the_storage_version_it_reflects(search_host):
    backend = search_host.search
    search_host.indexes.follower.wait()
    assert backend.storage_version() == search_host.storage.version()  # recorded by the catch-up after the writes
    backend.set_storage_version("f" * 40)
    reopened = type(backend)(backend.root, backend.config)
    assert reopened.storage_version() == "f" * 40
    reopened.clear()
    assert backend.storage_version() is None and reopened.hashes() == {}
    reopened.close()


def test_saves_answer_without_waiting_for_the_index_and_reads_catch_up_first(search_host, monkeypatch):
    """A save is acknowledged once storage has it; the process's background catch-up indexes it,
    the saves that come meanwhile in one pass, and a search waits for it rather than answer older."""
    admin, backend = search_host.wiki(SYSTEM), search_host.search
    pages = [admin.save_page(f"notes/next{i}", body="nothing yet") for i in range(5)]  # updated below: a new page's
    search_host.indexes.follower.wait()  # name is checked against the link graph, which waits for the catch-up
    indexing, release, passes = threading.Event(), threading.Event(), []
    update = backend.update

    def held(docs=(), removed=()):
        passes.append(sorted(d.slug for d in docs))
        indexing.set()
        assert release.wait(30), "the test never released the index"
        update(docs, removed)

    monkeypatch.setattr(backend, "update", held)
    admin.save_page("notes/first", body="quasar one")
    assert indexing.wait(30)  # the background catch-up is now held inside the index update
    saved = [admin.save_page(f"notes/next{i}", body=f"quasar {i}", basehash=p["hash"]) for i, p in enumerate(pages)]
    assert all(s["hash"] for s in saved) and passes == [["notes/first"]]
    found: list[list[str]] = []
    reader = threading.Thread(target=lambda: found.append(slugs(search_host.wiki(principal("read")).search("quasar", limit=50))))
    reader.start()
    reader.join(0.5)
    assert reader.is_alive() and not found  # the search waits for the catch-up instead of answering without the pages
    release.set()
    reader.join(30)
    assert sorted(found[0]) == ["notes/first", *(f"notes/next{i}" for i in range(5))]
    assert passes[1:] == [[f"notes/next{i}" for i in range(5)]]  # the saves that came meanwhile: one pass


def test_background_catch_ups_keep_a_gap_and_reads_never_wait_for_it(search_host, monkeypatch):
    """Under a stream of saves the background catch-up starts at most once a gap (the saves that
    come meanwhile share its pass: one index commit instead of one each); a read does not wait for
    the gap but catches up itself, and ``wait`` takes the pass that is due at once."""
    paced = search_host.indexes.follower
    paced.wait()  # nothing held back: the next save after a quiet spell is taken at once
    paced.gap = 60.0
    admin, backend, passes = search_host.wiki(SYSTEM), search_host.search, []
    update = backend.update
    monkeypatch.setattr(
        backend, "update", lambda docs=(), removed=(): passes.append(sorted(d.slug for d in docs)) or update(docs, removed)
    )
    first = admin.save_page("notes/first", body="blazar")
    deadline = time.monotonic() + 30
    while not passes and time.monotonic() < deadline:  # after a quiet spell, the pass comes at once
        time.sleep(0.01)
    assert passes == [["notes/first"]]
    admin.save_page("notes/first", body="blazar again", basehash=first["hash"])
    admin.save_page("notes/cooking", body="blazar in the kitchen", basehash=admin.read_page("notes/cooking")["hash"])
    time.sleep(0.5)
    assert passes == [["notes/first"]]  # the next background pass waits for the gap
    assert sorted(slugs(admin.search("blazar"))) == ["notes/cooking", "notes/first"]  # the read caught up itself
    assert passes == [["notes/first"], ["notes/cooking", "notes/first"]]
    admin.save_page("notes/cooking", body="no more", basehash=admin.read_page("notes/cooking")["hash"])
    waiting = threading.Thread(target=paced.wait)
    waiting.start()
    waiting.join(30)
    assert not waiting.is_alive() and passes[-1] == ["notes/cooking"]
    paced.stop()


def test_index_failure_never_loses_the_write(search_host, monkeypatch):
    wiki = search_host.wiki(SYSTEM)

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(search_host.search, "update", broken)
    saved = wiki.save_page("notes/kept", body="supernova")
    assert wiki.read_page("notes/kept")["hash"] == saved["hash"]
    monkeypatch.undo()
    assert slugs(wiki.search("supernova")) == ["notes/kept"]  # repaired before the next search answers


def test_fetch_round_trip_and_errors(search_host):
    wiki = search_host.wiki(principal("read"))
    first = wiki.search("basil")["results"][0]
    page = wiki.fetch(first["id"])
    assert page["id"] == "notes/cooking" and page["title"] == "Cooking tomatoes" and page["url"] == first["url"]
    assert page["text"].startswith("A sauce") and page["metadata"]["tags"] == ["kitchen"]
    with pytest.raises(ValidationError) as err:
        wiki.search("   ")
    assert err.value.field == "query"


def test_no_search_backend_means_no_search_tools(host):
    assert "search" not in host.tools and "fetch" not in host.tools
    with pytest.raises(Unavailable):
        host.wiki(SYSTEM).search("x")


def test_next_offset_is_never_past_the_offset_limit(tmp_path):
    from hostcore import Change, Put
    from hostcore.app import build_host
    from hostcore.domain.pages import Page
    from hostcore.service.search import MAX_SEARCH_OFFSET

    instance = tmp_path / "instance"
    instance.mkdir()
    (instance / "hostcore.toml").write_text('PLUGINS = ["git", "sqlite"]\nSTORAGE = "git"\nSEARCH = "sqlite"\n')
    host = build_host(instance, start=False)
    ops = [Put("n/.namespace.yaml", b"title: N\n", expect=None)]
    ops += [Put(f"n/p{i}.md", Page(slug=f"n/p{i}", title=f"P {i}", body="common").to_bytes(), expect=None) for i in range(1030)]
    host.storage.apply(ops, Change("t", "import"))
    host.start()
    try:
        wiki = host.wiki(principal("read"))
        page = wiki.search("common", offset=990, limit=20)
        assert page["more"] is True and page["next_offset"] is None
        assert wiki.search("common", offset=980, limit=20)["next_offset"] == MAX_SEARCH_OFFSET
    finally:
        host.close()
