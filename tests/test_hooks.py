"""Each hook, implemented by a test plugin, is called as documented."""

import threading

import pytest
from click.testing import CliRunner
from flask import jsonify

from hostcore import (
    SYSTEM,
    ExtractionFailed,
    Extractor,
    Principal,
    SearchBackend,
    StartupError,
    Storage,
    Unauthorized,
    create_app,
    hookimpl,
    tool,
)
from hostcore.cli.commands import main

from .conftest import BASE_CONFIG


class Recorder:
    def __init__(self):
        self.calls = []

    @hookimpl
    def startup(self, host):
        self.calls.append(("startup", host.config["STORAGE"]))

    @hookimpl
    def register_routes(self, app, host):
        @app.route("/_/hello")
        def hello():
            return jsonify(tools=len(host.tools))

    @hookimpl
    def authenticate(self, request, host):
        header = request.headers.get("Authorization", "")
        if header == "Bearer test-bad":
            raise Unauthorized("test plugin refused it")
        if header == "Bearer test-good":
            return Principal("test-user", frozenset({"read"}))
        return None


def test_hook_startup(tmp_path):
    recorder = Recorder()
    create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[recorder])
    assert recorder.calls == [("startup", "fs")]


def test_hook_register_routes(tmp_path):
    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Recorder()])
    assert app.test_client().get("/_/hello").json == {"tools": len(app.extensions["hostcore"].tools)}


def test_hook_authenticate(tmp_path):
    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Recorder()])
    client = app.test_client()
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    refused = client.post("/_/mcp", json=body, headers={"Authorization": "Bearer test-bad"})
    assert refused.status_code == 401 and "test plugin refused it" in refused.json["error"]["message"]
    assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
    anonymous = client.post("/_/mcp", json=body)
    assert anonymous.status_code == 401 and "resource_metadata=" in anonymous.headers["WWW-Authenticate"]
    assert "invalid_token" not in anonymous.headers["WWW-Authenticate"]


class Commands:
    @hookimpl
    def register_commands(self, cli):
        import click

        @cli.command("hello")
        @click.pass_obj
        def hello(obj):
            """Say which instance this is."""
            click.echo(f"hello from {obj.host().instance_path.name}")


def test_hook_register_commands(tmp_path, monkeypatch):
    inst = tmp_path / "inst"
    result = CliRunner().invoke(main, ["--instance", str(inst), "init"])
    assert "First admin token" in result.stdout  # the tokens plugin's instance_created line

    import hostcore.cli.commands as cli_module

    original = cli_module.make_plugin_manager
    monkeypatch.setattr(cli_module, "make_plugin_manager", lambda names, **kw: original(names, [Commands()], **kw))
    main._loaded = None
    result = CliRunner().invoke(main, ["hello", "--instance", str(inst)])
    assert result.exit_code == 0, result.output
    assert result.stdout == "hello from inst\n"
    main.commands.pop("hello")
    main._loaded = None


class FirstRun:
    @hookimpl
    def instance_created(self, host):
        return f"first run of {host.instance_path.name}"


def test_hook_instance_created(tmp_path, monkeypatch):
    import hostcore.app as app_module  # the CLI imports build_host from it when a command runs

    original = app_module.build_host
    monkeypatch.setattr(app_module, "build_host", lambda instance, *a, **k: original(instance, None, [FirstRun()]))
    result = CliRunner().invoke(main, ["--instance", str(tmp_path / "fresh"), "init"])
    assert result.exit_code == 0, result.output
    assert "first run of fresh\n" in result.stdout and "First admin token" in result.stdout


def mcp_post(client, method, params, token="test-good"):
    """One JSON-RPC request to /_/mcp at 2025-11-25 (stateless); returns the decoded message."""
    import json

    response = client.post(
        "/_/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
        headers={
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
            "Authorization": f"Bearer {token}",
        },
    )
    assert response.status_code == 200, response.data
    text = response.get_data(as_text=True)
    data = text.split("data: ", 1)[1] if text.startswith("event:") else text
    return json.loads(data)


class PagesAsResources:
    from hostcore import prompt, resource

    @staticmethod
    @resource("page://{namespace}/{name}", mime_type="text/markdown")
    def page_resource(namespace: str, name: str, *, wiki):
        """A page's Markdown body."""
        return wiki.page(f"{namespace}/{name}").body

    @staticmethod
    @prompt(complete={"slug": lambda prefix: [s for s in ("notes/a", "notes/b") if s.startswith(prefix)]})
    def summarise(slug: str, *, wiki):
        """Ask for a summary of one page."""
        return f"Summarise this page:\n\n{wiki.page(slug).body}"

    @hookimpl
    def register_resources(self, register):
        register(self.page_resource)

    @hookimpl
    def register_prompts(self, register):
        register(self.summarise)


