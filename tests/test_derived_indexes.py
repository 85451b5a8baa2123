"""One pipeline keeps every derived index current: the link graph, the search index, the passage
index and a plugin's own (the word counts of docs/writing_plugins.md, run as written), fed from
what changed in storage (pages and attachments alike), by one event and one follower."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from hostcore import SYSTEM, StartupError, create_app, hookimpl
from hostcore.app import build_host
from hostcore.cli import main
from hostcore.host.host import Host

from .conftest import BASE_CONFIG
from .test_docs import code_blocks
from .test_recovery import damage
from .test_search import push_from_outside

ROOT = Path(__file__).resolve().parent.parent
PLUGIN = "doc_example.word_counts"  # the example of docs/writing_plugins.md, "A derived index"
CONFIG = {"PLUGINS": ["git", "tokens", "sqlite", PLUGIN], "STORAGE": "git", "SEARCH": "sqlite"}
TOML = f'PLUGINS = ["git", "tokens", "sqlite", "{PLUGIN}"]\nSTORAGE = "git"\nSEARCH = "sqlite"\n'


@pytest.fixture(autouse=True)
def doc_example(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """The docs' derived index as a plugin module a third party would write, importable by its path."""
    site = tmp_path_factory.getbasetemp() / "doc-example"
    if not site.exists():
        (site / "doc_example").mkdir(parents=True)
        (site / "doc_example" / "__init__.py").write_text("")
        example = code_blocks((ROOT / "docs" / "writing_plugins.md").read_text(), "A derived index", "python")[0]
        (site / "doc_example" / "word_counts.py").write_text(example)
    monkeypatch.syspath_prepend(str(site))


def upload(wiki, slug: str, filename: str, data: bytes) -> dict:
    ticket = wiki.upload_attachment(slug, filename)
    return wiki.complete_upload(ticket["upload_url"].rsplit("/", 1)[1], data)


def words(host: Host, path: str) -> int | None:
    """What the plugin's index holds for ``path``, caught up with storage first (as a read would be)."""
    return host.indexes.current("word counts").count(path)  # type: ignore[attr-defined]


def body_words(host: Host, slug: str) -> int:
    """The words of the page's body, which the example counts; fewer than the stored file's, whose
    front matter it leaves out."""
    body = len(host.wiki(SYSTEM).page(slug).body.split())
    assert body < len(host.storage.read(f"{slug}.md").split())
    return body


def test_hook_register_derived_indexes(tmp_path, caplog):
    """A plugin's derived index is kept current like the core's: pages and attachments saved here,
    a push from outside, another worker's reads; damaged, it is rebuilt; ``hostcore reindex`` too."""
    instance = tmp_path / "instance"
    instance.mkdir()
    (instance / "hostcore.toml").write_text(TOML)
    host = build_host(instance)
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes", title="Notes")
    admin.save_page("notes/plan", title="Plan", body="one two three")
    upload(admin, "notes/plan", "report.txt", b"alpha beta gamma delta")
    assert words(host, "notes/plan.files/report.txt") == 4  # an upload reaches it: the one event covers attachments
    assert words(host, "notes/plan.md") == body_words(host, "notes/plan")
    push_from_outside(host, tmp_path, {"notes/outside.md": "pushed from a clone\n"})
    assert words(host, "notes/outside.md") == 4
    other = build_host(instance)  # another gunicorn worker of the same instance
    try:
        admin.delete_page("notes/plan")
        assert words(other, "notes/plan.md") is None and words(other, "notes/plan.files/report.txt") is None
    finally:
        other.close()
        host.close()

    damage(instance / "word-counts.sqlite", "garbage")
    host = build_host(instance)
    try:
        rebuilt = host.indexes["word counts"].rebuild
        assert rebuilt is not None
        rebuilt.wait()
        assert words(host, "notes/outside.md") == 4
    finally:
        host.close()
    assert "word counts: rebuilding, 1 of 1 files" in caplog.text  # notes/outside.md: the rest was deleted
    assert len(list(instance.glob("word-counts.sqlite.damaged-*"))) == 1

    result = CliRunner().invoke(main, ["reindex", "--instance", str(instance)])
    assert result.exit_code == 0, result.output
    assert "rebuilt the word counts: 1 files" in result.stdout


