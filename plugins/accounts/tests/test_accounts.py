"""Local accounts: the sign-in page, throttling, find_person, and `hostcore user ...`."""

from __future__ import annotations

import re

import pytest
from flask import jsonify
from hostcore_accounts import FAILURES, GENERIC_ERROR, accounts

from hostcore import Principal, create_app, hookimpl, person
from hostcore.testing import cli

CONFIG = {"PLUGINS": ["fs", "tokens", "accounts"], "STORAGE": "fs"}
PASSWORD = "correct horse battery"


class WhoAmI:
    @hookimpl
    def register_routes(self, app, host):
        @app.route("/_/whoami")
        def whoami():
            who = person()
            return jsonify(name=who.name if who else None)


@pytest.fixture
def app(tmp_path):
    app = create_app(CONFIG, instance_path=tmp_path / "instance", plugins=[WhoAmI()])
    host = app.extensions["hostcore"]
    accounts(host).create("alice", PASSWORD, ["write"], ["team"])
    yield app
    host.close()


def csrf(client, path="/_/login"):
    return re.search(r'name="csrf_token" value="([^"]+)"', client.get(path).text).group(1)


def login(client, name, password, **extra):
    return client.post("/_/login", data={"csrf_token": csrf(client), "name": name, "password": password, **extra})


def whoami(client):
    return client.get("/_/whoami").json["name"]


def test_passwords_are_kept_as_argon2id_hashes(app):
    record = app.extensions["hostcore"].shared.get("accounts", "alice")
    assert record["hash"].startswith("$argon2id$") and PASSWORD not in str(record)


def test_sign_in_and_out(app):
    client = app.test_client()
    response = login(client, "alice", PASSWORD, next="/notes/index?x=1")
    assert response.status_code == 303 and response.headers["Location"] == "/notes/index?x=1"
    assert whoami(client) == "person:alice"
    assert accounts(app.extensions["hostcore"]).last_sign_in("alice") is not None
    assert client.post("/_/logout", data={}).status_code == 403  # no CSRF token: still signed in
    assert whoami(client) == "person:alice"
    out = client.post("/_/logout", data={"csrf_token": csrf(client)})
    assert out.status_code == 303 and out.headers["Location"] == "/_/login"
    assert whoami(client) is None


def test_a_wrong_password_and_an_unknown_name_get_the_same_answer(app):
    client = app.test_client()
    wrong = login(client, "alice", "not the password")
    unknown = login(client, "nobody", "not the password")
    assert wrong.status_code == unknown.status_code == 401
    assert GENERIC_ERROR in wrong.text and GENERIC_ERROR in unknown.text
    assert wrong.text.replace('value="alice"', "") == unknown.text.replace('value="nobody"', "")
    assert whoami(client) is None


def test_sign_in_needs_the_csrf_token_and_a_local_origin(app):
    client = app.test_client()
    token = csrf(client)
    assert client.post("/_/login", data={"name": "alice", "password": PASSWORD}).status_code == 403
    forged = client.post("/_/login", data={"csrf_token": "forged", "name": "alice", "password": PASSWORD})
    assert forged.status_code == 403
    foreign = client.post("/_/login", data={"csrf_token": token, "name": "alice", "password": PASSWORD},
                          headers={"Origin": "https://evil.example"})  # fmt: skip
    assert foreign.status_code == 403
    assert whoami(client) is None


@pytest.mark.parametrize("target", ["//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)", "/\tevil"])
def test_next_never_leaves_the_site(app, target):
    client = app.test_client()
    assert 'name="next" value="/"' in client.get("/_/login", query_string={"next": target}).text
    response = login(client, "alice", PASSWORD, next=target)
    assert response.status_code == 303 and response.headers["Location"] == "/"


