"""Each hook, implemented by a test plugin, is called as documented."""

from click.testing import CliRunner
from flask import jsonify

from hostcore import Principal, Unauthorized, create_app, hookimpl
from hostcore.cli import main

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

    import hostcore.cli as cli_module

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
    import hostcore.cli as cli_module

    original = cli_module.build_host
    monkeypatch.setattr(cli_module, "build_host", lambda instance, *a, **k: original(instance, None, [FirstRun()]))
    result = CliRunner().invoke(main, ["--instance", str(tmp_path / "fresh"), "init"])
    assert result.exit_code == 0, result.output
    assert "first run of fresh\n" in result.stdout and "First admin token" in result.stdout
