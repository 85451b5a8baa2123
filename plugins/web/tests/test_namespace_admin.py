"""The namespace pages of an admin: create, change every setting (the service's validation, its
errors beside the field, the basehash race), delete with a page naming what goes, restore."""

from __future__ import annotations

import re

import pytest

FULL = {
    "title": "Handbook", "description": "How we work\nday to day", "public": "on", "skin": "journal", "palette": "nord",
    "image": "", "widgets": "pinned, pages", "index": "start", "guide": "guide", "inbox": "drop",
    "tree": "start\nguides/setup\n", "new_slug": "journal/{date}", "new_template": "# Title\n\nBody",
    "export_base_url": "https://example.org/hb/", "export_sitemap": "on", "export_robots_allow": "on", "export_links": "pretty",
}  # fmt: skip


def form(client, **fields):
    return {"csrf_token": client.csrf, **fields}


def test_an_admin_creates_a_namespace_with_every_setting(client_for, admin):
    erin = client_for("erin")
    page = erin.get("/_/namespaces/new")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    assert 'name="index" value="index"' in page.text and 'name="inbox" value="inbox"' in page.text  # the defaults
    done = erin.post("/_/namespaces/new", data=form(erin, name="handbook", **FULL))
    assert done.status_code == 303 and done.headers["Location"] == "/handbook/"
    saved = admin.read_namespace("handbook")
    assert {k: saved[k] for k in ("title", "description", "public", "skin", "palette", "widgets", "index", "guide", "inbox", "tree")} == {
        "title": "Handbook", "description": "How we work\nday to day", "public": True, "skin": "journal", "palette": "nord",
        "widgets": ["pinned", "pages"], "index": "start", "guide": "guide", "inbox": "drop", "tree": ["start", "guides/setup"],
    }  # fmt: skip
    assert saved["new"] == {"template": "# Title\n\nBody", "slug": "journal/{date}"}
    assert saved["export"] == {"base_url": "https://example.org/hb/", "sitemap": True, "robots_allow": True, "links": "pretty"}
    again = erin.post("/_/namespaces/new", data=form(erin, name="handbook", **FULL))
    assert again.status_code == 409 and "exists already" in again.text


@pytest.mark.parametrize(
    ("field", "value", "shown"),
    [("skin", "glitter", "skin"), ("tree", "ok\n../escape", "tree"), ("new_slug", "j/{weekday}", "new-slug"),
     ("export_base_url", "ftp://x", "export-base_url"), ("index", "", "index"), ("name", "_hidden", "name")],
)  # fmt: skip
def test_the_services_errors_stand_beside_the_field_they_name(client_for, admin, field, value, shown):
    erin = client_for("erin")
    fields = {"name": "handbook", **FULL, field: value}
    page = erin.post("/_/namespaces/new", data=form(erin, **fields))
    assert page.status_code == 400
    assert re.search(rf'id="f-{shown}"[^>]*aria-invalid="true"[^>]*aria-describedby="err-{shown}', page.text), page.text[-3000:]
    assert f'id="err-{shown}"' in page.text and 'role="alert"' in page.text
    assert "handbook" not in [n["name"] for n in admin.list_namespaces()["namespaces"]]  # nothing saved


def test_settings_save_with_the_hash_and_a_race_shows_both_sides(client_for, admin):
    erin = client_for("erin")
    page = erin.get("/_/namespaces/team/settings").text
    basehash = re.search(r'name="basehash" value="([0-9a-f]+)"', page).group(1)
    assert 'value="Team"' in page
    admin.save_namespace("team", basehash, title="Team (theirs)")  # another admin saves meanwhile
    stale = erin.post("/_/namespaces/team/settings", data=form(erin, basehash=basehash, **{**FULL, "title": "Team (mine)"}))
    assert stale.status_code == 409 and "nothing was overwritten" in stale.text
    assert "Team (theirs)" in stale.text and 'value="Team (mine)"' in stale.text
    assert "<td>pinned, pages</td>" in stale.text and "<td>(none)</td>" in stale.text  # lists as a person reads them
    assert admin.read_namespace("team")["title"] == "Team (theirs)"
    fresh = re.search(r'name="basehash" value="([0-9a-f]+)"', stale.text).group(1)
    assert fresh == admin.read_namespace("team")["hash"]
    saved = erin.post("/_/namespaces/team/settings", data=form(erin, basehash=fresh, **{**FULL, "title": "Team (mine)"}))
    assert saved.status_code == 303 and admin.read_namespace("team")["title"] == "Team (mine)"


