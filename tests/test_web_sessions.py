"""The browser side of the core: session cookie flags, security headers, CSRF, safe redirects, and
sessions that end everywhere (signed out, ended by their person, a changed password)."""

import re
import time
from contextlib import ExitStack

import pytest
from flask import jsonify, request

from hostcore import (
    Principal,
    check_csrf,
    create_app,
    csrf_token,
    end_session,
    end_sessions,
    hookimpl,
    person,
    safe_next,
    sessions_of,
    sign_in,
    sign_out,
)
from hostcore.testing import redis_server

from .conftest import BASE_CONFIG


class Pages:
    @hookimpl
    def find_person(self, name, host):
        return Principal(f"person:{name}", frozenset({"write"})) if name in ("carol", "dave") else None

    @hookimpl
    def register_routes(self, app, host):
        @app.route("/_/t/form")
        def form():
            return f'<form method="post"><input name="csrf_token" value="{csrf_token()}"></form>'

        @app.route("/_/t/in", methods=["POST"])
        def signin():
            check_csrf()
            sign_in(request.args.get("name", "carol"))
            return "ok"

        @app.route("/_/t/out", methods=["POST"])
        def signout():
            check_csrf()
            sign_out()
            return "ok"

        @app.route("/_/t/sessions")
        def sessions():
            return jsonify(sessions_of(host, session_name()))

        @app.route("/_/t/me")
        def me():
            who = person()
            return jsonify(name=who.name if who else None)


def session_name():
    from flask import session

    return session.get("person")


@pytest.fixture
def app(tmp_path):
    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Pages()])
    yield app
    app.extensions["hostcore"].close()


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


def signed_in(app, name="carol", agent="Mozilla/5.0 (X11; Linux x86_64) Firefox/128.0"):
    client = app.test_client()
    client.environ_base["HTTP_USER_AGENT"] = agent
    assert client.post(f"/_/t/in?name={name}", data={"csrf_token": _token(client)}).text == "ok"
    return client


def holding(cookie, app):
    """Another browser (on the worker or host ``app``) holding a copy of a session cookie."""
    other = app.test_client()
    other.set_cookie("hostcore_session", cookie)
    return other


@pytest.mark.parametrize("shared", ["sqlite", pytest.param("redis", marks=pytest.mark.redis)])
def test_signing_out_ends_the_session_for_every_copy_of_its_cookie(tmp_path, shared):
    """Two workers of one machine (shared.sqlite), or two hosts of one REDIS_URL: a copy of the
    cookie works on the other until the session signs out, then opens nothing there either."""
    with ExitStack() as stack:
        config, paths = dict(BASE_CONFIG), (tmp_path, tmp_path)
        if shared == "redis":
            config["REDIS_URL"] = stack.enter_context(redis_server()).url
            paths = (tmp_path / "host-a", tmp_path / "host-b")
        one, two = (create_app(config, instance_path=path, plugins=[Pages()]) for path in paths)
        for app in (one, two):
            stack.callback(app.extensions["hostcore"].close)
        client = signed_in(one)
        cookie = client.get_cookie("hostcore_session").value
        assert holding(cookie, two).get("/_/t/me").json == {"name": "person:carol"}
        assert client.post("/_/t/out", data={"csrf_token": _token(client)}).text == "ok"
        assert client.get("/_/t/me").json == {"name": None}
        assert holding(cookie, two).get("/_/t/me").json == {"name": None}
        assert holding(cookie, one).get("/_/t/me").json == {"name": None}


def test_a_cookie_without_a_live_session_record_opens_nothing(app):
    """A signed cookie naming a person but no session (one from before sessions were recorded, or
    made with the signing key) is no session."""
    client = app.test_client()
    with client.session_transaction() as cookie:
        cookie["person"], cookie["csrf"] = "carol", "c"
    assert client.get("/_/t/me").json == {"name": None}
    with client.session_transaction() as cookie:
        cookie["person"], cookie["sid"] = "carol", "guessed"
    assert client.get("/_/t/me").json == {"name": None}
    # a session id of dave's with carol's name: the record says whose it is
    dave = signed_in(app, "dave")
    with dave.session_transaction() as cookie:
        cookie["person"] = "carol"
    assert dave.get("/_/t/me").json == {"name": None}


def test_a_person_sees_and_ends_their_own_sessions(app):
    host = app.extensions["hostcore"]
    laptop = signed_in(app)
    phone = signed_in(app, agent="Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) Safari/604.1")
    dave = signed_in(app, "dave")
    listed = laptop.get("/_/t/sessions").json
    assert len(listed) == 2 and [s["current"] for s in listed].count(True) == 1
    mine = next(s for s in listed if s["current"])
    other = next(s for s in listed if not s["current"])
    assert "Firefox" in mine["agent"] and "iPhone" in other["agent"] and mine["address"] == "127.0.0.1"
    assert mine["created"] <= mine["seen"] <= time.time()
    assert end_session(host, "dave", other["id"]) is False  # not dave's to end
    assert phone.get("/_/t/me").json == {"name": "person:carol"}
    assert end_session(host, "carol", other["id"]) is True
    assert phone.get("/_/t/me").json == {"name": None}
    assert laptop.get("/_/t/me").json == {"name": "person:carol"}
    assert [s["id"] for s in laptop.get("/_/t/sessions").json] == [mine["id"]]
    assert end_session(host, "carol", other["id"]) is False  # ended already
    assert dave.get("/_/t/me").json == {"name": "person:dave"}


def test_end_sessions_ends_every_session_of_a_person_outside_a_request(app):
    """What a changed password does (the CLI has no request): every session of carol ends, dave's stay."""
    host = app.extensions["hostcore"]
    carols = [signed_in(app), signed_in(app)]
    dave = signed_in(app, "dave")
    assert end_sessions(host, "carol") == 2
    assert [c.get("/_/t/me").json["name"] for c in carols] == [None, None]
    assert dave.get("/_/t/me").json == {"name": "person:dave"}
    assert sessions_of(host, "carol") == [] and end_sessions(host, "carol") == 0


def test_a_session_notes_when_it_was_last_seen(app):
    host = app.extensions["hostcore"]
    client = signed_in(app)
    (key, record), = host.shared.scan("web-session")
    host.shared.put("web-session", key, {**record, "seen": record["seen"] - 3600, "agent": "old"})
    assert client.get("/_/t/me", headers={"User-Agent": "curl/8.5.0"}).json == {"name": "person:carol"}
    seen = host.shared.get("web-session", key)
    assert seen["seen"] > record["seen"] - 60 and seen["agent"] == "curl/8.5.0" and seen["created"] == record["created"]
