"""End to end: ``hostcore serve`` (gunicorn, 2 workers) on an instance made by ``hostcore init``
(which enables accounts and oauth), driven by the official clients' own OAuth support: the Python SDK's
OAuthClientProvider and the TypeScript SDK's. Each runs the whole flow, once registering through
a client ID metadata document (served over https by a loopback server) and once through DCR:
401, discovery, registration, PKCE, sign-in (an account made by ``hostcore user create``, signed
in on /_/login), consent, token, tool calls, step-up after insufficient_scope, refresh; then the
person disconnects the app on /_/apps and its tokens get 401.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
from oauthflow import ACCESS_SECONDS, PASSWORD, Served

from hostcore import testing

pytestmark = pytest.mark.serve

HERE = Path(__file__).resolve().parent
REDIRECT = "http://127.0.0.1:33418/callback"


class Browser:
    """The person's browser: signed in, it approves the consent page with the next scopes."""

    def __init__(self, base: str, consents: list[list[str]]) -> None:
        self.http = httpx2.AsyncClient(base_url=base)
        self.consents = consents
        self.codes: list[AuthorizationCodeResult] = []
        self.seen: list[dict[str, str]] = []

    async def sign_in(self, name: str = "ann") -> str:
        """Sign in on /_/login (the accounts plugin) and return the session cookie."""
        page = await self.http.get("/_/login")
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
        done = await self.http.post("/_/login", data={"csrf_token": csrf, "name": name, "password": PASSWORD, "next": "/_/apps"})
        assert done.status_code == 303 or done.status_code == 302, done.text
        return f"hostcore_session={self.http.cookies['hostcore_session']}"

    async def approve(self, url: str) -> None:
        asked = {k: v[0] for k, v in parse_qs(urlsplit(url).query).items()}
        self.seen.append(asked)
        page = await self.http.get(url)
        assert page.status_code == 200, page.text
        assert page.headers["X-Frame-Options"] == "DENY"
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
        form = {"csrf_token": csrf, "decision": "approve", "grant_scope": self.consents.pop(0), "grant_namespace": ["*"]}
        answer = await self.http.post(url, data=form)
        assert answer.status_code == 302, answer.text
        back = {k: v[0] for k, v in parse_qs(urlsplit(answer.headers["location"]).query).items()}
        assert back["state"] == asked["state"]
        self.codes.append(AuthorizationCodeResult(code=back["code"], state=back["state"]))

    async def __aenter__(self) -> Browser:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.http.aclose()

    async def callback(self) -> AuthorizationCodeResult:
        return self.codes.pop(0)

    async def disconnect(self, client_id: str) -> None:
        page = await self.http.get("/_/apps")
        assert client_id in page.text
        csrf = re.search(r'name="csrf_token" value="([^"]+)"', page.text).group(1)
        done = await self.http.post("/_/apps", data={"csrf_token": csrf, "client_id": client_id})
        assert done.status_code == 200 and "Disconnected" in done.text


class Storage:
    def __init__(self) -> None:
        self.tokens = self.client_info = None
        self.saved: list = []

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens) -> None:
        self.tokens = tokens
        self.saved.append(tokens)

    async def get_client_info(self):
        return self.client_info

    async def set_client_info(self, info) -> None:
        self.client_info = info


async def _after_disconnect(srv: Served, browser: Browser, client_id: str, access: str, refresh: str) -> None:
    await browser.disconnect(client_id)
    async with httpx2.AsyncClient() as http:
        answer = await http.post(srv.url, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                                 headers={"Authorization": f"Bearer {access}", "Accept": "application/json, text/event-stream",
                                          "MCP-Protocol-Version": "2025-11-25"})  # fmt: skip
        assert answer.status_code == 401 and 'error="invalid_token"' in answer.headers["WWW-Authenticate"]
        again = await http.post(srv.base + "/_/oauth/token", data={"grant_type": "refresh_token", "refresh_token": refresh,
                                                                   "client_id": client_id})  # fmt: skip
        assert again.status_code == 400 and again.json()["error"] == "invalid_grant"


