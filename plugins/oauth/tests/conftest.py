"""Shared by the OAuth tests: the stand-in sign-in plugin (``oauth_testing.people``) is imported
from this folder; ``served`` is one real ``hostcore serve`` (gunicorn, 2 workers) on an instance made
by ``hostcore init`` with an account ``ann`` (write, every namespace) made by ``hostcore user
create``, and a loopback https server for client ID metadata documents; ``browser`` is a headless
Chromium (hostcore.testing.browser)."""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hostcore import testing
from hostcore.testing.browser import browser  # noqa: F401

HERE = Path(__file__).parent
if str(HERE) not in sys.path:
    sys.path.insert(0, str(HERE))

from docserver import DocServer  # noqa: E402  (beside this file)
from oauthflow import ACCESS_SECONDS, PASSWORD, Served  # noqa: E402


@pytest.fixture(scope="session")
def served(tmp_path_factory):
    root = tmp_path_factory.mktemp("oauth-e2e")
    instance = root / "instance"
    init = testing.cli(instance, "init")
    admin = re.search(r"hc_[A-Za-z0-9_-]+", init.stdout).group(0)
    plugins = tomllib.loads((instance / "hostcore.toml").read_text())["PLUGINS"]
    assert "oauth" in plugins and "accounts" in plugins, "hostcore init enables accounts and oauth"
    made = subprocess.run([*testing.hostcore_cmd(), "--instance", str(instance), "user", "create", "ann", "--scope", "write",
                           "--password-stdin"], input=PASSWORD + "\n", capture_output=True, text=True, env=testing.hostcore_env())  # fmt: skip
    assert made.returncode == 0, made.stderr
    docs = DocServer(tls_dir=root)
    env = {
        "HOSTCORE_PLUGIN_CONFIG__OAUTH__METADATA_ALLOW_LOOPBACK": "true",
        "HOSTCORE_PLUGIN_CONFIG__OAUTH__ACCESS_TOKEN_SECONDS": str(ACCESS_SECONDS),
        "SSL_CERT_FILE": str(docs.ca_file),  # the loopback document server's certificate
    }
    proc, base, _, _ = testing.start_server(instance, 2, env=env)
    try:
        anyio.run(_seed, base + "/_/mcp", admin)
        yield Served(base, docs, instance)
    finally:
        testing.stop_process_group(proc)
        docs.close()


async def _seed(url: str, admin: str) -> None:
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {admin}"}) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:  # type: ignore[arg-type]
            made = await client.call_tool("save_namespace", {"name": "team", "title": "Team"})
            assert not made.is_error, made.content  # notes/index is the page `hostcore init` made
