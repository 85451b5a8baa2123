"""Editing in the browser: the basehash rule (a lost race shows both sides, never overwrites), new,
move, rename, delete; personal access tokens; the static export."""

from __future__ import annotations

import re
from pathlib import Path

import hostcore_web
import pytest

from hostcore import create_app
from hostcore.testing.servers import cli

from .conftest import CONFIG, People, sign_in


def _configure(host) -> None:
    """The instance file the command line reads (the test app got its config in code)."""
    (host.instance_path / "hostcore.toml").write_text('PLUGINS = ["git", "tokens", "sqlite", "web"]\nSTORAGE = "git"\nSEARCH = "sqlite"\n')


def _field(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def test_edit_saves_with_the_hash_it_read(carol, admin):
    admin.save_page("notes/e", body="first", title="E", tags=["a"])
    form = carol.get("/_/edit/notes/e").text
    assert ">first</textarea>" in form
    response = carol.post("/_/edit/notes/e", data={
        "csrf_token": carol.csrf, "basehash": _field(form, "basehash"), "title": "E2", "tags": "a, b", "body": "second\r\n",
    })  # fmt: skip
    assert response.status_code == 302 and response.headers["Location"] == "/notes/e"
    page = admin.read_page("notes/e")
    assert page["body"] == "second\n" and page["title"] == "E2" and page["tags"] == ["a", "b"]
    log = admin.page_history("notes/e")["commits"][0]
    assert log["author"] == "person:carol" and "via web" in log["message"]


def test_a_lost_race_shows_both_sides_and_merges_without_overwriting(carol, admin):
    admin.save_page("notes/race", body="line one\nline two\n", title="Race")
    form = carol.get("/_/edit/notes/race").text
    stale = _field(form, "basehash")
    theirs = admin.save_page("notes/race", stale, body="line one\nline two, theirs\n")
    lost = carol.post("/_/edit/notes/race", data={
        "csrf_token": carol.csrf, "basehash": stale, "title": "Race", "tags": "", "body": "line one, mine\nline two\n",
    })  # fmt: skip
    assert lost.status_code == 409
    assert admin.read_page("notes/race")["body"] == "line one\nline two, theirs\n"  # not overwritten
    assert "line two, theirs" in lost.text.split('id="theirs"')[1].split("</pre>")[0]
    assert "line one, mine" in lost.text.split('id="mine"')[1].split("</pre>")[0]
    assert _field(lost.text, "basehash") == theirs["hash"]
    merged = carol.post("/_/edit/notes/race", data={
        "csrf_token": carol.csrf, "basehash": _field(lost.text, "basehash"), "title": "Race", "tags": "",
        "body": "line one, mine\nline two, theirs\n",
    })  # fmt: skip
    assert merged.status_code == 302
    assert admin.read_page("notes/race")["body"] == "line one, mine\nline two, theirs\n"


def test_a_read_only_person_cannot_edit(client_for, admin):
    admin.save_page("team/t", body="x", title="T")
    dave = client_for("dave")
    page = admin.read_page("team/t")
    response = dave.post("/_/edit/team/t", data={"csrf_token": dave.csrf, "basehash": page["hash"], "title": "T", "body": "y"})
    assert response.status_code == 403 and admin.read_page("team/t")["body"] == "x"
    assert "Edit</a>" not in dave.get("/team/t").text
    assert dave.get("/_/edit/team/t").status_code == 403
    assert dave.get("/_/delete/team/t").status_code == 403


def test_new_page_with_the_namespace_template(carol, admin):
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], new={"template": "## Agenda\n", "slug": "meetings/{date}"})
    form = carol.get("/_/new?namespace=notes").text
    assert "## Agenda" in form
    made = carol.post("/_/new", data={"csrf_token": carol.csrf, "namespace": "notes", "name": "meetings/monday", "title": "Monday",
                                      "body": "## Agenda\n- plan", "tags": "meeting"})  # fmt: skip
    assert made.status_code == 302 and made.headers["Location"] == "/notes/meetings/monday"
    assert admin.read_page("notes/meetings/monday")["tags"] == ["meeting"]
    again = carol.post("/_/new", data={"csrf_token": carol.csrf, "namespace": "notes", "name": "meetings/monday", "body": "x"})
    assert again.status_code == 400 and "exists already" in again.text
    bad = carol.post("/_/new", data={"csrf_token": carol.csrf, "namespace": "notes", "name": "_hidden", "body": "x"})
    assert bad.status_code == 400 and "slug" in bad.text


