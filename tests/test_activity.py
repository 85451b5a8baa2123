"""The activity log: every MCP call (reads and refusals too) and every web action is recorded with
who, which client, which session, what, which pages, the outcome and the time it took, never
arguments or page text; readers see what the service allows; it is bounded, cheap to record,
written on close, and shared by every host through Redis."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

import hostcore_tokens
from hostcore import SYSTEM, create_app
from hostcore.errors import Forbidden, ValidationError
from hostcore.host.activity import ActivityLog, SqliteActivityStore
from hostcore.seams.activity import Activity, ActivityQuery
from hostcore.testing import redis_server

from .conftest import principal

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
SECRET = "the-body-text-never-logged"


@pytest.fixture
def app(tmp_path):
    app = create_app({"PLUGINS": ["git", "tokens", "web"], "STORAGE": "git"}, instance_path=tmp_path / "instance")
    wiki = app.extensions["hostcore"].wiki(SYSTEM)
    for name in ("notes", "team"):
        wiki.save_namespace(name)
    wiki.save_page("team/plan", body="# plan\n")
    yield app
    app.extensions["hostcore"].close()


def rpc(client, token, method, params, headers=None, rid=2):
    body = {"jsonrpc": "2.0", "id": rid, "method": method, "params": params}
    response = client.post("/_/mcp", json=body, headers={**ACCEPT, "Authorization": f"Bearer {token}", **(headers or {})})
    assert response.status_code == 200, response.data
    text = response.get_data(as_text=True)
    return response, json.loads(text.split("data: ", 1)[1] if text.startswith("event:") else text)


def call(client, token, name, arguments, headers=None):
    return rpc(client, token, "tools/call", {"name": name, "arguments": arguments}, headers)[1]["result"]


def legacy_session(client, token, name="Claude Desktop", version="0.9.3"):
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": name, "version": version}}
    response, _ = rpc(client, token, "initialize", init, {"User-Agent": "node"}, rid=1)
    return {"MCP-Protocol-Version": "2025-11-25", "User-Agent": "node", "Mcp-Session-Id": response.headers["Mcp-Session-Id"]}


def test_every_call_is_recorded_with_its_client_session_slugs_and_outcome_never_its_text(client, host):
    tokens = hostcore_tokens.store(host)
    writer = tokens.create("writer", ["write"])
    team = tokens.create("team-reader", ["read"], ["team"])
    headers = legacy_session(client, writer)
    assert not call(client, writer, "save_page", {"slug": "notes/a", "body": SECRET}, headers).get("isError")
    assert call(client, writer, "read_page", {"slug": "notes/missing"}, headers)["isError"]
    assert call(client, team, "read_page", {"slug": "notes/a"})["isError"]  # forbidden: a refusal is recorded too
    assert call(client, team, "save_page", {"slug": "team/plan", "body": "x"})["isError"]  # insufficient_scope
    assert call(client, writer, "no_such_tool", {})["isError"]

    records = host.wiki(SYSTEM).read_activity(limit=10)["records"]
    mine = [(r["principal"], r["tool"], r["slugs"], r["outcome"]) for r in reversed(records)]
    assert mine == [
        ("writer", "save_page", ["notes/a"], "ok"),
        ("writer", "read_page", ["notes/missing"], "not_found"),
        ("team-reader", "read_page", ["notes/a"], "forbidden"),
        ("team-reader", "save_page", [], "insufficient_scope"),
        ("writer", "no_such_tool", [], "not_found"),
    ]
    first = records[-1]
    assert first["client"] == "Claude Desktop 0.9.3" and first["auth"] == "token"
    assert first["session"] == headers["Mcp-Session-Id"].split(".")[1] and first["ms"] > 0
    assert first["time"].endswith("Z") and records[0]["id"] and records[2]["session"] is None and first["grant"] is None
    stored = (host.instance_path / "activity.sqlite").read_bytes()
    assert SECRET.encode() not in stored and writer.encode() not in stored


def test_others_read_only_their_own_activity_and_only_slugs_they_may_see(client, host):
    tokens = hostcore_tokens.store(host)
    writer, team = tokens.create("writer", ["write"]), tokens.create("team-admin", ["admin"], ["team"])
    call(client, writer, "read_page", {"slug": "team/plan"})
    call(client, team, "read_page", {"slug": "team/plan"})
    call(client, team, "read_page", {"slug": "notes/secret-plan"})  # refused, and its slug stays out of team's view

    own = call(client, team, "read_activity", {})["structuredContent"]["records"]
    assert {r["principal"] for r in own} == {"team-admin"}  # an admin of some namespaces is not the wiki's admin
    assert [r["slugs"] for r in own if r["tool"] == "read_page"] == [[], ["team/plan"]]
    refused = call(client, team, "read_activity", {"principal": "writer"})
    err = json.loads(refused["content"][-1]["text"])
    assert err["code"] == "forbidden" and err["field"] == "principal"

    everyone = host.wiki(principal("admin")).read_activity(tool="read_page")["records"]
    assert {r["principal"] for r in everyone} == {"writer", "team-admin"}
    assert ["notes/secret-plan"] in [r["slugs"] for r in everyone]
    with pytest.raises(Forbidden):
        host.wiki(principal("read", name="writer")).read_activity(principal="team-admin")


def test_a_request_refused_over_the_requests_limit_is_recorded(tmp_path):
    app = create_app({"PLUGINS": ["fs", "tokens"], "RATE_LIMITS": {"requests": "2/minute"}}, instance_path=tmp_path / "i")
    host = app.extensions["hostcore"]
    try:
        token = hostcore_tokens.store(host).create("busy", ["read"])
        client = app.test_client()
        modern = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "list_pages", "User-Agent": "busy-bot/1"}
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "list_pages", "arguments": {}}}
        statuses = [client.post("/_/mcp", json=body, headers={**ACCEPT, **modern, "Authorization": f"Bearer {token}"}).status_code
                    for _ in range(3)]  # fmt: skip
        assert statuses[-1] == 429
        refused = host.wiki(SYSTEM).read_activity(principal="busy")["records"][0]
        assert (refused["tool"], refused["outcome"], refused["client"]) == ("list_pages", "rate_limited", "busy-bot/1")
    finally:
        host.close()


def test_an_oauth_grants_calls_carry_its_id_for_who_reads_them(host):
    host.activity.record(Activity(time.time(), "alice", "oauth", "Claude 1.0", "", "save_page", ("notes/a",), "ok", 2.0, grant="g-123"))
    record = host.wiki(SYSTEM).read_activity(principal="alice")["records"][0]
    assert (record["auth"], record["grant"]) == ("oauth", "g-123")
    assert host.wiki(principal("read", name="alice")).read_activity()["records"][0]["grant"] == "g-123"


def test_filters_and_paging(client, host):
    writer = hostcore_tokens.store(host).create("writer", ["write"])
    for n in range(5):
        call(client, writer, "read_page", {"slug": f"notes/p{n}"})
    wiki = host.wiki(SYSTEM)
    first = wiki.read_activity(tool="read_page", limit=2)
    assert [r["slugs"] for r in first["records"]] == [["notes/p4"], ["notes/p3"]] and first["more"]
    rest = wiki.read_activity(tool="read_page", limit=10, cursor=first["next_cursor"])
    assert [r["slugs"][0] for r in rest["records"]] == ["notes/p2", "notes/p1", "notes/p0"] and not rest["more"]
    assert len(wiki.read_activity(limit=200)["records"]) == 5
    assert wiki.read_activity(principal="nobody")["records"] == []
    assert len(wiki.read_activity(since="2000-01-01T00:00:00Z", tool="read_page")["records"]) == 5
    assert wiki.read_activity(since="2999-01-01T00:00:00Z")["records"] == []
    assert wiki.read_activity(client="python-httpx", tool="read_page")["records"] == []
    with pytest.raises(ValidationError) as bad:
        wiki.read_activity(since="yesterday")
    assert bad.value.field == "since"
    with pytest.raises(ValidationError) as bad:
        wiki.read_activity(cursor="'; DROP TABLE")
    assert bad.value.field == "cursor"


def test_agent_sessions_group_calls_by_session_or_by_principal_and_client(client, host):
    writer = hostcore_tokens.store(host).create("writer", ["write"])
    headers = legacy_session(client, writer)
    for _ in range(3):
        call(client, writer, "list_pages", {}, headers)
    modern = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "list_pages", "User-Agent": "node"}
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": {"name": "inspector", "version": "2.1.0"}}  # fmt: skip
    body = {"name": "list_pages", "arguments": {}, "_meta": meta}
    for _ in range(2):
        rpc(client, writer, "tools/call", body, modern)
    client.get("/", headers={"Authorization": f"Bearer {writer}"})  # a web action: no agent session

    sessions = call(client, writer, "list_agent_sessions", {})["structuredContent"]["sessions"]
    assert [(s["client"], s["session"] is None, s["calls"], s["auth"]) for s in sessions] == [
        ("inspector 2.1.0", True, 2, "token"), ("Claude Desktop 0.9.3", False, 3, "token")
    ]
    assert sessions[1]["first"] <= sessions[1]["last"]


def test_the_log_is_bounded_by_age_and_size(tmp_path):
    store = SqliteActivityStore(tmp_path / "activity.sqlite")
    now = time.time()
    store.append([Activity(now - 86400 * (10 - n), "p", "token", "c", "", "read_page", (), "ok", 1.0) for n in range(10)])
    store.trim(now - 86400 * 5.5, 1000)
    assert len(store.read(ActivityQuery(limit=100))) == 5
    store.trim(0, 2)
    assert [a.time for a in store.read(ActivityQuery(limit=100))] == [now - 86400, now - 86400 * 2]
    store.close()


def test_nothing_queued_is_lost_on_a_clean_shutdown(tmp_path):
    log = ActivityLog(SqliteActivityStore(tmp_path / "activity.sqlite"), days=30, keep=100_000)
    for n in range(2000):
        log.record(Activity(time.time(), "p", "token", "c", "", f"t{n}", (), "ok", 0.1))
    log.close()
    store = SqliteActivityStore(tmp_path / "activity.sqlite")
    assert len(store.read(ActivityQuery(limit=5000))) == 2000
    store.close()


def test_recording_costs_little_on_the_call_path(tmp_path):
    log = ActivityLog(SqliteActivityStore(tmp_path / "activity.sqlite"), days=30, keep=100_000)
    a = Activity(time.time(), "p", "token", "c", "", "read_page", ("notes/a",), "ok", 0.1)
    started = time.perf_counter()
    for _ in range(5000):
        log.record(a)
    per_call = (time.perf_counter() - started) / 5000
    log.close()
    assert per_call < 100e-6, f"{per_call * 1e6:.1f} us a record"


def test_an_operator_turns_it_off_or_bounds_it(tmp_path):
    from hostcore import ConfigError

    with pytest.raises(ConfigError, match="ACTIVITY_DAYS: must be above 0"):
        create_app({"PLUGINS": ["fs"], "ACTIVITY_DAYS": 0}, instance_path=tmp_path / "bad")
    app = create_app({"PLUGINS": ["fs", "tokens"], "ACTIVITY_LOG": False}, instance_path=tmp_path / "off")
    host = app.extensions["hostcore"]
    try:
        token = hostcore_tokens.store(host).create("writer", ["write"])
        err = json.loads(call(app.test_client(), token, "read_activity", {})["content"][-1]["text"])
        assert err["code"] == "unavailable" and "ACTIVITY_LOG" in err["message"]
        assert not (host.instance_path / "activity.sqlite").exists()
    finally:
        host.close()


REDIS_CONFIG = """\
PLUGINS = ["fs", "tokens"]
STORAGE = "fs"
PUBLIC_URL = "http://wiki.test"
REDIS_URL = "{url}"
"""


@pytest.mark.redis
@pytest.mark.serve
def test_two_hosts_on_one_redis_read_the_same_log(tmp_path: Path) -> None:
    with redis_server() as srv:
        hosts = []
        for name in ("a", "b"):
            instance = tmp_path / name
            instance.mkdir()
            (instance / "hostcore.toml").write_text(REDIS_CONFIG.format(url=srv.url))
            hosts.append(create_app(instance_path=instance))
        try:
            a, b = (app.extensions["hostcore"] for app in hosts)
            token = hostcore_tokens.store(a).create("writer", ["write"])  # in Redis: both hosts know it
            a.wiki(SYSTEM).save_namespace("notes")
            call(hosts[0].test_client(), token, "read_page", {"slug": "notes/on-a"})
            call(hosts[1].test_client(), token, "read_page", {"slug": "notes/on-b"})
            a.activity.flush()
            seen = {name: [r["slugs"][0] for r in h.wiki(SYSTEM).read_activity(tool="read_page")["records"]]
                    for name, h in (("a", a), ("b", b))}  # fmt: skip
            assert seen == {"a": ["notes/on-b", "notes/on-a"], "b": ["notes/on-b", "notes/on-a"]}
            sessions = b.wiki(SYSTEM).list_agent_sessions()["sessions"]
            assert [(s["principal"], s["calls"]) for s in sessions] == [("writer", 2)]
            assert not list(tmp_path.glob("*/activity.sqlite"))
            paged = a.wiki(SYSTEM).read_activity(tool="read_page", limit=1)
            rest = b.wiki(SYSTEM).read_activity(tool="read_page", cursor=paged["next_cursor"])
            assert [r["slugs"][0] for r in rest["records"]] == ["notes/on-a"]
        finally:
            for app in hosts:
                app.extensions["hostcore"].close()
