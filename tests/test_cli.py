import re

from click.testing import CliRunner

from hostcore.cli.commands import main


def test_init_token_plugins_check(tmp_path):
    runner = CliRunner()
    inst = str(tmp_path / "inst")
    result = runner.invoke(main, ["--instance", inst, "init"])
    assert result.exit_code == 0, result.output
    assert re.search(r"First admin token .*: hc_[\w-]{40,}", result.stdout)
    again = runner.invoke(main, ["init", "--instance", inst])
    assert again.exit_code == 0 and "already an instance" in again.stderr

    created = runner.invoke(main, ["token", "create", "--instance", inst, "--name", "bot", "--scope", "read", "--namespace", "notes"])
    assert created.exit_code == 0, created.output
    assert re.fullmatch(r"hc_[\w-]{40,}\n", created.stdout)
    listed = runner.invoke(main, ["--instance", inst, "token", "list"])
    assert "bot\tread\tnotes" in listed.stdout and created.stdout.strip() not in listed.stdout
    revoked = runner.invoke(main, ["token", "revoke", "bot", "--instance", inst])
    assert revoked.exit_code == 0 and "bot" not in runner.invoke(main, ["--instance", inst, "token", "list"]).stdout
    bad = runner.invoke(main, ["token", "create", "--instance", inst, "--name", "x", "--scope", "root"])
    assert bad.exit_code != 0 and "root" in bad.output

    plugins = runner.invoke(main, ["plugins", "--instance", inst])
    assert re.search(r"^tokens\thostcore-tokens 0\.1\.0\t.*authenticate", plugins.stdout, re.M)
    assert re.search(r"^hostcore\.tools\.pages\thostcore \(built in\)\tregister_tools$", plugins.stdout, re.M)
    assert runner.invoke(main, ["check", "--instance", inst]).exit_code == 0


def test_check_names_every_problem(tmp_path):
    (tmp_path / "hostcore.toml").write_text('PLUGINS = ["fs"]\nSTORAGE = 3\nPUBLIC_URL = "ftp://x"\n')
    result = CliRunner().invoke(main, ["check", "--instance", str(tmp_path)])
    assert result.exit_code == 1
    assert "problem: STORAGE: expected str" in result.stdout and "problem: PUBLIC_URL" in result.stdout


def test_check_reports_unknown_plugin(tmp_path):
    (tmp_path / "hostcore.toml").write_text('PLUGINS = ["nope"]\n')
    result = CliRunner().invoke(main, ["check", "--instance", str(tmp_path)])
    assert result.exit_code == 1 and "no plugin named 'nope'" in result.stdout
