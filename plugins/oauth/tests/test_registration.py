"""Open client registration (RFC 7591) cannot fill the disk: every field is bounded, registrations
are rate-limited per client address, a client that never completes an authorization is gone after
a day (pending_client_seconds), and redirect URIs are https, loopback http or an app's own scheme.
The clients people use still register."""

from __future__ import annotations

import io
import sqlite3

import pytest
from hostcore_oauth.registration import MAX_BYTES, MAX_REDIRECT_URIS, MAX_TEXT, MAX_URI
from oauth_testing import people
from oauthflow import authorize_url, connect, pkce, refresh
from test_oauth import make_app

from hostcore import create_app
from hostcore.testing import FakeClock

VALID = "https://app.example/cb"


@pytest.fixture
def client(tmp_path):
    """A test client of a fresh app (``client.application``)."""
    app = make_app(tmp_path)
    yield app.test_client()
    app.extensions["hostcore"].close()


def post(client, metadata, address="203.0.113.7", **kwargs):
    return client.post("/_/oauth/register", json=metadata, environ_base={"REMOTE_ADDR": address}, **kwargs)


def stored_clients(app) -> int:
    """Registered clients in the shared state file, expired ones included (what the disk holds)."""
    path = app.extensions["hostcore"].instance_path / "shared.sqlite"
    with sqlite3.connect(path) as db:
        return db.execute("SELECT count(*) FROM records WHERE kind = 'oauth-client'").fetchone()[0]


@pytest.mark.parametrize(
    "uris",
    [
        ["https://claude.ai/api/mcp/auth_callback"],  # Claude
        ["https://chatgpt.com/connector_platform_oauth_redirect"],  # ChatGPT
        ["cursor://anysphere.cursor-retrieval/oauth/user-abc123/callback"],  # Cursor (its own scheme)
        ["http://localhost:53682/callback"],  # Claude Code (a local server)
        ["http://127.0.0.1:33418/", "https://vscode.dev/redirect"],  # VS Code
        ["http://localhost:6274/oauth/callback/debug"],  # MCP Inspector
        ["http://[::1]:8080/cb", "com.example.app:/oauth2redirect"],  # IPv6 loopback; RFC 8252's reverse-domain scheme
    ],
    ids=["claude", "chatgpt", "cursor", "claude-code", "vscode", "inspector", "native"],
)
def test_the_clients_people_use_register(client, uris):
    answer = post(client, {"client_name": "App", "redirect_uris": uris, "token_endpoint_auth_method": "none",
                           "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"]})  # fmt: skip
    assert answer.status_code == 201, answer.text
    assert answer.json["redirect_uris"] == uris and answer.json["client_id"].startswith("hcc_")


@pytest.mark.parametrize(
    "uris, at, words",
    [
        (["http://evil.example/cb"], 0, "uses http to a host that is not this machine's loopback"),
        ([VALID, "javascript://%0aalert(1)"], 1, "uses the javascript: scheme"),
        (["data:text/html,<script>alert(1)</script>"], 0, "uses the data: scheme"),
        (["file:///etc/passwd"], 0, "uses the file: scheme"),
        (["vbscript:msgbox(1)"], 0, "uses the vbscript: scheme"),
        (["http://127.0.0.1.evil.example/cb"], 0, "not this machine's loopback"),
        (["https://claude.ai@evil.example/cb"], 0, "must not hold a user name before the host"),
        ([VALID + "#done"], 0, "must not hold a fragment"),
        (["/relative/cb"], 0, "is not an absolute URL"),
        (["https:///cb"], 0, "names no host"),
        (["https://app.example/c b"], 0, "holds a space or a control character"),
        ([VALID, 'https://app.example/"quoted"\\'], 1, "%22quoted%22%5C holds a character a URL carries only percent-encoded"),
    ],
)
def test_redirect_uris_a_browser_must_not_be_sent_to_are_refused(client, uris, at, words):
    answer = post(client, {"client_name": "App", "redirect_uris": uris, "token_endpoint_auth_method": "none"})
    assert answer.status_code == 400 and answer.json["error"] == "invalid_redirect_uri", answer.text
    assert answer.json["error_description"].startswith(f"redirect_uris[{at}]: ") and words in answer.json["error_description"]
    assert stored_clients(client.application) == 0


