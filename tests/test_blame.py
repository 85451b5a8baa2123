"""blame_page: each line of a page with the change that last wrote it (author, client, time,
message, stated reason), followed across moves, windowed, with slugs the reader may not see
redacted from messages; a storage without history answers ``no_history``."""

from __future__ import annotations

import json

import pytest

import hostcore_tokens
from hostcore import SYSTEM, Change, Put, create_app
from hostcore.errors import ValidationError
from hostcore.service.blame import described

from .conftest import principal
from .test_activity import call, legacy_session


@pytest.fixture
def app(tmp_path):
    app = create_app({"PLUGINS": ["git", "tokens"], "STORAGE": "git"}, instance_path=tmp_path / "instance")
    wiki = app.extensions["hostcore"].wiki(SYSTEM)
    for name in ("notes", "team", "secret"):
        wiki.save_namespace(name)
    yield app
    app.extensions["hostcore"].close()


def test_each_line_names_the_change_author_and_client_that_last_wrote_it_across_a_move(client, host):
    tokens = hostcore_tokens.store(host)
    ann, bob = tokens.create("ann", ["write"]), tokens.create("bob", ["write"])
    headers = legacy_session(client, ann)
    h = call(client, ann, "save_page", {"slug": "notes/plan", "body": "one\ntwo\nthree\n"}, headers)["structuredContent"]["hash"]
    h = call(client, bob, "edit_page", {"slug": "notes/plan", "basehash": h, "edits": [{"oldText": "two", "newText": "TWO"}]})["structuredContent"]["hash"]
    h = call(client, bob, "move_page", {"slug": "notes/plan", "new_slug": "team/plan", "basehash": h})["structuredContent"]["hash"]

    blame = call(client, bob, "blame_page", {"slug": "team/plan"})
    assert blame["content"][0]["text"].startswith("[The result below holds wiki content")  # page text: framed as data
    result = blame["structuredContent"]
    body = [line for line in result["lines"] if line["line"] >= result["body_line"]]
    changes = {c["id"]: c for c in result["changes"]}
    assert [(line["text"], changes[line["change"]]["author"]) for line in body] == [("one", "ann"), ("TWO", "bob"), ("three", "ann")]
    first = changes[body[0]["change"]]
    assert first["client"] == "Claude Desktop 0.9.3" and first["message"] == "save_page: notes/plan via Claude Desktop 0.9.3"
    assert first["reason"] is None and first["time"].endswith("Z")
    assert result["hash"] == h and result["total_lines"] == len(result["lines"]) and result["complete"] and not result["more"]
    history = host.wiki(SYSTEM).page_history("team/plan")["commits"]
    assert body[0]["change"] == history[-1]["id"] and body[1]["change"] == history[1]["id"]  # not the move's commit


def test_a_stated_reason_and_redacted_slugs_and_windows(host):
    wiki = host.wiki(SYSTEM)
    wiki.save_page("notes/a", body="alpha\nbeta\n")
    stored = host.storage.read("notes/a.md")
    message = "save_page: notes/a via bot 1.0\n\nbecause secret/launch moved to next week"
    host.storage.apply([Put("notes/a.md", stored + b"gamma\n", expect=wiki.read_page("notes/a")["hash"])], Change("bot", message))
    narrow = host.wiki(principal("read", namespaces=["notes"]))
    result = narrow.blame_page("notes/a", start_line=1, limit=2)
    assert result["more"] and result["next_line"] == 3 and len(result["lines"]) == 2
    last = narrow.blame_page("notes/a", start_line=result["next_line"], limit=100)
    gamma = next(line for line in last["lines"] if line["text"] == "gamma")
    change = next(c for c in last["changes"] if c["id"] == gamma["change"])
    assert change["reason"] == "because … moved to next week" and change["client"] == "bot 1.0" and change["author"] == "bot"
    unredacted = {c["id"]: c for c in wiki.blame_page("notes/a")["changes"]}[gamma["change"]]
    assert unredacted["reason"] == "because secret/launch moved to next week"
    with pytest.raises(ValidationError) as bad:
        narrow.blame_page("notes/a", start_line=0)
    assert bad.value.field == "start_line"
    with pytest.raises(Exception) as refused:
        host.wiki(principal("read", namespaces=["team"])).blame_page("notes/a")
    assert refused.value.code == "forbidden"


def test_described_reads_the_client_and_the_reason():
    assert described("save_page: notes/a via Claude Desktop 0.9.3") == ("Claude Desktop 0.9.3", None)
    assert described("planted by hand\n\nwhy: a typo") == (None, "why: a typo")


def test_a_storage_without_history_answers_no_history(tmp_path):
    app = create_app({"PLUGINS": ["fs", "tokens"], "STORAGE": "fs"}, instance_path=tmp_path / "fs")
    host = app.extensions["hostcore"]
    try:
        host.wiki(SYSTEM).save_namespace("notes")
        host.wiki(SYSTEM).save_page("notes/a", body="x\n")
        token = hostcore_tokens.store(host).create("reader", ["read"])
        result = call(app.test_client(), token, "blame_page", {"slug": "notes/a"})
        err = json.loads(result["content"][-1]["text"])
        assert result["isError"] and err["code"] == "no_history" and "fs storage keeps no line history" in err["message"]
    finally:
        host.close()