def test_move_rename_and_delete(carol, admin):
    admin.save_page("notes/old", body="x", title="Old")
    admin.save_page("notes/linker", body="see [[old]]", title="Linker")
    form = carol.get("/_/move/notes/old").text
    renamed = carol.post("/_/move/notes/old", data={"csrf_token": carol.csrf, "action": "rename", "title": "New Name",
                                                    "basehash": _field(form, "basehash")})  # fmt: skip
    assert renamed.headers["Location"] == "/notes/new-name"
    assert "[[notes/new-name]]" in admin.read_page("notes/linker")["body"] or "new-name" in admin.read_page("notes/linker")["body"]
    form = carol.get("/_/move/notes/new-name").text
    moved = carol.post("/_/move/notes/new-name", data={"csrf_token": carol.csrf, "action": "move", "new_slug": "team/moved",
                                                      "basehash": _field(form, "basehash")})  # fmt: skip
    assert moved.headers["Location"] == "/team/moved"
    form = carol.get("/_/delete/team/moved").text
    deleted = carol.post("/_/delete/team/moved", data={"csrf_token": carol.csrf, "basehash": _field(form, "basehash")})
    assert deleted.status_code == 302
    assert carol.get("/team/moved").status_code == 404
    history = carol.get("/_/history/team/moved").text  # a deleted page keeps its history and can come back
    revision = re.search(r'name="revision" value="([0-9a-f]{40})"', history).group(1)
    back = carol.post("/_/restore/team/moved", data={"csrf_token": carol.csrf, "revision": revision, "basehash": ""})
    assert back.status_code == 302 and admin.read_page("team/moved")["body"] == "x"


def test_tokens_create_shown_once_list_use_and_revoke(carol, client_for, app, admin):
    admin.save_page("notes/n", body="tok", title="N")
    made = carol.post("/_/account/tokens", data={"csrf_token": carol.csrf, "name": "deskbox", "scope": ["read"], "namespaces": "notes"})
    assert made.status_code == 200 and made.headers["Cache-Control"] == "no-store"
    token = re.search(r'id="new-token" class="token" readonly value="(hc_[^"]+)"', made.text).group(1)
    listing = carol.get("/_/account/tokens").text
    assert "deskbox" in listing and token not in listing  # shown once
    assert 'href="/_/apps"' in listing
    visitor = app.test_client()
    assert "tok" in visitor.get("/notes/n", headers={"Authorization": f"Bearer {token}"}).text
    assert visitor.get("/team/", headers={"Authorization": f"Bearer {token}"}).status_code == 404
    mcp = visitor.post("/_/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                                       "params": {"name": "read_page", "arguments": {"slug": "notes/n"}}},
                       headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
                                "MCP-Protocol-Version": "2025-06-18"})  # fmt: skip
    assert mcp.status_code == 200 and '"tok"' in mcp.text.replace("\\", "")
    # another person (not an admin) sees none of carol's tokens and cannot revoke them
    dave = client_for("dave")
    token_id = re.search(r'name="id" value="([0-9a-f]+)"', listing).group(1)
    assert "deskbox" not in dave.get("/_/account/tokens").text
    assert dave.post("/_/account/tokens/revoke", data={"csrf_token": dave.csrf, "id": token_id}).status_code == 404
    assert carol.post("/_/account/tokens/revoke", data={"csrf_token": carol.csrf, "id": token_id}).status_code == 302
    assert visitor.get("/notes/n", headers={"Authorization": f"Bearer {token}"}).status_code == 401


