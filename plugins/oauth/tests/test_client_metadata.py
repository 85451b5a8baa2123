"""Client ID metadata documents: a client_id that is an https URL is fetched (safely) and its
document names the app, its redirect URIs and where it lives; every unsafe or broken one is a
clear refusal and nothing is granted."""

from __future__ import annotations

import ipaddress
import json

import pytest
from docserver import DocServer
from hostcore_oauth.fetch import Refused, address_refused, cache_seconds, fetch_json
from oauth_testing import people
from oauthflow import approve, authorize_url, call, exchange, pkce, redirect_params

from hostcore import create_app

REDIRECT = "http://127.0.0.1:33418/callback"


@pytest.fixture
def docs():
    server = DocServer()
    yield server
    server.close()


def make_app(tmp_path, allow_loopback=True, **oauth):
    config = {"PLUGINS": ["fs", "oauth"], "STORAGE": "fs",
              "PLUGIN_CONFIG": {"oauth": {"metadata_allow_loopback": allow_loopback, **oauth}}}  # fmt: skip
    return create_app(config, instance_path=tmp_path / "instance", plugins=[people])


@pytest.fixture
def client(tmp_path):
    app = make_app(tmp_path)
    client = app.test_client()
    client.get("/_/test/sign-in/ann")
    yield client
    app.extensions["hostcore"].close()


def refused(client, client_id, words):
    answer = client.get(authorize_url(client_id, REDIRECT, pkce()[1]))
    assert answer.status_code == 400 and "Location" not in answer.headers, answer.text
    assert "invalid_client" in answer.text and words in answer.text, answer.text
    return answer


def test_a_metadata_document_client_connects_and_the_page_names_its_hosts(client, docs):
    client_id = docs.publish("/client.json", [REDIRECT], name="Doc App")
    verifier, challenge = pkce()
    url = authorize_url(client_id, REDIRECT, challenge)
    page = client.get(url).text
    assert "Doc App" in page and "127.0.0.1:33418" in page and "Described by a document at" in page
    got = redirect_params(approve(client, url))
    tokens = exchange(client, client_id, got["code"], verifier, REDIRECT).json
    assert call(client, tokens["access_token"], "list_namespaces", {}).status_code == 200
    assert "Doc App" in client.get("/_/apps").text
    # cached per its Cache-Control (max-age=60): the next authorization does not fetch it again
    client.get(url)
    assert docs.hits["/client.json"] == 1


def test_a_document_with_no_store_is_fetched_each_time(client, docs):
    client_id = docs.publish("/fresh.json", [REDIRECT])
    status, headers, body = docs.routes["/fresh.json"]
    docs.routes["/fresh.json"] = (status, {**headers, "Cache-Control": "no-store"}, body)
    client.get(authorize_url(client_id, REDIRECT, pkce()[1]))
    client.get(authorize_url(client_id, REDIRECT, pkce()[1]))
    assert docs.hits["/fresh.json"] == 2


def test_a_redirect_uri_the_document_does_not_list_is_refused(client, docs):
    client_id = docs.publish("/client.json", [REDIRECT])
    answer = client.get(authorize_url(client_id, "http://127.0.0.1:1/other", pkce()[1]))
    assert answer.status_code == 400 and "Location" not in answer.headers


def test_private_loopback_and_link_local_addresses_are_refused(client, tmp_path):
    refused(client, "https://10.1.2.3/client.json", "10.1.2.3, a private address")
    refused(client, "https://169.254.169.254/latest/meta-data", "a link-local address")
    refused(client, "https://[fd00::1]/client.json", "a private address")
    refused(client, "http://example.com/client.json", "is not an https URL")
    strict = make_app(tmp_path / "strict", allow_loopback=False).test_client()
    strict.get("/_/test/sign-in/ann")
    # a name is resolved and every address checked: localhost is loopback
    refused(strict, "https://localhost:9/client.json", "127.0.0.1, a loopback address")
    refused(strict, "http://127.0.0.1:9/client.json", "is not an https URL")


def test_a_redirect_to_a_private_address_is_refused(client, docs):
    docs.routes["/hop.json"] = (302, {"Location": "https://192.168.1.1/client.json"}, b"")
    refused(client, docs.base + "/hop.json", "192.168.1.1, a private address")
    docs.routes["/hop2.json"] = (307, {"Location": "http://169.254.169.254/"}, b"")
    refused(client, docs.base + "/hop2.json", "not an https URL")


def test_an_oversized_a_foreign_or_a_broken_document_is_refused(client, docs):
    client_id = docs.publish("/big.json", [REDIRECT], padding="x" * 6000)
    refused(client, client_id, "over the limit of 5120 bytes")
    docs.routes["/other.json"] = (
        200,
        {},
        json.dumps({"client_id": "https://elsewhere.example/c", "redirect_uris": [REDIRECT]}).encode(),
    )
    refused(client, docs.base + "/other.json", "client_id must be its own URL")
    docs.routes["/broken.json"] = (200, {}, b"{not json")
    refused(client, docs.base + "/broken.json", "is not JSON")
    refused(client, docs.base + "/missing.json", "answered HTTP 404")
    secret = docs.publish("/secret.json", [REDIRECT], token_endpoint_auth_method="client_secret_basic")
    refused(client, secret, "a metadata document client is public")


def test_address_rules_and_cache_control():
    assert address_refused(ipaddress.ip_address("93.184.216.34"), False) is None
    assert address_refused(ipaddress.ip_address("::ffff:10.0.0.1"), False) == "a private address"
    assert address_refused(ipaddress.ip_address("127.0.0.1"), True) is None
    assert address_refused(ipaddress.ip_address("0.0.0.0"), True) is not None
    assert cache_seconds("public, max-age=120") == 120
    assert cache_seconds("max-age=999999999") == 24 * 3600
    assert cache_seconds("no-store") == 0 and cache_seconds("") == 300


def test_the_fetch_has_a_time_limit():
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts, never answers
    try:
        with pytest.raises(Refused, match=r"took longer than 0\.5 seconds"):
            fetch_json(f"http://127.0.0.1:{silent.getsockname()[1]}/c.json", allow_loopback=True, max_bytes=5120, timeout=0.5)
    finally:
        silent.close()


@pytest.mark.parametrize(
    "uris, words",
    [
        (["http://evil.example/cb"], "redirect_uris[0]: http://evil.example/cb uses http to a host that is not"),
        ([REDIRECT, "javascript://%0aalert(1)"], "redirect_uris[1]: javascript://%0aalert(1) uses the javascript: scheme"),
        ([REDIRECT] * 11, "redirect_uris: 11 given; at most 10"),
    ],
)
def test_a_document_with_redirect_uris_a_browser_must_not_be_sent_to_is_refused(client, docs, uris, words):
    """The same rules as for a registered client (see test_registration.py)."""
    refused(client, docs.publish("/unsafe.json", uris), words)
