"""The review pages of change requests (``/_/review``): the open ones per namespace as the person
may see them, a request's diffs inline and side by side with changed words marked, approve and
reject with a note (CSRF and Origin checked, buttons only for those the service lets decide), and
a drifted page resolved in the page, then saved over the page as the reviewer saw it."""

from __future__ import annotations

import re

from hostcore import Principal

from .test_security import _forms

BOT = Principal("bot", frozenset({"propose"}), client="claude-code 2.1")


def _propose(host, changes, title="Tidy the plan"):
    return host.wiki(BOT).create_change_request(changes, title, "the person asked", source="https://example.org/chat/1")["id"]


def test_the_list_shows_open_requests_per_namespace_the_person_may_see(host, admin, client_for, visitor):
    admin.save_page("notes/plan", body="plan\n")
    admin.save_page("team/t", body="t\n")
    in_notes = _propose(host, [{"op": "append", "slug": "notes/plan", "markdown": "more"}], "Append to the plan")
    in_team = _propose(host, [{"op": "append", "slug": "team/t", "markdown": "more"}], "Append to team")
    erin = client_for("erin").get("/_/review").text
    assert in_notes in erin and in_team in erin and 'id="ns-notes"' in erin and 'id="ns-team"' in erin
    assert "claude-code 2.1" in erin and "additive" in erin
    dave = client_for("dave").get("/_/review").text  # reads team only
    assert in_team in dave and in_notes not in dave
    assert client_for("dave").get(f"/_/review/{in_notes}").status_code == 404
    one = client_for("erin").get("/_/review?namespace=team").text
    assert in_team in one and in_notes not in one
    assert visitor.get("/_/review").status_code in (302, 303)
    assert visitor.get(f"/_/review/{in_team}").status_code in (302, 303)
    admin.reject_change_request(in_team)
    assert in_team not in client_for("erin").get("/_/review").text


def test_a_request_shows_each_pages_diff_inline_and_side_by_side(host, admin, client_for):
    base = admin.save_page("notes/plan", body="# Plan\n\nship the red box\n")
    made = _propose(host, [
        {"op": "edit", "slug": "notes/plan", "basehash": base["hash"], "edits": [{"oldText": "red box", "newText": "blue box"}]},
        {"op": "save", "slug": "notes/new", "body": "a new page\n", "title": "New"},
    ])  # fmt: skip
    erin = client_for("erin")
    inline = erin.get(f"/_/review/{made}").text
    assert "<ins>blue</ins>" in inline and "<del>red</del>" in inline and 'class="d-add">+a new page' in inline
    assert "the person asked" in inline and 'href="https://example.org/chat/1"' in inline and "structural" in inline
    assert 'id="approve"' in inline and 'id="reject"' in inline
    split = erin.get(f"/_/review/{made}?view=split").text
    assert 'table class="diff split"' in split and "<ins>blue</ins>" in split
    carol = client_for("carol").get(f"/_/review/{made}").text  # write, not review: a structural request is not hers to decide
    assert 'id="approve"' not in carol and 'id="reject"' not in carol and 'id="cannot-apply"' in carol