def test_a_token_never_holds_more_than_its_person(client_for):
    dave = client_for("dave")  # read, team only
    wider = dave.post("/_/account/tokens", data={"csrf_token": dave.csrf, "name": "w", "scope": ["write"], "namespaces": "team"})
    assert wider.status_code == 400 and "scope" in wider.text
    elsewhere = dave.post("/_/account/tokens", data={"csrf_token": dave.csrf, "name": "w", "scope": ["read"], "namespaces": "notes"})
    assert elsewhere.status_code == 400 and "notes" in elsewhere.text
    unlimited = dave.post("/_/account/tokens", data={"csrf_token": dave.csrf, "name": "w", "scope": ["read"], "namespaces": ""})
    assert unlimited.status_code == 400


@pytest.mark.serve
def test_export_site_follows_the_export_settings(host, admin, tmp_path):
    admin.save_namespace("pub", admin.read_namespace("pub")["hash"], export={
        "base_url": "https://example.org/pub/", "sitemap": True, "robots_allow": True})  # fmt: skip
    admin.save_page("pub/index", body="# Home\n\nSee [[a/b]] and [[notes/private]].", title="Home")
    admin.save_page("pub/a/b", body="Back to [[index]].\n\n```python\nx = 1\n```", title="B")
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], export={})
    admin.save_page("notes/private", body="p", title="P")
    out = tmp_path / "site"
    _configure(host)
    result = cli(host.instance_path, "export-site", "--namespace", "pub", "--namespace", "notes", "--out", str(out))
    assert "pub: 2 pages" in result.stdout
    index = (out / "pub" / "index.html").read_text()
    assert 'href="a/b.html"' in index and "Home" in index and 'class="skin-newsprint palette-nord' in index
    page = (out / "pub" / "a" / "b.html").read_text()
    assert 'href="../index.html"' in page and 'href="../_assets/web.css"' in page and '<span class="n">x</span>' in page
    assert 'rel="canonical" href="https://example.org/pub/a/b.html"' in page and "noindex" not in page
    assert "https://example.org/pub/a/b.html" in (out / "pub" / "sitemap.xml").read_text()
    assert (out / "pub" / "robots.txt").read_text().startswith("User-agent: *\nAllow: /")
    assert (out / "pub" / "_assets" / "web.css").exists()
    assert 'class="wikilink missing" href="#"' in index  # outside the namespace: not exported
    private = (out / "notes" / "private.html").read_text()
    assert '<meta name="robots" content="noindex">' in private
    assert "Disallow: /" in (out / "notes" / "robots.txt").read_text() and not (out / "notes" / "sitemap.xml").exists()


@pytest.mark.serve
def test_export_site_needs_base_url_for_a_sitemap(host, admin, tmp_path):
    admin.save_namespace("pub", admin.read_namespace("pub")["hash"], export={"sitemap": True})
    _configure(host)
    result = cli(host.instance_path, "export-site", "--namespace", "pub", "--out", str(tmp_path / "o"), check=False)
    assert result.returncode != 0 and "export.base_url" in result.stdout + result.stderr
    assert not (tmp_path / "o").exists()


def test_without_the_tokens_plugin_there_are_no_token_pages(tmp_path):
    """The account's token pages ask the plugin the host loaded under the name ``tokens``: a wiki
    that does not enable it has none (404), and the web plugin imports no other plugin's code."""
    config = CONFIG | {"PLUGINS": [p for p in CONFIG["PLUGINS"] if p != "tokens"]}
    app = create_app(config, instance_path=tmp_path / "instance", plugins=[People()])
    try:
        client = app.test_client()
        csrf = sign_in(client, "carol")
        assert client.get("/_/account/tokens").status_code == 404
        assert client.post("/_/account/tokens/revoke", data={"csrf_token": csrf, "id": "x"}).status_code == 404
    finally:
        app.extensions["hostcore"].close()
    source = "\n".join(p.read_text() for p in Path(hostcore_web.__file__).parent.glob("*.py"))
    assert "hostcore_tokens" not in source
