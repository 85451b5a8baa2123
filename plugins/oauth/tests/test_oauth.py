"""The authorization server through HTTP on a real app (real shared state in SQLite): discovery,
registration, consent, PKCE, tokens, refresh rotation, revocation, scopes and namespaces, and
every refusal with nothing granted."""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from authlib.oauth2.rfc8414 import AuthorizationServerMetadata
from oauth_testing import people
from oauthflow import (
    approve,
    authorize_url,
    call,
    connect,
    csrf_of,
    exchange,
    pkce,
    redirect_params,
    refresh,
    register,
)

from hostcore import StartupError, create_app
from hostcore.testing import FakeClock
from hostcore_tokens import store as tokens_store

REDIRECT = "https://app.example/cb"
RESOURCE = "http://127.0.0.1:8080/_/mcp"


def make_app(tmp_path, **oauth):
    config = {"PLUGINS": ["fs", "tokens", "oauth"], "STORAGE": "fs", "PLUGIN_CONFIG": {"oauth": oauth} if oauth else {}}
    app = create_app(config, instance_path=tmp_path / "instance", plugins=[people])
    host = app.extensions["hostcore"]
    from hostcore import SYSTEM

    for ns in ("notes", "team"):
        host.wiki(SYSTEM).save_namespace(ns, title=ns.title())
        host.wiki(SYSTEM).save_page(f"{ns}/index", body=f"# {ns}\n")
    return app


@pytest.fixture
def app(tmp_path):
    app = make_app(tmp_path)
    yield app
    app.extensions["hostcore"].close()


@pytest.fixture
def client(app):
    return app.test_client()


def ok(response):
    assert response.status_code == 200, response.text
    text = response.get_data(as_text=True)
    return json.loads(text.split("data: ", 1)[1] if text.startswith("event:") else text)["result"]


# --- discovery ----------------------------------------------------------------------------------


def test_the_resource_metadata_names_the_wiki_as_its_authorization_server(client):
    for path in ("/.well-known/oauth-protected-resource/_/mcp", "/.well-known/oauth-protected-resource"):
        prm = client.get(path).json
        assert prm["authorization_servers"] == ["http://127.0.0.1:8080"] and prm["resource"] == RESOURCE
    unauthorized = client.post("/_/mcp", json={})
    challenge = unauthorized.headers["WWW-Authenticate"]
    assert unauthorized.status_code == 401
    assert 'resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/_/mcp"' in challenge
    assert 'scope="read write"' in challenge


def test_server_metadata_is_valid_rfc8414_and_served_under_both_names(tmp_path):
    app = create_app({"PLUGINS": ["fs", "oauth"], "STORAGE": "fs", "PUBLIC_URL": "https://wiki.example.org",
                      "ALLOWED_HOSTS": ["localhost"]}, instance_path=tmp_path / "i")  # fmt: skip
    client = app.test_client()
    metadata = client.get("/.well-known/oauth-authorization-server").json
    AuthorizationServerMetadata(metadata).validate()
    assert client.get("/.well-known/openid-configuration").json == metadata
    assert metadata["issuer"] == "https://wiki.example.org"
    assert metadata["code_challenge_methods_supported"] == ["S256"]
    assert metadata["client_id_metadata_document_supported"] is True
    assert metadata["registration_endpoint"] == "https://wiki.example.org/_/oauth/register"
    app.extensions["hostcore"].close()


# --- the whole flow -----------------------------------------------------------------------------