def test_the_page_cannot_be_framed_and_has_no_inline_code(app):
    response = app.test_client().get("/_/login")
    assert response.headers["X-Frame-Options"] == "DENY"
    assert "frame-ancestors 'none'" in response.headers["Content-Security-Policy"]
    assert "<script" not in response.text and "style=" not in response.text and "<style" not in response.text
    assert 'autocomplete="username"' in response.text and 'autocomplete="current-password"' in response.text
    assert '<label for="name">' in response.text and '<label for="password">' in response.text
    with app.test_client().get("/_/static/accounts/accounts.css") as css:
        assert css.status_code == 200 and css.mimetype == "text/css" and b"font" in css.data


def test_throttling_per_name_then_a_growing_wait(app):
    client = app.test_client()
    host = app.extensions["hostcore"]
    for _ in range(5):
        assert login(client, "alice", "wrong password").status_code == 401
    assert login(client, "alice", "wrong password").status_code == 401  # the 6th failure starts a 2 s wait
    blocked = login(client, "alice", PASSWORD)  # the right password, during the wait: refused unread
    assert blocked.status_code == 429 and int(blocked.headers["Retry-After"]) in (2, 3)
    assert "Too many failed sign-ins" in blocked.text and whoami(client) is None
    # another name from the same address is not held up by alice's failures
    accounts(host).create("bob", PASSWORD, ["read"])
    assert login(client, "bob", PASSWORD).status_code == 303
    # the wait over (as if 2 s passed), one more failure doubles it
    key = next(k for k, v in host.shared.scan(FAILURES) if k.startswith("name:"))
    host.shared.put(FAILURES, key, {"count": 6, "until": 0})
    assert login(client, "alice", "wrong password").status_code == 401
    assert int(login(client, "alice", PASSWORD).headers["Retry-After"]) in (4, 5)
    # an unknown name is throttled alike (throttling tells nothing about which accounts exist)
    for _ in range(6):
        login(client, "ghost", "wrong password")
    assert login(client, "ghost", "wrong password").status_code == 429
    # after the wait, the right password signs in and clears the name's count
    host.shared.put(FAILURES, key, {"count": 7, "until": 0})
    assert login(client, "alice", PASSWORD).status_code == 303
    assert host.shared.get(FAILURES, key) is None


def test_throttling_per_address(app):
    client = app.test_client()
    host = app.extensions["hostcore"]
    for i in range(21):
        login(client, f"guess{i}", "wrong password")
    assert login(client, "alice", PASSWORD).status_code == 429  # from this address, even a fresh name waits
    other = app.test_client()
    response = other.post("/_/login", data={"csrf_token": csrf(other), "name": "alice", "password": PASSWORD},
                          environ_base={"REMOTE_ADDR": "192.0.2.7"})  # fmt: skip
    assert response.status_code == 303
    assert host.shared.get(FAILURES, "addr:127.0.0.1")["count"] == 21


def test_a_disabled_account_is_signed_out_at_once_and_cannot_sign_in(app):
    client = app.test_client()
    store = accounts(app.extensions["hostcore"])
    assert login(client, "alice", PASSWORD).status_code == 303
    store.update("alice", disabled=True)
    assert whoami(client) is None
    assert login(client, "alice", PASSWORD).status_code == 401
    store.update("alice", disabled=False)
    assert whoami(client) is None  # the session ended; signing in again is needed
    assert login(client, "alice", PASSWORD).status_code == 303


def test_find_person_gives_the_accounts_scopes_and_namespaces(app):
    host = app.extensions["hostcore"]
    found = host.pm.hook.find_person(name="alice", host=host)
    assert found == Principal("person:alice", frozenset({"write"}), frozenset({"team"}))
    assert host.pm.hook.find_person(name="nobody", host=host) is None
    assert host.pm.hook.find_person(name="../x", host=host) is None


