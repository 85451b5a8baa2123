"""What the page editor asks the wiki (preview, page names, uploads), the sidebar and breadcrumbs,
and word-level diffs: in process, through the Flask app as the browser calls them."""

from __future__ import annotations

import io
import re

from hostcore_web.diffs import diff, word_parts
from hostcore_web.editor import safe_filename

from hostcore import SYSTEM
from hostcore.testing.documents import png_image


def test_the_preview_is_the_pages_own_rendering_and_needs_the_form_token(carol, admin):
    admin.save_page("notes/setup", body="x", title="Setup")
    body = "# Plan\n\nRead [[setup]] and [[nowhere]].\n\n<script>alert(1)</script>\n"
    answer = carol.post("/_/web/preview/notes/plan", data={"csrf_token": carol.csrf, "body": body})
    assert answer.status_code == 200, answer.text
    html = answer.json["html"]
    assert '<h1 id="plan">Plan</h1>' in html and 'href="/notes/setup"' in html
    assert re.search(r'class="wikilink missing"[^>]*href="/notes/nowhere"|href="/notes/nowhere"[^>]*missing', html)
    assert "<script>" not in html  # sanitised exactly as the page is
    admin.save_page("notes/plan", body=body, title="Plan")
    page = carol.get("/notes/plan").text
    assert html.split("\n", 1)[1] in page and '<h1 id="plan">Plan</h1>' in page  # preview = page (its h1 is the title there)
    assert carol.post("/_/web/preview/notes/plan", data={"body": body}).status_code == 403  # no CSRF token


def test_only_writers_preview_and_upload(client_for, visitor, admin):
    admin.save_page("team/plan", body="x", title="Plan")
    dave = client_for("dave")  # reads team, writes nowhere
    assert dave.post("/_/web/preview/team/plan", data={"csrf_token": dave.csrf, "body": "hi"}).status_code == 403
    upload = {"csrf_token": dave.csrf, "file": (io.BytesIO(b"x"), "a.txt")}
    assert dave.post("/_/web/upload/team/plan", data=upload, content_type="multipart/form-data").status_code == 403
    assert visitor.post("/_/web/preview/team/plan", data={"body": "hi"}).status_code in (302, 403)
    carol = client_for("carol")  # writes in every namespace
    assert carol.post("/_/web/preview/team/plan", data={"csrf_token": carol.csrf, "body": "hi"}).status_code == 200


def test_page_names_are_those_the_viewer_may_read(client_for, admin, visitor):
    admin.save_page("notes/setup-guide", body="x", title="Setting up")
    admin.save_page("team/setup-secret", body="x", title="Secret setup")
    admin.save_page("pub/setup-public", body="x", title="Public setup")
    dave = client_for("dave")  # team, and the public namespaces
    slugs = [p["slug"] for p in dave.get("/_/web/page-names?q=setup&namespace=team").json["pages"]]
    assert slugs == ["team/setup-secret", "pub/setup-public"]  # their namespace first; never notes
    carol = client_for("carol")
    titled = carol.get("/_/web/page-names?q=setting&namespace=notes").json["pages"]
    assert titled == [{"slug": "notes/setup-guide", "title": "Setting up"}]  # by title too
    assert [p["slug"] for p in visitor.get("/_/web/page-names?q=setup").json["pages"]] == ["pub/setup-public"]


def test_a_pasted_file_is_an_attachment_stored_as_upload_attachment_stores_it(carol, admin, host):
    admin.save_page("notes/album", body="x", title="Album")
    sent = {"csrf_token": carol.csrf, "file": (io.BytesIO(png_image(30, 20)), "image.png")}
    first = carol.post("/_/web/upload/notes/album", data=sent, content_type="multipart/form-data")
    assert first.status_code == 201, first.text
    assert first.json["markdown"] == "![image](/_/files/notes/album/image.png)"
    assert first.json["href"] == "/_/web/files/notes/album/image.png"
    again = {"csrf_token": carol.csrf, "file": (io.BytesIO(png_image(30, 20)), "image.png")}
    second = carol.post("/_/web/upload/notes/album", data=again, content_type="multipart/form-data")
    assert second.json["filename"] == "image-2.png"  # a second paste is a second file, never a replacement
    doc = {"csrf_token": carol.csrf, "file": (io.BytesIO(b"Minutes of the meeting."), "Team minutes (final).txt")}
    third = carol.post("/_/web/upload/notes/album", data=doc, content_type="multipart/form-data")
    assert third.json["markdown"] == "[Team-minutes-final-.txt](/_/files/notes/album/Team-minutes-final-.txt)"
    assert third.json["text_status"] == "extracted"
    assert admin.attachment_names("notes/album") == ["Team-minutes-final-.txt", "image-2.png", "image.png"]
    history = host.wiki(SYSTEM).recent_changes(5)["commits"]
    assert "upload_attachment: notes/album/image.png via web" in [c["message"] for c in history]
    none = carol.post("/_/web/upload/notes/album", data={"csrf_token": carol.csrf}, content_type="multipart/form-data")
    assert none.status_code == 400 and none.json["error"]["field"] == "file"
    no_token = {"file": (io.BytesIO(b"x"), "a.txt")}
    assert carol.post("/_/web/upload/notes/album", data=no_token, content_type="multipart/form-data").status_code == 403


def test_a_browsers_filename_becomes_one_the_wiki_takes():
    assert safe_filename("Screenshot 2026-11-30 at 9.05.png") == "Screenshot-2026-11-30-at-9.05.png"
    assert safe_filename("C:\\Users\\ana\\report.pdf") == "report.pdf"
    assert safe_filename("../../.env") == "env"
    assert safe_filename("...") == "file"


