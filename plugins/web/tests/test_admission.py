"""The site's pages are let through as every HTTP route of the wiki is: a foreign Host or Origin is
refused, and each page and file counts against the caller's ``requests`` limit (a person by name,
a visitor by address), with 429 and Retry-After over it."""

from __future__ import annotations

import html

import pytest

from hostcore import SYSTEM, create_app, hookimpl
from hostcore.testing import sign_in_client

from .conftest import CONFIG, People

HTML = {"Accept": "text/html,application/xhtml+xml"}


@pytest.fixture
def limited(tmp_path):
    """The site with a limit of 3 requests a minute per principal."""
    app = create_app({**CONFIG, "RATE_LIMITS": {"requests": "3/minute"}}, instance_path=tmp_path / "instance", plugins=[People()])
    host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("pub", title="Public", public=True)
    host.wiki(SYSTEM).save_page("pub/index", body="Welcome")
    yield app
    host.close()


def visitor_at(app, address: str):
    client = app.test_client()
    client.environ_base["REMOTE_ADDR"] = address
    return client


def test_a_visitor_is_counted_by_address_and_told_when_to_come_back(limited):
    ann = visitor_at(limited, "192.0.2.1")
    assert [ann.get("/pub/index", headers=HTML).status_code for _ in range(3)] == [200, 200, 200]
    over = ann.get("/pub/index", headers=HTML)
    assert over.status_code == 429 and 59 <= int(over.headers["Retry-After"]) <= 60
    assert over.mimetype == "text/html" and "Too many requests: address 192.0.2.1 may make 3 per minute" in over.text
    program = ann.get("/pub/index", headers={"Accept": "application/json"})
    assert program.status_code == 429 and program.json["error"]["code"] == "rate_limited"
    assert program.json["error"]["retry_after"] == int(program.headers["Retry-After"])
    assert visitor_at(limited, "192.0.2.2").get("/pub/index").status_code == 200  # another address, another count


def test_a_person_is_counted_by_name_whatever_browser_they_use(limited):
    first, second = visitor_at(limited, "192.0.2.1"), visitor_at(limited, "192.0.2.2")
    sign_in_client(first, "carol")
    sign_in_client(second, "carol")
    assert [c.get("/pub/index").status_code for c in (first, second, first)] == [200, 200, 200]
    over = second.get("/", headers=HTML)
    assert over.status_code == 429 and "person:carol may make 3 per minute" in over.text
    assert visitor_at(limited, "192.0.2.1").get("/pub/index").status_code == 200  # a visitor at that address is not carol


def test_attachments_count_and_assets_do_not(limited):
    host = limited.extensions["hostcore"]
    ticket = host.wiki(SYSTEM).upload_attachment("pub/index", "a.txt")
    host.wiki(SYSTEM).complete_upload(ticket["upload_url"].rsplit("/", 1)[1], b"hello")
    ann = visitor_at(limited, "192.0.2.1")
    assert [ann.get(path).status_code for path in ("/_/web/files/pub/index/a.txt", "/pub/index", "/_/web/files/pub/index/a.txt")] == [200] * 3
    assert ann.get("/_/web/static/web.css").status_code == 200
    assert ann.get("/favicon.ico").status_code == 200
    assert ann.get("/_/web/highlight.css").status_code == 200
    assert ann.get("/_/web/files/pub/index/a.txt").status_code == 429


@pytest.mark.parametrize("path", ["/", "/pub/index", "/_/search?q=x", "/_/web/static/web.css", "/_/edit/pub/index"])
def test_a_foreign_host_is_refused_on_every_route_of_the_site(app, path):
    refused = app.test_client().get(path, headers={"Host": "evil.example", **HTML})
    assert refused.status_code == 421 and "Host 'evil.example' is not served here; add it to ALLOWED_HOSTS" in html.unescape(refused.text)
    assert app.test_client().get(path, headers={"Host": "localhost:8080"}).status_code in (200, 302, 404)  # served: no such page


def test_a_foreign_origin_is_refused_and_a_listed_or_opaque_one_is_not(tmp_path):
    app = create_app({**CONFIG, "ALLOWED_ORIGINS": ["https://docs.example"]}, instance_path=tmp_path / "instance", plugins=[People()])
    app.extensions["hostcore"].wiki(SYSTEM).save_namespace("pub", title="Public", public=True)
    client = app.test_client()
    try:
        refused = client.get("/pub/", headers={"Origin": "https://evil.example", "Accept": "application/json"})
        assert refused.status_code == 403 and refused.json["error"] == {
            "code": "forbidden", "message": "Origin 'https://evil.example' is not allowed; an operator can add it to ALLOWED_ORIGINS"
        }
        for origin in ("https://docs.example", "http://localhost:8080", "null"):  # listed, loopback, opaque (after a redirect)
            assert client.get("/pub/", headers={"Origin": origin}).status_code == 200, origin
    finally:
        app.extensions["hostcore"].close()


class OtherPages:
    """A third-party plugin's page, admitted the way the docs say."""

    @hookimpl
    def register_routes(self, app):
        import hostcore

        @app.route("/_/other")
        def other():
            hostcore.admit_page()
            return "other page"


def test_another_plugins_page_is_admitted_by_admit_page(tmp_path):
    app = create_app(
        {"PLUGINS": ["fs", "tokens"], "STORAGE": "fs", "RATE_LIMITS": {"requests": "1/minute"}},
        instance_path=tmp_path / "instance", plugins=[OtherPages()],
    )  # fmt: skip
    client = app.test_client()
    try:
        assert client.get("/_/other", headers={"Host": "evil.example"}).status_code == 421
        assert client.get("/_/other").text == "other page"
        assert client.get("/_/other").status_code == 429
    finally:
        app.extensions["hostcore"].close()