@pytest.mark.parametrize(("registration", "mode"), [("metadata document", "2026-07-28"), ("dcr", "legacy")])
def test_python_sdk_oauth_flow(served, registration, mode):
    server = served

    async def flow(browser: Browser) -> None:
        await browser.sign_in()
        metadata_url = None
        if registration == "metadata document":
            metadata_url = server.docs.publish("/py-client.json", [REDIRECT], name="Python E2E")
        storage = Storage()
        provider = OAuthClientProvider(
            server_url=server.url,
            client_metadata=OAuthClientMetadata(
                client_name="Python E2E",
                redirect_uris=[REDIRECT],
                grant_types=["authorization_code", "refresh_token"],
                response_types=["code"],
                token_endpoint_auth_method="none",
            ),
            storage=storage,
            redirect_handler=browser.approve,
            callback_handler=browser.callback,
            client_metadata_url=metadata_url,
        )
        async with httpx2.AsyncClient(auth=provider, timeout=30) as http:
            async with Client(streamable_http_client(server.url, http_client=http), mode=mode) as client:  # type: ignore[arg-type]
                read = await client.call_tool("read_page", {"slug": "notes/index"})
                assert not read.is_error and storage.tokens.scope == "read"
                write = await client.call_tool("save_page", {"slug": f"notes/py-{mode}", "body": "from Python"})
                assert not write.is_error, write.content  # after a 403 insufficient_scope and a second consent
                assert storage.tokens.scope == "read write" and len(browser.seen) == 2
                await anyio.sleep(ACCESS_SECONDS + 0.5)
                before = storage.tokens.access_token
                assert not (await client.call_tool("read_page", {"slug": f"notes/py-{mode}"})).is_error
                assert storage.tokens.access_token != before  # refreshed
        first = browser.seen[0]
        assert first["code_challenge_method"] == "S256" and first["resource"] == server.url
        client_id = storage.client_info.client_id
        assert (client_id == metadata_url) if metadata_url else client_id.startswith("hcc_")
        await _after_disconnect(server, browser, client_id, storage.tokens.access_token, storage.tokens.refresh_token)

    async def run() -> None:
        async with Browser(server.base, [["read"], ["read", "write"]]) as browser:
            await flow(browser)

    anyio.run(run)


@pytest.fixture(scope="module")
def typescript_sdk() -> tuple[str, str]:
    return testing.typescript_sdk()


@pytest.mark.parametrize("registration", ["metadata document", "dcr"])
def test_typescript_sdk_oauth_flow(served, typescript_sdk, registration):
    server = served
    node, folder = typescript_sdk

    async def run() -> None:
        async with Browser(server.base, []) as browser:
            cookie = await browser.sign_in()
            job = {"url": server.url, "cookie": cookie, "redirectUrl": REDIRECT, "consents": [["read"], ["read", "write"]], "slug": f"notes/ts-{registration.replace(' ', '-')}",
                   "expirySeconds": ACCESS_SECONDS + 0.5}  # fmt: skip
            if registration == "metadata document":
                job["clientMetadataUrl"] = server.docs.publish("/ts-client.json", [REDIRECT], name="TS E2E")
            proc = await anyio.run_process([node, str(HERE / "ts_oauth.mjs")], input=json.dumps(job).encode(), check=False,
                                           env={**os.environ, "HOSTCORE_TS_SDK": folder})  # fmt: skip
            assert proc.returncode == 0, proc.stderr.decode()
            out = json.loads(proc.stdout)
            assert out["first"] == "unauthorized"
            assert not out["read"].get("isError") and not out["write"].get("isError"), out
            assert not out["afterExpiry"].get("isError") and out["refreshed"]
            authorizations = [e for e in out["log"] if e["event"] == "authorize"]
            assert len(authorizations) == 2
            assert all(a["challenge_method"] == "S256" and a["resource"] == server.url for a in authorizations)
            assert authorizations[1]["scope"].split() == ["read", "write"]
            if registration == "metadata document":
                assert out["client_id"] == job["clientMetadataUrl"]
            else:
                assert out["client_id"].startswith("hcc_")
            tokens = out["tokens"]
            await _after_disconnect(server, browser, out["client_id"], tokens["access_token"], tokens["refresh_token"])

    anyio.run(run)