def test_clearing_new_and_export_removes_them(client_for, admin):
    admin.save_namespace("team", admin.read_namespace("team")["hash"], new={"slug": "x/{date}", "template": "t"},
                         export={"base_url": "https://e.org/"})  # fmt: skip
    erin = client_for("erin")
    basehash = admin.read_namespace("team")["hash"]
    done = erin.post("/_/namespaces/team/settings", data=form(erin, basehash=basehash, title="Team", index="index", inbox="inbox"))
    assert done.status_code == 303
    saved = admin.read_namespace("team")
    assert saved["new"] == {} and saved["export"] == {} and saved["public"] is False


def test_only_admins_of_the_namespace_reach_its_pages(client_for, visitor):
    assert visitor.get("/_/namespaces").status_code == 302  # sign in first
    carol = client_for("carol")  # a writer, no admin scope
    assert carol.get("/_/namespaces").status_code == 403
    assert carol.get("/_/namespaces/new").status_code == 403
    assert carol.post("/_/namespaces/new", data=form(carol, name="mine", **FULL)).status_code == 403
    fred = client_for("fred")  # an admin of team only
    assert fred.get("/_/namespaces/team/settings").status_code == 200
    assert fred.get("/_/namespaces/notes/settings").status_code == 404
    assert fred.get("/_/namespaces/notes/delete").status_code == 404
    listed = fred.get("/_/namespaces").text
    assert "/_/namespaces/team/settings" in listed and "/_/namespaces/notes/settings" not in listed
    assert client_for("erin").get("/_/namespaces/none/settings").status_code == 404


def test_every_form_needs_the_csrf_token(client_for, admin):
    erin = client_for("erin")
    basehash = admin.read_namespace("team")["hash"]
    digest = admin.namespace_contents("team")["digest"]
    for path, data in [("/_/namespaces/new", {"name": "x", **FULL}), ("/_/namespaces/team/settings", {"basehash": basehash, **FULL}),
                       ("/_/namespaces/team/delete", {"digest": digest}), ("/_/namespaces/restore", {"name": "team"})]:  # fmt: skip
        assert erin.post(path, data=data).status_code in (400, 403), path
    assert admin.read_namespace("team")["hash"] == basehash


def test_delete_names_what_goes_then_restore_brings_it_back(client_for, admin):
    admin.save_page("team/plan", body="# Plan")
    admin.save_page("team/guides/setup", body="steps")
    admin._store_attachment("team/plan", "sheet.csv", b"a,b\n")
    erin = client_for("erin")
    confirm = erin.get("/_/namespaces/team/delete")
    assert confirm.status_code == 200
    assert "2 pages" in confirm.text and "1 attachment" in confirm.text
    for item in ("team/plan", "team/guides/setup", "team/plan/sheet.csv"):
        assert f"<li>{item}</li>" in confirm.text
    digest = re.search(r'name="digest" value="([0-9a-f]+)"', confirm.text).group(1)
    admin.save_page("team/late", body="written meanwhile")
    stale = erin.post("/_/namespaces/team/delete", data=form(erin, digest=digest))
    assert stale.status_code == 409 and "<li>team/late</li>" in stale.text and "Nothing was deleted" in stale.text
    assert admin.read_page("team/late")
    digest = re.search(r'name="digest" value="([0-9a-f]+)"', stale.text).group(1)
    done = erin.post("/_/namespaces/team/delete", data=form(erin, digest=digest), follow_redirects=True)
    assert "Deleted namespace team: 3 pages and 1 attachment." in done.text
    assert 'aria-label="Restore team"' in done.text  # listed among the namespaces deleted lately
    assert "team" not in [n["name"] for n in admin.list_namespaces()["namespaces"]]
    assert erin.get("/team/plan").status_code == 404
    back = erin.post("/_/namespaces/restore", data=form(erin, name="team"))
    assert back.status_code == 303 and back.headers["Location"] == "/team/"
    assert erin.get("/team/plan").status_code == 200 and admin.attachment("team/plan", "sheet.csv")[0] == b"a,b\n"
    again = erin.post("/_/namespaces/restore", data=form(erin, name="team"))
    assert again.status_code == 409 and "exists" in again.text and 'aria-label="Restore team"' not in again.text


def test_links_to_the_pages_show_to_admins_only(client_for):
    assert "/_/namespaces" in client_for("erin").get("/").text
    assert "/_/namespaces/team/settings" in client_for("erin").get("/team/").text
    assert "/_/namespaces" not in client_for("carol").get("/").text
    assert "/_/namespaces/team/settings" not in client_for("carol").get("/team/").text


def test_pages_have_the_header_and_breadcrumbs(client_for):
    erin = client_for("erin")
    for path, crumb in [("/_/namespaces", "Namespaces"), ("/_/namespaces/new", "New namespace"),
                        ("/_/namespaces/team/settings", "Settings of Team"), ("/_/namespaces/team/delete", "Delete namespace team")]:  # fmt: skip
        html = erin.get(path).text
        assert '<header class="site">' in html and 'aria-label="Breadcrumb"' in html, path
        assert f'<span aria-current="page">{crumb}</span>' in html, path
