"""The test tiers, as a pytest plugin: markers for the tests that start servers or a browser, and
the fast tier that leaves them out (``pytest --fast``; ``make check`` runs it).

Load it from the ``conftest.py`` at the root of your project::

    pytest_plugins = ["hostcore.testing.tiers"]

- A test is marked by what it starts: ``serve`` (``hostcore serve`` or other processes of the
  wiki), ``browser`` (a headless Chromium), ``s3`` (moto's S3 server), ``redis`` (a
  ``redis-server``), ``slow`` (processes racing, fuzzing). Tests that take the ``browser`` or
  ``s3_server`` fixture are marked for you; mark the others (``@pytest.mark.serve``, or
  ``pytestmark = pytest.mark.serve`` for a module). The conformance suites mark their tests of
  writers in several processes ``slow``.
- ``--fast`` deselects the marked tests, and the helpers of :mod:`hostcore.testing` refuse to
  start a server, Redis or a browser meanwhile: an unmarked test that starts one fails, naming
  the marker (``slow`` is a judgement: nothing checks it).
- Servers the helpers started are stopped when the session ends, however it ends: a SIGTERM
  interrupts the run as Ctrl-C does (teardowns run), and whatever is left is stopped at exit.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

import pytest

from hostcore.testing.servers import refuse, stop_all_process_groups

MARKERS = {
    "serve": "starts hostcore serve (gunicorn) or other processes of the wiki (the CLI too); left out by --fast",
    "browser": "drives a headless Chromium; left out by --fast",
    "s3": "talks to an S3 server (moto's, started for the session); left out by --fast",
    "redis": "starts a real redis-server; left out by --fast",
    "slow": "runs processes at once (writers racing, a killed writer) or fuzzes: slow in any tier; left out by --fast",
}
FIXTURES = {"browser": "browser", "s3_server": "s3"}
"""Fixtures of hostcore.testing that start what a marker stands for: a test taking one is marked."""

_previous_handler = pytest.StashKey[Any]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fast",
        action="store_true",
        help=f"the fast tier: leave out the tests marked {', '.join(MARKERS)}, and fail a test that starts one unmarked",
    )


def pytest_configure(config: pytest.Config) -> None:
    known = {line.split(":", 1)[0].strip() for line in config.getini("markers")}
    for name, help_ in MARKERS.items():
        if name not in known:
            config.addinivalue_line("markers", f"{name}: {help_}")
    refuse(set(MARKERS) if config.getoption("fast") else set())
    if threading.current_thread() is threading.main_thread():  # only there can a handler be set
        config.stash[_previous_handler] = signal.signal(signal.SIGTERM, _interrupt)


def _interrupt(signum: int, _frame: FrameType | None) -> None:
    """SIGTERM (a CI timeout, ``timeout``, ``kill``) ends the run as Ctrl-C does: pytest tears the
    fixtures down, so no server outlives it (by default SIGTERM ends the process on the spot)."""
    raise KeyboardInterrupt(f"signal {signum}")


def pytest_itemcollected(item: pytest.Item) -> None:
    for fixture, marker in FIXTURES.items():
        if fixture in getattr(item, "fixturenames", ()):
            item.add_marker(marker)


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """With --fast, deselect the marked tests (after every conftest had its say on the marks)."""
    if not config.getoption("fast"):
        return
    kept: list[pytest.Item] = []
    left_out: list[pytest.Item] = []
    for item in items:
        (left_out if any(item.get_closest_marker(name) for name in MARKERS) else kept).append(item)
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = kept


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish() -> None:
    """After the fixtures' own teardowns: stop the servers a test started and never stopped."""
    stop_all_process_groups()


def pytest_unconfigure(config: pytest.Config) -> None:
    refuse(set())
    if _previous_handler in config.stash:
        signal.signal(signal.SIGTERM, config.stash[_previous_handler])