def resources_app(tmp_path):
    """A test client of an app whose plugin serves pages as resources and a prompt, with notes/a."""
    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Recorder(), PagesAsResources()])
    wiki = app.extensions["hostcore"].wiki(SYSTEM)
    wiki.save_namespace("notes")
    wiki.save_page("notes/a", body="alpha body")
    return app.test_client()


def test_hook_register_resources(tmp_path):
    client = resources_app(tmp_path)
    templates = mcp_post(client, "resources/templates/list", {})["result"]["resourceTemplates"]
    assert "page://{namespace}/{name}" in [t["uriTemplate"] for t in templates]  # beside the core's own
    read = mcp_post(client, "resources/read", {"uri": "page://notes/a"})["result"]["contents"][0]
    assert (read["text"], read["mimeType"]) == ("alpha body", "text/markdown")
    missing = mcp_post(client, "resources/read", {"uri": "page://notes/zzz"})["error"]
    assert missing["data"]["code"] == "not_found" and "no page 'notes/zzz'" in missing["message"]
    unknown = mcp_post(client, "resources/read", {"uri": "other://x"})["error"]
    assert unknown["data"] == {"uri": "other://x"}


def test_hook_register_prompts(tmp_path):
    client = resources_app(tmp_path)
    prompts = mcp_post(client, "prompts/list", {})["result"]["prompts"]
    assert prompts[0]["name"] == "summarise" and prompts[0]["arguments"][0] == {"name": "slug", "required": True}
    got = mcp_post(client, "prompts/get", {"name": "summarise", "arguments": {"slug": "notes/a"}})["result"]
    assert got["messages"][0]["content"]["text"] == "Summarise this page:\n\nalpha body"
    completion = mcp_post(
        client, "completion/complete", {"ref": {"type": "ref/prompt", "name": "summarise"}, "argument": {"name": "slug", "value": "notes/"}}
    )["result"]["completion"]
    assert completion["values"] == ["notes/a", "notes/b"]


@tool(read_only=True, scope="read")
def shout(slug: str, *, wiki) -> dict:
    """Return a page's title in capitals. slug: namespace/page."""
    return {"title": wiki.page(slug).title.upper()}


class Contributions:
    @hookimpl
    def register_tools(self, register):
        register(shout)

    @hookimpl
    def register_storage_backends(self, register):
        register(MemoryStorage)

    @hookimpl
    def register_search_backends(self, register):
        register(NoSearch)


def test_hook_register_tools(tmp_path):
    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Contributions(), Recorder()])
    host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes")
    host.wiki(SYSTEM).save_page("notes/a", body="x", title="Quiet")
    assert host.tools["shout"] is shout
    result = mcp_post(app.test_client(), "tools/call", {"name": "shout", "arguments": {"slug": "notes/a"}})
    assert result["result"]["structuredContent"] == {"title": "QUIET"}


@tool(scope="read", read_only=False)
def note_thread(slug: str, *, wiki) -> dict:
    """Record which thread runs a tool that is not read-only. slug: namespace/page."""
    return {"thread": threading.get_ident()}


def test_write_tools_run_on_the_request_thread(tmp_path):
    """A sync write tool runs on the request's own loop (its gunicorn thread), with no hop to a
    worker thread and back."""

    class Contribution:
        @hookimpl
        def register_tools(self, register):
            register(note_thread)

    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Contribution(), Recorder()])
    result = mcp_post(app.test_client(), "tools/call", {"name": "note_thread", "arguments": {"slug": "notes/a"}})
    assert result["result"]["structuredContent"] == {"thread": threading.get_ident()}
    app.extensions["hostcore"].close()


@tool(scope="read", read_only=True)
async def count_up(steps: int, *, ctx) -> dict:
    """Report progress ``steps`` times, then answer. steps: how many progress notifications."""
    for step in range(steps):
        await ctx.session.report_progress(step + 1, steps, f"step {step + 1}")
    return {"steps": steps}