def test_two_indexes_of_one_name_stop_start_up(tmp_path):
    class Twice:
        __name__ = "twice"

        @hookimpl
        def register_derived_indexes(self, register, host):
            from doc_example.word_counts import WordCounts  # type: ignore[import-not-found]

            register(WordCounts(host.instance_path))

    with pytest.raises(StartupError, match="two plugins register a derived index named 'word counts'"):
        create_app(CONFIG, instance_path=tmp_path, plugins=[Twice()])

    class NotAnIndex:
        __name__ = "not_an_index"

        @hookimpl
        def register_derived_indexes(self, register):
            register(object())

    with pytest.raises(StartupError, match="register_derived_indexes: .* must be a DerivedIndex with a name"):
        create_app(BASE_CONFIG, instance_path=tmp_path / "b", plugins=[NotAnIndex()])


class Changed:
    """A third-party plugin listening for every change: the storage event, then the page events."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, ...]] = []

    @hookimpl
    def storage_changed(self, paths, change):
        self.seen.append(("changed", *paths, change.message.split(":")[0]))

    @hookimpl
    def page_saved(self, page):
        self.seen.append(("saved", page.slug))

    @hookimpl
    def page_deleted(self, page):
        self.seen.append(("deleted", page.slug))


def test_hook_storage_changed(tmp_path):
    changed = Changed()
    host = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[changed]).extensions["hostcore"]
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes")
    admin.save_page("notes/plan", body="plan")
    upload(admin, "notes/plan", "report.txt", b"numbers")
    admin.delete_page("notes/plan")
    assert changed.seen == [
        ("changed", "notes/.namespace.yaml", "save_namespace"),
        ("changed", "notes/plan.md", "save_page"),
        ("saved", "notes/plan"),
        ("changed", "notes/plan.files/report.txt", "upload_attachment"),  # an upload is seen: no page event has it
        ("changed", "notes/plan.files/report.txt", "notes/plan.md", "delete_page"),
        ("deleted", "notes/plan"),
    ]
    host.close()


def test_without_storage_versions_the_event_feeds_the_indexes_at_once(tmp_path):
    """The fs storage keeps no versions: each change's paths reach every index before the call returns."""
    config = {"PLUGINS": ["fs", "tokens", PLUGIN], "STORAGE": "fs"}
    host = create_app(config, instance_path=tmp_path).extensions["hostcore"]
    index = host.indexes["word counts"]
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes")
    admin.save_page("notes/a", body="one two")
    upload(admin, "notes/a", "memo.txt", b"three four five")
    assert index.count("notes/a.files/memo.txt") == 3 and index.count("notes/a.md") == body_words(host, "notes/a")  # type: ignore[attr-defined]
    host.close()


def test_a_failing_index_never_fails_the_change(tmp_path, monkeypatch, caplog):
    host = create_app(CONFIG, instance_path=tmp_path).extensions["hostcore"]
    index = host.indexes["word counts"]
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes")
    apply = index.apply

    def broken(changes):
        raise OSError("disk trouble")

    monkeypatch.setattr(index, "apply", broken)
    saved = admin.save_page("notes/kept", body="still here")
    assert admin.read_page("notes/kept")["hash"] == saved["hash"]
    assert words(host, "notes/kept.md") is None
    assert "word counts catch-up failed; it is tried again at the next read" in caplog.text
    monkeypatch.setattr(index, "apply", apply)
    assert words(host, "notes/kept.md") == body_words(host, "notes/kept")  # repaired by the next read
    host.close()


def test_the_service_reaches_the_indexes_only_through_the_component():
    """The service layer never kicks, catches up or reads an index object of its own: it asks
    ``host.indexes`` for one made current (so every read follows the same rule)."""
    for path in sorted((ROOT / "hostcore" / "service").glob("*.py")):
        found = re.findall(r"host\.(?:links|search|passages)\b|\.kick\(|catch_up|\.rebuild\b", path.read_text())
        assert not found, f"{path.name}: {found}"


def test_the_indexes_component_owns_the_lifecycle(tmp_path, caplog):
    """start, kick, wait and close, composed by the host: no state key, no thread left behind."""
    caplog.set_level(logging.DEBUG, logger="hostcore.index")
    host = create_app(CONFIG, instance_path=tmp_path).extensions["hostcore"]
    assert not any(key.startswith("hostcore.index") for key in host.state)
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes")
    admin.save_page("notes/a", body="zebra")
    host.indexes.wait()
    assert host.indexes["word counts"].storage_version() == host.storage.version()
    assert [index.name for index in host.indexes] == ["link graph", "search index", "passage index", "word counts"]
    thread = host.indexes.follower.thread
    host.close()
    assert thread is None or not thread.is_alive()
    assert host.indexes.follower.thread is None and host.passages._worker.thread is None
