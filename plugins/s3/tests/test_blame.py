"""blame_page on S3: the change log gives each line the change that last wrote it, across a move,
with the author and client, as on git."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from hostcore import SYSTEM, create_app
from hostcore.testing.s3 import S3Server, prefix_for

from .test_migration import new_instance, s3_config


def test_blame_page_on_s3_follows_a_move(tmp_path: Path, s3_server: S3Server) -> None:
    instance = new_instance(tmp_path / "instance", s3_config(s3_server, prefix_for(tmp_path)))
    host = create_app(instance_path=instance).extensions["hostcore"]
    try:
        admin = host.wiki(SYSTEM)
        for name in ("notes", "team"):
            admin.save_namespace(name)
        ann = host.wiki(replace(SYSTEM, name="ann", client="Claude Desktop 0.9.3"))
        bob = host.wiki(replace(SYSTEM, name="bob"))
        h = ann.save_page("notes/plan", body="one\ntwo\nthree\n")["hash"]
        h = bob.edit_page("notes/plan", h, [{"oldText": "two", "newText": "TWO"}])["hash"]
        bob.move_page("notes/plan", "team/plan", h)
        result = admin.blame_page("team/plan")
        changes = {c["id"]: c for c in result["changes"]}
        body = [(line["text"], changes[line["change"]]["author"], changes[line["change"]]["client"])
                for line in result["lines"] if line["line"] >= result["body_line"]]  # fmt: skip
        assert body == [("one", "ann", "Claude Desktop 0.9.3"), ("TWO", "bob", None), ("three", "ann", "Claude Desktop 0.9.3")]
        assert result["complete"] and result["hash"] == admin.read_page("team/plan")["hash"]
    finally:
        host.close()
