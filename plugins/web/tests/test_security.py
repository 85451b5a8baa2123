"""What a hostile page or visitor cannot do: run script, frame us, post without CSRF, find private pages."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from hostcore_web.render import render

HOSTILE = """# Hi <script>alert(1)</script>

<script>alert(2)</script>
<img src=x onerror="alert(3)">
<svg onload="alert(4)"><script>alert(5)</script></svg>
<iframe src="https://evil.example"></iframe>
[click](javascript:alert(6)) [data](data:text/html;base64,PHNjcmlwdD4=) [vb](vbscript:msgbox(7))
![img](javascript:alert(8))
<a href="javascript:alert(9)">raw</a>
[[x" onmouseover="alert(10)]]
[[ok|<b onclick="alert(11)">label</b>]]
<style>body { display: none }</style>
"""


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.found: list[tuple[str, list[tuple[str, str | None]]]] = []

    def handle_starttag(self, tag, attrs):
        self.found.append((tag, attrs))


def _inert(html: str) -> None:
    """No element that runs or loads anything: no script, svg, iframe, style, event handler or script URL."""
    parser = Elements()
    parser.feed(html)
    for tag, attrs in parser.found:
        assert tag not in ("script", "svg", "iframe", "style", "object", "embed", "form", "input"), tag
        for name, value in attrs:
            assert not name.startswith("on"), (tag, name)
            if name in ("href", "src"):
                assert not re.match(r"\s*(javascript|vbscript|data):", value or "", re.I), (tag, value)


def test_hostile_markdown_renders_inert():
    html = render(HOSTILE, "notes/p", lambda targets: set()).html
    _inert(html)
    assert "&lt;script&gt;alert(2)&lt;/script&gt;" in html  # raw HTML is shown as text


def test_hostile_page_is_inert_in_the_page(carol, admin):
    admin.save_page("notes/evil", body=HOSTILE, title='<script>alert("t")</script>', tags=['"><script>x</script>'])
    html = carol.get("/notes/evil").text
    body = html.split('<div class="body">', 1)[1].split("</article>")[0].split('<section class="attachments"')[0]  # the page's text
    _inert(body)
    assert "<script>" not in html.split("</head>")[1]
    assert "<h1>&lt;script&gt;alert(&#34;t&#34;)&lt;/script&gt;</h1>" in html  # the title, escaped


def test_pages_send_csp_and_anti_framing_headers(carol, visitor, admin):
    admin.save_page("pub/p", body="x", title="P")
    for client, path in [(carol, "/"), (carol, "/notes/"), (visitor, "/pub/p"), (carol, "/_/search?q=x"),
                         (carol, "/_/account/tokens"), (carol, "/_/edit/pub/p"), (visitor, "/pub/nothing")]:  # fmt: skip
        response = client.get(path)
        csp = response.headers["Content-Security-Policy"]
        assert "frame-ancestors 'none'" in csp and "script-src 'self'" in csp and "object-src 'none'" in csp, path
        assert response.headers["X-Frame-Options"] == "DENY", path
        assert response.headers["X-Content-Type-Options"] == "nosniff", path


def _forms(html: str) -> list[tuple[str, str]]:
    """(action, form html) of every POST form on the page."""
    return [(m.group(1), m.group(0)) for m in re.finditer(r'<form[^>]*method="post"[^>]*action="([^"]+)".*?</form>', html, re.S)]


def test_every_form_carries_csrf_and_every_post_checks_it(carol, admin):
    first = admin.save_page("notes/f", body="one", title="F")
    admin.save_page("notes/f", first["hash"], body="two")
    pages = ["/_/edit/notes/f", "/_/new", "/_/move/notes/f", "/_/delete/notes/f", "/_/history/notes/f", "/_/account/tokens"]
    carol.post("/_/account/tokens", data={"csrf_token": carol.csrf, "name": "t", "scope": "read"})
    seen = set()
    for path in pages:
        forms = _forms(carol.get(path).text)
        assert forms, f"no POST form on {path}"
        for action, form in forms:
            if action == "/_/logout":
                continue  # the sign-in plugin's form (tested there); this app has none
            assert f'name="csrf_token" value="{carol.csrf}"' in form, f"{path}: a form to {action} lacks the CSRF token"
            fields = dict(re.findall(r'name="([^"]+)" value="([^"]*)"', form))
            fields.pop("csrf_token")
            refused = carol.post(action, data=fields)
            assert refused.status_code == 403, f"{action} accepted a post without the CSRF token"
            wrong = carol.post(action, data={**fields, "csrf_token": "forged"})
            assert wrong.status_code == 403
            seen.add(action.split("/")[2])
    assert {"edit", "new", "move", "delete", "restore", "account"} <= seen
    assert admin.read_page("notes/f")["body"] == "two"  # nothing changed


def test_a_foreign_origin_is_refused(carol, admin):
    admin.save_page("notes/o", body="x", title="O")
    page = admin.read_page("notes/o")
    response = carol.post("/_/edit/notes/o", data={"csrf_token": carol.csrf, "basehash": page["hash"], "body": "y", "title": "O"},
                          headers={"Origin": "https://evil.example"})  # fmt: skip
    assert response.status_code == 403 and admin.read_page("notes/o")["body"] == "x"


@pytest.mark.parametrize("path", [
    "/notes/", "/notes", "/notes/secret", "/notes/nothing", "/nowhere/", "/nowhere/page", "/_/history/notes/secret",
    "/_/diff/notes/secret", "/_/changes/notes", "/_/edit/notes/secret", "/_/move/notes/secret", "/_/delete/notes/secret",
    "/_/new", "/_/account/tokens", "/notes/secret?rev=HEAD", "/notes/secret?section=x", "/team/",
    "/_/web/files/notes/secret/a.txt", "/_/web/files/nowhere/page/a.txt",
])  # fmt: skip
def test_a_visitor_reaches_nothing_private(visitor, admin, path):
    admin.save_page("notes/secret", body="the secret", title="Secret")
    admin.complete_upload(admin.upload_attachment("notes/secret", "a.txt")["upload_url"].rsplit("/", 1)[1], b"the secret")
    response = visitor.get(path, follow_redirects=False)
    assert response.status_code in (302, 308, 404), path
    if response.status_code in (302, 308):
        location = response.headers["Location"]
        assert location.startswith("/_/login?next=") or location == "/notes/", location
    assert "the secret" not in response.text and "Secret" not in response.text


def test_guessing_tells_a_person_nothing_about_namespaces_they_cannot_read(client_for, admin):
    admin.save_page("notes/secret", body="the secret", title="Secret")
    dave = client_for("dave")  # team only
    existing, missing = dave.get("/notes/secret"), dave.get("/notes/nothing")
    assert existing.status_code == missing.status_code == 404
    assert existing.text == missing.text
    assert dave.get("/notes/").status_code == dave.get("/nowhere/").status_code == 404
    assert "/notes/secret" not in dave.get("/_/search?q=secret").text
    assert dave.get("/_/history/notes/secret").status_code == 403 or "the secret" not in dave.get("/_/history/notes/secret").text


def test_a_visitor_posting_forms_changes_nothing(visitor, admin):
    admin.save_page("pub/p", body="x", title="P")
    page = admin.read_page("pub/p")
    with visitor.session_transaction() as session:
        session["csrf"] = "c"
    response = visitor.post("/_/edit/pub/p", data={"csrf_token": "c", "basehash": page["hash"], "body": "hacked", "title": "P"})
    assert response.status_code == 302 and response.headers["Location"].startswith("/_/login")
    assert admin.read_page("pub/p")["body"] == "x"


def test_a_bearer_token_counts_as_signed_in(visitor, admin, host):
    import hostcore_tokens

    token = hostcore_tokens.store(host).create("script", ["read"], ["notes"])
    admin.save_page("notes/s", body="for scripts", title="S")
    assert "for scripts" in visitor.get("/notes/s", headers={"Authorization": f"Bearer {token}"}).text
    assert visitor.get("/team/", headers={"Authorization": f"Bearer {token}"}).status_code == 404
    assert visitor.get("/notes/s", headers={"Authorization": "Bearer hc_wrong"}).status_code == 401


def test_pages_leave_other_routes_under_underscore_alone(carol):
    """/_/... belongs to other routes: a path there that none has is a plain 404, for any method."""
    assert carol.post("/_/upload/notes/x", data={}).status_code == 404
    assert carol.get("/_/nothing/here").status_code == 404
    assert carol.get("/.well-known/nothing/x").status_code == 404


def test_an_attachment_that_could_run_script_is_served_inert(carol, admin):
    admin.save_page("notes/pics", body="![x](/_/files/notes/pics/x.svg) [h](/_/files/notes/pics/h.html)", title="Pics")
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    for name, data in [("x.svg", svg), ("h.html", b"<script>alert(1)</script>")]:
        admin.complete_upload(admin.upload_attachment("notes/pics", name)["upload_url"].rsplit("/", 1)[1], data)
        served = carol.get(f"/_/web/files/notes/pics/{name}")
        assert served.data == data and served.headers["Content-Type"] == "text/plain; charset=utf-8"
        assert served.headers["Content-Disposition"].startswith("attachment")
        assert "sandbox" in served.headers["Content-Security-Policy"] and served.headers["X-Content-Type-Options"] == "nosniff"
