"""A wiki moves git -> S3 -> git with ``hostcore export`` / ``hostcore import``, the way
docs/operators.md ("Moving a wiki between backends") tells an operator to: every page and
attachment byte-identical, tags, titles, namespace settings and the history with it."""

from pathlib import Path

import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from hostcore import create_app
from hostcore.testing import cli, create_token, start_server, stop_process_group
from hostcore.testing.migration import fill_wiki, snapshot
from hostcore.testing.s3 import S3Server, prefix_for

pytestmark = pytest.mark.anyio


GIT = 'PLUGINS = ["git", "tokens", "sqlite"]\nSTORAGE = "git"\nSEARCH = "sqlite"\n'


def s3_config(s3_server: S3Server, prefix: str) -> str:
    return (
        'PLUGINS = ["s3", "tokens", "sqlite"]\nSTORAGE = "s3"\nSEARCH = "sqlite"\n\n'
        f'[PLUGIN_CONFIG.s3]\nbucket = "{s3_server.bucket}"\nprefix = "{prefix}"\nendpoint_url = "{s3_server.url}"\n'
    )


def new_instance(folder: Path, config: str) -> Path:
    folder.mkdir()
    (folder / "hostcore.toml").write_text(config)
    return folder


def look(folder: Path) -> dict:
    host = create_app(instance_path=folder).extensions["hostcore"]
    try:
        return snapshot(host)
    finally:
        host.close()


def commit_ids(folder: Path) -> list[str]:
    host = create_app(instance_path=folder).extensions["hostcore"]
    try:
        return [revision.id for revision in host.storage.history(limit=1000)]
    finally:
        host.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def search_through_mcp(instance: Path, token: str, query: str) -> list[str]:
    """Serve ``instance`` and search it through the MCP endpoint; the slugs found."""
    proc, base, _port, _log = start_server(instance)
    try:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=60) as http:
            async with Client(streamable_http_client(base + "/_/mcp", http_client=http), mode="2026-07-28") as c:  # type: ignore[arg-type]
                found = await c.call_tool("search", {"query": query})
                assert not found.is_error, found.content
                return [hit["slug"] for hit in found.structured_content["hits"]]
    finally:
        stop_process_group(proc)


async def test_git_to_s3_to_git_keeps_every_byte_and_the_history(s3_server: S3Server, tmp_path: Path) -> None:
    source = new_instance(tmp_path / "old", GIT)
    host = create_app(instance_path=source).extensions["hostcore"]
    fill_wiki(host)
    host.close()
    token = create_token(source, "reader", ["read"])
    before = look(source)
    assert len(before["history"]) > 10 and any(name.endswith(".png") for name in before["files"])

    proc, _base, _port, _log = start_server(source)  # exported while it serves
    try:
        exported = cli(source, "export", str(tmp_path / "wiki-export"))
    finally:
        stop_process_group(proc)
    assert f"exported {len(before['files'])} files and {len(before['history'])} revisions" in exported.stdout

    on_s3 = new_instance(tmp_path / "new", s3_config(s3_server, prefix_for(tmp_path)))
    imported = cli(on_s3, "import", str(tmp_path / "wiki-export"))
    assert "history: kept: every change replayed with its author, email, time, message and moves" in imported.stdout
    # the tokens, copied while the old wiki may still be using them, as docs/operators.md does it
    cli(source, "backup", str(tmp_path / "shared-backup.sqlite"))
    cli(on_s3, "restore", str(tmp_path / "shared-backup.sqlite"))
    assert await search_through_mcp(on_s3, token, "roadmap") == ["team/the-roadmap"]
    assert look(on_s3) == before  # files, titles, tags, namespaces, every change, each page's history

    cli(on_s3, "export", str(tmp_path / "from-s3"))
    back = new_instance(tmp_path / "back", GIT)
    cli(back, "import", str(tmp_path / "from-s3"))
    assert look(back) == before
    assert commit_ids(back) == commit_ids(source)  # the very same commits, rebuilt from S3's log