def test_plain_calls_answer_json_and_async_tools_stream(tmp_path):
    """A call to a sync tool (every core tool) is answered as one JSON body; a call to an async
    tool, which may send notifications through ctx, as an SSE stream carrying them in order before
    the result, whether the request names the tool in the Mcp-Name header (2026-07-28) or only in
    its body (2025-11-25)."""
    import json

    class Contribution:
        @hookimpl
        def register_tools(self, register):
            register(count_up)

    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Contribution(), Recorder()])
    client = app.test_client()
    legacy = {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25", "Authorization": "Bearer test-good"}
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {},
    }

    def post(name, arguments, headers, **params):
        body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": name, "arguments": arguments, **params}}
        return client.post("/_/mcp", json=body, headers=headers)

    plain = post("list_namespaces", {}, legacy)
    assert plain.status_code == 200 and plain.mimetype == "application/json", plain.data
    assert plain.json["id"] == 7 and "structuredContent" in plain.json["result"]

    current = legacy | {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call"}
    for headers, extra in ((legacy, {}), (current | {"Mcp-Name": "count_up"}, {"_meta": meta})):
        params = extra | {"_meta": {**extra.get("_meta", {}), "progressToken": "p1"}}
        streamed = post("count_up", {"steps": 3}, headers, **params)
        assert streamed.status_code == 200 and streamed.mimetype == "text/event-stream", streamed.data
        events = [json.loads(line[len("data: "):]) for line in streamed.get_data(as_text=True).splitlines() if line.startswith("data: {")]
        progress = [e["params"]["progress"] for e in events if e.get("method") == "notifications/progress"]
        assert progress == [1, 2, 3], events
        assert events[-1]["id"] == 7 and events[-1]["result"]["structuredContent"] == {"steps": 3}

    plain_current = post("list_namespaces", {}, current | {"Mcp-Name": "list_namespaces"}, _meta=meta)
    assert plain_current.mimetype == "application/json" and plain_current.json["id"] == 7, plain_current.data
    app.extensions["hostcore"].close()


class MemoryStorage(Storage):
    """A storage backend registered by a test plugin; only its registration is exercised."""

    name = "memory-test"

    def __init__(self, root, settings):
        self.root = root

    def _read(self, path):
        raise NotImplementedError

    def _list(self, prefix):
        return []

    def _apply(self, operations, change):
        raise NotImplementedError


class NoSearch(SearchBackend):
    name = "none-test"

    def __init__(self, root, settings):
        self.root = root

    def update(self, docs, removed=()):
        pass

    def search(self, query, namespaces=None, offset=0, limit=20):
        raise NotImplementedError

    def hashes(self):
        return {}


def test_hook_register_storage_backends(tmp_path):
    host = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Contributions()]).extensions["hostcore"]
    assert host.storage_backends["memory-test"] is MemoryStorage and "fs" in host.storage_backends


def test_hook_register_search_backends(tmp_path):
    host = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Contributions()]).extensions["hostcore"]
    assert host.search_backends["none-test"] is NoSearch


class Events:
    def __init__(self):
        self.seen = []

    @hookimpl
    def page_saved(self, page, previous):
        self.seen.append(("saved", page.slug, previous.hash if previous else None, page.hash))

    @hookimpl
    def page_deleted(self, page, change):
        self.seen.append(("deleted", page.slug, change.author))

    @hookimpl
    def page_moved(self, page, old_slug):
        self.seen.append(("moved", old_slug, page.slug))


def events_wiki(tmp_path):
    events = Events()
    host = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[events]).extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes")
    return events, host.wiki(Principal("ann", frozenset({"write"})))


def test_hook_page_saved(tmp_path):
    events, wiki = events_wiki(tmp_path)
    first = wiki.save_page("notes/a", body="one")
    second = wiki.save_page("notes/a", basehash=first["hash"], body="two")
    wiki.save_page("notes/a", basehash=second["hash"], body="two")  # no change: no event
    assert events.seen == [("saved", "notes/a", None, first["hash"]), ("saved", "notes/a", first["hash"], second["hash"])]


def test_hook_page_deleted(tmp_path):
    events, wiki = events_wiki(tmp_path)
    wiki.save_page("notes/a", body="one")
    wiki.delete_page("notes/a")
    assert events.seen[-1] == ("deleted", "notes/a", "ann")


def test_hook_page_moved(tmp_path):
    events, wiki = events_wiki(tmp_path)
    saved = wiki.save_page("notes/a", body="one")
    wiki.move_page("notes/a", "notes/b", basehash=saved["hash"])
    assert events.seen[-1] == ("moved", "notes/a", "notes/b")


class Shouting(Extractor):
    name = "shouting-test"
    media_types = ("text/x-shout", "audio/*")

    def extract(self, data, media_type):
        if not data:
            raise ExtractionFailed("the file is empty")
        return data.decode().upper()


class Extractors:
    @hookimpl
    def register_extractors(self, register):
        register(Shouting)


def test_hook_register_extractors(tmp_path):
    from hostcore.seams.extract import choose

    host = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Extractors()]).extensions["hostcore"]
    (extractor,) = [e for e in host.extractors if e.name == "shouting-test"]
    assert choose(host.extractors, "text/x-shout") is extractor and choose(host.extractors, "audio/ogg") is extractor
    assert choose(host.extractors, "image/png") is None
    assert extractor.extract(b"quiet", "text/x-shout") == "QUIET"
    with pytest.raises(ExtractionFailed, match="empty"):
        extractor.extract(b"", "text/x-shout")