def test_approve_applies_it_and_reject_keeps_the_note(host, admin, client_for):
    base = admin.save_page("notes/plan", body="ship the red box\n")
    made = _propose(host, [{"op": "edit", "slug": "notes/plan", "basehash": base["hash"],
                            "edits": [{"oldText": "red", "newText": "blue"}]}])  # fmt: skip
    erin = client_for("erin")
    forms = dict(_forms(erin.get(f"/_/review/{made}").text))
    assert set(forms) == {f"/_/review/{made}/apply", f"/_/review/{made}/reject", "/_/logout"}
    refused = erin.post(f"/_/review/{made}/apply", data={"note": "ok"})
    assert refused.status_code == 403 and admin.page("notes/plan").body == "ship the red box\n"
    foreign = erin.post(f"/_/review/{made}/apply", data={"csrf_token": erin.csrf}, headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403 and admin.page("notes/plan").body == "ship the red box\n"
    done = erin.post(f"/_/review/{made}/apply", data={"csrf_token": erin.csrf, "note": "looks right"})
    assert done.status_code == 302 and admin.page("notes/plan").body == "ship the blue box\n"
    after = erin.get(done.headers["Location"]).text
    assert re.search(r'id="state">applied by erin via web', after) and 'id="approve"' not in after and "looks right" in after
    other = _propose(host, [{"op": "append", "slug": "notes/plan", "markdown": "more"}], "More")
    carol = client_for("carol")  # additive: the write scope applies it, so carol may reject it too
    assert 'id="approve"' in carol.get(f"/_/review/{other}").text
    carol.post(f"/_/review/{other}/reject", data={"csrf_token": carol.csrf, "note": "not this week"})
    record = admin.read_change_request(other)
    assert (record["state"], record["note"], record["decided_by"]) == ("rejected", "not this week", "person:carol")
    again = carol.post(f"/_/review/{other}/reject", data={"csrf_token": carol.csrf, "note": "twice"})
    assert again.status_code == 409 and "rejected already" in again.text


def test_a_drifted_page_is_rebased_or_resolved_in_the_page_never_applied_blind(host, admin, client_for):
    base = admin.save_page("notes/plan", body="one\n\nship the two boxes\n\nthree\n")
    made = _propose(host, [{"op": "edit", "slug": "notes/plan", "basehash": base["hash"],
                            "edits": [{"oldText": "two", "newText": "TWO"}]}])  # fmt: skip
    later = admin.edit_page("notes/plan", base["hash"], [{"oldText": "three", "newText": "3"}])  # elsewhere: rebased
    erin = client_for("erin")
    rebased = erin.get(f"/_/review/{made}").text
    assert "rebased" in rebased and "resolved-0" not in rebased and "<ins>TWO</ins>" in rebased
    theirs = admin.edit_page("notes/plan", later["hash"], [{"oldText": "two", "newText": "deux"}])  # the same line
    page = erin.get(f"/_/review/{made}").text
    assert 'id="theirs-0"' in page and 'id="proposed-0"' in page and f'name="basehash-0" value="{theirs["hash"]}"' in page
    assert re.search(r'<textarea id="resolved-0" name="resolved-0"[^>]*>one\n\nship the TWO boxes\n\nthree\n</textarea>', page)
    blind = erin.post(f"/_/review/{made}/apply", data={"csrf_token": erin.csrf})
    assert blind.status_code == 409 and "Not applied" in blind.text and admin.page("notes/plan").body == "one\n\nship the deux boxes\n\n3\n"
    admin.append_to_page("notes/plan", "four")  # it moves on while the reviewer resolves
    stale = erin.post(f"/_/review/{made}/apply", data={"csrf_token": erin.csrf, "resolved-0": "one\r\n\r\nTWO deux\r\n\r\n3\r\n",
                                                         "basehash-0": theirs["hash"]})  # fmt: skip
    assert stale.status_code == 409 and "four" in admin.page("notes/plan").body
    current = admin.page("notes/plan")
    done = erin.post(f"/_/review/{made}/apply", data={"csrf_token": erin.csrf, "resolved-0": "one\r\n\r\nTWO deux\r\n\r\n3\r\n\r\nfour\r\n",
                                                        "basehash-0": current.hash})  # fmt: skip
    assert done.status_code == 302 and admin.page("notes/plan").body == "one\n\nTWO deux\n\n3\n\nfour\n"
    assert admin.read_change_request(made)["state"] == "applied"


def test_a_rename_says_where_the_page_goes(host, admin, client_for):
    base = admin.save_page("notes/old-name", body="text\n")
    admin.save_page("notes/linking", body="see [[old-name]]\n")
    made = _propose(host, [{"op": "rename", "slug": "notes/old-name", "basehash": base["hash"], "title": "New Name"}])
    page = client_for("erin").get(f"/_/review/{made}").text
    assert "Renames the page to <code>notes/new-name</code> (titled “New Name”)" in page and "destructive" in page
    assert re.search(r'<p id="rewrites-0">Links rewritten in: <a href="/notes/linking">notes/linking</a>.</p>', page)


def test_an_edit_in_a_namespace_under_review_shows_the_change_request_it_became(admin, client_for):
    admin.save_namespace("team", admin.read_namespace("team")["hash"], review=True)
    base = admin.save_page("team/plan", body="plan\n", title="Plan")
    carol = client_for("carol")  # write, not review
    sent = carol.post("/_/edit/team/plan", data={"csrf_token": carol.csrf, "basehash": base["hash"], "body": "new plan\n", "title": "Plan"})
    assert sent.status_code == 302 and "/_/review/cr-" in sent.headers["Location"]
    assert admin.page("team/plan").body == "plan\n"
    shown = carol.get(sent.headers["Location"]).text
    assert 'class="d-add">+<ins>new </ins>plan' in shown
    assert 'id="approve"' not in shown and 'id="reject"' in shown  # her own: she may withdraw it
