"""Recovery seen from outside: a real ``hostcore serve`` on a damaged instance and on a full disk.

Each test makes its own instance with the CLI (git storage, the embedded default), stops the
server, breaks the instance the way disks break, starts ``hostcore serve`` again (2 workers) and
drives it with the official MCP client.
"""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from hostcore import testing
from hostcore.app import build_host
from hostcore.indexes.indexer import LINK_GRAPH, SEARCH_INDEX
from hostcore.testing import fill_disk, small_disk, stop_process_group
from hostcore_tantivy import FORMAT as TANTIVY_FORMAT

from .conftest import mcp_session, ok, tool_error

pytestmark = pytest.mark.anyio
NOTES = [f"notes/n{i}" for i in range(40)]
SMALL_RESERVE = {"HOSTCORE_MIN_FREE_BYTES": str(1024 * 1024)}


class Wiki:
    """An instance made by ``hostcore init`` and a server on it, started and stopped at will."""

    def __init__(self, instance: Path, log: Path) -> None:
        self.instance = instance
        (self.token,) = re.findall(r"hc_[A-Za-z0-9_-]+", testing.cli(instance, "init", env=SMALL_RESERVE).stdout)
        self.proc: Any = None
        self.url = ""
        self.log = log  # outside the instance's disk, which may be full

    def serve(self) -> None:
        self.proc, base, _port, _log = testing.start_server(self.instance, 2, self.log, env=SMALL_RESERVE)
        self.url = base + "/_/mcp"

    def stop(self) -> None:
        stop_process_group(self.proc)

    def call(self, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
        async def run() -> list[Any]:
            async with mcp_session(self.url, self.token) as client:
                return [await client.call_tool(name, args) for name, args in calls]

        return anyio.run(run)

    def fill(self) -> None:
        self.serve()
        try:
            for result in self.call(*[("save_page", {"slug": s, "body": f"comet{i} tail [[{NOTES[(i + 1) % len(NOTES)]}]]\n" * 30}) for i, s in enumerate(NOTES)]):
                ok(result)
        finally:
            self.stop()


def eventually_ok(wiki: Wiki, name: str, args: dict[str, Any], timeout: float = 30) -> dict[str, Any]:
    """The tool's result once it succeeds; meanwhile it may only answer ``unavailable: ... being rebuilt``."""
    deadline = time.monotonic() + timeout
    while True:
        (result,) = wiki.call((name, args))
        if not result.is_error:
            return ok(result)
        error = tool_error(result)
        assert error["code"] == "unavailable" and "being rebuilt from storage after damage" in error["message"], error
        assert time.monotonic() < deadline, f"{name} still unavailable after {timeout} s: {error}"
        time.sleep(0.2)


def test_a_server_started_on_damaged_indexes_answers_and_rebuilds_them(tmp_path: Path) -> None:
    wiki = Wiki(tmp_path / "instance", tmp_path / "serve.log")
    wiki.fill()
    damaged = {
        "links.sqlite": lambda data: data[: len(data) // 2],
        "wiki/hostcore-history.sqlite": lambda data: data[:8192] + b"\xa5" * (len(data) - 16384) + data[-8192:],
    }
    for name, damage in damaged.items():
        path = wiki.instance / name
        path.write_bytes(damage(path.read_bytes()))
    segments = list((wiki.instance / "search" / f"tantivy-v{TANTIVY_FORMAT}").glob("*.term"))  # the embedded default's search index
    assert segments
    for segment in segments:
        segment.write_bytes(b"garbage" * 1000)
    wiki.serve()
    try:
        read, history = wiki.call(("read_page", {"slug": "notes/n7"}), ("page_history", {"slug": "notes/n7"}))
        assert ok(read)["body"].startswith("comet7 tail")
        assert len(ok(history)["commits"]) == 1
        hits = eventually_ok(wiki, "search", {"query": "comet7"})["hits"]
        assert [h["slug"] for h in hits] == ["notes/n7"]
        assert eventually_ok(wiki, "backlinks", {"slug": "notes/n7"})["backlinks"] == [{"slug": "notes/n6", "title": "notes/n6"}]
        (saved,) = wiki.call(("save_page", {"slug": "notes/after", "body": "zeppelin after the rebuild"}))
        ok(saved)
        (found,) = wiki.call(("search", {"query": "zeppelin"}))
        assert [h["slug"] for h in ok(found)["hits"]] == ["notes/after"]
    finally:
        wiki.stop()
    log = wiki.log.read_text()
    for name in [*damaged, f"search/tantivy-v{TANTIVY_FORMAT}"]:
        assert f"set aside as {Path(name).name}.damaged-" in log, log
    assert "search index: rebuilt from storage" in log and "link graph: rebuilt from storage" in log


def test_a_server_started_on_a_full_disk_serves_reads_and_refuses_writes_clearly(tmp_path: Path) -> None:
    with small_disk(tmp_path / "disk", 24) as disk:
        wiki = Wiki(disk / "instance", tmp_path / "serve.log")
        wiki.fill()
        fill_disk(disk)
        wiki.serve()
        try:
            read, found, links, saved = wiki.call(
                ("read_page", {"slug": "notes/n3"}),
                ("search", {"query": "comet3"}),
                ("backlinks", {"slug": "notes/n3"}),
                ("save_page", {"slug": "notes/new", "body": "zeppelin"}),
            )
            assert ok(read)["body"].startswith("comet3 tail")
            assert [h["slug"] for h in ok(found)["hits"]] == ["notes/n3"]
            assert [b["slug"] for b in ok(links)["backlinks"]] == ["notes/n2"]
            error = tool_error(saved)
            assert error["code"] == "unavailable" and "field" not in error, error
            assert error["message"].startswith("no space left on the wiki's disk; nothing was changed"), error
            (page,) = wiki.call(("read_page", {"slug": "notes/new"}))
            assert tool_error(page)["code"] == "not_found"
            (disk / "filler").unlink()
            (saved,) = wiki.call(("save_page", {"slug": "notes/new", "body": "zeppelin"}))
            ok(saved)
            (found,) = wiki.call(("search", {"query": "zeppelin"}))
            assert [h["slug"] for h in ok(found)["hits"]] == ["notes/new"]
        finally:
            wiki.stop()
        assert "the wiki's disk is full" in wiki.log.read_text()


def test_a_clean_stop_takes_the_last_saves_into_the_indexes(tmp_path: Path) -> None:
    """A server stopped cleanly (SIGTERM) right after its saves leaves the link graph and the search
    index reflecting them, though their background pass was not due yet: the next start, even on a
    full disk, finds them current."""
    wiki = Wiki(tmp_path / "instance", tmp_path / "serve.log")
    wiki.fill()  # 40 saves, then the server stopped at once
    host = build_host(wiki.instance, start=False)
    try:
        version = host.storage.version()
        recorded = {name: host.indexes[name].storage_version() for name in (LINK_GRAPH, SEARCH_INDEX)}
        assert recorded == {LINK_GRAPH: version, SEARCH_INDEX: version}
        assert set(NOTES) <= set(host.indexes.search.hashes())
    finally:
        host.close()