def test_register_extractors_refuses_what_is_not_an_extractor(tmp_path):
    class Bad:
        @hookimpl
        def register_extractors(self, register):
            register(dict)

    with pytest.raises(StartupError, match="must be an Extractor subclass"):
        create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Bad()])
def test_page_saved_listener_that_fails_stops_no_other(tmp_path, caplog):
    config = {"PLUGINS": ["fs", "sqlite", "tests.broken_listener"], "SEARCH": "sqlite"}
    host = create_app(config, instance_path=tmp_path).extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("notes")
    wiki.save_page("notes/a", body="zebra crossing, see [[notes/b]]")
    assert [hit.slug for hit in host.search.search("zebra", namespaces=None).hits] == ["notes/a"]
    assert [link["slug"] for link in host.links.backlinks("notes/b", None)] == ["notes/a"]
    assert "plugin tests.broken_listener: its page_saved listener failed" in caplog.text
    assert "broken listener saw notes/a" in caplog.text
    host.close()


def test_a_listener_meeting_an_outage_is_a_warning_not_a_traceback(tmp_path, caplog):
    """A listener that finds storage or a service out for a moment (Unavailable) is logged as
    one warning line naming the plugin, without a traceback; the others still run."""
    from hostcore.errors import Unavailable

    class Outage:
        __name__ = "outage_listener"

        @hookimpl
        def page_saved(self, page):
            raise Unavailable(f"the S3 storage cannot be reached for {page.slug}; try again")

    host = create_app({"PLUGINS": ["fs", "sqlite"], "SEARCH": "sqlite"}, instance_path=tmp_path, plugins=[Outage()]).extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("notes")
    wiki.save_page("notes/a", body="zebra crossing")
    assert [hit.slug for hit in host.search.search("zebra", namespaces=None).hits] == ["notes/a"]
    (record,) = [r for r in caplog.records if "outage_listener" in r.getMessage()]
    assert record.levelname == "WARNING" and record.exc_info is None
    assert "its page_saved listener was skipped: the S3 storage cannot be reached for notes/a" in record.getMessage()
    host.close()


def test_page_deleted_listener_cannot_be_a_wrapper(tmp_path):
    class Around:
        @hookimpl(wrapper=True)
        def page_deleted(self, page):
            return (yield)

    with pytest.raises(StartupError, match="page_deleted cannot be a wrapper"):
        create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Around()])


def test_wiki_needs_a_principal(host):
    with pytest.raises(TypeError, match="use hostcore.SYSTEM in a command or job"):
        host.wiki(None)
    assert host.wiki(SYSTEM).principal is SYSTEM


class People:
    """A sign-in plugin: knows alice (read, limited to 'team'); bob is disabled."""

    @hookimpl
    def find_person(self, name, host):
        if name == "alice":
            return Principal("person:alice", frozenset({"read"}), frozenset({"team"}))
        return None

    @hookimpl
    def register_routes(self, app, host):
        from flask import request

        from hostcore import check_csrf, csrf_token, login_redirect, person, sign_in

        @app.route("/_/test-sign-in/<name>", methods=["POST"])
        def test_sign_in(name):
            check_csrf()
            sign_in(name)
            return "ok"

        @app.route("/_/test-form")
        def form():
            return f'<form method="post"><input name="csrf_token" value="{csrf_token()}"></form>'

        @app.route("/_/whoami")
        def whoami():
            who = person()
            if who is None:
                return login_redirect()
            return jsonify(name=who.name, namespaces=sorted(who.namespaces or []), path=request.path)


def test_hook_find_person(tmp_path):
    import re

    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[People()])
    client = app.test_client()
    stranger = client.get("/_/whoami?x=1")
    assert stranger.status_code == 302 and stranger.headers["Location"] == "/_/login?next=/_/whoami%3Fx%3D1"
    token = re.search(r'value="([^"]+)"', client.get("/_/test-form").text).group(1)
    assert client.post("/_/test-sign-in/alice", data={"csrf_token": "forged"}).status_code == 403
    assert client.post("/_/test-sign-in/alice", data={"csrf_token": token}).text == "ok"
    assert client.get("/_/whoami").json == {"name": "person:alice", "namespaces": ["team"], "path": "/_/whoami"}
    # the form's token was replaced at sign-in (no fixation), and bob is not known: signed out at once
    assert client.post("/_/test-sign-in/bob", data={"csrf_token": token}).status_code == 403
    fresh = re.search(r'value="([^"]+)"', client.get("/_/test-form").text).group(1)
    assert client.post("/_/test-sign-in/bob", data={"csrf_token": fresh}).text == "ok"
    assert client.get("/_/whoami").status_code == 302