def test_the_sidebar_lists_the_tree_and_marks_the_page_and_breadcrumbs_lead_back(carol, admin):
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], tree=["zeta", "guides"])
    for slug in ("notes/alpha", "notes/zeta", "notes/guides/b-10", "notes/guides/b-9", "notes/other/deep"):
        admin.save_page(slug, body="x", title=slug.rsplit("/", 1)[1].upper())
    html = carol.get("/notes/guides/b-9").text
    tree = html.split('<nav class="tree"')[1].split("</nav>")[0]
    assert re.findall(r">([A-Z0-9-]+)</a>", tree) == ["ZETA", "B-9", "B-10", "ALPHA", "DEEP"]  # tree setting, then natural
    assert '<details open><summary><span class="folder">guides</span>' in tree  # the folder of the page read is open
    admin.save_page("notes/guides/b-1", body="x", title="B-1")  # the order kept for the namespace follows a new page
    again = carol.get("/notes/guides/b-9").text.split('<nav class="tree"')[1].split("</nav>")[0]
    assert re.findall(r">([A-Z0-9-]+)</a>", again) == ["ZETA", "B-1", "B-9", "B-10", "ALPHA", "DEEP"]
    assert '<details><summary><span class="folder">other</span>' in tree
    assert 'href="/notes/guides/b-9" aria-current="page"' in tree
    crumbs = html.split('<nav class="crumbs"')[1].split("</nav>")[0]
    assert re.findall(r"<li>(.*?)</li>", crumbs) == [
        '<a href="/">Wiki</a>', '<a href="/notes/">Notes</a>', "<span>guides</span>", '<span aria-current="page">B-9</span>']  # fmt: skip


def test_the_sidebar_shows_the_namespace_read_and_no_other(client_for, admin):
    admin.save_page("notes/secret", body="x", title="Secret")
    admin.save_page("team/plan", body="x", title="Plan")
    dave = client_for("dave")  # reads team only
    html = dave.get("/team/plan").text
    assert "Plan" in html.split('<nav class="tree"')[1] and "Secret" not in html
    assert '<nav class="tree"' not in dave.get("/_/search?q=x").text  # a page of no namespace has none


def test_changed_words_are_marked_within_changed_lines():
    old, new = word_parts("Ship it on Tuesdays, then rest.", "Ship it on Fridays, then rest.")
    assert old == [("Ship it on ", False), ("Tuesdays", True), (", then rest.", False)]
    assert new == [("Ship it on ", False), ("Fridays", True), (", then rest.", False)]
    assert word_parts("one", "Something else entirely") == ([("one", False)], [("Something else entirely", False)])
    changes = diff("a\nShip it on Tuesdays.\nc\n", "a\nShip it on Fridays.\nc\nd\n", "old", "new")
    assert [line.text for line in changes.inline] == [
        "--- old", "+++ new", "@@ -1,3 +1,4 @@", " a", "-Ship it on Tuesdays.", "+Ship it on Fridays.", " c", "+d"]  # fmt: skip
    rows = [(r.old.text if r.old else None, r.new.text if r.new else None) for r in changes.split if not r.hunk]
    assert rows == [(" a", " a"), ("-Ship it on Tuesdays.", "+Ship it on Fridays."), (" c", " c"), (None, "+d")]
    assert not diff("same\n", "same\n", "a", "b")


def test_the_diff_page_shows_words_inline_and_side_by_side(carol, admin):
    admin.save_page("notes/w", body="Ship it on Tuesdays.\n", title="W")
    first = admin.page_history("notes/w", 0, 1)["commits"][0]["id"]
    admin.save_page("notes/w", admin.page("notes/w").hash, "Ship it on Fridays.\n", "W")
    inline = carol.get(f"/_/diff/notes/w?from={first}").text
    assert '<span class="d-del">-Ship it on <del>Tuesdays</del>.</span>' in inline
    assert '<span class="d-add">+Ship it on <ins>Fridays</ins>.</span>' in inline
    split = carol.get(f"/_/diff/notes/w?from={first}&view=split").text
    assert '<td class="d-del">Ship it on <del>Tuesdays</del>.</td>' in split
    assert '<td class="d-add">Ship it on <ins>Fridays</ins>.</td>' in split


def test_a_refused_form_is_a_page_of_the_site_and_a_refused_fetch_is_json(carol, admin):
    admin.save_page("notes/plan", body="x", title="Plan")
    stale = carol.post("/_/edit/notes/plan", data={"csrf_token": "stale", "body": "y"}, headers={"Accept": "text/html"})
    assert stale.status_code == 403 and '<header class="site">' in stale.text and "CSRF token" in stale.text
    assert '<nav class="crumbs"' in stale.text
    fetched = carol.post("/_/web/preview/notes/plan", data={"body": "y"}, headers={"Accept": "application/json"})
    assert fetched.status_code == 403 and fetched.json["error"]["field"] == "csrf_token"


def test_a_page_beside_a_folder_of_its_name_is_one_node_either_order():
    from hostcore_web.navigation import page_tree

    facts = [{"slug": s, "title": s.rsplit("/", 1)[1].title()} for s in ("ns/guide", "ns/guide/install", "ns/intro")]
    for tree in ([], ["guide/install"]):
        nodes = page_tree(facts, tree, "ns", "ns/guide/install").nodes
        guide = next(n for n in nodes if n.name == "guide")
        assert guide.page and guide.title == "Guide" and guide.open  # the page and the folder holding the page read
        assert [(c.title, c.current) for c in guide.children] == [("Install", True)]
        assert [n.name for n in nodes] == ["guide", "intro"]
