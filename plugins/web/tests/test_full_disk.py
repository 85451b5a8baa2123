"""A full disk: the web pages' caches (compiled templates, rendered blocks) are skipped when they
cannot be written, never an error. A real filesystem is filled (:func:`hostcore.testing.small_disk`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from hostcore import SYSTEM, create_app
from hostcore.testing import fill_disk, small_disk

CONFIG = {"PLUGINS": ["git", "tokens", "sqlite", "web"], "STORAGE": "git", "SEARCH": "sqlite", "MIN_FREE_BYTES": 1024 * 1024}
BODY = "The zeppelin page, linking [[pub/other]].\n\n" + "".join(
    f"## Part {i}\n\nParagraph {i} of the page.\n\n" for i in range(40)
)


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Path]:
    with small_disk(tmp_path / "disk", 24) as folder:
        yield folder


def make_wiki(instance: Path) -> None:
    """A public namespace with two pages, made and closed before any page is shown (no cache yet)."""
    host = create_app(CONFIG, instance_path=instance).extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("pub", title="Public", public=True)
    wiki.save_page("pub/zeppelin", title="Zeppelin", body=BODY)
    wiki.save_page("pub/other", title="Other", body="Another page.\n")
    host.close()


def shown(client, path: str) -> str:
    answer = client.get(path)
    assert answer.status_code == 200, answer.text[:2000]
    return answer.text


def test_first_renders_on_a_full_disk_skip_the_caches(disk: Path, caplog: pytest.LogCaptureFixture) -> None:
    instance = disk / "instance"
    make_wiki(instance)
    app = create_app(CONFIG, instance_path=instance)
    try:
        fill_disk(disk)
        client = app.test_client()
        page = shown(client, "/pub/zeppelin")  # the first render: no compiled template, no rendered block kept
        assert "Paragraph 39 of the page." in page and 'href="/pub/other"' in page
        assert "Another page." in shown(client, "/pub/other")
        assert "Zeppelin" in shown(client, "/pub/")
        assert caplog.text.count("compiled templates not kept") == 1  # said once, in the log, not to readers
        (disk / "filler").unlink()
        assert "Paragraph 39 of the page." in shown(client, "/pub/zeppelin")
    finally:
        app.extensions["hostcore"].close()
