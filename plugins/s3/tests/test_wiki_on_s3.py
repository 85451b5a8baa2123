"""The service layer on the s3 storage: history tools work as on git."""

from pathlib import Path

import pytest

from hostcore import SYSTEM, NotFound, Principal, create_app
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
