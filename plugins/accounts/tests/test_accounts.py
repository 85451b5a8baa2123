"""Local accounts: the sign-in page, throttling, find_person, and `hostcore user ...`."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import pytest
from flask import jsonify
from hostcore_accounts import CHECKS, FAILURES, FREE_FAILURES_PER_NAME, GENERIC_ERROR, MAX_WAIT, accounts

from hostcore import Principal, ValidationError, create_app, hookimpl, person
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


def login(client, name, password, _address="127.0.0.1", **extra):
    return client.post("/_/login", data={"csrf_token": csrf(client), "name": name, "password": password, **extra},
                       environ_base={"REMOTE_ADDR": _address})  # fmt: skip


def whoami(client):
    return client.get("/_/whoami").json["name"]


def test_passwords_are_kept_as_argon2id_hashes(app):
    record = app.extensions["hostcore"].shared.get("accounts", "alice")
    assert record["hash"].startswith("$argon2id$") and PASSWORD not in str(record)


def test_outside_the_tests_a_password_costs_rfc_9106s_profile():
    """The tests hash at argon2's cheapest (the root conftest.py); a process of the wiki does not."""
    made = subprocess.run(
        [sys.executable, "-c", f"import hostcore_accounts; print(hostcore_accounts.hash_password({PASSWORD!r}))"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert made.startswith("$argon2id$v=19$m=65536,t=3,p=4$")


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


def test_a_strangers_wrong_passwords_never_lock_the_owner_out(app):
    """Issue 22 #6: a stranger's wrong passwords for alice from alice's own address (behind a proxy
    without TRUSTED_PROXIES every client has the proxy's) make her right password wait for the
    next free check, a short and bounded wait, never refuse it."""
    stranger, owner = app.test_client(), app.test_client()
    for _ in range(6):
        assert login(stranger, "alice", "wrong password").status_code == 401
    assert login(owner, "alice", PASSWORD).status_code == 303  # the check was free: in at once
    assert whoami(owner) == "person:alice"
    # the stranger goes on: past the free failures only one guess per interval is looked at ...
    results = [login(stranger, "alice", f"guess {i}").status_code for i in range(12)]
    assert results[:6] == [401] * 6 and results[-1] == 429  # alice's sign-in cleared the pair's count
    # ... and alice, retrying when told, is in within the interval the stranger's last guess started
    owner, start = app.test_client(), time.monotonic()
    while (answer := login(owner, "alice", PASSWORD)).status_code == 429:
        assert "Too many failed sign-ins" in answer.text and 1 <= int(answer.headers["Retry-After"]) <= 3
        time.sleep(int(answer.headers["Retry-After"]))
    assert answer.status_code == 303 and time.monotonic() - start < 4
    assert whoami(owner) == "person:alice"


def test_a_brute_force_gets_one_check_per_interval_and_the_interval_grows_to_a_bound(app):
    host = app.extensions["hostcore"]
    store = accounts(host)
    pair, name, _address = (key for key, _free in store._subjects("alice", "127.0.0.1"))
    host.shared.put(FAILURES, pair, {"count": 9})  # 4 past the free ones: one check per 16 s
    client = app.test_client()
    results = [login(client, "alice", f"guess {i}") for i in range(20)]
    assert [r.status_code for r in results] == [401] + [429] * 19
    assert all(14 <= int(r.headers["Retry-After"]) <= 17 for r in results[1:])
    assert host.shared.get(FAILURES, pair)["count"] == 10  # refused tries were never looked at, nor counted
    # guesses spread over many addresses (two each) count against the name: past its free failures
    # one guess per interval is looked at, from whichever address
    spread = [login(client, "alice", f"guess {i}", _address=f"192.0.2.{i // 2}").status_code for i in range(30)]
    assert spread[:FREE_FAILURES_PER_NAME + 1] == [401] * (FREE_FAILURES_PER_NAME + 1) and spread[-1] == 429
    assert host.shared.get(FAILURES, name)["count"] == FREE_FAILURES_PER_NAME + 2
    # however many failures, the interval stops at MAX_WAIT: an owner waits that long at most
    host.shared.put(FAILURES, pair, {"count": 500})
    host.shared.delete(CHECKS, pair)
    host.shared.delete(CHECKS, name)
    assert login(client, "alice", "guess again").status_code == 401
    held = login(client, "alice", PASSWORD)
    assert held.status_code == 429 and int(held.headers["Retry-After"]) <= MAX_WAIT + 1
    # the interval over (its check expired), the right password gets in and clears the counts of name and pair
    host.shared.delete(CHECKS, pair)
    host.shared.delete(CHECKS, name)
    assert login(client, "alice", PASSWORD).status_code == 303
    assert host.shared.get(FAILURES, pair) is None and host.shared.get(FAILURES, name) is None
    # an unknown name is throttled alike (throttling tells nothing about which accounts exist)
    ghost = [login(client, "ghost", "wrong password").status_code for _ in range(10)]
    assert ghost[:6] == [401] * 6 and ghost[-1] == 429


def test_throttling_per_address(app):
    """Guesses spread over many names from one address: past 20 failures, one check per interval
    for that address; another address is not held up."""
    client = app.test_client()
    host = app.extensions["hostcore"]
    statuses = [login(client, f"guess{i}", "wrong password").status_code for i in range(25)]
    assert statuses[:22] == [401] * 22 and statuses[22:] == [429] * 3
    assert login(client, "alice", PASSWORD).status_code == 429  # from this address, even a fresh name waits its turn
    other = app.test_client()
    assert login(other, "alice", PASSWORD, _address="192.0.2.7").status_code == 303
    assert host.shared.get(FAILURES, "addr:127.0.0.1")["count"] == 22
    host.shared.delete(CHECKS, "addr:127.0.0.1")  # the interval over
    assert login(client, "alice", PASSWORD).status_code == 303


def test_signing_out_ends_the_session_for_a_copy_of_its_cookie(app):
    """Issue 22 #4: a copied session cookie opened pages after /_/logout; now it opens nothing."""
    client = app.test_client()
    assert login(client, "alice", PASSWORD).status_code == 303
    copy = app.test_client()
    copy.set_cookie("hostcore_session", client.get_cookie("hostcore_session").value)
    assert whoami(copy) == "person:alice"
    assert client.post("/_/logout", data={"csrf_token": csrf(client)}).status_code == 303
    assert whoami(client) is None and whoami(copy) is None


def test_a_changed_password_ends_every_session_and_says_so(app):
    host = app.extensions["hostcore"]
    store = accounts(host)
    browsers = [app.test_client() for _ in range(3)]
    for browser in browsers:
        assert login(browser, "alice", PASSWORD).status_code == 303
    with pytest.raises(ValidationError, match="current_password"):
        store.change_password("alice", "not the password", "a brand new password", "127.0.0.1")
    assert all(whoami(b) == "person:alice" for b in browsers)  # a refused change ends nothing
    with pytest.raises(ValidationError, match="at least 10"):
        store.change_password("alice", PASSWORD, "short", "127.0.0.1")
    assert store.change_password("alice", PASSWORD, "a brand new password", "127.0.0.1") == 3
    assert [whoami(b) for b in browsers] == [None, None, None]
    assert store.verify("alice", "a brand new password") is not None


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
    assert "no account named 'nobody'" in user("disable", "nobody").stderr
    edited = user("edit", "carol", "--scope", "read", "--scope", "write", "--namespace", "team", "--namespace", "notes")
    assert edited.returncode == 0 and edited.stdout == "carol: read write, notes, team\n"
    assert user("list").stdout.splitlines()[1].split("\t")[1:3] == ["read write", "notes,team"]
    assert "is not one of" in user("edit", "carol", "--scope", "root").stderr
    last = user("disable", "admin")  # the people pages need an admin of every namespace: the last one stays
    assert last.returncode == 1 and "last active admin" in last.stderr
    assert "last active admin" in user("edit", "admin", "--scope", "write").stderr

    # Issue 22 #4: a changed password (and a disabled account) ends the person's open sessions, and says so
    app = create_app(instance_path=instance, plugins=[WhoAmI()])
    host = app.extensions["hostcore"]
    browsers = [app.test_client() for _ in range(2)]
    for browser in browsers:
        assert login(browser, "carol", "a long password").status_code == 303
    changed = user("passwd", "carol", "--password-stdin", input="a new long password\n")
    assert changed.stdout == "password of carol changed; 2 open sessions ended (signed out everywhere)\n"
    assert [whoami(b) for b in browsers] == [None, None]
    assert login(browsers[0], "carol", "a new long password").status_code == 303
    assert user("disable", "carol").stdout == "disabled carol; 1 open session ended\n"
    assert "\tdisabled\t" in user("list").stdout.splitlines()[1]
    assert user("enable", "carol").stdout == "enabled carol\n" and "\tactive\t" in user("list").stdout.splitlines()[1]
    assert whoami(browsers[0]) is None  # enabled again, the ended session stays ended

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
    for proxies, blocked, free in ((1, "198.51.100.1", "198.51.100.2"), (0, "127.0.0.1", None)):
        app = create_app(dict(CONFIG, TRUSTED_PROXIES=proxies), instance_path=tmp_path / f"i{proxies}", plugins=[WhoAmI()])
        host = app.extensions["hostcore"]
        accounts(host).create("alice", PASSWORD, ["write"])
        host.shared.put(FAILURES, f"addr:{blocked}", {"count": 30})
        host.shared.put(CHECKS, f"addr:{blocked}", {"until": time.time() + 30}, ttl=30)  # its check is taken

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
