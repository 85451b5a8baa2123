"""What the whole site shares: a favicon, static files that are cached and compressed, and error
pages with the site's header for people (JSON for programs)."""

from __future__ import annotations

import gzip
import re
from pathlib import Path

import hostcore_web

from hostcore import create_app, hookimpl

from .conftest import CONFIG

STATIC = Path(hostcore_web.__file__).parent / "static"
BROWSER = {"Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"}


def test_the_favicon_is_served_and_named(carol, visitor):
    icon = visitor.get("/favicon.ico")
    assert icon.status_code == 200 and icon.data.startswith(b"\x00\x00\x01\x00")  # an ICO file, not a redirect
    assert icon.headers["Cache-Control"] == "public, max-age=86400"
    page = carol.get("/notes/").text
    href = re.search(r'<link rel="icon" href="([^"]+)" type="image/svg\+xml">', page).group(1)
    svg = carol.get(href)
    assert svg.status_code == 200 and svg.mimetype == "image/svg+xml" and b"<svg" in svg.data


def test_static_files_carry_their_hash_and_are_kept_and_compressed(carol):
    page = carol.get("/notes/").text
    href = re.search(r'href="(/_/web/static/web\.css\?v=[0-9a-f]+)"', page).group(1)
    original = (STATIC / "web.css").read_bytes()

    zipped = carol.get(href, headers={"Accept-Encoding": "gzip, br"})
    assert zipped.status_code == 200 and zipped.headers["Content-Encoding"] == "gzip"
    assert gzip.decompress(zipped.data) == original and len(zipped.data) < len(original) / 2
    assert zipped.headers["Cache-Control"] == "public, max-age=31536000, immutable"
    assert "Accept-Encoding" in zipped.headers["Vary"]

    plain = carol.get(href, headers={"Accept-Encoding": "identity"})
    assert plain.data == original and "Content-Encoding" not in plain.headers
    assert plain.headers["ETag"] != zipped.headers["ETag"]  # two representations, two tags

    again = carol.get(href, headers={"Accept-Encoding": "gzip", "If-None-Match": zipped.headers["ETag"]})
    assert again.status_code == 304 and not again.data

    for unversioned in ("/_/web/static/web.css", "/_/web/static/web.css?v=0123456789abcdef"):
        answer = carol.get(unversioned)
        assert answer.data == original and answer.headers["Cache-Control"] == "no-cache", unversioned
    assert carol.get("/_/web/static/nothing.css").status_code == 404
    assert carol.get("/_/web/static/../views.py").status_code == 404


def test_an_unknown_path_gets_the_sites_error_page(carol, visitor):
    for client in (carol, visitor):
        page = client.get("/_/no-such-thing", headers=BROWSER)
        assert page.status_code == 404 and page.mimetype == "text/html"
        assert 'class="site"' in page.text and "Not found" in page.text  # the site's header and words
    signed_in = carol.get("/_/no-such-thing", headers=BROWSER).text
    assert "Sign out" in signed_in


def test_other_http_errors_of_a_page_are_the_sites_too(carol):
    refused = carol.put("/_/search", headers=BROWSER)
    assert refused.status_code == 405 and 'class="site"' in refused.text
    assert "GET" in refused.headers["Allow"]


def test_programs_keep_json_errors(carol):
    for path, headers in (("/_/no-such-thing", {"Accept": "application/json"}), ("/_/no-such-thing", {}),
                          ("/_/mcp/extra", BROWSER), ("/.well-known/nothing", BROWSER)):  # fmt: skip
        answer = carol.get(path, headers=headers)
        assert answer.status_code == 404 and answer.get_json()["error"]["code"] == "not_found", (path, headers)
    refused = carol.put("/_/health", headers=BROWSER)
    assert refused.status_code == 405 and refused.get_json()["error"]["status"] == 405


class Boom:
    @hookimpl
    def register_routes(self, app, host):
        @app.route("/_/boom")
        def boom():
            raise RuntimeError("a plugin's bug")


def test_a_crash_is_the_sites_error_page_too(tmp_path):
    app = create_app(CONFIG, instance_path=tmp_path / "instance", plugins=[Boom()])
    try:
        client = app.test_client()
        page = client.get("/_/boom", headers=BROWSER)
        assert page.status_code == 500 and 'class="site"' in page.text and "a plugin's bug" not in page.text
        program = client.get("/_/boom", headers={"Accept": "application/json"})
        assert program.status_code == 500 and program.get_json()["error"]["code"] == "internal_error"
    finally:
        app.extensions["hostcore"].close()
