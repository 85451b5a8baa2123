"""What an OAuth access token adds to each MCP call, beside a personal access token.

    python bench/oauth_validation.py [--calls 2000] [--redis]

Builds one app on a fresh instance (fs storage, the tokens and oauth plugins, and a stand-in
sign-in plugin answering ``find_person``) and gets two tokens for the same rights: a personal
access token (``hc_...``, the tokens plugin) and an OAuth access token (``hco_...``) issued by the
oauth plugin's token endpoint after registration (RFC 7591), consent and a PKCE code exchange.
With ``--redis`` shared state lives in a real ``redis-server`` on loopback (REDIS_URL) instead of
``shared.sqlite``.

Then, in the same run and in alternating rounds of ten, each going first in every other round (so load from elsewhere
falls on both alike):

- the ``authenticate`` hook alone for each token (what validation costs: the tokens plugin's
  SQLite look-up; the oauth plugin's access record, its grant and ``find_person``), and
- a whole raw 2026-07-28 ``tools/call read_page`` POST to /_/mcp through Flask's test client
  (in-process, so the network does not drown the difference; the OAuth call also has its body
  read for the scope check, see ``hostcore.mcp.transport.step_up``).

Prints medians and the added cost of OAuth per call; it never asserts timings (aim: < 0.2 ms).
"""

from __future__ import annotations

import argparse
import base64
import hashlib
import json
import re
import secrets
import statistics
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

from flask import redirect
from timing import timed  # bench/timing.py beside this script

from hostcore import SYSTEM, Principal, create_app, hookimpl, sign_in
from hostcore.testing import redis_server

META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "bench", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
REDIRECT = "http://127.0.0.1:33418/callback"


class People:
    """One person, ``bench``, who may write everywhere; ``/_/bench/sign-in`` signs them in."""

    @hookimpl
    def find_person(self, name: str, host: Any) -> Principal | None:
        return Principal("bench", frozenset({"write"})) if name == "bench" else None

    @hookimpl
    def register_routes(self, app: Any, host: Any) -> None:
        @app.route("/_/bench/sign-in")
        def bench_sign_in() -> Any:
            sign_in("bench")
            return redirect("/")


def oauth_token(client: Any) -> str:
    """An access token through the real endpoints: DCR, consent, PKCE code exchange."""
    registered = client.post("/_/oauth/register", json={"client_name": "Bench", "redirect_uris": [REDIRECT],
                                                         "token_endpoint_auth_method": "none"}).json  # fmt: skip
    client.get("/_/bench/sign-in")
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    url = "/_/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": registered["client_id"], "redirect_uri": REDIRECT, "state": "s",
        "scope": "read write", "code_challenge": challenge, "code_challenge_method": "S256",
    })  # fmt: skip
    csrf = re.search(r'name="csrf_token" value="([^"]+)"', client.get(url).text).group(1)
    form = {"csrf_token": csrf, "decision": "approve", "grant_scope": ["read", "write"], "grant_namespace": ["*"]}
    code = parse_qs(urlsplit(client.post(url, data=form).headers["Location"]).query)["code"][0]
    answer = client.post("/_/oauth/token", data={"grant_type": "authorization_code", "client_id": registered["client_id"],
                                                 "code": code, "redirect_uri": REDIRECT, "code_verifier": verifier})  # fmt: skip
    return str(answer.json["access_token"])


def call(client: Any, token: str) -> None:
    headers = {"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream",
               "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "read_page"}  # fmt: skip
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "read_page", "arguments": {"slug": "notes/bench"}, "_meta": META}}  # fmt: skip
    answer = client.post("/_/mcp", data=json.dumps(body), headers=headers, content_type="application/json")
    if answer.status_code != 200 or answer.json["result"].get("isError"):
        raise SystemExit(f"read_page failed: {answer.status_code} {answer.get_data(as_text=True)[:300]}")


class Bearer:
    """Just what the ``authenticate`` hook reads of a request."""

    def __init__(self, token: str) -> None:
        self.headers = {"Authorization": f"Bearer {token}"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--redis", action="store_true", help="shared state in a real redis-server (REDIS_URL)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-oauth-") as tmp, ExitStack() as stack:
        redis_url = stack.enter_context(redis_server()).url if args.redis else ""
        config = {"PLUGINS": ["fs", "tokens", "oauth"], "STORAGE": "fs", "REDIS_URL": redis_url,
                  "RATE_LIMITS": {"requests": "off", "writes": "off"}}  # fmt: skip
        app = create_app(config, instance_path=Path(tmp) / "instance", plugins=[People()])
        host = app.extensions["hostcore"]
        host.wiki(SYSTEM).save_namespace("notes", title="Notes")
        host.wiki(SYSTEM).save_page("notes/bench", body="Some text of the page.\n" * 200)
        from hostcore_tokens import store  # the tokens plugin's own store, as its CLI uses it

        tokens = {"personal token": store(host).create("bench", ["write"]), "OAuth token": oauth_token(app.test_client())}
        client = app.test_client()
        for token in tokens.values():
            call(client, token)  # warm up
        hook = {name: (lambda t=t: host.pm.hook.authenticate(request=Bearer(t), host=host)) for name, t in tokens.items()}
        mcp = {name: (lambda t=t: call(client, t)) for name, t in tokens.items()}
        validation: dict[str, list[float]] = {name: [] for name in tokens}
        calls: dict[str, list[float]] = {name: [] for name in tokens}
        rounds = max(1, args.calls // 10)
        for turn in range(rounds):
            for name in list(tokens)[:: 1 if turn % 2 else -1]:  # each goes first in every other round
                validation[name] += timed(hook[name], 10)
                calls[name] += timed(mcp[name], 10)
        host.close()
    store_name = "Redis" if args.redis else "SQLite (shared.sqlite)"
    print(f"OAuth token validation beside a personal access token; shared state in {store_name}; "
          f"{rounds * 10} of each, medians")  # fmt: skip
    for title, samples in (("authenticate hook alone", validation), ("tools/call read_page via /_/mcp", calls)):
        personal, oauth = (statistics.median(samples[name]) for name in tokens)
        print(f"  {title:34s} personal {personal:7.3f} ms   OAuth {oauth:7.3f} ms   added {oauth - personal:+7.3f} ms "
              f"({oauth / personal:4.2f}x)")  # fmt: skip


if __name__ == "__main__":
    main()