def test_connect_call_step_up_refresh_revoke(client, app):
    client_id, tokens = connect(client, scopes=["read"])
    assert tokens["access_token"].startswith("hco_") and tokens["refresh_token"].startswith("hcr_")
    assert tokens["scope"] == "read" and tokens["expires_in"] == 900
    assert (
        ok(call(client, tokens["access_token"], "read_page", {"slug": "notes/index"}))["structuredContent"]["slug"]
        == "notes/index"
    )

    denied = call(client, tokens["access_token"], "save_page", {"slug": "notes/new", "body": "x"})
    assert denied.status_code == 403
    challenge = denied.headers["WWW-Authenticate"]
    assert 'error="insufficient_scope"' in challenge and 'scope="read write"' in challenge and "resource_metadata=" in challenge
    host = app.extensions["hostcore"]
    assert host.wiki(host.pm.hook.find_person(name="ann", host=host)).list_pages("notes")["pages"][0]["slug"] == "notes/index"
    assert len(host.wiki(people.PEOPLE["ann"]).list_pages("notes")["pages"]) == 1  # nothing written

    rotated = refresh(client, client_id, tokens["refresh_token"])
    assert rotated.status_code == 200, rotated.text
    new = rotated.json
    assert new["refresh_token"] != tokens["refresh_token"] and new["access_token"] != tokens["access_token"]
    assert ok(call(client, new["access_token"], "list_pages", {"namespace": "notes"}))

    replay = refresh(client, client_id, tokens["refresh_token"])
    assert replay.status_code == 400 and replay.json["error"] == "invalid_grant"
    assert "already used" in replay.json["error_description"]
    # the whole grant is revoked: the newest tokens stop working too
    assert call(client, new["access_token"], "list_pages", {"namespace": "notes"}).status_code == 401
    assert refresh(client, client_id, new["refresh_token"]).json["error"] == "invalid_grant"


def test_a_refresh_may_narrow_the_scope_but_never_widen_it(client):
    client_id, tokens = connect(client, scopes=["read", "write"])
    narrow = client.post("/_/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                                 "refresh_token": tokens["refresh_token"], "scope": "read"}).json  # fmt: skip
    assert narrow["scope"] == "read"
    assert call(client, narrow["access_token"], "save_page", {"slug": "notes/n", "body": "x"}).status_code == 403
    wide = client.post("/_/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id,
                                               "refresh_token": narrow["refresh_token"], "scope": "read write admin"})  # fmt: skip
    assert wide.status_code == 400 and wide.json["error"] == "invalid_scope"


def test_personal_tokens_keep_working_and_get_a_tool_error_beyond_their_scope(app, client):
    token = tokens_store(app.extensions["hostcore"]).create("reader", ["read"])
    answer = ok(call(client, token, "save_page", {"slug": "notes/x", "body": "x"}))
    assert answer["isError"] and "insufficient_scope" in answer["content"][-1]["text"]


def test_step_up_grants_more_after_a_new_consent(client):
    client_id, _ = connect(client, scopes=["read"])
    verifier, challenge = pkce()
    got = redirect_params(approve(client, authorize_url(client_id, REDIRECT, challenge, scope="read write")))
    new = exchange(client, client_id, got["code"], verifier).json
    assert new["scope"] == "read write"
    assert ok(call(client, new["access_token"], "save_page", {"slug": "notes/stepped", "body": "x"}))["structuredContent"][
        "created"
    ]


def test_namespaces_and_scopes_are_only_what_the_person_chose_and_holds(client):
    _, tokens = connect(client, scopes=["read", "write"], namespaces=["team"])
    token = tokens["access_token"]
    assert ok(call(client, token, "read_page", {"slug": "team/index"}))["structuredContent"]
    refused = ok(call(client, token, "read_page", {"slug": "notes/index"}))
    assert refused["isError"] and "forbidden" in refused["content"][-1]["text"]


def test_a_person_cannot_give_more_than_they_hold(client):
    client_id = register(client)["client_id"]
    client.get("/_/test/sign-in/tim")
    verifier, challenge = pkce()
    url = authorize_url(client_id, REDIRECT, challenge, scope="read write admin")
    page = client.get(url).text
    assert 'value="admin"' not in page and "Not offered (admin)" in page and 'value="*"' not in page
    assert client.post(url, data={"csrf_token": csrf_of(page), "decision": "approve", "grant_scope": ["admin", "write"],
                                  "grant_namespace": ["*"]}).status_code == 403  # fmt: skip
    got = redirect_params(approve(client, url, ["admin", "write"], ["team"]))
    tokens = exchange(client, client_id, got["code"], verifier).json
    assert tokens["scope"] == "write"
    refused = ok(call(client, tokens["access_token"], "list_pages", {"namespace": "notes"}))
    assert refused["isError"]


