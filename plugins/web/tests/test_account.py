"""The account pages: every token for an admin (those made on the command line too), a person's
sessions (see them, sign them out), their password (with the accounts plugin), and other plugins'
pages in the site's frame (the ``frame_page`` hook)."""

from __future__ import annotations

import re

import pytest
from hostcore_accounts import accounts
from hostcore_web.account import browser_of

import hostcore_tokens
from hostcore import create_app
from hostcore.testing import sign_in_client

from .conftest import CONFIG, People

PASSWORD = "correct horse battery"


def names(html: str) -> list[str]:
    """The token names a tokens page lists."""
    return re.findall(r"<tr><td>([^<]+)</td>", html)


def token_id(html: str, name: str) -> str:
    row = re.search(rf"<tr><td>{name}</td>.*?name=\"id\" value=\"([0-9a-f]+)\"", html, re.S)
    return row.group(1)


def test_an_admin_sees_and_revokes_every_token_a_person_only_their_own(host, client_for, visitor):
    """Issue 22 #18: an admin's tokens page said "No tokens yet." beside `make serve`'s admin token."""
    made_by_cli = hostcore_tokens.store(host).create("admin", ["admin"])  # as `hostcore token create` (and init) make it
    carol = client_for("carol")
    carol.post("/_/account/tokens", data={"csrf_token": carol.csrf, "name": "deskbox", "scope": ["read"]})
    erin = client_for("erin")
    erin.post("/_/account/tokens", data={"csrf_token": erin.csrf, "name": "erins", "scope": ["admin"]})
    page = erin.get("/_/account/tokens").text
    assert "No tokens yet." not in page and "Every token of this wiki" in page
    owners = dict(re.findall(r"<tr><td>([^<]+)</td><td class=\"owner\">([^<]+)</td>", page))
    assert owners == {"admin": "none (command line)", "deskbox": "carol", "erins": "you"}
    assert names(carol.get("/_/account/tokens").text) == ["deskbox"]  # a person sees their own only
    for limited in ("dave", "fred"):  # fred is an admin of one namespace only: not of every token
        assert "No tokens yet." in client_for(limited).get("/_/account/tokens").text
    fred = client_for("fred")
    assert fred.post("/_/account/tokens/revoke", data={"csrf_token": fred.csrf, "id": token_id(page, "admin")}).status_code == 404
    assert visitor.get("/_/account/tokens", headers={"Authorization": f"Bearer {made_by_cli}"}).status_code == 302  # a session only
    for name in ("admin", "deskbox"):
        revoked = erin.post("/_/account/tokens/revoke", data={"csrf_token": erin.csrf, "id": token_id(page, name)})
        assert revoked.status_code == 302
    assert names(erin.get("/_/account/tokens").text) == ["erins"]
    assert "No tokens yet." in carol.get("/_/account/tokens").text
    assert visitor.get("/notes/", headers={"Authorization": f"Bearer {made_by_cli}"}).status_code == 401


def test_a_person_sees_their_sessions_and_signs_them_out(app, client_for, visitor):
    laptop, phone, dave = client_for("carol"), client_for("carol"), client_for("dave")
    page = laptop.get("/_/account/sessions")
    assert page.status_code == 200 and page.headers["Cache-Control"] == "no-store"
    ids = re.findall(r'name="id" value="([0-9a-f]{64})"', page.text)
    assert len(ids) == 2 and page.text.count("(this browser)") == 1
    assert '<a href="/_/account/sessions" aria-current="page">Sessions</a>' in page.text
    here = re.search(r'class="current">.*?name="id" value="([0-9a-f]{64})"', page.text, re.S).group(1)
    other = next(i for i in ids if i != here)
    assert laptop.post("/_/account/sessions", data={"id": other}).status_code == 403  # no CSRF token
    assert dave.post("/_/account/sessions", data={"csrf_token": dave.csrf, "id": other}).status_code == 400  # not dave's
    assert phone.get("/_/account/sessions").status_code == 200
    ended = laptop.post("/_/account/sessions", data={"csrf_token": laptop.csrf, "id": other})
    assert ended.status_code == 200 and "That session is signed out." in ended.text
    assert phone.get("/_/account/sessions").status_code == 302  # to sign in
    third = client_for("carol")
    everyone = laptop.post("/_/account/sessions", data={"csrf_token": laptop.csrf, "id": "others"})
    assert "Signed out 1 other session." in everyone.text and third.get("/_/account/sessions").status_code == 302
    assert dave.get("/_/account/sessions").status_code == 200  # another person's sessions stay
    mine = laptop.post("/_/account/sessions", data={"csrf_token": laptop.csrf, "id": here})
    assert mine.status_code == 303 and mine.headers["Location"] == "/_/login"
    assert laptop.get("/_/account/sessions").status_code == 302
    assert visitor.get("/_/account/sessions").headers["Location"].startswith("/_/login")


@pytest.mark.parametrize("agent, seen", [
    ("Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0", "Firefox on Linux"),
    ("Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Safari/605.1.15", "Safari on macOS"),
    ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Safari/537.36 Edg/126.0", "Edge on Windows"),
    ("Mozilla/5.0 (Linux; Android 14) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/126.0 Mobile Safari/537.36", "Chrome on Android"),
    ("curl/8.5.0", "curl"), ("", "unknown"), ("some-bot/1.0", "some-bot/1.0"),
])  # fmt: skip
def test_a_session_s_browser_is_named_roughly(agent, seen):
    assert browser_of(agent) == seen


