"""Sign-in through an OpenID Connect provider: a real one (Authlib's server parts, tests/provider.py)
on loopback, and the wiki as the Flask app (in-process) or `hostcore serve` driven by Chromium."""

from __future__ import annotations

import re
from collections.abc import Iterator
from urllib.parse import parse_qs, urlencode, urlsplit

import pytest
import requests
from hostcore_accounts import accounts
from selenium.webdriver.common.by import By

from hostcore import StartupError, create_app
from hostcore.testing import cli, start_server, stop_process_group

from .provider import Provider

SECRET = "s3cret-of-the-test-client"
PUBLIC = "http://127.0.0.1:8080"


@pytest.fixture
def provider() -> Iterator[Provider]:
    with Provider() as running:
        running.add_client("wiki", SECRET, f"{PUBLIC}/_/oidc/test/callback")
        yield running


def config(provider: Provider, **settings) -> dict:
    test = {"issuer": provider.issuer, "client_id": "wiki", "client_secret": SECRET, "label": "Test ID",
            "allowed_domains": ["example.org"], "scopes": ["write"], "namespaces": ["team"], **settings}  # fmt: skip
    return {"PLUGINS": ["fs", "tokens", "accounts", "oidc"], "STORAGE": "fs", "PLUGIN_CONFIG": {"oidc": {"providers": {"test": test}}}}


@pytest.fixture
def app(tmp_path, provider):
    app = create_app(config(provider), instance_path=tmp_path / "instance")
    yield app
    app.extensions["hostcore"].close()


def start(client, next_path: str = "/notes/x") -> str:
    """Begin signing in; return the provider's redirect back to the wiki (the callback URL)."""
    begin = client.get("/_/oidc/test/login", query_string={"next": next_path})
    assert begin.status_code == 302, begin.text
    asked = parse_qs(urlsplit(begin.headers["Location"]).query)
    assert asked["code_challenge_method"] == ["S256"] and asked["nonce"] and asked["state"]
    assert asked["redirect_uri"] == [f"{PUBLIC}/_/oidc/test/callback"]
    back = requests.get(begin.headers["Location"], allow_redirects=False, timeout=10)
    assert back.status_code == 302, back.text
    return back.headers["Location"]


def finish(client, callback: str):
    parts = urlsplit(callback)
    return client.get(parts.path, query_string=parts.query)


def signed_in(client) -> str | None:
    found = re.search(r"signed in as <strong>([^<]+)</strong>", client.get("/_/login").text)
    return found.group(1) if found else None


def test_first_sign_in_creates_the_account_then_finds_it_by_subject(app, provider):
    client = app.test_client()
    assert "Sign in with Test ID" in client.get("/_/login").text
    done = finish(client, start(client))
    assert done.status_code == 303 and done.headers["Location"] == "/notes/x"
    assert signed_in(client) == "alice@example.org"
    host = app.extensions["hostcore"]
    record = accounts(host).get("alice@example.org")
    assert record["hash"] is None and record["scopes"] == ["write"] and record["namespaces"] == ["team"]
    assert record["upstream"] == {"provider": "test", "issuer": provider.issuer, "sub": "u-1"}
    principal = host.pm.hook.find_person(name="alice@example.org", host=host)
    assert principal.name == "person:alice@example.org" and principal.namespaces == {"team"}
    # the same person (same subject) with a new email: the same account, no second one
    provider.user = {"sub": "u-1", "email": "alice.new@example.org", "email_verified": True}
    other = app.test_client()
    assert finish(other, start(other)).status_code == 303
    assert signed_in(other) == "alice@example.org"
    assert [a["name"] for a in accounts(host).all()] == ["alice@example.org"]


def test_people_the_settings_do_not_allow_get_no_account(app, provider):
    host = app.extensions["hostcore"]
    for user in ({"sub": "u-2", "email": "mallory@evil.example", "email_verified": True},
                 {"sub": "u-3", "email": "eve@example.org", "email_verified": False},
                 {"sub": "u-4"}):  # fmt: skip
        provider.user = user
        client = app.test_client()
        refused = finish(client, start(client))
        assert refused.status_code == 403 and "ask its operator" in refused.json["error"]["message"]
        assert signed_in(client) is None
    assert accounts(host).all() == []