def test_a_grant_may_only_propose(client):
    client_id = register(client)["client_id"]
    client.get("/_/test/sign-in/ann")
    verifier, challenge = pkce()
    url = authorize_url(client_id, REDIRECT, challenge, scope="propose review")
    page = client.get(url).text
    assert "propose changes to pages for a person to review" in page and "apply or reject anyone" in page
    tokens = exchange(client, client_id, redirect_params(approve(client, url, ["propose"]))["code"], verifier).json
    assert tokens["scope"] == "propose"
    asked = {"changes": [{"op": "save", "slug": "notes/x", "body": "x"}], "title": "A page", "reason": "asked"}
    made = ok(call(client, tokens["access_token"], "create_change_request", asked))
    assert not made["isError"] and made["structuredContent"]["state"] == "open", made
    proposed = ok(call(client, tokens["access_token"], "save_page", {"slug": "notes/y", "body": "y"}))  # its write is proposed
    assert not proposed["isError"] and proposed["structuredContent"]["proposed"].startswith("cr-"), proposed
    refused = call(client, tokens["access_token"], "move_page", {"slug": "notes/x", "new_slug": "notes/z", "basehash": "0" * 40})
    assert refused.status_code == 403 and 'scope="propose write"' in refused.headers["WWW-Authenticate"]


def test_a_disabled_person_s_tokens_stop_at_once(client):
    _, tokens = connect(client)
    people.DISABLED.add("ann")
    try:
        assert call(client, tokens["access_token"], "list_pages", {}).status_code == 401
    finally:
        people.DISABLED.discard("ann")


# --- consent page -------------------------------------------------------------------------------


def test_consent_needs_a_signed_in_person_and_shows_the_hosts(client):
    client_id = register(client, "https://callback.example.net/oauth")["client_id"]
    url = authorize_url(client_id, "https://callback.example.net/oauth", pkce()[1])
    answer = client.get(url)
    assert answer.status_code == 302 and answer.headers["Location"].startswith("/_/login?next=/_/oauth/authorize")
    client.get("/_/test/sign-in/ann")
    page = client.get(url)
    assert "Test App" in page.text and "callback.example.net" in page.text and "by the app itself" in page.text
    assert page.headers["X-Frame-Options"] == "DENY" and "frame-ancestors 'none'" in page.headers["Content-Security-Policy"]
    # the approval's redirect to the app is allowed by form-action (browsers apply it to redirects)
    assert "form-action 'self' https://callback.example.net;" in page.headers["Content-Security-Policy"]


def test_the_consent_page_policy_names_only_the_redirect_origin(client):
    client.get("/_/test/sign-in/ann")
    # (a space in a redirect URI is refused at registration; this one is a valid URI)
    for uri, source in (("cursor://anysphere.cursor-mcp/oauth/callback", "cursor:"),
                        ("https://a.example;script-src'unsafe-inline'/cb", "")):  # fmt: skip
        client_id = register(client, uri)["client_id"]
        policy = client.get(authorize_url(client_id, uri, pkce()[1])).headers["Content-Security-Policy"]
        assert f"form-action 'self' {source};" in policy and "unsafe-inline" not in policy


def test_consent_without_csrf_or_from_another_origin_grants_nothing(client):
    client_id = register(client)["client_id"]
    client.get("/_/test/sign-in/ann")
    url = authorize_url(client_id, REDIRECT, pkce()[1])
    csrf = csrf_of(client.get(url).text)
    form = {"decision": "approve", "grant_scope": ["read"], "grant_namespace": ["*"]}
    assert client.post(url, data=form).status_code == 403
    foreign = client.post(url, data={**form, "csrf_token": csrf}, headers={"Origin": "https://evil.example"})
    assert foreign.status_code == 403 and "Location" not in foreign.headers
    denied = redirect_params(client.post(url, data={**form, "csrf_token": csrf, "decision": "deny"}))
    assert denied["error"] == "access_denied" and denied["state"] == "st-42" and "code" not in denied


def test_redirect_uri_mismatch_and_open_redirects_are_refused_without_redirecting(client):
    client_id = register(client)["client_id"]
    client.get("/_/test/sign-in/ann")
    for bad in ("https://evil.example/cb", "https://app.example/cb/../evil", "https://app.example/cb?x=1", "//evil.example"):
        answer = client.get(authorize_url(client_id, bad, pkce()[1]))
        assert answer.status_code == 400 and "Location" not in answer.headers, bad
    answer = client.get(authorize_url("hcc_unknown", REDIRECT, pkce()[1]))
    assert answer.status_code == 400 and "Location" not in answer.headers
    # the sign-in redirect keeps to this site
    assert client.get("/_/test/sign-in/ann?next=//evil.example").headers["Location"] == "/_/apps"


