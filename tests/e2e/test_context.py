"""gather_context and page_graph through a real ``hostcore serve`` and both official clients: the
TypeScript SDK's (which checks every result against the tool's output schema) and the Python SDK's
in both protocol modes; a token limited to its namespace sees nothing of the others."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from .test_assistants import CLIENTS, client_outcomes
from .test_clients import typescript_sdk  # noqa: F401  (the fixture)

pytestmark = pytest.mark.anyio


def namespace_with_links(server: Any, uid: str) -> tuple[str, str]:
    """A namespace of its own (name, read token limited to it): deploy -> nginx -> tls, ops -> deploy."""
    ns = "cx-" + hashlib.sha1(uid.encode()).hexdigest()[:12]
    token = server.create_token(f"{ns}-reader", ["read"], [ns])
    server.plant({f"{ns}/.namespace.yaml": "title: Context\n",
                  f"{ns}/deploy.md": f"---\ntitle: Deploy\n---\nDeploy the wiki behind nginx. [[{ns}/nginx]]\n",
                  f"{ns}/nginx.md": f"---\ntitle: Nginx\n---\nNginx passes requests on with proxy_pass. [[{ns}/tls]]\n",
                  f"{ns}/tls.md": "---\ntitle: TLS\n---\nCertificates renew every ninety days.\n",
                  f"{ns}/ops.md": f"---\ntitle: Ops\n---\nOn call, read [[{ns}/deploy]] first; nginx restarts are rare.\n"})  # fmt: skip
    return ns, token


def calls_for(ns: str) -> list[dict[str, Any]]:
    return [
        {"name": "gather_context", "arguments": {"goal": "nginx proxy_pass", "budget": 600}},
        {"name": "gather_context", "arguments": {"goal": "certificates", "budget": 2000, "start": [f"{ns}/deploy"]}},
        {"name": "gather_context", "arguments": {"goal": "deploy", "start": ["notes/index"]}},
        {"name": "gather_context", "arguments": {"goal": "deploy", "budget": 10}},
        {"name": "page_graph", "arguments": {"slug": f"{ns}/nginx", "depth": 2}},
        {"name": "page_graph", "arguments": {"slug": "notes/index"}},
    ]


def check_outcomes(ns: str, outcomes: list[dict[str, Any]]) -> None:
    words, started, foreign, small, graph, hidden = (o["result"] for o in outcomes)
    found = words["structuredContent"]
    assert found["items"][0]["slug"] == f"{ns}/nginx" and found["used"] <= 600
    assert {i["slug"].split("/")[0] for i in found["items"]} == {ns}  # nothing of another namespace
    items = {i["slug"]: i for i in started["structuredContent"]["items"]}
    assert items[f"{ns}/deploy"]["why"]["start"] is True and items[f"{ns}/nginx"]["why"]["linked"] == [f"{ns}/deploy"]
    assert items[f"{ns}/tls"]["why"]["words"] == ["certificates"]
    assert json.loads(foreign["content"][-1]["text"])["code"] == "forbidden"
    assert json.loads(small["content"][-1]["text"])["field"] == "budget"
    nodes = {n["slug"]: n["depth"] for n in graph["structuredContent"]["nodes"]}
    assert nodes == {f"{ns}/nginx": 0, f"{ns}/deploy": 1, f"{ns}/tls": 1, f"{ns}/ops": 2}
    assert {"from": f"{ns}/ops", "to": f"{ns}/deploy"} in graph["structuredContent"]["links"]
    assert json.loads(hidden["content"][-1]["text"])["code"] == "forbidden"


@pytest.mark.parametrize("client", CLIENTS)
async def test_gather_context_and_page_graph_through_each_client(server, typescript_sdk, client, uid):  # noqa: F811
    ns, token = namespace_with_links(server, uid)
    check_outcomes(ns, await client_outcomes(server, typescript_sdk, client, token, calls_for(ns)))


def pack_calls(ns: str) -> list[dict[str, Any]]:
    return [
        {"name": "list_context_packs", "arguments": {}},
        {"name": "find_context_packs", "arguments": {"intent": "renew the certificates"}},
        {"name": "load_context_pack", "arguments": {"slug": f"{ns}/packs/tls", "budget": 500}},
        {"name": "propose_context_pack",
         "arguments": {"namespace": ns, "name": "deploying", "title": "Deploying", "pages": [f"{ns}/deploy", f"{ns}/nginx"],
                       "reason": "asked for", "tasks": ["deploy the wiki"]}},
        {"name": "propose_context_pack",
         "arguments": {"namespace": ns, "name": "bad", "title": "Bad", "pages": [f"{ns}/nowhere"], "reason": "asked for"}},
        {"name": "load_context_pack", "arguments": {"slug": "notes/packs/any"}},
    ]  # fmt: skip


@pytest.mark.parametrize("client", CLIENTS)
async def test_context_packs_through_each_client(server, typescript_sdk, client, uid):  # noqa: F811
    """A pack is found, listed and loaded by a reader of its namespace; a proposal is a change
    request (nothing saved); a page that does not exist is named by field; another namespace's
    pack is refused."""
    ns, _ = namespace_with_links(server, uid)
    server.plant({f"{ns}/packs/tls.md": f"---\ntitle: Certificates\n---\nTasks: renew the certificates\n\n- [[{ns}/tls]]\n- [[{ns}/nginx]]\n"})
    token = server.create_token(f"{ns}-proposer", ["propose"], [ns])
    listed, found, loaded, proposed, bad, foreign = (
        o["result"] for o in await client_outcomes(server, typescript_sdk, client, token, pack_calls(ns))
    )
    assert [p["slug"] for p in listed["structuredContent"]["packs"]] == [f"{ns}/packs/tls"]
    assert found["structuredContent"]["packs"][0]["why"]["words"] == ["renew", "certificates"]
    items = loaded["structuredContent"]["items"]
    assert [i["slug"] for i in items] == [f"{ns}/tls", f"{ns}/nginx"] and loaded["structuredContent"]["used"] <= 500
    made = proposed["structuredContent"]
    assert made["slug"] == f"{ns}/packs/deploying" and made["proposed"].startswith("cr-") and "/_/review/" in made["review_url"]
    assert json.loads(bad["content"][-1]["text"])["field"] == "pages[0]"
    assert json.loads(foreign["content"][-1]["text"])["code"] == "forbidden"
