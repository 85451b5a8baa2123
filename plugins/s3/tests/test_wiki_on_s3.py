"""The service layer on the s3 storage: history tools work as on git."""

from pathlib import Path

import pytest

from hostcore import SYSTEM, Conflict, NotFound, Principal, create_app
from hostcore.testing.s3 import S3Server, prefix_for


@pytest.fixture
def host(s3_server: S3Server, tmp_path: Path):
    config = {"bucket": s3_server.bucket, "endpoint_url": s3_server.url, "prefix": prefix_for(tmp_path)}
    app = create_app({"PLUGINS": ["s3", "tokens"], "STORAGE": "s3", "PLUGIN_CONFIG": {"s3": config}}, instance_path=tmp_path / "instance")
    host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    host.wiki(SYSTEM).save_namespace("team", title="Team")
    yield host
    host.close()


def test_delete_restore_rename_and_recent_changes_by_access(host) -> None:
    ann = host.wiki(Principal("ann", frozenset({"write"}), None))
    first = ann.save_page("notes/a", body="see [[notes/b]]\n")
    ann.save_page("notes/b", body="one\n")
    ann.save_page("team/t", body="team only\n")
    ann.delete_page("notes/a", basehash=first["hash"])
    with pytest.raises(NotFound):
        ann.page("notes/a")
    restored = ann.restore_page("notes/a")
    assert restored["changed"] and ann.page("notes/a").body == "see [[notes/b]]\n"
    renamed = ann.rename_page("notes/b", "Bee", basehash=ann.page("notes/b").hash)
    assert renamed["slug"] == "notes/bee" and renamed["rewritten"] == ["notes/a"]
    assert ann.page("notes/a").body == "see [[notes/bee]]\n"
    assert [c["message"].split(":")[0] for c in ann.page_history("notes/bee")["commits"]] == ["rename_page", "save_page"]
    notes_only = host.wiki(Principal("bob", frozenset({"read"}), frozenset({"notes"})))
    seen = [c["files"] for c in notes_only.recent_changes(limit=20)["commits"]]
    assert ["team/t.md"] not in seen and ["notes/a.md"] in seen
    assert all(f.startswith("notes/") for files in seen for f in files)


def test_several_pages_in_one_change_are_one_log_entry_and_edits_rebase(host) -> None:
    """apply_changes is one change record, all or nothing; edit_page's rebase reads the base
    version from the stored objects."""
    ann = host.wiki(Principal("ann", frozenset({"write"}), None))
    a = ann.save_page("notes/a", body="one\n\ntwo\n")["hash"]
    b = ann.save_page("notes/b", body="b\n")["hash"]
    before = len(host.storage.history(limit=1000))
    ann.apply_changes([
        {"op": "edit", "slug": "notes/a", "basehash": a, "edits": [{"oldText": "one", "newText": "ONE"}]},
        {"op": "move", "slug": "notes/b", "new_slug": "notes/bee", "basehash": b},
        {"op": "save", "slug": "team/new", "body": "new\n"},
    ])  # fmt: skip
    history = host.storage.history(limit=1000)
    assert len(history) == before + 1
    assert sorted(history[0].paths) == ["notes/a.md", "notes/b.md", "notes/bee.md", "team/new.md"]
    with pytest.raises(Conflict) as err:  # a stale hash in any change: nothing at all is written
        ann.apply_changes([{"op": "save", "slug": "team/other", "body": "x\n"}, {"op": "delete", "slug": "notes/a", "basehash": a}])
    assert err.value.field == "changes[1].basehash" and len(host.storage.history(limit=1000)) == before + 1
    rebased = ann.edit_page("notes/a", a, [{"oldText": "two", "newText": "TWO"}], rebase=True)
    assert rebased["rebased"] and ann.page("notes/a").body == "ONE\n\nTWO\n"