@pytest.mark.parametrize(
    "metadata, error, words",
    [
        ({"client_name": "x" * 3_000_000}, "invalid_client_metadata", "the registration is 3000"),
        ({"client_name": "x" * (MAX_TEXT + 1)}, "invalid_client_metadata", f"client_name: {MAX_TEXT + 1} characters; at most {MAX_TEXT}"),
        ({"client_name": ["App"]}, "invalid_client_metadata", "client_name: give a string"),
        ({"redirect_uris": [f"https://app.example/{i}" for i in range(5000)]}, "invalid_client_metadata", "the registration is"),
        ({"redirect_uris": [f"https://app.example/{i}" for i in range(MAX_REDIRECT_URIS + 1)]}, "invalid_redirect_uri",
         f"redirect_uris: {MAX_REDIRECT_URIS + 1} given; at most {MAX_REDIRECT_URIS}"),
        ({"redirect_uris": ["https://app.example/" + "a" * MAX_URI]}, "invalid_redirect_uri", f"at most {MAX_URI}"),
        ({"redirect_uris": []}, "invalid_redirect_uri", "redirect_uris: give a list of 1 to 10"),
        ({"client_uri": "https://app.example/" + "a" * MAX_URI}, "invalid_client_metadata", "client_uri: "),
        ({"contacts": [f"{i}@app.example" for i in range(11)]}, "invalid_client_metadata", "contacts: give a list of at most 10"),
        ({"contacts": ["x" * (MAX_TEXT + 1)]}, "invalid_client_metadata", "contacts[0]: "),
        ({"software_version": "1" * (MAX_TEXT + 1)}, "invalid_client_metadata", "software_version: "),
        ({"jwks": {"keys": [{"n": "x" * 10_000}]}}, "invalid_client_metadata", "jwks: at most"),
    ],
    ids=["3mb-name", "long-name", "name-not-text", "5000-uris", "11-uris", "long-uri", "no-uris", "long-client-uri",
         "many-contacts", "long-contact", "long-version", "large-jwks"],
)
def test_every_field_is_bounded_and_the_refusal_names_it(client, metadata, error, words):
    answer = post(client, {"client_name": "App", "redirect_uris": [VALID], "token_endpoint_auth_method": "none", **metadata})
    assert answer.status_code == 400 and answer.json["error"] == error, answer.text[:300]
    assert words in answer.json["error_description"], answer.json
    assert stored_clients(client.application) == 0


def test_a_registration_that_is_not_a_json_object_is_refused_as_such(client):
    answer = post(client, [{"redirect_uris": [VALID]}])
    assert answer.status_code == 400 and answer.json["error"] == "invalid_client_metadata"
    assert "must be a JSON object" in answer.json["error_description"]
    chunked = client.post("/_/oauth/register", input_stream=io.BytesIO(b'{"client_name": "' + b"x" * MAX_BYTES + b'"}'),
                          content_type="application/json", headers={"Transfer-Encoding": "chunked"},
                          environ_overrides={"wsgi.input_terminated": True})  # fmt: skip
    assert chunked.status_code == 400 and f"not JSON of at most {MAX_BYTES} bytes" in chunked.json["error_description"]
    form = client.post("/_/oauth/register", data={"redirect_uris": VALID})
    assert form.status_code == 400 and "Content-Type: application/json" in form.json["error_description"]
    assert stored_clients(client.application) == 0


def test_registrations_are_rate_limited_per_address(tmp_path):
    config = {"PLUGINS": ["fs", "tokens", "oauth"], "STORAGE": "fs", "RATE_LIMITS": {"registrations": "3/hour"}}
    app = create_app(config, instance_path=tmp_path / "instance", plugins=[people])
    client = app.test_client()
    metadata = {"client_name": "App", "redirect_uris": [VALID], "token_endpoint_auth_method": "none"}
    assert [post(client, metadata, "198.51.100.1").status_code for _ in range(3)] == [201, 201, 201]
    over = post(client, metadata, "198.51.100.1")
    assert over.status_code == 429 and over.json["error"] == "temporarily_unavailable"
    assert over.json["error_description"].startswith("too many client registrations from 198.51.100.1: at most 3 per hour")
    assert 3590 <= int(over.headers["Retry-After"]) <= 3600
    assert post(client, metadata, "198.51.100.2").status_code == 201  # another address
    # an IPv6 address counts by its /64, which one machine or home usually holds whole
    assert [post(client, metadata, f"2001:db8:1:2::{i}").status_code for i in range(1, 5)] == [201, 201, 201, 429]
    assert post(client, metadata, "2001:db8:1:3::1").status_code == 201
    assert stored_clients(client.application) == 8  # nothing kept of a refused one
    app.extensions["hostcore"].close()


def test_a_client_that_never_completes_an_authorization_expires(tmp_path):
    """Registered and never used: gone after pending_client_seconds (a day by default), from the
    disk too; one that obtained a token lives as long as its grant."""
    app = make_app(tmp_path, pending_client_seconds=2)
    app.extensions["hostcore"].shared.clock = clock = FakeClock()
    client = app.test_client()
    unused = post(client, {"client_name": "Unused", "redirect_uris": [VALID], "token_endpoint_auth_method": "none"}).json
    used, tokens = connect(client)
    clock.advance(2.5)
    assert client.get(authorize_url(unused["client_id"], VALID, pkce()[1])).status_code == 400  # unknown client
    assert refresh(client, used, tokens["refresh_token"]).status_code == 200
    assert stored_clients(client.application) == 2  # expired, but its bytes are still in the file ...
    post(client, {"client_name": "Next", "redirect_uris": [VALID], "token_endpoint_auth_method": "none"})
    assert stored_clients(client.application) == 2  # ... until the next registration clears it: the used one and the new one
    app.extensions["hostcore"].close()