MALFORMED = {
    # what the request gets wrong: (its parameters changed, None = left out), the error the page names
    "no client_id": ({"client_id": None}, "invalid_client"),
    "an empty client_id": ({"client_id": ""}, "invalid_client"),
    "an oversized client_id": ({"client_id": "hcc_" + "x" * 5000}, "invalid_client"),
    "an oversized metadata URL": ({"client_id": "https://app.example/" + "a" * 3000}, "invalid_client"),
    "an unknown client": ({"client_id": "hcc_unknown"}, "invalid_client"),
    "a client_id twice": ({"client_id": "twice"}, "invalid_request"),
    "a redirect_uri not registered": ({"redirect_uri": "https://evil.example/cb"}, "invalid_request"),
    "an empty redirect_uri and no client": ({"redirect_uri": "", "client_id": ""}, "invalid_client"),
    "nothing at all": ({"client_id": None, "redirect_uri": None, "response_type": None, "scope": None, "state": None,
                        "resource": None, "code_challenge": None, "code_challenge_method": None}, "unsupported_response_type"),
}  # fmt: skip
REDIRECTED = {
    # a request whose client and redirect URI are known: the app is told, at its redirect URI
    "no response_type": ({"response_type": None}, "unsupported_response_type"),
    "a response_type other than code": ({"response_type": "token"}, "unsupported_response_type"),
    "an unknown scope": ({"scope": "read delete"}, "invalid_scope"),
    "no PKCE": ({"code_challenge": None, "code_challenge_method": None}, "invalid_request"),
    "plain PKCE": ({"code_challenge_method": "plain"}, "invalid_request"),
    "PKCE without a method": ({"code_challenge_method": None}, "invalid_request"),
    "another resource": ({"resource": "https://other.example/mcp"}, "invalid_target"),
}


def malformed_url(client_id: str, changes: dict) -> str:
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": REDIRECT, "state": "st-42", "scope": "read write",
              "resource": RESOURCE, "code_challenge": pkce()[1], "code_challenge_method": "S256"}  # fmt: skip
    twice = changes.get("client_id") == "twice"
    params.update({k: v for k, v in changes.items() if k != "client_id" or not twice})
    url = "/_/oauth/authorize?" + urlencode({k: v for k, v in params.items() if v is not None})
    return url + f"&client_id={client_id}" if twice else url


@pytest.mark.parametrize("case", MALFORMED)
def test_a_malformed_authorization_request_gets_the_error_page_never_a_redirect(client, case):
    """Issue 22 #11: signed in, ``client_id=`` was a 500. A request whose client or redirect URI
    cannot be trusted gets the OAuth error page (RFC 6749 4.1.2.1: never a redirect), naming the error."""
    client_id = register(client)["client_id"]
    client.get("/_/test/sign-in/ann")
    changes, error = MALFORMED[case]
    answer = client.get(malformed_url(client_id, changes))
    assert answer.status_code == 400 and "Location" not in answer.headers, answer.text[:300]
    assert answer.mimetype == "text/html" and "The app&#39;s request cannot be used" in answer.text
    assert f"<code>{error}</code>" in answer.text and answer.headers["Cache-Control"] == "no-store"
    assert client.post(malformed_url(client_id, changes), data={}).status_code in (400, 403)  # a POST too: never a 500
    assert app_grants(client) == []


@pytest.mark.parametrize("case", REDIRECTED)
def test_a_malformed_request_of_a_known_client_goes_back_to_it_with_the_error(client, case):
    client_id = register(client)["client_id"]
    client.get("/_/test/sign-in/ann")
    changes, error = REDIRECTED[case]
    got = redirect_params(client.get(malformed_url(client_id, changes)))
    assert got["error"] == error and got["state"] == "st-42" and "code" not in got
    assert app_grants(client) == []


def app_grants(client) -> list:
    return client.application.extensions["hostcore"].shared.scan("oauth-grant")


