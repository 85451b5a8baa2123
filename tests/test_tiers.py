"""The test tiers (hostcore/testing/tiers.py), each checked in a pytest of its own run the way a
plugin's project runs it: ``--fast`` leaves the marked tests out and fails an unmarked one that
starts a server; an interrupted run (Ctrl-C, SIGTERM) leaves no ``hostcore serve`` behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

CONFTEST = """
pytest_plugins = ["hostcore.testing.tiers"]
from hostcore.testing.browser import browser  # noqa: F401
"""

TIERS = """
import pytest
from hostcore.testing import cli, start_server

def test_in_process():
    assert 1 + 1 == 2

def test_unmarked_server(tmp_path):
    start_server(tmp_path / "instance")

def test_unmarked_cli(tmp_path):
    cli(tmp_path / "instance", "init")

@pytest.mark.serve
def test_marked_server(tmp_path):
    start_server(tmp_path / "instance")

def test_takes_the_browser_fixture(browser):
    pass
"""

SERVING = """
import os
import time
from pathlib import Path

import pytest
from hostcore.testing import start_server, stop_process_group

def serve(tmp_path):
    instance = tmp_path / "instance"
    instance.mkdir()
    (instance / "hostcore.toml").write_text('PLUGINS = ["fs", "tokens"]\\nSTORAGE = "fs"\\n')
    proc, _base, _port, _log = start_server(instance, workers=1)
    Path(os.environ["SERVER_PID_FILE"]).write_text(str(proc.pid))
    return proc

@pytest.fixture
def server(tmp_path):
    proc = serve(tmp_path)
    try:
        yield proc
    finally:
        stop_process_group(proc)

def test_with_a_fixture(server):
    time.sleep(600)

def test_that_never_stops_its_server(tmp_path):
    serve(tmp_path)
    time.sleep(600)
"""


def project(root: Path, tests: str) -> Path:
    """A folder with the tiers plugin in its conftest.py and ``tests`` as test_it.py."""
    root.mkdir()
    (root / "conftest.py").write_text(CONFTEST)
    (root / "test_it.py").write_text(tests)
    return root


def as_at_a_terminal() -> None:
    """Ctrl-C's SIGINT as a terminal delivers it: a run started in the background by a shell
    (``make test &``, a CI runner) inherits SIGINT ignored, and Python then never raises
    KeyboardInterrupt, so the interrupted run would wait out its test."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def pytest_cmd(root: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rootdir", str(root), "-W", "error", *args]


@pytest.mark.slow
def test_the_fast_tier_leaves_marked_tests_out_and_fails_unmarked_ones_that_start_a_server(tmp_path):
    root = project(tmp_path / "p", TIERS)
    run = subprocess.run(pytest_cmd(root, "--fast", "-rA", str(root)), capture_output=True, text=True, timeout=300, cwd=root)
    assert "2 failed, 1 passed, 2 deselected" in run.stdout, run.stdout + run.stderr
    assert "PASSED test_it.py::test_in_process" in run.stdout
    assert "FAILED test_it.py::test_unmarked_server" in run.stdout
    assert "this test starts hostcore serve, which the fast tier" in run.stdout
    assert "FAILED test_it.py::test_unmarked_cli" in run.stdout
    assert "this test starts the hostcore CLI in a process of its own, which the fast tier" in run.stdout
    assert "mark it @pytest.mark.serve" in run.stdout
    listed = subprocess.run(pytest_cmd(root, "--collect-only", "-q", "-m", "serve or browser", str(root)),
                            capture_output=True, text=True, timeout=300, cwd=root)  # fmt: skip
    assert listed.stdout.split("\n\n")[0].split() == ["test_it.py::test_marked_server", "test_it.py::test_takes_the_browser_fixture"]


def live_members(group: int) -> list[int]:
    """The processes of process group ``group`` that still run (zombies aside), from /proc."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


@pytest.mark.serve
@pytest.mark.parametrize(
    ("test", "signum"), [("test_that_never_stops_its_server", signal.SIGINT), ("test_with_a_fixture", signal.SIGTERM)]
)
def test_an_interrupted_run_leaves_no_server_behind(tmp_path, test, signum):
    """Ctrl-C (SIGINT to pytest's process group; the server has a group of its own, so it never
    sees it) in a test that never stops its server, or a SIGTERM (a CI timeout, ``timeout``)."""
    root = project(tmp_path / "p", SERVING)
    pid_file = tmp_path / "server.pid"
    run = subprocess.Popen(
        pytest_cmd(root, "-s", f"{root}/test_it.py::{test}"),
        cwd=root, env={**os.environ, "SERVER_PID_FILE": str(pid_file)}, start_new_session=True,
        preexec_fn=as_at_a_terminal,
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
    )  # fmt: skip
    server = None
    try:
        deadline = time.monotonic() + 120
        while not pid_file.exists() or not pid_file.read_text():
            assert run.poll() is None and time.monotonic() < deadline, run.communicate(timeout=30)[0]
            time.sleep(0.05)
        server = int(pid_file.read_text())
        assert live_members(server), "the server runs in a process group of its own"
        os.killpg(run.pid, signum)
        output = run.communicate(timeout=120)[0].decode(errors="replace")
        assert run.returncode != 0, output
        deadline = time.monotonic() + 5
        while live_members(server) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert live_members(server) == [], output
    finally:
        if run.poll() is None:
            os.killpg(run.pid, signal.SIGKILL)
            run.communicate()
        if server is not None:
            try:
                os.killpg(server, signal.SIGKILL)
            except ProcessLookupError:
                pass
