"""What the wiki offers assistants besides the page tools, through the real MCP endpoint in process:
capture into a namespace's inbox, operating guides (the read_guide tool and the server's
instructions), pages and attachments' text as resources (listed by cursor, limited to the
caller's namespaces), and the prompts."""

from __future__ import annotations

import json
import threading
from typing import Any

import pytest

from hostcore import SYSTEM, Principal, create_app, hookimpl
from hostcore.mcp import endpoint

from .conftest import BASE_CONFIG

TOKENS = {
    "admin": Principal("ada", frozenset({"admin"})),
    "write": Principal("wes", frozenset({"write"})),
    "read": Principal("rea", frozenset({"read"})),
    "team": Principal("tia", frozenset({"write"}), frozenset({"team"})),
}


class Tokens:
    @hookimpl
    def authenticate(self, request, host):
        return TOKENS.get(request.headers.get("Authorization", "").removeprefix("Bearer "))


@pytest.fixture
def wiki_app(tmp_path):
    app = create_app({**BASE_CONFIG, "PLUGINS": ["fs"]}, instance_path=tmp_path / "instance", plugins=[Tokens()])
    host = app.extensions["hostcore"]
    system = host.wiki(SYSTEM)
    for name in ("notes", "team"):
        system.save_namespace(name, title=name.title())
    for i in range(7):
        system.save_page(f"notes/p{i}", body=f"# Page {i}\n\nbody {i}\n", title=f"Page {i}")
    system.save_page("team/plan", body="# Plan\n\nShip it.\n", title="Plan")
    yield app
    host.close()


def rpc(app, method: str, params: dict[str, Any], token: str = "admin", version: str = "2025-11-25") -> dict[str, Any]:
    """One JSON-RPC request to /_/mcp; the decoded answer (result or error). At 2026-07-28 it
    carries what that revision asks of every request: its method header and ``_meta``."""
    headers = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version, "Authorization": f"Bearer {token}"}
    if version == "2026-07-28":
        headers["Mcp-Method"] = method
        params = {**params, "_meta": {"io.modelcontextprotocol/protocolVersion": version,
                                      "io.modelcontextprotocol/clientCapabilities": {},
                                      "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"}}}  # fmt: skip
    response = app.test_client().post("/_/mcp", json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, headers=headers)
    text = response.get_data(as_text=True)
    return json.loads(text.split("data: ", 1)[1] if text.startswith("event:") else text)


def call(app, tool: str, arguments: dict[str, Any], token: str = "admin") -> tuple[bool, Any]:
    """(is_error, structuredContent or the error object) of one tools/call."""
    result = rpc(app, "tools/call", {"name": tool, "arguments": arguments}, token)["result"]
    if result["isError"]:
        return True, json.loads(result["content"][-1]["text"])
    return False, result["structuredContent"]


def body(app, slug: str) -> str:
    return app.extensions["hostcore"].wiki(SYSTEM).read_page(slug)["body"]


# --- capture ---------------------------------------------------------------------------------


def test_capture_creates_the_inbox_then_appends_with_who_and_when(wiki_app):
    failed, first = call(wiki_app, "capture", {"namespace": "notes", "text": "Idea: *cache* the outline", "url": "https://example.org/a?b=1"}, "write")
    assert not failed and first["created"] and first["slug"] == "notes/inbox" and first["by"].startswith("wes")
    failed, second = call(wiki_app, "capture", {"namespace": "notes", "text": "second thought"}, "write")
    assert not failed and not second["created"] and second["hash"] != first["hash"]
    text = body(wiki_app, "notes/inbox")
    assert text.startswith("# Inbox\n")
    day, minute = first["at"][:10], first["at"][11:16]
    assert f"## {day} {minute} UTC by wes" in text
    assert text.index("Idea: *cache* the outline\n\n<https://example.org/a?b=1>") < text.index("second thought")
    assert second["hash"] == wiki_app.extensions["hostcore"].wiki(SYSTEM).read_page("notes/inbox")["hash"]


def test_capture_goes_to_the_inbox_the_namespace_names(wiki_app):
    host = wiki_app.extensions["hostcore"]
    current = host.wiki(SYSTEM).read_namespace("notes")["hash"]
    host.wiki(SYSTEM).save_namespace("notes", current, inbox="meta/drop")
    failed, done = call(wiki_app, "capture", {"namespace": "notes", "text": "here"}, "write")
    assert not failed and done["slug"] == "notes/meta/drop" and "here" in body(wiki_app, "notes/meta/drop")


