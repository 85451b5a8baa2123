"""History and activity lines in words ("claude-code (OAuth, ana) edited section Install of
Deployment guide"), and the history pages' filters by person and client."""

from __future__ import annotations

from hostcore_web import words

from hostcore import Principal

GUIDE = "# Install\n\nrun it\n\n# Usage\n\nuse it\n"


def text(parts: list[words.Part]) -> str:
    return "".join(t for t, _href in parts)


def test_a_section_edit_reads_as_a_sentence():
    commit = {"author": "person:ana", "message": "save_section: notes/deploy#install via claude-code 2.1.3"}
    line = words.commit_line(commit, lambda slug: "Deployment guide", lambda slug, sid: "Install")
    assert text(line) == "claude-code (ana) edited section Install of Deployment guide"
    assert line[-1] == ("Deployment guide", "/notes/deploy")
    record = {"principal": "person:ana", "auth": "oauth", "client": "claude-code 2.1.3", "tool": "edit_page",
              "slugs": ["notes/deploy"], "outcome": "ok"}  # fmt: skip
    assert text(words.activity_line(record, lambda slug: "Deployment guide")) == "claude-code (OAuth, ana) edited Deployment guide"


def test_other_changes_read_in_words_too():
    def line(message: str, author: str = "ana") -> str:
        return text(words.commit_line({"author": author, "message": message}, lambda s: s.upper(), lambda s, i: i))

    assert line("save_page: notes/a via web") == "ana in the browser saved NOTES/A"
    assert line("move_page: notes/a -> notes/b via bot 1.0") == "bot (ana) moved notes/a to NOTES/B"
    assert line("save_page: notes/a") == "ana saved NOTES/A"
    assert line("append_to_page: notes/a#_top via bot") == "bot (ana) added to NOTES/A"
    assert line("planted by hand\n\nmore", "ops") == "ops: planted by hand"  # not a tool's message
    assert line("restore_page: notes/a from 189f7bd29611 via web") == "ana in the browser restored NOTES/A from 189f7bd29611"
    assert line("upload_attachment: notes/a/map.png via web") == "ana in the browser attached map.png to NOTES/A"
    assert line("save_namespace: journal") == "ana changed the settings of journal"
    refused = {"principal": "tok", "auth": "token", "client": "cursor", "tool": "read_page", "slugs": ["team/x"], "outcome": "forbidden"}
    assert text(words.activity_line(refused, str)) == "cursor (token, tok) read team/x (refused: forbidden)"
    posted = {"principal": "person:ana", "auth": "session", "client": "Mozilla/5.0", "tool": "web:change_comments",
              "slugs": ["notes/a"], "outcome": "ok"}  # fmt: skip
    assert text(words.activity_line(posted, str)) == "ana in the browser changed the comments of notes/a"
    listing = {"principal": "ana", "auth": "session", "client": "", "tool": "web:all_pages", "slugs": [], "outcome": "ok"}
    assert text(words.activity_line(listing, str)) == "ana in the browser opened all pages"


def test_filters_match_person_and_client():
    by_web = {"author": "person:ana", "message": "save_page: notes/a via web"}
    by_bot = {"author": "bot", "message": "edit_page: notes/a via claude-code 2.1"}
    assert words.matches(by_web, "ana", "") and not words.matches(by_bot, "ana", "")
    assert words.matches(by_bot, "", "Claude") and not words.matches(by_web, "", "claude")
    assert words.choices([by_web, by_bot]) == (["ana", "bot"], ["claude-code", "web"])


def test_the_changes_and_history_pages_speak_in_words_and_filter(carol, admin, host):
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], title="Notes")
    admin.save_page("notes/deploy", body=GUIDE, title="Deployment guide")
    bot = host.wiki(Principal("helper", frozenset({"write"}), client="claude-code 2.1"))
    rev = next(s["rev"] for s in bot.outline("notes/deploy")["sections"] if s["section_id"] == "install")
    bot.save_section("notes/deploy", "install", rev, "# Install\n\nrun it twice\n")
    html = carol.get("/_/changes").text
    assert 'claude-code (helper) edited section Install of <a href="/notes/deploy">Deployment guide</a>' in html
    only = carol.get("/_/changes?client=claude").text
    assert "claude-code (helper)" in only and "hostcore saved" not in only and 'value="claude"' in only
    nobody = carol.get("/_/changes?person=nobody").text
    assert "No changes by this person or client among the latest 100." in nobody
    history = carol.get("/_/history/notes/deploy?person=helper").text
    assert "edited section Install of" in history and history.count('name="from"') == 1
    assert carol.get("/_/history/notes/deploy").text.count('name="from"') == 2


def test_the_activity_page_speaks_in_words(admin, client_for):
    admin.save_page("notes/plan", body="# Plan\n", title="The plan")
    carol = client_for("carol")
    carol.get("/notes/plan", headers={"User-Agent": "Mozilla/5.0 (X11; Linux)"})
    carol.get("/notes/nothing-here")
    html = carol.get("/_/account/activity").text
    assert 'carol in the browser opened <a href="/notes/plan">The plan</a>' in html
    assert 'carol in the browser opened <a href="/notes/nothing-here">notes/nothing-here</a> (refused: http_404)' in html


def test_titles_come_only_from_namespaces_the_reader_may_read(host, admin):
    admin.save_page("team/secret", body="x", title="The secret plan")
    admin.save_page("notes/open", body="x", title="Open notes")
    dave = host.wiki(Principal("person:dave", frozenset({"read"}), frozenset({"notes"})))
    assert dave.page_titles(["team/secret", "notes/open", "notes/none"]) == {"notes/open": "Open notes"}
    title_of, _heading_of = words.lookups(dave, ["team/secret"])
    assert title_of("team/secret") == "team/secret"