@pytest.mark.serve
def test_user_commands(tmp_path):
    """The real CLI, in subprocesses: passwords from stdin or the prompt, never echoed."""
    instance = tmp_path / "instance"
    init = cli(instance, "init")
    admin_password = re.search(r"admin, password \(shown once; keep it safe\): (\w+)", init.stdout).group(1)

    def user(*args, input=None):
        return cli(instance, "user", *args, input=input, check=False)

    created = user("create", "carol", "--scope", "read", "--namespace", "team", "--password-stdin", input="a long password\n")
    assert created.returncode == 0 and created.stdout == "created account carol\n"
    prompted = user("create", "dave", input="another password\nanother password\n")
    assert prompted.returncode == 0 and "another password" not in prompted.stdout + prompted.stderr
    short = user("create", "erin", "--password-stdin", input="short\n")
    assert short.returncode == 1 and "password needs at least 10 characters" in short.stderr
    bad_name = user("create", "Bad Name", "--password-stdin", input="a long password\n")
    assert bad_name.returncode == 1 and "an account name is" in bad_name.stderr
    again = user("create", "carol", "--password-stdin", input="a long password\n")
    assert again.returncode == 1 and "an account named 'carol' exists" in again.stderr

    listed = user("list").stdout.splitlines()
    assert [line.split("\t")[0] for line in listed] == ["admin", "carol", "dave"]
    assert listed[1].split("\t")[1:5] == ["read", "team", "active", "last sign-in never"] and listed[2].split("\t")[1] == "write"
    assert user("disable", "carol").returncode == 0 and "\tdisabled\t" in user("list").stdout.splitlines()[1]
    assert user("enable", "carol").returncode == 0 and "\tactive\t" in user("list").stdout.splitlines()[1]
    assert "no account named 'nobody'" in user("disable", "nobody").stderr
    assert user("passwd", "carol", "--password-stdin", input="a new long password\n").returncode == 0

    app = create_app(instance_path=instance)
    host = app.extensions["hostcore"]
    store = accounts(host)
    assert store.verify("carol", "a new long password") is not None and store.verify("carol", "a long password") is None
    assert store.verify("admin", admin_password) is not None and "admin" in store.get("admin")["scopes"]
    host.close()


class Elsewhere:
    @hookimpl
    def sign_in_options(self, host):
        return [("Example ID", "/_/elsewhere/login")]


def test_hook_sign_in_options(tmp_path):
    app = create_app(CONFIG, instance_path=tmp_path / "instance", plugins=[Elsewhere()])
    page = app.test_client().get("/_/login", query_string={"next": "/notes/a"}).text
    assert '<a class="button secondary" href="/_/elsewhere/login?next=%2Fnotes%2Fa">Sign in with Example ID</a>' in page
    app.extensions["hostcore"].close()


def test_behind_trusted_proxies_the_forwarded_address_is_throttled(tmp_path):
    """TRUSTED_PROXIES = 1: X-Forwarded-For names the client (each one throttled on its own);
    without it the header is ignored, so a client cannot dodge throttling by sending one."""
    import time

    for proxies, blocked, free in ((1, "198.51.100.1", "198.51.100.2"), (0, "127.0.0.1", None)):
        app = create_app(dict(CONFIG, TRUSTED_PROXIES=proxies), instance_path=tmp_path / f"i{proxies}", plugins=[WhoAmI()])
        host = app.extensions["hostcore"]
        accounts(host).create("alice", PASSWORD, ["write"])
        host.shared.put(FAILURES, f"addr:{blocked}", {"count": 30, "until": time.time() + 600})

        def attempt(forwarded, password=PASSWORD, app=app):
            client = app.test_client()
            token = csrf(client)
            return client.post("/_/login", data={"csrf_token": token, "name": "alice", "password": password},
                               headers={"X-Forwarded-For": forwarded})  # fmt: skip

        assert attempt(blocked).status_code == 429
        if free:
            assert attempt(free).status_code == 303
            assert attempt("203.0.113.9", "wrong password").status_code == 401
            assert host.shared.get(FAILURES, "addr:203.0.113.9")["count"] == 1
        else:
            assert attempt("198.51.100.2").status_code == 429  # the header is not believed
        host.close()