def test_a_wrong_state_is_refused_and_a_state_is_used_once(app, provider):
    client = app.test_client()
    callback = start(client)
    parts = urlsplit(callback)
    query = parse_qs(parts.query)
    forged = urlencode({"code": query["code"][0], "state": "forged-state"})
    refused = client.get(parts.path, query_string=forged)
    assert refused.status_code == 400 and refused.json["error"]["field"] == "state"
    assert signed_in(client) is None
    # another browser (no session that started the flow) cannot use the real state either
    stranger = app.test_client()
    assert finish(stranger, callback).status_code == 400 and signed_in(stranger) is None
    # the state was taken by the stranger's try: the flow must start again
    assert finish(client, callback).status_code == 400 and signed_in(client) is None
    assert finish(client, start(client)).status_code == 303 and signed_in(client) == "alice@example.org"
    replay = app.test_client()
    callback = start(replay)
    assert finish(replay, callback).status_code == 303
    assert finish(replay, callback).status_code == 400  # replayed: refused


def test_a_wrong_nonce_is_refused(app, provider):
    provider.tamper_nonce = True
    client = app.test_client()
    refused = finish(client, start(client))
    assert refused.status_code == 400 and "nonce" in refused.json["error"]["message"]
    assert signed_in(client) is None and accounts(app.extensions["hostcore"]).all() == []


def test_a_disabled_account_cannot_sign_in_this_way(app, provider):
    client = app.test_client()
    assert finish(client, start(client)).status_code == 303
    accounts(app.extensions["hostcore"]).update("alice@example.org", disabled=True)
    assert signed_in(client) is None  # signed out at once
    again = finish(client, start(client))
    assert again.status_code == 403 and "disabled" in again.json["error"]["message"] and signed_in(client) is None


def test_a_local_account_of_the_same_name_is_never_taken_over(app, provider):
    host = app.extensions["hostcore"]
    accounts(host).create("alice@example.org", "a local password", ["admin"])
    client = app.test_client()
    assert finish(client, start(client)).status_code == 303
    name = signed_in(client)
    assert name.startswith("test-") and accounts(host).get(name)["scopes"] == ["write"]
    assert accounts(host).get("alice@example.org")["upstream"] is None


def test_next_stays_on_the_site(app, provider):
    client = app.test_client()
    done = finish(client, start(client, "//evil.example/"))
    assert done.status_code == 303 and done.headers["Location"] == "/"


def test_settings_are_checked_at_start_up(tmp_path, provider):
    bad = config(provider, issuer="http://idp.example.org", client_secret="", scopes=["root"], colour="blue")
    with pytest.raises(StartupError) as caught:
        create_app(bad, instance_path=tmp_path / "a")
    message = str(caught.value)
    for expected in ("providers.test.issuer: must be an https URL", "providers.test.client_secret: required",
                     "providers.test.scopes: use one or more of", "unknown setting(s) colour"):  # fmt: skip
        assert expected in message
    no_accounts = dict(config(provider), PLUGINS=["fs", "tokens", "oidc"])
    with pytest.raises(StartupError, match='add "accounts" to PLUGINS'):
        create_app(no_accounts, instance_path=tmp_path / "b")


def test_an_issuer_that_does_not_match_discovery_is_refused(tmp_path, provider):
    app = create_app(config(provider, issuer=provider.issuer.replace("127.0.0.1", "localhost")), instance_path=tmp_path / "i")
    refused = app.test_client().get("/_/oidc/test/login")
    assert refused.status_code == 400 and "fix PLUGIN_CONFIG.oidc.providers.test.issuer" in refused.json["error"]["message"]
    app.extensions["hostcore"].close()


def test_sign_in_with_a_provider_in_chromium(tmp_path, provider, browser):
    """`hostcore serve` (gunicorn, 2 workers), its secret from the environment, the button on the
    sign-in page, the provider's redirects, and back signed in."""
    instance = tmp_path / "instance"
    cli(instance, "init")
    toml = instance / "hostcore.toml"
    toml.write_text(toml.read_text() + f"""
[PLUGIN_CONFIG.oidc.providers.test]
label = "Test ID"
issuer = "{provider.issuer}"
client_id = "wiki"
client_secret = {{"$env" = "TEST_OIDC_SECRET"}}
allowed_domains = ["example.org"]
""")
    toml.write_text(toml.read_text().replace('"accounts"', '"accounts", "oidc"', 1))
    proc, base, _port, _log = start_server(instance, env={"TEST_OIDC_SECRET": SECRET})
    try:
        provider.add_client("wiki", SECRET, f"{base}/_/oidc/test/callback")
        browser.get(base + "/_/login?next=/_/login")
        button = browser.find_element(By.XPATH, "//a[normalize-space()='Sign in with Test ID']")
        browser.screenshot("oidc-sign-in-page")
        browser.click_and_wait(button)
        assert browser.current_url == base + "/_/login"
        assert "signed in as alice@example.org." in browser.find_element(By.TAG_NAME, "main").text
        browser.screenshot("oidc-signed-in")
    finally:
        stop_process_group(proc)
