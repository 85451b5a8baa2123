"""Comments per heading on the page view: a thread under each heading, posted, edited and deleted
through the service (access, ownership, CSRF), plain text only."""

from __future__ import annotations

import pytest

from hostcore import Principal

BODY = "Intro.\n\n# Install\n\nRun it.\n\n## Linux\n\napt\n\n# Usage\n\nUse it.\n"


@pytest.fixture
def guide(admin):
    admin.save_page("notes/guide", body=BODY, title="Guide")
    admin.save_page("team/plan", body="# Plan\n\nx\n", title="Plan")
    admin.save_page("pub/news", body="# Today\n\nnews\n", title="News")
    return "notes/guide"


def post(client, slug: str, section: str, text: str, **more: str):
    return client.post(f"/_/comments/{slug}", data={"csrf_token": client.csrf, "action": "post", "section": section,
                                                     "text": text, **more})  # fmt: skip


def test_each_heading_gets_a_thread_after_it_and_a_post_lands_there(carol, host, guide):
    html = carol.get("/notes/guide").text
    for section in ("install", "linux", "usage"):
        assert f'id="comments-{section}"' in html
    assert html.index('id="install"') < html.index('id="comments-install"') < html.index('id="linux"')
    answer = post(carol, guide, "install", "Which <b>version</b>?")
    assert answer.status_code == 303 and answer.headers["Location"] == "/notes/guide?thread=install#comments-install"
    html = carol.get(answer.headers["Location"]).text
    thread = html.split('id="comments-install"')[1].split("</details>\n")[0]
    assert " open>" in thread.split("\n")[0] and "Which &lt;b&gt;version&lt;/b&gt;?" in thread  # plain text, escaped
    assert '<span class="count">1</span> comment' in thread
    assert host.wiki(Principal("x", frozenset({"read"}))).read_comment_thread(guide, "install")["comments"][0]["author"] == "person:carol"


def test_the_text_before_the_first_heading_and_removed_headings_have_threads_below(carol, admin, guide):
    post(carol, guide, "_top", "About the whole page")
    post(carol, guide, "linux", "On linux")
    admin.save_page(guide, admin.read_page(guide)["hash"], body=BODY.replace("## Linux\n\napt\n\n", ""))
    html = carol.get("/notes/guide").text
    below = html.split('class="page-comments"')[1]
    assert "About the whole page" in below and "Under removed headings" in below and "On linux" in below
    assert 'value="linux"' not in below  # no posting under a heading that is gone


def test_the_author_edits_and_deletes_others_cannot_an_admin_deletes(client_for, admin, guide):
    carol, erin, dave = client_for("carol"), client_for("erin"), client_for("dave")
    post(carol, guide, "usage", "typo hre")
    [comment] = admin.read_comment_thread(guide, "usage")["comments"]
    edit = {"csrf_token": carol.csrf, "action": "edit", "comment_id": comment["id"], "text": "typo here"}
    assert carol.post(f"/_/comments/{guide}", data=edit).status_code == 303
    assert admin.read_comment_thread(guide, "usage")["comments"][0]["text"] == "typo here"
    refused = erin.post(f"/_/comments/{guide}", data={**edit, "csrf_token": erin.csrf, "text": "hijacked"})
    assert refused.status_code == 400 and "only its author" in refused.text
    html = erin.get("/notes/guide").text
    assert "Delete<span" in html and 'value="edit"' not in html  # an admin deletes, never edits
    assert dave.get("/notes/guide").status_code == 404  # dave reads team only
    delete = {"csrf_token": erin.csrf, "action": "delete", "comment_id": comment["id"]}
    assert erin.post(f"/_/comments/{guide}", data=delete).status_code == 303
    assert admin.list_comment_threads(guide)["threads"] == []


def test_a_reader_of_the_namespace_posts_a_visitor_of_a_public_one_does_not(client_for, visitor, admin, guide):
    dave = client_for("dave")
    assert post(dave, "team/plan", "plan", "read-only people comment too").status_code == 303
    assert "read-only people comment too" in dave.get("/team/plan").text
    assert post(client_for("dave"), "notes/guide", "install", "not mine").status_code == 404
    admin.post_comment("pub/news", "today", "Hello readers")
    html = visitor.get("/pub/news").text
    assert "Hello readers" in html and 'value="post"' not in html
    assert 'id="comments-today"' in html
    answer = visitor.post("/_/comments/pub/news", data={"action": "post", "section": "today", "text": "spam"})
    assert answer.status_code == 302 and "/_/login" in answer.headers["Location"]
    assert admin.list_comment_threads("pub/news")["total_comments"] == 1


def test_forms_need_the_csrf_token_and_bad_input_changes_nothing(carol, admin, guide):
    assert carol.post(f"/_/comments/{guide}", data={"action": "post", "section": "install", "text": "x"}).status_code in (400, 403)
    empty = post(carol, guide, "install", "   ")
    assert empty.status_code == 400 and "text: is empty" in empty.text
    gone = post(carol, guide, "nowhere", "hi")
    assert gone.status_code == 400 and "section_id" in gone.text
    assert admin.list_comment_threads(guide)["threads"] == []


def test_an_old_revision_and_one_section_show_no_threads(carol, admin, guide):
    first = admin.page_history(guide)["commits"][0]["id"] if "commits" in admin.page_history(guide) else None
    post(carol, guide, "install", "hello")
    assert 'class="thread' not in carol.get("/notes/guide?section=Install").text
    if first:
        assert 'class="thread' not in carol.get(f"/notes/guide?rev={first}").text
