"""The official MCP conformance suite against a real hostcore server (gunicorn, 2 workers).

2026-07-28: every required scenario must pass. 2025-11-25: the scenarios that a stateless server
cannot pass are listed, with the reason for each, in baseline-2025-11-25.yml; anything else failing,
or a listed scenario starting to pass, fails this test.
"""

import os
import re
import subprocess
from pathlib import Path

import pytest

from hostcore.testing import cli, create_token, start_server, stop_process_group

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
pytestmark = pytest.mark.serve


@pytest.fixture(scope="module")
def conformance_server(tmp_path_factory):
    instance = tmp_path_factory.mktemp("conformance") / "instance"
    env = {"PYTHONPATH": str(ROOT)}
    cli(instance, "init", env=env)
    config = instance / "hostcore.toml"
    text = config.read_text()
    config.write_text(re.sub(r"^PLUGINS = \[", 'PLUGINS = ["tests.conformance.fixture_plugin", ', text, flags=re.M))
    token = create_token(instance, "conformance", ["read"], env=env)
    proc, base, _port, _log = start_server(instance, env=env)
    try:
        yield base + "/_/mcp", token
    finally:
        stop_process_group(proc)


def run_suite(url: str, token: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(HERE / "run.sh"), url, *args],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, "MCP_CONFORMANCE_BEARER": token},
    )


def test_2026_07_28_required_set_passes_whole(conformance_server):
    url, token = conformance_server
    result = run_suite(url, token, "--revision", "2026-07-28")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    assert re.search(r"required scenarios: (\d+) passed, 0 failed", result.stdout), result.stdout[-3000:]


def test_2025_11_25_fails_only_what_the_baseline_explains(conformance_server):
    url, token = conformance_server
    result = run_suite(url, token, "--revision", "2025-11-25", "--baseline", "auto")
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-3000:]
    passed = int(re.search(r"required scenarios: (\d+) passed", result.stdout).group(1))
    assert passed >= 22, result.stdout[-3000:]
