"""The plugin is found through its entry point, registers its backend, and its settings are checked."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import hostcore_s3
from hostcore.testing import cli, plugin_manager
from hostcore.testing.s3 import S3Server
from hostcore_s3 import S3Storage


def test_entry_point_and_hook() -> None:
    (point,) = entry_points(group="hostcore", name="s3")
    assert point.load() is hostcore_s3
    manager = plugin_manager(hostcore_s3)
    found: list[type] = []
    manager.hook.register_storage_backends(register=found.append)
    assert found == [S3Storage]
    assert S3Storage.name == "s3" and S3Storage.has_history
    assert set(S3Storage.settings) == {"bucket", "prefix", "endpoint_url", "region", "repair_after"}


def test_check_names_bad_settings_and_a_missing_bucket(s3_server: S3Server, tmp_path: Path) -> None:
    (tmp_path / "hostcore.toml").write_text(
        'PLUGINS = ["s3", "tokens", "sqlite"]\nSTORAGE = "s3"\n'
        f'[PLUGIN_CONFIG.s3]\nbuckt = "wiki"\nendpoint_url = "{s3_server.url}"\nrepair_after = "soon"\n'
    )
    result = cli(tmp_path, "check", check=False, env=s3_server.env)
    assert result.returncode == 1
    assert "PLUGIN_CONFIG.s3.buckt: the s3 backend has no setting 'buckt'; did you mean 'bucket'?" in result.stdout
    assert "PLUGIN_CONFIG.s3.repair_after: expected float, got str 'soon'" in result.stdout
    (tmp_path / "hostcore.toml").write_text(
        'PLUGINS = ["s3", "tokens", "sqlite"]\nSTORAGE = "s3"\n'
        '[PLUGIN_CONFIG.s3]\nbucket = "no-such-wiki"\nendpoint_url = {"$env" = "S3_URL"}\n'
    )
    result = cli(tmp_path, "check", check=False, env={**s3_server.env, "S3_URL": s3_server.url})
    assert result.returncode == 1
    assert "bucket 'no-such-wiki' does not exist" in result.stdout + result.stderr
