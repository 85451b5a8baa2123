"""The browser side of the core: session cookie flags, security headers, CSRF and safe redirects."""

import re

import pytest
from flask import jsonify

from hostcore import Principal, check_csrf, create_app, csrf_token, hookimpl, person, safe_next, sign_in

from .conftest import BASE_CONFIG


class Pages:
    @hookimpl
    def find_person(self, name, host):
        return Principal(f"person:{name}", frozenset({"write"})) if name == "carol" else None

    @hookimpl
    def register_routes(self, app, host):
        @app.route("/_/t/form")
        def form():
            return f'<form method="post"><input name="csrf_token" value="{csrf_token()}"></form>'

        @app.route("/_/t/in", methods=["POST"])
        def signin():
            check_csrf()
            sign_in("carol")
            return "ok"

        @app.route("/_/t/me")
        def me():
            who = person()
            return jsonify(name=who.name if who else None)


@pytest.fixture
def app(tmp_path):
    return create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Pages()])


def _token(client):
    return re.search(r'value="([^"]+)"', client.get("/_/t/form").text).group(1)


def test_html_pages_get_the_security_headers(app):
    response = app.test_client().get("/_/t/form")
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY"
    assert response.headers["X-Content-Type-Options"] == "nosniff"


def test_the_session_cookie_is_httponly_and_samesite(app):
    client = app.test_client()
    response = client.post("/_/t/in", data={"csrf_token": _token(client)})
    cookie = response.headers["Set-Cookie"]
    assert cookie.startswith("hostcore_session=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Secure" not in cookie  # http PUBLIC_URL; https sets Secure


def test_https_public_url_makes_the_cookie_secure(tmp_path):
    config = dict(BASE_CONFIG, PUBLIC_URL="https://wiki.example.org", ALLOWED_HOSTS=["localhost"])
    app = create_app(config, instance_path=tmp_path, plugins=[Pages()])
    client = app.test_client()
    response = client.post("/_/t/in", data={"csrf_token": _token(client)}, base_url="https://localhost")
    assert "Secure" in response.headers["Set-Cookie"]


def test_csrf_refuses_a_foreign_origin_and_a_missing_token(app):
    client = app.test_client()
    token = _token(client)
    assert client.post("/_/t/in", data={}).status_code == 403
    foreign = client.post("/_/t/in", data={"csrf_token": token}, headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403 and "evil.example" in foreign.json["error"]["message"]
    assert client.get("/_/t/me").json == {"name": None}
    assert client.post("/_/t/in", data={"csrf_token": token}).text == "ok"
    assert client.get("/_/t/me").json == {"name": "person:carol"}


def test_the_signing_key_is_shared_by_every_app_of_the_instance(tmp_path):
    one = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Pages()])
    two = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Pages()])
    assert one.secret_key == two.secret_key and len(one.secret_key) > 40
    client = one.test_client()
    client.post("/_/t/in", data={"csrf_token": _token(client)})
    cookie = client.get_cookie("hostcore_session").value
    other = two.test_client()
    other.set_cookie("hostcore_session", cookie)
    assert other.get("/_/t/me").json == {"name": "person:carol"}  # another worker honours the session


@pytest.mark.parametrize(
    "target",
    ["https://evil.example/", "//evil.example/x", "/\\evil.example", "javascript:alert(1)", "", None,
     "evil", "/ok\r\nLocation: x", "\\\\evil"],
)  # fmt: skip
def test_safe_next_refuses_anything_off_site(target):
    assert safe_next(target, "/home") == "/home"


@pytest.mark.parametrize("target", ["/", "/team/page", "/_/apps?x=1#y", "/a/b%2Fc"])
def test_safe_next_keeps_local_paths(target):
    assert safe_next(target) == target