def test_pkce_is_required_and_plain_is_refused(client):
    client_id = register(client)["client_id"]
    client.get("/_/test/sign-in/ann")
    for challenge_args in ({}, {"code_challenge": "x" * 43, "code_challenge_method": "plain"}, {"code_challenge": "x" * 43}):
        answer = client.get(authorize_url(client_id, REDIRECT, None, **challenge_args))
        got = redirect_params(answer)
        assert got["error"] == "invalid_request" and "code" not in got and got["state"] == "st-42", challenge_args
    verifier, challenge = pkce()
    got = redirect_params(approve(client, authorize_url(client_id, REDIRECT, challenge)))
    assert exchange(client, client_id, got["code"], None).json["error"] == "invalid_request"
    # the code was used by that failed try: it is gone
    assert exchange(client, client_id, got["code"], verifier).json["error"] == "invalid_grant"
    got = redirect_params(approve(client, authorize_url(client_id, REDIRECT, challenge)))
    assert exchange(client, client_id, got["code"], pkce()[0]).json["error"] == "invalid_grant"
    got = redirect_params(approve(client, authorize_url(client_id, REDIRECT, challenge)))
    assert (
        exchange(client, client_id, got["code"], verifier, redirect_uri="https://app.example/other").json["error"]
        == "invalid_grant"
    )


# --- audience, expiry, revocation ---------------------------------------------------------------


def test_a_token_for_another_resource_is_refused(client, app):
    client_id = register(client)["client_id"]
    client.get("/_/test/sign-in/ann")
    verifier, challenge = pkce()
    got = redirect_params(client.get(authorize_url(client_id, REDIRECT, challenge, resource="https://other.example/mcp")))
    assert got["error"] == "invalid_target" and "code" not in got
    got = redirect_params(approve(client, authorize_url(client_id, REDIRECT, challenge)))
    answer = exchange(client, client_id, got["code"], verifier, resource="https://other.example/mcp")
    assert answer.status_code == 400 and answer.json["error"] == "invalid_target"
    # a grant whose audience is another resource (e.g. issued before PUBLIC_URL changed) is refused
    _, tokens = connect(client)
    shared = app.extensions["hostcore"].shared
    for key, record in shared.scan("oauth-access"):
        shared.put("oauth-access", key, {**record, "audience": "https://old.example/_/mcp"})
    assert call(client, tokens["access_token"], "list_pages", {}).status_code == 401


def test_an_expired_access_token_is_refused(tmp_path):
    app = make_app(tmp_path, access_token_seconds=60)
    app.extensions["hostcore"].shared.clock = clock = FakeClock()
    client = app.test_client()
    _, tokens = connect(client)
    clock.advance(59)
    assert ok(call(client, tokens["access_token"], "list_pages", {}))
    clock.advance(2)
    answer = call(client, tokens["access_token"], "list_pages", {})
    assert answer.status_code == 401 and 'error="invalid_token"' in answer.headers["WWW-Authenticate"]
    app.extensions["hostcore"].close()


def test_revocation_takes_effect_at_once(client):
    client_id, tokens = connect(client)
    assert client.post("/_/oauth/revoke", data={"token": tokens["access_token"], "client_id": client_id}).status_code == 200
    assert call(client, tokens["access_token"], "list_pages", {}).status_code == 401
    again = refresh(client, client_id, tokens["refresh_token"]).json
    assert ok(call(client, again["access_token"], "list_pages", {}))
    assert client.post("/_/oauth/revoke", data={"token": again["refresh_token"], "client_id": client_id}).status_code == 200
    assert call(client, again["access_token"], "list_pages", {}).status_code == 401
    assert refresh(client, client_id, again["refresh_token"]).json["error"] == "invalid_grant"


def test_only_digests_are_stored(client, app):
    _, tokens = connect(client)
    stored = (app.extensions["hostcore"].instance_path / "shared.sqlite").read_bytes()
    assert tokens["access_token"].encode() not in stored and tokens["refresh_token"].encode() not in stored


# --- connected apps -----------------------------------------------------------------------------