def test_concurrent_captures_all_land(wiki_app):
    host = wiki_app.extensions["hostcore"]
    errors: list[BaseException] = []

    def capture(i: int) -> None:
        try:
            host.wiki(TOKENS["write"]).capture("notes", f"thought number {i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=capture, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    text = body(wiki_app, "notes/inbox")
    assert sorted(int(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith("thought number")) == list(range(8))


@pytest.mark.parametrize(
    ("token", "arguments", "code", "field"),
    [
        ("read", {"namespace": "notes", "text": "x"}, "insufficient_scope", None),
        ("team", {"namespace": "notes", "text": "x"}, "forbidden", "namespace"),
        ("write", {"namespace": "notes", "text": "   \n"}, "validation_error", "text"),
        ("write", {"namespace": "notes", "text": "x", "url": "javascript:alert(1)"}, "validation_error", "url"),
        ("write", {"namespace": "notes", "text": "x", "url": "https://a.example/with space"}, "validation_error", "url"),
        ("write", {"namespace": "nowhere", "text": "x"}, "validation_error", "namespace"),
        ("write", {"namespace": "notes/inbox", "text": "x"}, "validation_error", "namespace"),
        ("write", {"namespace": "notes", "text": "x" * 20_001}, "validation_error", "text"),
    ],
)
def test_a_refused_capture_names_the_field_and_changes_nothing(wiki_app, token, arguments, code, field):
    before = sorted(wiki_app.extensions["hostcore"].storage.list(""))
    failed, error = call(wiki_app, "capture", arguments, token)
    assert failed and error["code"] == code and error.get("field") == field, error
    assert sorted(wiki_app.extensions["hostcore"].storage.list("")) == before


# --- operating guides ------------------------------------------------------------------------


def test_guide_and_inbox_settings_are_validated_like_the_others(wiki_app):
    for arguments, message in [
        ({"guide": "_hidden"}, "guide"),
        ({"guide": "a/.b"}, "guide"),
        ({"guide": "CON"}, "guide"),
        ({"inbox": ""}, "inbox"),
        ({"inbox": "x" * 300}, "inbox"),
    ]:
        current = rpc(wiki_app, "tools/call", {"name": "read_namespace", "arguments": {"name": "notes"}})["result"]["structuredContent"]
        failed, error = call(wiki_app, "save_namespace", {"name": "notes", "basehash": current["hash"], **arguments})
        assert failed and error["code"] == "validation_error" and error["field"] == message, (arguments, error)
    current = call(wiki_app, "read_namespace", {"name": "notes"})[1]
    assert current["guide"] == "" and current["inbox"] == "inbox"
    failed, saved = call(wiki_app, "save_namespace", {"name": "notes", "basehash": current["hash"], "guide": "meta/guide"})
    assert not failed
    failed, stale = call(wiki_app, "save_namespace", {"name": "notes", "basehash": current["hash"], "guide": "other"})
    assert failed and stale["code"] == "conflict" and stale["hash"] == saved["hash"]
    assert call(wiki_app, "read_namespace", {"name": "notes"})[1]["guide"] == "meta/guide"


def set_guide(app, namespace: str, guide: str) -> None:
    system = app.extensions["hostcore"].wiki(SYSTEM)
    system.save_namespace(namespace, system.read_namespace(namespace)["hash"], guide=guide)


def test_read_guide_reads_the_page_the_namespace_names(wiki_app):
    failed, error = call(wiki_app, "read_guide", {"namespace": "notes"}, "read")
    assert failed and error["code"] == "not_found" and error["field"] == "namespace" and "save_namespace" in error["message"]
    set_guide(wiki_app, "notes", "guide")
    failed, error = call(wiki_app, "read_guide", {"namespace": "notes"}, "read")
    assert failed and error["code"] == "not_found" and "notes/guide" in error["message"]
    wiki_app.extensions["hostcore"].wiki(SYSTEM).save_page("notes/guide", body="Write in English. " * 10, title="How we work")
    failed, read = call(wiki_app, "read_guide", {"namespace": "notes", "limit": 17}, "read")
    assert not failed and read["without_guide"] == []
    [guide] = read["guides"]
    assert (guide["slug"], guide["title"], guide["body"], guide["truncated"], guide["total_chars"]) == (
        "notes/guide", "How we work", "Write in English.", True, 180,
    )
    failed, every = call(wiki_app, "read_guide", {}, "read")
    assert [g["slug"] for g in every["guides"]] == ["notes/guide"] and every["without_guide"] == ["team"]
    failed, limited = call(wiki_app, "read_guide", {}, "team")
    assert not failed and limited == {"guides": [], "without_guide": ["team"]}
    failed, error = call(wiki_app, "read_guide", {"namespace": "notes"}, "team")
    assert failed and error["code"] == "forbidden"


def instructions(app, token: str, version: str = "2025-11-25") -> str:
    if version == "2025-11-25":
        params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
        return rpc(app, "initialize", params, token)["result"]["instructions"]
    return rpc(app, "server/discover", {}, token, version)["result"]["instructions"]


@pytest.mark.parametrize("version", ["2025-11-25", "2026-07-28"])
def test_the_instructions_point_to_the_guides_of_the_callers_namespaces(wiki_app, version):
    assert "none of your namespaces has one now" in instructions(wiki_app, "admin", version)
    set_guide(wiki_app, "notes", "guide")
    set_guide(wiki_app, "team", "rules/assistants")
    told = instructions(wiki_app, "admin", version)
    assert "notes/guide for notes" in told and "team/rules/assistants for team" in told and "read_guide" in told
    limited = instructions(wiki_app, "team", version)
    assert "team/rules/assistants for team" in limited and "notes/guide" not in limited


# --- resources -------------------------------------------------------------------------------


def list_all(app, token: str) -> list[str]:
    uris: list[str] = []
    cursor = None
    for _ in range(20):
        result = rpc(app, "resources/list", {"cursor": cursor} if cursor else {}, token)["result"]
        uris += [r["uri"] for r in result["resources"]]
        cursor = result.get("nextCursor")
        if cursor is None:
            return uris
    raise AssertionError("resources/list never ended")


def test_resources_list_pages_by_cursor_and_keeps_to_the_callers_namespaces(wiki_app, monkeypatch):
    monkeypatch.setattr(endpoint, "RESOURCES_PAGE", 3)
    everything = [f"hostcore://page/notes/p{i}" for i in range(7)] + ["hostcore://page/team/plan"]
    assert list_all(wiki_app, "read") == everything
    assert list_all(wiki_app, "team") == ["hostcore://page/team/plan"]
    first = rpc(wiki_app, "resources/list", {}, "read")["result"]
    assert len(first["resources"]) == 3 and first["nextCursor"]
    page = first["resources"][0]
    system = wiki_app.extensions["hostcore"].wiki(SYSTEM)
    assert (page["name"], page["title"], page["mimeType"]) == ("notes/p0", "Page 0", "text/markdown")
    assert page["_meta"]["hash"] == system.read_page("notes/p0")["hash"] and page["annotations"]["lastModified"].endswith("Z")
    # a page added before the cursor's place moves nothing after it
    system.save_page("notes/a-first", body="new\n")
    after = rpc(wiki_app, "resources/list", {"cursor": first["nextCursor"]}, "read")["result"]
    assert [r["uri"] for r in after["resources"]] == everything[3:6]
    bad = rpc(wiki_app, "resources/list", {"cursor": "not-a-cursor"}, "read")["error"]
    assert bad["code"] == -32602 and "cursor" in bad["message"]


def test_resources_list_goes_on_with_the_attachments_text_the_caller_may_read(wiki_app, monkeypatch):
    monkeypatch.setattr(endpoint, "RESOURCES_PAGE", 3)
    host = wiki_app.extensions["hostcore"]
    system = host.wiki(SYSTEM)
    for slug, filename in (("notes/p1", "b.txt"), ("notes/p1", "a.txt"), ("team/plan", "memo.txt")):
        system._store_attachment(slug, filename, f"words of {filename}\n".encode())
    host.indexes.wait()
    pages = [f"hostcore://page/notes/p{i}" for i in range(7)] + ["hostcore://page/team/plan"]
    files = ["hostcore://attachment/notes/p1/a.txt", "hostcore://attachment/notes/p1/b.txt", "hostcore://attachment/team/plan/memo.txt"]
    assert list_all(wiki_app, "read") == pages + files
    assert list_all(wiki_app, "team") == ["hostcore://page/team/plan", "hostcore://attachment/team/plan/memo.txt"]
    listed = {r["uri"]: r for r in rpc(wiki_app, "resources/list", {}, "team")["result"]["resources"]}
    memo = listed["hostcore://attachment/team/plan/memo.txt"]
    assert (memo["name"], memo["title"], memo["mimeType"]) == ("team/plan/memo.txt", "memo.txt", "text/plain")
    assert memo["_meta"]["hash"] == system.read_attachment("team/plan", "memo.txt")["hash"]
    read = rpc(wiki_app, "resources/read", {"uri": memo["uri"]}, "team")["result"]["contents"][0]
    assert read["text"] == "words of memo.txt\n"


def test_resources_list_lists_only_readable_namespaces_of_many(wiki_app, monkeypatch):
    """A namespace-limited token's listing is the namespace's range of the slug index, ordered as
    slugs sort even where namespace names do not ('a-b/x' < 'a/x')."""
    system = wiki_app.extensions["hostcore"].wiki(SYSTEM)
    for name in ("a", "a-b"):
        system.save_namespace(name)
        system.save_page(f"{name}/x", body="x\n")
    graph = wiki_app.extensions["hostcore"].indexes.link_graph()
    assert [f["slug"] for f in graph.pages_after({"a", "a-b", "team"}, "", 10)] == ["a-b/x", "a/x", "team/plan"]
    assert [f["slug"] for f in graph.pages_after({"a", "a-b", "team"}, "a-b/x", 1)] == ["a/x"]
    assert graph.pages_after({"nowhere"}, "", 10) == []


def test_resources_read_gives_the_markdown_with_its_hash(wiki_app):
    read = rpc(wiki_app, "resources/read", {"uri": "hostcore://page/team/plan"}, "team")["result"]["contents"][0]
    page = wiki_app.extensions["hostcore"].wiki(SYSTEM).read_page("team/plan")
    assert (read["text"], read["mimeType"], read["uri"]) == (page["body"], "text/markdown", "hostcore://page/team/plan")
    assert read["_meta"] == {"slug": "team/plan", "hash": page["hash"], "title": "Plan", "tags": [], "pin": False}


@pytest.mark.parametrize(
    ("token", "uri", "code", "data_code"),
    [
        ("team", "hostcore://page/notes/p1", -32602, "forbidden"),
        ("read", "hostcore://page/notes/missing", -32602, "not_found"),
        ("read", "hostcore://page/notes/_hidden", -32602, "validation_error"),
        ("read", "hostcore://page/nonamespace", -32602, "validation_error"),
        ("read", "hostcore://attachment/notes/p1/none.pdf", -32602, "not_found"),
        ("read", "gopher://elsewhere", -32602, None),
    ],
)
def test_a_refused_read_is_a_json_rpc_error_naming_the_uri(wiki_app, token, uri, code, data_code):
    error = rpc(wiki_app, "resources/read", {"uri": uri}, token)["error"]
    assert error["code"] == code and error["data"]["uri"] == uri and error["data"].get("code") == data_code, error


def test_an_attachments_text_is_a_resource(wiki_app):
    host = wiki_app.extensions["hostcore"]
    system = host.wiki(SYSTEM)
    system._store_attachment("notes/p1", "notes.txt", b"plain words in a file\n")
    read = rpc(wiki_app, "resources/read", {"uri": "hostcore://attachment/notes/p1/notes.txt"}, "read")["result"]["contents"][0]
    assert read["text"] == "plain words in a file\n" and read["_meta"]["media_type"] == "text/plain"
    assert read["_meta"]["hash"] == system.read_attachment("notes/p1", "notes.txt")["hash"]
    templates = rpc(wiki_app, "resources/templates/list", {}, "read")["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["hostcore://page/{+slug}", "hostcore://attachment/{+slug}/{filename}"]


def test_resources_and_prompts_are_declared(wiki_app):
    params = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    capabilities = rpc(wiki_app, "initialize", params)["result"]["capabilities"]
    assert {"tools", "resources", "prompts"} <= set(capabilities)


# --- prompts ---------------------------------------------------------------------------------


def test_summarise_page_embeds_the_page(wiki_app):
    got = rpc(wiki_app, "prompts/get", {"name": "summarise_page", "arguments": {"slug": "team/plan"}}, "team")["result"]
    ask, page = got["messages"]
    assert "team/plan" in ask["content"]["text"]
    assert page["content"]["type"] == "resource" and page["content"]["resource"]["text"] == "# Plan\n\nShip it.\n"
    refused = rpc(wiki_app, "prompts/get", {"name": "summarise_page", "arguments": {"slug": "notes/p1"}}, "team")["error"]
    assert refused["code"] == -32602 and refused["data"]["code"] == "forbidden"


def test_draft_page_follows_the_namespaces_template_and_guide(wiki_app):
    system = wiki_app.extensions["hostcore"].wiki(SYSTEM)
    current = system.read_namespace("notes")["hash"]
    system.save_namespace("notes", current, new={"template": "## Why\n\n## How\n", "slug": "ideas/{title}"}, guide="guide")
    got = rpc(wiki_app, "prompts/get", {"name": "draft_page", "arguments": {"namespace": "notes", "topic": "Faster saves"}}, "write")
    text = got["result"]["messages"][0]["content"]["text"]
    assert "notes/ideas/faster-saves" in text and "## Why\n\n## How" in text and "notes/guide" in text
    refused = rpc(wiki_app, "prompts/get", {"name": "draft_page", "arguments": {"namespace": "notes", "topic": "x"}}, "read")["error"]
    assert refused["code"] == -32602 and refused["data"]["code"] == "insufficient_scope"


def test_review_change_request_shows_the_diffs_and_leaves_the_decision_to_the_person(wiki_app):
    system = wiki_app.extensions["hostcore"].wiki(SYSTEM)
    page = system.read_page("notes/p1")
    edit = {"op": "edit", "slug": "notes/p1", "basehash": page["hash"], "edits": [{"oldText": "body 1", "newText": "body one"}]}
    made = system.create_change_request([edit], "Spell out one", "numbers read better as words")
    got = rpc(wiki_app, "prompts/get", {"name": "review_change_request", "arguments": {"id": made["id"]}}, "read")["result"]
    ask, details = got["messages"]
    text = ask["content"]["text"]
    assert made["id"] in text and "Spell out one" in text and "risk structural" in text and "Never decide for them" in text
    review = details["content"]["resource"]
    assert review["uri"] == f"hostcore://change-request/{made['id']}" and "numbers read better as words" in review["text"]
    assert "-body 1" in review["text"] and "+body one" in review["text"]
    hidden = rpc(wiki_app, "prompts/get", {"name": "review_change_request", "arguments": {"id": made["id"]}}, "team")["error"]
    assert hidden["code"] == -32602 and hidden["data"]["code"] == "not_found"  # a request touching notes is not shown to team
    bad = rpc(wiki_app, "prompts/get", {"name": "review_change_request", "arguments": {"id": "nope"}}, "read")["error"]
    assert bad["data"]["code"] == "validation_error" and bad["data"]["field"] == "id"
    ref = {"type": "ref/prompt", "name": "review_change_request"}
    completed = rpc(wiki_app, "completion/complete", {"ref": ref, "argument": {"name": "id", "value": "cr-"}}, "read")["result"]
    assert completed["completion"]["values"] == [made["id"]]
    system.reject_change_request(made["id"], "not now")
    done = rpc(wiki_app, "prompts/get", {"name": "review_change_request", "arguments": {"id": made["id"]}}, "read")["result"]
    assert "cannot be applied as it is (state rejected)" in done["messages"][0]["content"]["text"]


def test_page_and_namespace_arguments_complete_from_what_the_caller_may_read(wiki_app):
    def complete(ref: dict[str, str], name: str, value: str, token: str) -> dict[str, Any]:
        params = {"ref": ref, "argument": {"name": name, "value": value}}
        return rpc(wiki_app, "completion/complete", params, token)["result"]["completion"]

    template = {"type": "ref/resource", "uri": "hostcore://page/{+slug}"}
    assert complete(template, "slug", "notes/p", "read")["values"] == [f"notes/p{i}" for i in range(7)]
    assert complete(template, "slug", "", "team")["values"] == ["team/plan"]
    assert complete(template, "slug", "notes/", "team")["values"] == []
    summarise = {"type": "ref/prompt", "name": "summarise_page"}
    assert complete(summarise, "slug", "team/", "read")["values"] == ["team/plan"]
    draft = {"type": "ref/prompt", "name": "draft_page"}
    assert complete(draft, "namespace", "", "team")["values"] == ["team"]
    assert complete(draft, "namespace", "n", "write")["values"] == ["notes"]
    refused = rpc(wiki_app, "completion/complete", {"ref": draft, "argument": {"name": "namespace", "value": ""}}, "read")["error"]
    assert refused["code"] == -32602 and refused["data"]["code"] == "insufficient_scope"


def test_a_hundred_completions_at_most_and_whether_there_are_more(wiki_app):
    system = wiki_app.extensions["hostcore"].wiki(SYSTEM)
    for i in range(101):
        system.save_page(f"team/many-{i:03d}", body="x\n")
    params = {"ref": {"type": "ref/resource", "uri": "hostcore://page/{+slug}"}, "argument": {"name": "slug", "value": "team/many-"}}
    completion = rpc(wiki_app, "completion/complete", params, "read")["result"]["completion"]
    assert len(completion["values"]) == 100 and completion["hasMore"] is True and "total" not in completion
