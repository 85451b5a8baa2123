"""The activity page (``/_/account/activity``): an admin of the whole wiki sees every call and page
opened, anyone else their own; web actions are recorded with the browser session and the page."""

from __future__ import annotations

from hostcore import SYSTEM


def test_web_actions_are_recorded_with_the_session_and_the_page(host, admin, client_for):
    admin.save_page("notes/plan", body="# Plan\n")
    carol = client_for("carol")
    assert carol.get("/notes/plan", headers={"User-Agent": "Mozilla/5.0 (X11; Linux)"}).status_code == 200
    assert carol.get("/notes/nothing-here").status_code == 404
    records = [r for r in admin.read_activity(principal="person:carol")["records"] if r["tool"].startswith("web:")]
    missing, page = records[0], records[1]
    assert (page["tool"], page["slugs"], page["outcome"], page["auth"]) == ("web:read", ["notes/plan"], "ok", "session")
    assert page["client"] == "Mozilla/5.0" and page["session"] and page["ms"] > 0
    assert missing["slugs"] == ["notes/nothing-here"] and missing["outcome"] != "ok"


def test_a_person_sees_their_own_activity_and_an_admin_everyones(host, admin, client_for):
    admin.save_page("team/plan", body="# Plan\n")
    dave, erin, fred = client_for("dave"), client_for("erin"), client_for("fred")
    dave.get("/team/plan")
    fred.get("/team/plan")
    mine = dave.get("/_/account/activity")
    assert mine.status_code == 200 and mine.headers["Cache-Control"] == "no-store"
    text = mine.get_data(as_text=True)
    assert "person:dave" in text and "person:fred" not in text and 'name="principal"' not in text
    everyone = erin.get("/_/account/activity").get_data(as_text=True)
    assert "person:dave" in everyone and "person:fred" in everyone and 'name="principal"' in everyone
    one = erin.get("/_/account/activity?principal=person:fred").get_data(as_text=True)
    assert "person:fred" in one and "person:dave</td>" not in one
    refused = fred.get("/_/account/activity?principal=person:dave")  # an admin of one namespace reads only their own
    assert refused.status_code == 400 and "you may read only your own activity" in refused.get_data(as_text=True)
    assert host.wiki(SYSTEM).read_activity(principal="person:erin", tool="web:activity")["records"]


def test_the_activity_page_wants_a_person(visitor):
    response = visitor.get("/_/account/activity")
    assert response.status_code in (302, 303) and "/_/login" in response.headers["Location"]