def test_connected_apps_lists_grants_and_disconnect_revokes_them(client):
    client_id, tokens = connect(client, scopes=["read"], namespaces=["team"])
    assert ok(call(client, tokens["access_token"], "list_pages", {"namespace": "team"}))
    page = client.get("/_/apps")
    assert "Test App" in page.text and "team" in page.text and "read" in page.text and "never" not in page.text
    assert page.headers["X-Frame-Options"] == "DENY"
    form = {"client_id": client_id}
    assert client.post("/_/apps", data=form).status_code == 403  # no CSRF token: nothing revoked
    assert ok(call(client, tokens["access_token"], "list_pages", {"namespace": "team"}))
    done = client.post("/_/apps", data={**form, "csrf_token": csrf_of(page.text)})
    assert done.status_code == 200 and "Disconnected Test App" in done.text and "No app is connected" in done.text
    assert call(client, tokens["access_token"], "list_pages", {}).status_code == 401
    assert refresh(client, client_id, tokens["refresh_token"]).json["error"] == "invalid_grant"


def test_an_app_approved_again_with_more_scopes_is_one_row(client):
    """Issue 22 #21: a step-up (the app asks again, for more) showed the app twice on /_/apps; it is
    one app, shown with everything it may now do and when it was last approved."""
    client_id, first = connect(client, scopes=["read"], namespaces=["team"])
    verifier, challenge = pkce()
    got = redirect_params(approve(client, authorize_url(client_id, REDIRECT, challenge), ["read", "write"], ["notes"]))
    second = exchange(client, client_id, got["code"], verifier).json
    assert first["scope"] == "read" and second["scope"] == "read write"
    page = client.get("/_/apps").text
    assert page.count('<section class="app">') == 1 and page.count("<tr><td>") == 1
    assert "<tr><td>read write</td><td>notes, team</td>" in page
    other_id, _ = connect(client)  # another app: its own row
    page = client.get("/_/apps").text
    assert page.count('<section class="app">') == 2 and page.count("<tr><td>") == 2
    done = client.post("/_/apps", data={"client_id": client_id, "csrf_token": csrf_of(page)})
    assert "Disconnected Test App" in done.text and done.text.count('<section class="app">') == 1  # both grants of the first app
    assert other_id in done.text and client_id not in done.text


def test_apps_page_needs_a_signed_in_person(client):
    assert client.get("/_/apps").headers["Location"] == "/_/login?next=/_/apps"


# --- settings -----------------------------------------------------------------------------------


def test_bad_settings_are_named(tmp_path):
    with pytest.raises(StartupError) as err:
        make_app(tmp_path, access_token_second=60, code_seconds=-1)
    assert "PLUGIN_CONFIG.oauth.access_token_second: unknown setting" in str(err.value)
    assert "PLUGIN_CONFIG.oauth.code_seconds: expected a positive int, got -1" in str(err.value)


@pytest.mark.redis
def test_with_redis_two_hosts_share_clients_grants_and_revocation(tmp_path):
    """Two hosts (two instance folders) on one real Redis: a client registered and a token issued
    on one works on the other, and a disconnect on either is refused by both at once."""
    from hostcore.testing import redis_server

    with redis_server() as redis:
        apps = []
        for name in ("a", "b"):
            config = {"PLUGINS": ["fs", "tokens", "oauth"], "STORAGE": "fs", "REDIS_URL": redis.url}
            apps.append(create_app(config, instance_path=tmp_path / name, plugins=[people]))
        one, two = (app.test_client() for app in apps)
        client_id, tokens = connect(one)
        assert ok(call(two, tokens["access_token"], "list_namespaces", {}))
        assert refresh(two, client_id, tokens["refresh_token"]).status_code == 200  # rotated on b ...
        assert refresh(one, client_id, tokens["refresh_token"]).json["error"] == "invalid_grant"  # ... a replay on a
        other, tokens = connect(two)
        assert ok(call(one, tokens["access_token"], "list_namespaces", {}))
        done = two.post("/_/apps", data={"client_id": other, "csrf_token": csrf_of(two.get("/_/apps").text)})
        assert "Disconnected" in done.text
        assert call(one, tokens["access_token"], "list_namespaces", {}).status_code == 401
        assert not (tmp_path / "a" / "shared.sqlite").exists()
        for app in apps:
            app.extensions["hostcore"].close()
