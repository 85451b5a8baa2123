"""Each hook, implemented by a test plugin, is called as documented."""

import pytest
from click.testing import CliRunner
from flask import jsonify

from hostcore import SYSTEM, Principal, StartupError, Unauthorized, create_app, hookimpl
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


def test_startup_and_routes(tmp_path):
    recorder = Recorder()
    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[recorder])
    assert recorder.calls == [("startup", "fs")]
    assert app.test_client().get("/_/hello").json == {"tools": len(app.extensions["hostcore"].tools)}


def test_authenticate_answers_and_refusals(tmp_path):
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


def test_register_commands_and_instance_created(tmp_path, monkeypatch):
    inst = tmp_path / "inst"
    result = CliRunner().invoke(main, ["--instance", str(inst), "init"])
    assert "First admin token" in result.stdout  # the tokens plugin's instance_created line

    import hostcore.cli.commands as cli_module

    original = cli_module.make_plugin_manager
    monkeypatch.setattr(cli_module, "make_plugin_manager", lambda names: original(names, [Commands()]))
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


def test_instance_created_lines_are_shown(tmp_path, monkeypatch):
    import hostcore.cli.commands as cli_module

    original = cli_module.build_host
    monkeypatch.setattr(cli_module, "build_host", lambda instance, *a, **k: original(instance, None, [FirstRun()]))
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
    def register_resources(self, register, host):
        register(self.page_resource)

    @hookimpl
    def register_prompts(self, register, host):
        register(self.summarise)


def test_resources_and_prompts_go_through_the_service_layer(tmp_path):
    from hostcore.domain.principal import SYSTEM

    app = create_app(BASE_CONFIG, instance_path=tmp_path, plugins=[Recorder(), PagesAsResources()])
    wiki = app.extensions["hostcore"].wiki(SYSTEM)
    wiki.save_namespace("notes")
    wiki.save_page("notes/a", body="alpha body")
    client = app.test_client()

    templates = mcp_post(client, "resources/templates/list", {})["result"]["resourceTemplates"]
    assert [t["uriTemplate"] for t in templates] == ["page://{namespace}/{name}"]
    read = mcp_post(client, "resources/read", {"uri": "page://notes/a"})["result"]["contents"][0]
    assert (read["text"], read["mimeType"]) == ("alpha body", "text/markdown")
    missing = mcp_post(client, "resources/read", {"uri": "page://notes/zzz"})["error"]
    assert missing["data"]["code"] == "not_found" and "no page 'notes/zzz'" in missing["message"]
    unknown = mcp_post(client, "resources/read", {"uri": "other://x"})["error"]
    assert unknown["data"] == {"uri": "other://x"}

    prompts = mcp_post(client, "prompts/list", {})["result"]["prompts"]
    assert prompts[0]["name"] == "summarise" and prompts[0]["arguments"][0] == {"name": "slug", "required": True}
    got = mcp_post(client, "prompts/get", {"name": "summarise", "arguments": {"slug": "notes/a"}})["result"]
    assert got["messages"][0]["content"]["text"] == "Summarise this page:\n\nalpha body"
    completion = mcp_post(
        client, "completion/complete", {"ref": {"type": "ref/prompt", "name": "summarise"}, "argument": {"name": "slug", "value": "notes/"}}
    )["result"]["completion"]
    assert completion["values"] == ["notes/a", "notes/b"]


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
