"""docs/web.md lists every page a person reaches on an instance made by ``hostcore init`` (the web
plugin's and the sign-in and OAuth pages), and shows the screenshots the browser tests take."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from hostcore import create_app
from hostcore.testing import cli

DOCS = Path(__file__).resolve().parents[3] / "docs"
DOCUMENTED = {
    # endpoint: how docs/web.md writes its path
    "web.home": "/",
    "web.namespace_redirect": "/<namespace>",
    "web.namespace_index": "/<namespace>/",
    "web.read": "/<namespace>/<page>",
    "web.all_pages": "/_/pages/<namespace>",
    "web.attachment": "/_/web/files/<namespace>/<page>/<filename>",
    "web.search": "/_/search",
    "web.changes": "/_/changes",
    "web.history": "/_/history/<namespace>/<page>",
    "web.diff": "/_/diff/<namespace>/<page>",
    "web.edit": "/_/edit/<namespace>/<page>",
    "web.edit_section": "/_/edit-section/<namespace>/<page>",
    "web.new": "/_/new",
    "web.move": "/_/move/<namespace>/<page>",
    "web.delete": "/_/delete/<namespace>/<page>",
    "web.account": "/_/account",
    "web.page_names": "/_/web/page-names",
    "web.pdf_view": "/_/web/pdf/<namespace>/<page>/<filename>",
    "web.tokens": "/_/account/tokens",
    "web.sessions": "/_/account/sessions",
    "web.password": "/_/account/password",
    "web.activity": "/_/account/activity",
    "web.blame": "/_/blame/<namespace>/<page>",
    "web.review_list": "/_/review",
    "web.review_request": "/_/review/<id>",
    "web.namespaces": "/_/namespaces",
    "web.new_namespace": "/_/namespaces/new",
    "web.namespace_settings": "/_/namespaces/<namespace>/settings",
    "web.delete_namespace": "/_/namespaces/<namespace>/delete",
    "accounts.login": "/_/login",
    "hostcore_oauth.apps": "/_/apps",
    "hostcore_oauth.authorize": "/_/oauth/authorize",
}
NOT_PAGES = {"web.static", "web.favicon", "web.highlight_css", "accounts.static", "hostcore_oauth.static", "static"}


@pytest.mark.serve
def test_every_page_a_person_reaches_is_in_docs_web_md(tmp_path):
    cli(tmp_path / "instance", "init")
    app = create_app(instance_path=tmp_path / "instance")
    try:
        pages = {rule.endpoint for rule in app.url_map.iter_rules() if "GET" in rule.methods and rule.endpoint not in NOT_PAGES
                 and rule.endpoint.startswith(("web.", "accounts.", "hostcore_oauth.apps", "hostcore_oauth.authorize"))}  # fmt: skip
    finally:
        app.extensions["hostcore"].close()
    assert pages == set(DOCUMENTED), f"document these in docs/web.md and name them in DOCUMENTED: {pages ^ set(DOCUMENTED)}"
    text = (DOCS / "web.md").read_text()
    missing = [path for path in DOCUMENTED.values() if not re.search(f"`{re.escape(path)}[`?#]", text)]
    assert not missing, f"docs/web.md does not list {missing}"


def test_docs_web_md_shows_each_screenshot_it_has():
    shown = set(re.findall(r"\]\(web/([\w-]+\.png)\)", (DOCS / "web.md").read_text()))
    kept = {p.name for p in (DOCS / "web").glob("*.png")}
    assert shown == kept, f"shown but missing: {shown - kept}; kept but not shown: {kept - shown}"
    browser_tests = "".join(p.read_text() for p in Path(__file__).parent.glob("test_*browser.py"))
    taken = set(re.findall(r'"(web-[\w-]+)"', browser_tests))
    assert {name.removesuffix(".png") for name in kept} <= taken, "every screenshot in docs/web/ comes from a browser test"
