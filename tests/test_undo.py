"""undo_session on the storages that keep history (git, S3): what one principal, agent session or
OAuth grant changed since a time, dry-run page by page (reverts cleanly, or conflicts with a later
change by someone else, or was a move), then proposed as one change request a person applies."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from hostcore import SYSTEM, InsufficientScope, Principal, Unavailable, ValidationError, create_app
from hostcore.host.host import Host
from hostcore.seams.activity import Activity
from hostcore.testing.s3 import prefix_for, s3_server  # noqa: F401  (the fixture)


@pytest.fixture(params=["git", pytest.param("s3", marks=pytest.mark.s3)])
def host(request: pytest.FixtureRequest, tmp_path: Path):
    config: dict[str, Any] = {"PLUGINS": [request.param, "tokens", "sqlite"], "STORAGE": request.param, "SEARCH": "sqlite"}
    if request.param == "s3":
        s3 = request.getfixturevalue("s3_server")
        config["PLUGIN_CONFIG"] = {"s3": {"bucket": s3.bucket, "endpoint_url": s3.url, "prefix": prefix_for(tmp_path)}}
    host: Host = create_app(config, instance_path=tmp_path / "instance").extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    host.wiki(SYSTEM).save_namespace("team", title="Team")
    yield host
    host.close()


BOT = Principal("bot", frozenset({"write"}), client="claude-code 2.1")
WES = Principal("wes", frozenset({"write"}))
REVIEWER = Principal("ann", frozenset({"review"}))


def _since_now() -> str:
    """A time after everything written so far, on a whole second (git records commit times so)."""
    time.sleep(1.05)
    return datetime.now(UTC).replace(microsecond=0).isoformat()


def _bot_session(host: Host) -> str:
    w = host.wiki(SYSTEM)
    h = {slug: w.save_page(slug, body=f"{slug} as it was\n", title="T", tags=["keep"])["hash"]
         for slug in ("notes/edited", "notes/deleted", "notes/contested", "notes/moved", "team/other")}  # fmt: skip
    since = _since_now()
    bot = host.wiki(BOT)
    bot.edit_page("notes/edited", h["notes/edited"], [{"oldText": "as it was", "newText": "first bot edit"}])
    bot.edit_page("notes/edited", bot.page("notes/edited").hash, [{"oldText": "first", "newText": "second"}])
    bot.save_page("notes/made", body="a page the bot made\n")
    bot.delete_page("notes/deleted", h["notes/deleted"])
    bot.edit_page("notes/contested", h["notes/contested"], [{"oldText": "as it was", "newText": "bot's"}])
    host.wiki(WES).append_to_page("notes/contested", "wes adds a line")  # someone else after it
    bot.move_page("notes/moved", "notes/moved-away", h["notes/moved"])
    bot.edit_page("team/other", h["team/other"], [{"oldText": "as it was", "newText": "elsewhere"}])
    return since


def test_a_dry_run_tells_what_reverts_and_what_conflicts_then_a_person_applies_it(host: Host) -> None:
    since = _bot_session(host)
    w = host.wiki(SYSTEM)
    notes_only = host.wiki(Principal("pia", frozenset({"propose"}), frozenset({"notes"})))
    dry = notes_only.undo_session(since, principal="bot")
    reverts = {r["slug"]: r for r in dry["reverts"]}
    assert {s: r["op"] for s, r in reverts.items()} == {"notes/edited": "save", "notes/made": "delete", "notes/deleted": "create"}
    assert reverts["notes/edited"]["changes"] == 2 and reverts["notes/edited"]["hash"] == w.page("notes/edited").hash
    conflicts = {c["slug"]: c for c in dry["conflicts"]}
    assert conflicts["notes/contested"]["by"] == ["wes"] and "moved" in conflicts["notes/moved-away"]["reason"]
    assert "team/other" not in reverts and "team/other" not in conflicts  # outside the caller's namespaces
    assert dry["dry_run"] and not dry["proposed"] and w.page("notes/edited").body == "notes/edited second bot edit\n"
    assert not w.list_change_requests()["total"]  # a dry run saves nothing

    made = notes_only.undo_session(since, principal="bot", dry_run=False)
    assert made["proposed"].startswith("cr-") and made["review_url"].endswith(made["proposed"])
    request = w.read_change_request(made["proposed"])
    assert request["risk"] == "destructive" and "notes/contested: changed since by wes" in request["description"]
    assert "undo_session by pia: revert what bot changed since" in request["reason"]
    with pytest.raises(InsufficientScope):
        host.wiki(WES).apply_change_request(made["proposed"])
    host.wiki(REVIEWER).apply_change_request(made["proposed"], "undo the bot")
    assert w.page("notes/edited").body == "notes/edited as it was\n" and w.page("notes/edited").tags == ("keep",)
    assert w.page("notes/deleted").body == "notes/deleted as it was\n" and w.page("notes/deleted").title == "T"
    assert not w.storage.exists("notes/made.md") and "wes adds a line" in w.page("notes/contested").body
    again = notes_only.undo_session(since, principal="bot")  # nothing of the bot's is left to revert
    assert not again["reverts"]


def test_a_session_or_grant_keeps_to_the_pages_its_calls_touched(host: Host) -> None:
    since = _bot_session(host)
    now = time.time()
    host.activity.record(Activity(now, "bot", "token", "claude-code 2.1", "s-1", "edit_page", ("notes/edited",), "ok", 2.0))
    host.activity.record(Activity(now, "bot", "oauth", "claude-code 2.1", "s-2", "save_page", ("notes/made",), "ok", 2.0, grant="g-9"))
    host.activity.record(Activity(now, "bot", "token", "claude-code 2.1", "s-1", "delete_page", ("notes/deleted",), "conflict", 2.0))
    admin = host.wiki(SYSTEM)
    assert [r["slug"] for r in admin.undo_session(since, session="s-1")["reverts"]] == ["notes/edited"]
    assert [r["slug"] for r in admin.undo_session(since, grant="g-9")["reverts"]] == ["notes/made"]
    with pytest.raises(ValidationError, match="no call of that session") as caught:
        admin.undo_session(since, session="s-nope")
    assert caught.value.field == "session"
    with pytest.raises(ValidationError):  # only a wiki-wide admin reads another's activity
        host.wiki(Principal("pia", frozenset({"propose"}))).undo_session(since, session="s-1")


def test_what_undo_session_refuses(host: Host) -> None:
    since = _bot_session(host)
    admin = host.wiki(SYSTEM)
    with pytest.raises(ValidationError, match="principal, session or grant"):
        admin.undo_session(since)
    with pytest.raises(ValidationError) as caught:
        admin.undo_session("yesterday", principal="bot")
    assert caught.value.field == "since"
    with pytest.raises(InsufficientScope):
        host.wiki(Principal("r", frozenset({"read"}))).undo_session(since, principal="bot")
    assert [r["slug"] for r in admin.undo_session(since, principal="wes")["reverts"]] == ["notes/contested"]  # the last word
    with pytest.raises(ValidationError, match="reverts cleanly"):
        admin.undo_session(since, principal="nobody", dry_run=False)
    assert not admin.list_change_requests()["total"]


def test_a_storage_without_history_cannot_undo(tmp_path: Path) -> None:
    host: Host = create_app({"PLUGINS": ["fs", "tokens", "sqlite"], "STORAGE": "fs", "SEARCH": "sqlite"},
                            instance_path=tmp_path / "instance").extensions["hostcore"]  # fmt: skip
    try:
        with pytest.raises(Unavailable):
            host.wiki(SYSTEM).undo_session("2026-01-01T00:00:00Z", principal="bot")
    finally:
        host.close()