@pytest.fixture
def with_accounts(tmp_path):
    app = create_app(CONFIG | {"PLUGINS": [*CONFIG["PLUGINS"], "accounts"]}, instance_path=tmp_path / "instance")
    host = app.extensions["hostcore"]
    accounts(host).create("alice", PASSWORD, ["write"])
    accounts(host).create("olga", None, ["read"], upstream={"issuer": "https://id.example", "subject": "o"})
    yield app
    host.close()


def sign_in(app, name="alice", password=PASSWORD):
    client = app.test_client()
    form = client.get("/_/login").text
    token = re.search(r'name="csrf_token" value="([^"]+)"', form).group(1)
    assert client.post("/_/login", data={"csrf_token": token, "name": name, "password": password}).status_code == 303
    client.csrf = re.search(r'name="csrf_token" value="([^"]+)"', client.get("/_/account/password").text).group(1)
    return client


def change(client, current, new, repeat=None):
    return client.post("/_/account/password", data={"csrf_token": client.csrf, "current_password": current,
                                                    "new_password": new, "repeat_password": new if repeat is None else repeat})  # fmt: skip


def test_changing_the_password_signs_out_every_other_session_and_says_so(with_accounts):
    """Issue 22 #4: a changed password ends every session of the person; this browser goes on in a new one."""
    here, other = sign_in(with_accounts), sign_in(with_accounts)
    copied = with_accounts.test_client()
    copied.set_cookie("hostcore_session", here.get_cookie("hostcore_session").value)  # a copy of this browser's cookie
    page = here.get("/_/account/password")
    assert 'autocomplete="current-password"' in page.text and 'autocomplete="new-password"' in page.text
    for refused, field in ((change(here, "not my password", "a brand new password"), "current_password"),
                           (change(here, PASSWORD, "a brand new password", "a brand new passw0rd"), "repeat_password"),
                           (change(here, PASSWORD, "short"), "password")):  # fmt: skip
        assert refused.status_code == 400 and f"{field}:" in refused.text
    assert other.get("/_/account/sessions").status_code == 200  # refused changes end nothing
    done = change(here, PASSWORD, "a brand new password")
    assert done.status_code == 200 and "1 other session signed out" in done.text
    assert other.get("/_/account/sessions").status_code == 302 and copied.get("/_/account/sessions").status_code == 302
    assert here.get("/_/account/sessions").status_code == 200  # this browser, in a new session
    assert accounts(with_accounts.extensions["hostcore"]).verify("alice", "a brand new password") is not None


def test_wrong_current_passwords_are_throttled_like_sign_ins(with_accounts):
    client = sign_in(with_accounts)
    statuses = [change(client, f"guess {i}", "a brand new password").status_code for i in range(9)]
    assert statuses[:7] == [400] * 7 and statuses[-1] == 429
    assert accounts(with_accounts.extensions["hostcore"]).verify("alice", PASSWORD) is not None


def test_an_account_without_a_password_has_none_to_change(with_accounts):
    host = with_accounts.extensions["hostcore"]
    client = with_accounts.test_client()
    sign_in_client(client, "olga")  # as the oidc plugin signs its people in
    page = client.get("/_/account/password")
    assert page.status_code == 200 and "has no password on this wiki" in page.text and "current_password" not in page.text
    assert client.post("/_/account/password", data={"new_password": "a brand new password"}).status_code == 200
    assert accounts(host).get("olga")["hash"] is None


def test_without_the_accounts_plugin_there_is_no_password_page(client_for):
    carol = client_for("carol")
    assert carol.get("/_/account/password").status_code == 404
    assert "/_/account/password" not in carol.get("/_/account/sessions").text


def test_hook_frame_page(tmp_path):
    """The OAuth plugin's pages ask frame_page: with the web plugin, /_/apps has the site's header
    and navigation (issue 22 #21); without it, the OAuth plugin's own plain page."""
    framed = create_app(CONFIG | {"PLUGINS": [*CONFIG["PLUGINS"], "oauth"]}, instance_path=tmp_path / "a", plugins=[People()])
    plain = create_app({"PLUGINS": ["git", "tokens", "oauth"], "STORAGE": "git"}, instance_path=tmp_path / "b", plugins=[People()])
    try:
        client = framed.test_client()
        sign_in_client(client, "carol")
        page = client.get("/_/apps").text
        assert '<header class="site">' in page and 'href="/_/web/static/web.css?v=' in page and "/_/static/oauth/oauth.css" in page
        assert "<title>Connected apps</title>" in page and '<div class="oauth">' in page and "Sign out" in page
        bare = plain.test_client()
        sign_in_client(bare, "carol")
        alone = bare.get("/_/apps").text
        assert '<body class="oauth-page">' in alone and '<header class="site">' not in alone and '<div class="oauth">' in alone
    finally:
        framed.extensions["hostcore"].close()
        plain.extensions["hostcore"].close()
