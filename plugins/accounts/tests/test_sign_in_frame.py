"""The sign-in page sits in the site's frame (its header, search, breadcrumbs) when the web plugin
frames pages, and is a page of its own without it; the form works the same in both."""

from __future__ import annotations

import re

import pytest
from hostcore_accounts import accounts

from hostcore import create_app

PASSWORD = "correct horse battery"


@pytest.fixture(params=[["fs", "tokens", "accounts", "web"], ["fs", "tokens", "accounts"]], ids=["framed", "alone"])
def app(request, tmp_path):
    app = create_app({"PLUGINS": request.param, "STORAGE": "fs"}, instance_path=tmp_path / "instance")
    host = app.extensions["hostcore"]
    accounts(host).create("alice", PASSWORD, ["write"])
    yield app
    host.close()


def test_the_sign_in_page_has_the_sites_header_when_the_site_frames_pages(app):
    client = app.test_client()
    html = client.get("/_/login?next=/notes/").text
    framed = "web" in app.extensions["hostcore"].config["PLUGINS"]
    assert ('<header class="site">' in html) is framed
    assert ("signin.css" in html) is framed and ("accounts.css" in html) is not framed
    assert '<div class="card signin">' in html and 'name="next" value="/notes/"' in html
    token = re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)
    wrong = client.post("/_/login", data={"csrf_token": token, "name": "alice", "password": "nope", "next": "/"})
    assert wrong.status_code == 401 and 'role="alert"' in wrong.text and ('<header class="site">' in wrong.text) is framed
    right = client.post("/_/login", data={"csrf_token": token, "name": "alice", "password": PASSWORD, "next": "/notes/"})
    assert right.status_code == 303 and right.headers["Location"] == "/notes/"
    again = client.get("/_/login").text
    assert "You are signed in as <strong>alice</strong>" in again
