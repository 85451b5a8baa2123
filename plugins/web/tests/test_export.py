"""``hostcore export-site`` writes a folder a plain web server serves with no hostcore: pages,
the attachments and images they use, the namespace's image, sitemap and robots."""

from __future__ import annotations

import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hostcore import SYSTEM
from hostcore.testing.documents import png_image
from hostcore.testing.servers import cli, free_port, stop_process_group

HERO = png_image(64, 20)
PHOTO = png_image(20, 20, (10, 120, 60), (200, 230, 90))


def upload(host, slug: str, filename: str, data: bytes) -> None:
    wiki = host.wiki(SYSTEM)
    wiki.complete_upload(wiki.upload_attachment(slug, filename)["upload_url"].rsplit("/", 1)[1], data)


def configure(host) -> None:
    (host.instance_path / "hostcore.toml").write_text('PLUGINS = ["git", "tokens", "sqlite", "web"]\nSTORAGE = "git"\nSEARCH = "sqlite"\n')


@contextmanager
def plain_server(folder: Path) -> Iterator[str]:
    """``python -m http.server`` on loopback serving ``folder``: a web server that knows nothing of hostcore."""
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "--directory", str(folder)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(100):
            try:
                urllib.request.urlopen(base + "/", timeout=2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield base
    finally:
        stop_process_group(proc)


def get(url: str) -> tuple[int, str, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.headers.get_content_type(), response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, "", b""


@pytest.mark.slow
def test_an_exported_namespace_works_on_a_plain_web_server(host, admin, tmp_path):
    admin.save_page("pub/index", body="# Home\n\nSee [[pub/trips/paris]].\n\n![banner](/_/files/pub/index/hero.png)", title="Home")
    admin.save_page("pub/trips/paris", body=(
        "# Paris\n\n![the view](/_/files/pub/trips/paris/view.png)\n\n[The plan](/_/files/pub/trips/paris/plan.txt), "
        "[gone](/_/files/pub/trips/paris/gone.pdf), [elsewhere](/_/files/notes/x/secret.txt), back [[index|home]]."
    ), title="Paris")  # fmt: skip
    upload(host, "pub/index", "hero.png", HERO)
    upload(host, "pub/trips/paris", "view.png", PHOTO)
    upload(host, "pub/trips/paris", "plan.txt", b"Day 1: the tower.\n")
    admin.save_page("notes/x", body="private", title="X")
    upload(host, "notes/x", "secret.txt", b"not for export\n")
    admin.save_namespace("pub", admin.read_namespace("pub")["hash"], image="index/hero.png", export={
        "base_url": "https://example.org/pub/", "sitemap": True, "robots_allow": True, "links": "pretty"})  # fmt: skip
    configure(host)
    out = tmp_path / "site"
    result = cli(host.instance_path, "export-site", "--namespace", "pub", "--out", str(out))
    assert "pub: 2 pages, 3 files" in result.stdout
    assert not list(out.rglob("secret.txt")) and not list(out.rglob("gone.pdf"))
    with plain_server(out / "pub") as base:
        status, kind, index = get(base + "/")
        html = index.decode()
        assert status == 200 and kind == "text/html" and "id=\"home\">Home</h1>" in html
        assert '<img class="ns-banner" src="_files/index/hero.png" alt="">' in html
        assert '<meta property="og:image" content="https://example.org/pub/_files/index/hero.png">' in html
        assert '<img src="_files/index/hero.png" alt="banner">' in html
        assert 'class="wikilink" href="trips/paris/"' in html
        status, kind, page = get(base + "/trips/paris/")
        html = page.decode()
        assert status == 200 and "id=\"paris\">Paris</h1>" in html
        assert '<img src="../../_files/trips/paris/view.png" alt="the view">' in html
        assert 'href="../../_files/trips/paris/plan.txt"' in html and 'href="../../"' in html
        assert html.count('href="#"') == 2  # a missing attachment and another namespace's: nowhere
        assert 'class="ns-logo" src="../../_files/index/hero.png"' in html
        assert '<meta property="og:image" content="https://example.org/pub/_files/trips/paris/view.png">' in html
        assert 'href="../../_assets/web.css"' in html
        for path, data, media in [("/_files/trips/paris/view.png", PHOTO, "image/png"), ("/_files/index/hero.png", HERO, "image/png"),
                                  ("/_files/trips/paris/plan.txt", b"Day 1: the tower.\n", "text/plain")]:  # fmt: skip
            assert get(base + path) == (200, media, data)
        assert get(base + "/_assets/web.css")[0] == 200
        sitemap = get(base + "/sitemap.xml")[2].decode()
        assert "<loc>https://example.org/pub/</loc>" in sitemap and "<loc>https://example.org/pub/trips/paris/</loc>" in sitemap
        assert "index/" not in sitemap
        assert get(base + "/robots.txt")[2].decode() == "User-agent: *\nAllow: /\nSitemap: https://example.org/pub/sitemap.xml\n"


@pytest.mark.serve
def test_an_export_without_base_url_is_noindex_and_has_no_absolute_urls(host, admin, tmp_path):
    admin.save_page("notes/index", body="![i](/_/files/notes/index/i.png)", title="N")
    upload(host, "notes/index", "i.png", HERO)
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], image="index/i.png")
    configure(host)
    cli(host.instance_path, "export-site", "--namespace", "notes", "--out", str(tmp_path / "site"))
    with plain_server(tmp_path / "site" / "notes") as base:
        html = get(base + "/index.html")[2].decode()
        assert '<meta name="robots" content="noindex">' in html and "og:image" not in html and "canonical" not in html
        assert '<img src="_files/index/i.png" alt="i">' in html
        assert get(base + "/_files/index/i.png")[2] == HERO
        assert get(base + "/robots.txt")[2] == b"User-agent: *\nDisallow: /\n"
        assert get(base + "/sitemap.xml")[0] == 404
