"""Driving the authorization server over HTTP the way a client and a browser would (Flask test client)."""

from __future__ import annotations

import base64
import hashlib
import re
import secrets
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

ACCESS_SECONDS = 3
"""Access token lifetime of the served instance (short, so the clients refresh)."""
PASSWORD = "correct horse battery staple"
"""Password of ``ann``, the served instance's account."""


class Served:
    """The served instance (see conftest.py): base URL, MCP URL, document server, instance folder."""

    def __init__(self, base: str, docs: Any, instance: Any) -> None:
        self.base, self.docs, self.instance = base, docs, instance
        self.url = base + "/_/mcp"


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    return verifier, challenge


def authorize_url(client_id: str, redirect_uri: str, challenge: str | None, **extra: str) -> str:
    params = {"response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "state": "st-42",
              "scope": "read write", "resource": "http://127.0.0.1:8080/_/mcp"}  # fmt: skip
    if challenge is not None:
        params.update(code_challenge=challenge, code_challenge_method="S256")
    params.update(extra)
    return "/_/oauth/authorize?" + urlencode({k: v for k, v in params.items() if v is not None})


def csrf_of(html: str) -> str:
    return re.search(r'name="csrf_token" value="([^"]+)"', html).group(1)


def approve(client, url: str, scopes=("read", "write"), namespaces=("*",), decision="approve"):
    page = client.get(url)
    assert page.status_code == 200, page.text
    data = {
        "csrf_token": csrf_of(page.text),
        "decision": decision,
        "grant_scope": list(scopes),
        "grant_namespace": list(namespaces),
    }
    return client.post(url, data=data)


def redirect_params(response) -> dict[str, str]:
    assert response.status_code == 302, response.text
    return {k: v[0] for k, v in parse_qs(urlsplit(response.headers["Location"]).query).items()}


def register(client, redirect_uri="https://app.example/cb", **extra):
    answer = client.post("/_/oauth/register", json={"client_name": "Test App", "redirect_uris": [redirect_uri],
                                                     "token_endpoint_auth_method": "none", **extra})  # fmt: skip
    assert answer.status_code == 201, answer.text
    return answer.json


def exchange(client, client_id, code, verifier, redirect_uri="https://app.example/cb", **extra):
    data = {"grant_type": "authorization_code", "client_id": client_id, "code": code, "redirect_uri": redirect_uri,
            "code_verifier": verifier, "resource": "http://127.0.0.1:8080/_/mcp", **extra}  # fmt: skip
    return client.post("/_/oauth/token", data={k: v for k, v in data.items() if v is not None})


def refresh(client, client_id, token):
    return client.post("/_/oauth/token", data={"grant_type": "refresh_token", "client_id": client_id, "refresh_token": token})


def call(client, token, tool, arguments):
    return client.post("/_/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
                       headers={**MCP_HEADERS, "Authorization": f"Bearer {token}"})  # fmt: skip


def connect(client, person="ann", scopes=("read", "write"), namespaces=("*",), redirect_uri="https://app.example/cb"):
    """Register, sign in, approve, exchange: (client_id, token response)."""
    client_id = register(client, redirect_uri)["client_id"]
    client.get(f"/_/test/sign-in/{person}")
    verifier, challenge = pkce()
    got = redirect_params(approve(client, authorize_url(client_id, redirect_uri, challenge), scopes, namespaces))
    assert got["state"] == "st-42"
    answer = exchange(client, client_id, got["code"], verifier, redirect_uri)
    assert answer.status_code == 200, answer.text
    return client_id, answer.json
