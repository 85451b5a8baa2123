"""The web pages in a real headless Chromium against a real ``hostcore serve`` (gunicorn, 2 workers)
on an instance made by ``hostcore init`` (the embedded default: git, SQLite search, tokens,
accounts, web). Screenshots go to test-artifacts/web-*.png (docs/web.md shows them)."""

from __future__ import annotations

import base64
import hashlib
import http.cookiejar
import json
import re
import secrets
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlsplit

import hostcore_web
import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.wait import WebDriverWait

from hostcore import SYSTEM, create_app
from hostcore.testing import cli, create_token, start_server, stop_process_group
from hostcore.testing.documents import png_image

from .editing_in_chromium import type_in_editor
from .test_export import plain_server

MERMAID = Path(hostcore_web.__file__).parent / "static" / "vendor" / "mermaid.min.js"

GUIDE = """# Guide

Start with [[notes/setup]], then read [[plan|the plan]] (not written yet).

## Install

```python
def greet(name: str) -> str:
    return f"hello {name}"
```

## How it fits

```mermaid
graph LR
  Browser --> Web[web plugin] --> Service[service layer] --> Storage[(git)]
```
"""


@dataclass
class Served:
    base: str
    password: str
    token: str  # an admin token made on the command line, for changes "by someone else"
    instance: Path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    instance = tmp_path_factory.mktemp("web-browser") / "instance"
    init = cli(instance, "init")
    password = re.search(r"admin, password \(shown once; keep it safe\): (\w+)", init.stdout).group(1)
    app = create_app(instance_path=instance)
    host = app.extensions["hostcore"]
    admin = host.wiki(SYSTEM)
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], title="Team notes", description="How we work",
                         widgets=["pinned", "pages", "tags", "log", "health"], tree=["guide", "setup"])  # fmt: skip
    admin.save_namespace("pub", title="The Gazette", public=True, skin="newsprint", palette="flexoki",
                         description="News for everyone")  # fmt: skip
    index = admin.list_pages("notes")["pages"]
    hash_ = admin.read_page("notes/index")["hash"] if any(p["slug"] == "notes/index" for p in index) else None
    admin.save_page("notes/index", hash_, body="Welcome. Start at [[guide]].", title="Team notes")
    admin.save_page("notes/guide", body=GUIDE, title="Guide", tags=["howto", "start"], pin=True)
    admin.save_page("notes/setup", body="# Setup\n\nInstall **hostcore**, then read [[guide]].", title="Setup", tags=["howto"])
    admin.save_page("notes/race", body="Line one.\nLine two.\n", title="Race")
    admin.save_page("pub/index", body="# Front page\n\nNews for everyone. See [[weather]].", title="The Gazette")
    admin.save_page("pub/weather", body="Sunny, with a chance of **wiki**.\n\n![The forecast](/_/files/pub/weather/map.png)",
                    title="Weather")  # fmt: skip
    for slug, filename, image in [("pub/index", "hero.png", png_image(960, 160)), ("pub/weather", "map.png", png_image(240, 120, (20, 120, 220), (250, 250, 250)))]:  # fmt: skip
        admin.complete_upload(admin.upload_attachment(slug, filename)["upload_url"].rsplit("/", 1)[1], image)
    admin.save_namespace("pub", admin.read_namespace("pub")["hash"], image="index/hero.png")
    admin.save_namespace("journal", title="Journal", widgets=["calendar", "prev-entries", "writing-stats"],
                         new={"template": "## Done\n\n## Next\n", "slug": "{date}"})  # fmt: skip
    host.close()
    token = create_token(instance, "other-writer", ["admin"])
    proc, base, _port, _log = start_server(instance)
    try:
        yield Served(base, password, token, instance)
    finally:
        stop_process_group(proc)


def mcp(base: str, token: str, tool: str, arguments: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One stateless ``tools/call`` over HTTP: (status, JSON-RPC result or {})."""
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}})
    request = urllib.request.Request(base + "/_/mcp", body.encode(), method="POST", headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    })  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            text = response.read().decode()
            status = response.status
    except urllib.error.HTTPError as exc:
        return exc.code, {"error": exc.read().decode()[:500], "auth": exc.headers.get("WWW-Authenticate")}
    payload = json.loads(text.split("data: ", 1)[1] if text.startswith("event:") else text)
    return status, payload["result"]["structuredContent"]


def sign_in(browser: Any, served: Served, next_path: str = "/") -> None:
    browser.get(f"{served.base}/_/login?next={next_path}")
    browser.find_element(By.ID, "name").send_keys("admin")
    browser.find_element(By.ID, "password").send_keys(served.password)
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]:not(.secondary)"))


def loaded(browser: Any, selector: str) -> int:
    """The natural width of the image ``selector`` finds once it has loaded (0: it did not load)."""
    return WebDriverWait(browser, 10).until(lambda d: d.execute_script(
        "const i = document.querySelector(arguments[0]); return i && i.complete ? i.naturalWidth || -1 : 0;", selector))  # fmt: skip


def test_a_public_namespace_reads_signed_out_and_a_private_one_refuses(browser, served):
    browser.get(served.base + "/pub/")
    assert "News for everyone" in browser.find_element(By.TAG_NAME, "main").text
    assert "skin-newsprint" in browser.find_element(By.TAG_NAME, "body").get_attribute("class")
    assert loaded(browser, "img.ns-banner") == 960 and loaded(browser, "img.ns-logo") == 960  # the namespace's image
    browser.screenshot("web-public-namespace")
    browser.get(served.base + "/pub/weather")
    assert browser.find_element(By.TAG_NAME, "h1").text.upper() == "WEATHER"
    assert loaded(browser, ".body img") == 240  # an attachment shown in the page, to a visitor of a public namespace
    og = browser.find_element(By.CSS_SELECTOR, "meta[property='og:image']").get_attribute("content")
    assert og == served.base + "/_/web/files/pub/weather/map.png"  # the page's own image is its link preview
    browser.screenshot("web-public-page")
    assert not browser.find_elements(By.LINK_TEXT, "Edit")
    browser.get(served.base + "/notes/guide")
    assert browser.current_url.startswith(served.base + "/_/login?next=")
    assert "Guide" not in browser.page_source and "greet" not in browser.page_source
    browser.get(served.base + "/notes/no-such-page")
    assert browser.current_url.startswith(served.base + "/_/login?next=")  # the same answer: nothing leaks
    browser.screenshot("web-private-refused")


def test_read_a_page_with_links_and_code(browser, served):
    sign_in(browser, served, "/notes/guide")
    assert browser.current_url == served.base + "/notes/guide"
    body = browser.find_element(By.CSS_SELECTOR, ".body")
    link = body.find_element(By.LINK_TEXT, "notes/setup")
    assert "missing" not in link.get_attribute("class")
    assert "missing" in body.find_element(By.LINK_TEXT, "the plan").get_attribute("class")
    assert body.find_element(By.CSS_SELECTOR, "pre.highlight .k").text == "def"
    assert browser.find_element(By.ID, "install").tag_name == "h2"
    browser.click_and_wait(link)
    assert browser.find_element(By.TAG_NAME, "h1").text == "Setup"


@pytest.mark.skipif(not MERMAID.exists(), reason=f"{MERMAID.name} was not fetched (`make install` fetches it with npm)")
def test_a_mermaid_diagram_is_drawn(browser, served):
    sign_in(browser, served, "/notes/guide")
    svg = WebDriverWait(browser, 20).until(lambda d: d.find_elements(By.CSS_SELECTOR, "pre.mermaid svg"))
    assert "Storage" in svg[0].text or svg[0].size["width"] > 100
    browser.screenshot("web-page")


def test_open_a_search_hits_url_and_search(browser, served):
    status, found = mcp(served.base, served.token, "search", {"query": "greet"})
    assert status == 200 and found["results"][0]["url"] == served.base + "/notes/guide"
    sign_in(browser, served, "/")
    browser.get(found["results"][0]["url"])
    assert browser.find_element(By.TAG_NAME, "h1").text == "Guide"
    browser.get(served.base + "/_/search")
    browser.find_element(By.ID, "q").send_keys("tag:howto install")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.searchform button"))
    hits = browser.find_elements(By.CSS_SELECTOR, ".hits li > a")
    assert {h.text for h in hits} == {"Guide", "Setup"}
    assert browser.find_elements(By.CSS_SELECTOR, ".snippet mark")
    browser.screenshot("web-search")
    browser.click_and_wait(hits[0])
    assert browser.find_element(By.TAG_NAME, "h1").text in ("Guide", "Setup")


def test_web_search_gives_the_answer_mcp_search_gives(browser, served):
    """Attachment text that MCP search finds (its ChatGPT-style results) is on the web search page
    too, from the same service call; and nothing found is a sentence, not a numbered item."""
    status, ticket = mcp(served.base, served.token, "upload_attachment", {"slug": "notes/setup", "filename": "runbook.txt"})
    assert status == 200
    with httpx.Client(timeout=60) as http:
        posted = http.post(ticket["upload_url"], files={"file": ("runbook.txt", b"Feed the quokka twice a day; it naps at noon.")})
    assert posted.status_code == 201
    deadline = time.monotonic() + 60
    while True:  # the passage index takes the upload in the background
        status, found = mcp(served.base, served.token, "search", {"query": "quokka"})
        if "/_/files/notes/setup/runbook.txt" in [r["id"] for r in found["results"]] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert found["hits"] == [] and [r["id"] for r in found["results"]] == ["/_/files/notes/setup/runbook.txt"]
    sign_in(browser, served, "/")
    browser.get(served.base + "/_/search?q=quokka")
    shown = browser.find_elements(By.CSS_SELECTOR, "main li:not(nav.crumbs li) > a")
    assert [a.text for a in shown] == ["runbook.txt"] and not browser.find_elements(By.CSS_SELECTOR, ".nothing")
    assert "attached to notes/setup" in browser.find_element(By.CSS_SELECTOR, "ul.attachments").text
    browser.screenshot("web-search-attachments")
    browser.click_and_wait(shown[0])
    assert "Feed the quokka" in browser.find_element(By.TAG_NAME, "body").text
    browser.get(served.base + "/_/search?q=zzqxjv")
    assert browser.find_element(By.CSS_SELECTOR, "main p.nothing").text == "Nothing found."
    assert not browser.find_elements(By.CSS_SELECTOR, "main li:not(nav.crumbs li)")


def test_browse_a_namespace_with_widgets(browser, served):
    sign_in(browser, served, "/notes/")
    widgets = [w.get_attribute("class").split("widget-")[1] for w in browser.find_elements(By.CSS_SELECTOR, "section.widget")]
    assert widgets == ["pinned", "pages", "tags", "log", "health"]
    pages = [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".widget-pages a")]
    assert pages[:2] == ["Guide", "Setup"]  # the tree order first
    assert [a.text for a in browser.find_elements(By.CSS_SELECTOR, ".widget-pinned a")] == ["Guide"]
    browser.screenshot("web-namespace")
    browser.get(served.base + "/")
    browser.screenshot("web-home")
    browser.get(served.base + "/_/changes")
    assert "hostcore saved Guide" in browser.find_element(By.TAG_NAME, "main").text  # in words, the page by its title
    assert browser.find_elements(By.CSS_SELECTOR, "main a[href='/notes/guide']")
    browser.screenshot("web-changes")


def test_edit_lose_a_race_then_merge(browser, served):
    sign_in(browser, served, "/_/edit/notes/race")
    type_in_editor(browser, "Line one, edited in the browser.\nLine two.\n", replace=True)
    browser.screenshot("web-edit")
    # someone else saves first, over MCP
    _status, page = mcp(served.base, served.token, "read_page", {"slug": "notes/race"})
    mcp(served.base, served.token, "save_page", {"slug": "notes/race", "basehash": page["hash"], "body": "Line one.\nLine two, by an assistant.\n"})
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.editor button[type=submit]"))
    assert "Someone else changed" in browser.find_element(By.TAG_NAME, "h1").text
    assert "by an assistant" in browser.find_element(By.ID, "theirs").text
    assert "edited in the browser" in browser.find_element(By.ID, "mine").text
    _status, now = mcp(served.base, served.token, "read_page", {"slug": "notes/race"})
    assert now["body"] == "Line one.\nLine two, by an assistant.\n"  # nothing overwritten
    browser.screenshot("web-conflict")
    merged = browser.find_element(By.ID, "body")
    merged.clear()
    merged.send_keys("Line one, edited in the browser.\nLine two, by an assistant.\n")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.editor button[type=submit]"))
    assert browser.current_url == served.base + "/notes/race"
    _status, now = mcp(served.base, served.token, "read_page", {"slug": "notes/race"})
    assert now["body"] == "Line one, edited in the browser.\nLine two, by an assistant.\n"


def test_history_diff_and_restore(browser, served):
    mcp(served.base, served.token, "save_page", {"slug": "notes/hist", "body": "First words.\n", "title": "Hist"})
    _s, page = mcp(served.base, served.token, "read_page", {"slug": "notes/hist"})
    mcp(served.base, served.token, "save_page", {"slug": "notes/hist", "basehash": page["hash"], "body": "Second words.\n"})
    sign_in(browser, served, "/_/history/notes/hist")
    assert len(browser.find_elements(By.CSS_SELECTOR, "table.history tbody tr")) == 2
    browser.screenshot("web-history")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form[action$='/_/diff/notes/hist'] button"))
    assert browser.find_element(By.CSS_SELECTOR, ".d-del").text == "-First words."
    assert browser.find_element(By.CSS_SELECTOR, ".d-add").text == "+Second words."
    assert browser.find_element(By.CSS_SELECTOR, ".d-del del").text == "First"  # the word that changed
    browser.screenshot("web-diff")
    browser.click_and_wait(browser.find_element(By.LINK_TEXT, "Side by side"))
    assert [td.text for td in browser.find_elements(By.CSS_SELECTOR, "table.diff.split td.d-del, table.diff.split td.d-add")] == [
        "First words.", "Second words."]  # fmt: skip
    assert browser.find_element(By.CSS_SELECTOR, "table.diff.split td.d-add ins").text == "Second"
    browser.screenshot("web-diff-split")
    browser.back()
    browser.back()
    browser.click_and_wait(browser.find_element(By.ID, "blame-link"))
    firsts = [row.find_element(By.CSS_SELECTOR, "td.author").text for row in browser.find_elements(By.CSS_SELECTOR, "#blame tr.first")]
    assert firsts == ["other-writer", "other-writer"]  # the first save wrote the settings, the second the text
    assert browser.find_elements(By.CSS_SELECTOR, "#blame td.text")[-1].text == "Second words."
    browser.screenshot("web-blame")
    browser.back()
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "ul.restore button"))
    assert browser.current_url == served.base + "/notes/hist"
    assert "First words." in browser.find_element(By.CSS_SELECTOR, ".body").text


def test_create_a_token_use_it_over_mcp_and_revoke_it(browser, served):
    sign_in(browser, served, "/_/account/tokens")
    browser.find_element(By.ID, "token-name").send_keys("browser-made")
    browser.find_element(By.ID, "token-ns").send_keys("notes")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form[action$='/_/account/tokens'] button"))
    token = browser.find_element(By.ID, "new-token").get_attribute("value")
    assert token.startswith("hc_")
    browser.screenshot("web-token-created")
    status, page = mcp(served.base, token, "read_page", {"slug": "notes/setup"})
    assert status == 200 and page["title"] == "Setup", page
    status, listed = mcp(served.base, token, "list_namespaces", {})
    assert [n["name"] for n in listed["namespaces"]] == ["notes"]
    browser.get(served.base + "/_/account/tokens")
    assert token not in browser.page_source  # shown once
    # the admin sees every token: the first one `hostcore init` printed and the fixture's, made on the command line
    owners = {row.find_element(By.TAG_NAME, "td").text: row.find_element(By.CSS_SELECTOR, "td.owner").text
              for row in browser.find_elements(By.CSS_SELECTOR, "table.tokens tbody tr")}  # fmt: skip
    assert owners == {"admin": "none (command line)", "other-writer": "none (command line)", "browser-made": "you"}
    assert browser.find_element(By.LINK_TEXT, "connected apps").get_attribute("href") == served.base + "/_/apps"
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "button[aria-label='Revoke browser-made']"))
    assert "browser-made" not in browser.find_element(By.CSS_SELECTOR, "table.tokens").text
    browser.screenshot("web-tokens")
    assert mcp(served.base, token, "read_page", {"slug": "notes/setup"})[0] == 401


def test_the_activity_page_shows_an_assistants_calls_and_sessions(browser, served):
    """Issue 26 #4 in Chromium against two gunicorn workers: the admin's activity page lists another
    principal's MCP calls (tool, page, outcome, client) and groups them into an agent session; the
    admin's own page views are there too."""
    assert mcp(served.base, served.token, "read_page", {"slug": "notes/setup"})[0] == 200
    refused = httpx.post(served.base + "/_/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "read_page", "arguments": {"slug": "notes/absent"}}}, headers={
        "Authorization": f"Bearer {served.token}", "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18", "User-Agent": "Python-urllib/3"})  # fmt: skip
    assert refused.json()["result"]["isError"]  # a tool error: not_found
    sign_in(browser, served, "/_/account/activity?principal=other-writer")
    rows = logged(browser, served.base + "/_/account/activity?principal=other-writer", lambda rows: sum("read_page" in r for r in rows) >= 2)
    reads = [r for r in rows if "read_page" in r]
    assert any("notes/setup" in r and r.split()[-2] == "ok" for r in reads), rows
    assert any("notes/absent" in r and "not_found" in r for r in reads), rows
    assert all("other-writer" in r and "Python-urllib" in r for r in reads), rows
    sessions = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#agent-sessions tbody tr")]
    assert any("other-writer" in r and "token" in r for r in sessions), sessions
    browser.screenshot("web-activity")
    assert logged(browser, served.base + "/_/account/activity?principal=admin&tool=web:activity",
                  lambda rows: any("web:activity" in r for r in rows))  # fmt: skip


def logged(browser: Any, url: str, enough: Any) -> list[str]:
    """The rows of the activity page at ``url`` once ``enough(rows)`` holds, reloading meanwhile
    (another worker writes its records within half a second), or after 10 seconds."""
    deadline = time.monotonic() + 10
    while True:
        browser.get(url)
        rows = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "#activity-log tbody tr")]
        if enough(rows) or time.monotonic() > deadline:
            return rows
        time.sleep(0.3)


def test_screens_for_the_docs(browser, served):
    """The remaining pages a person reaches, for docs/web.md."""
    sign_in(browser, served, "/_/new?namespace=notes")
    browser.screenshot("web-new")
    for path, name in [("/_/move/notes/setup", "web-move"), ("/_/delete/notes/setup", "web-delete"),
                       ("/_/pages/notes", "web-all-pages"), ("/_/changes/notes", "web-changes-namespace"),
                       ("/notes/nothing-here", "web-missing"), ("/notes/guide?section=Install", "web-section")]:  # fmt: skip
        browser.get(served.base + path)
        assert browser.find_element(By.TAG_NAME, "h1").text
        browser.screenshot(name)


def test_a_journal_new_page_named_by_new_slug_lands_on_the_calendar(browser, served):
    before = date.today()
    sign_in(browser, served, "/_/new?namespace=journal")
    named = browser.find_element(By.ID, "name").get_attribute("value")  # new.slug = "{date}": the server's today
    assert named in (before.isoformat(), date.today().isoformat()), named  # a run may cross midnight
    today = date.fromisoformat(named)
    # Entries earlier this month (or yesterday, on the 1st) and last month, saved by another process
    # (as another worker would) relative to the date the server chose.
    earlier = [today.replace(day=1) if today.day > 1 else today - timedelta(days=1), today.replace(day=1) - timedelta(days=3)]
    app = create_app(instance_path=served.instance)
    admin = app.extensions["hostcore"].wiki(SYSTEM)
    for day in earlier:
        admin.save_page(f"journal/{day.isoformat()}", body=f"## Done\n\nWrote on {day:%A}.\n", title=f"{day:%A %-d %B}")
    app.extensions["hostcore"].close()
    assert "## Done" in browser.find_element(By.ID, "body").get_attribute("value")  # new.template
    browser.find_element(By.ID, "title").send_keys("Today")
    browser.screenshot("web-new-journal")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.editor button[type=submit]"))
    assert browser.current_url == f"{served.base}/journal/{today.isoformat()}"
    browser.get(served.base + "/journal/")
    calendar = browser.find_element(By.CSS_SELECTOR, ".widget-calendar")
    assert calendar.find_element(By.TAG_NAME, "caption").text == f"{today:%B %Y}"
    cell = calendar.find_element(By.CSS_SELECTOR, "td.today a")
    assert cell.text == str(today.day) and cell.get_attribute("title") == "Today"
    browser.screenshot("web-calendar")
    browser.click_and_wait(calendar.find_element(By.CSS_SELECTOR, "a[rel=prev]"))
    assert browser.find_element(By.CSS_SELECTOR, ".widget-calendar caption").text == f"{earlier[1]:%B %Y}"
    entry = browser.find_element(By.CSS_SELECTOR, f".widget-calendar a[href='/journal/{earlier[1].isoformat()}']")
    browser.click_and_wait(entry)
    assert browser.find_element(By.TAG_NAME, "h1").text == f"{earlier[1]:%A %-d %B}"


def test_the_sign_in_consent_and_connected_apps_pages(browser, served):
    """The accounts and oauth plugins' pages a person reaches, for docs/web.md."""
    redirect = "http://127.0.0.1:9/callback"  # nothing listens there: the browser stops at the redirect
    request = urllib.request.Request(served.base + "/_/oauth/register", json.dumps({
        "client_name": "Notes Assistant", "redirect_uris": [redirect], "token_endpoint_auth_method": "none"}).encode(),
        headers={"Content-Type": "application/json"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        client_id = json.loads(response.read())["client_id"]
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    authorize = "/_/oauth/authorize?" + urlencode({
        "response_type": "code", "client_id": client_id, "redirect_uri": redirect, "state": "s", "scope": "read write",
        "resource": served.base + "/_/mcp", "code_challenge": challenge, "code_challenge_method": "S256"})  # fmt: skip
    browser.get(served.base + authorize)
    assert browser.current_url.startswith(served.base + "/_/login?next=")
    header = browser.find_element(By.CSS_SELECTOR, "header.site")  # the sign-in page sits in the site's frame too
    assert header.value_of_css_property("display") == "flex" and header.find_element(By.CSS_SELECTOR, "nav.who a").text == "Sign in"
    browser.screenshot("web-login")
    browser.find_element(By.ID, "name").send_keys("admin")
    browser.find_element(By.ID, "password").send_keys(served.password)
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]:not(.secondary)"))
    assert browser.find_element(By.ID, "app-name").text == "Notes Assistant"
    site_header(browser)  # the consent page sits in the site's frame, like every other page
    browser.screenshot("web-authorize")
    browser.find_element(By.ID, "approve").click()
    WebDriverWait(browser, 15).until(lambda d: d.current_url.startswith(redirect))
    code = parse_qs(urlsplit(browser.current_url).query)["code"][0]
    exchange = urlencode({"grant_type": "authorization_code", "client_id": client_id, "code": code, "redirect_uri": redirect,
                          "code_verifier": verifier, "resource": served.base + "/_/mcp"}).encode()  # fmt: skip
    with urllib.request.urlopen(urllib.request.Request(served.base + "/_/oauth/token", exchange), timeout=30) as response:
        assert json.loads(response.read())["access_token"]
    browser.get(served.base + "/_/apps")
    assert "Notes Assistant" in browser.find_element(By.CSS_SELECTOR, "section.app").text
    site_header(browser)
    browser.screenshot("web-apps")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "header.site a.brand"))  # the header leads on
    assert browser.current_url == served.base + "/"


def site_header(browser: Any) -> None:
    """The site's header is on the page, styled by the web plugin's stylesheet, with its links and the person."""
    header = browser.find_element(By.CSS_SELECTOR, "header.site")
    assert header.value_of_css_property("display") == "flex"
    assert [a.text for a in header.find_elements(By.CSS_SELECTOR, "nav[aria-label=Site] a")][:2] == ["Wiki", "Recent changes"]
    assert header.find_element(By.CSS_SELECTOR, "nav.who a").text == "admin"
    assert header.find_element(By.CSS_SELECTOR, "form.signout button").text == "Sign out"


class Elsewhere:
    """Another device on the served wiki: a cookie jar and plain HTTP, as ``curl -b -c`` would."""

    def __init__(self, base: str, cookie: str | None = None) -> None:
        self.base = base
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        self.opener.addheaders = [("User-Agent", "curl/8.5.0")] + ([("Cookie", f"hostcore_session={cookie}")] if cookie else [])

    def sign_in(self, name: str, password: str) -> Elsewhere:
        token = re.search(r'name="csrf_token" value="([^"]+)"', self.get("/_/login")[1]).group(1)
        data = urlencode({"csrf_token": token, "name": name, "password": password, "next": "/_/account/sessions"}).encode()
        with self.opener.open(self.base + "/_/login", data, timeout=30) as response:
            assert response.url == self.base + "/_/account/sessions", response.url
        return self

    def get(self, path: str) -> tuple[str, str]:
        """(the URL it ended at after redirects, the page)"""
        with self.opener.open(self.base + path, timeout=30) as response:
            return response.url, response.read().decode()

    def signed_in(self) -> bool:
        return self.get("/_/account/sessions")[0] == self.base + "/_/account/sessions"


def test_see_your_sessions_sign_one_out_and_a_copied_cookie_stops_working(browser, served):
    """Issue 22 #4 in Chromium against two gunicorn workers: the sessions page lists this browser
    and another device; signing that one out ends it, and after the browser signs out a copy of its
    cookie opens nothing."""
    other = Elsewhere(served.base).sign_in("admin", served.password)
    sign_in(browser, served, "/_/account/sessions")
    rows = browser.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr")
    assert len(rows) >= 2
    mine = browser.find_element(By.CSS_SELECTOR, "table.sessions tr.current")
    assert "(this browser)" in mine.text and "Chrome on Linux" in mine.text and "127.0.0.1" in mine.text
    curl = [row for row in rows if row.text.startswith("curl")]
    assert len(curl) == 1 and "curl" in curl[0].text
    browser.screenshot("web-sessions")
    browser.click_and_wait(curl[0].find_element(By.CSS_SELECTOR, "button"))
    assert browser.find_element(By.ID, "done").text == "That session is signed out."
    assert not [row for row in browser.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr") if row.text.startswith("curl")]
    assert not other.signed_in()
    copied = browser.get_cookie("hostcore_session")["value"]
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "header.site form.signout button"))
    assert not Elsewhere(served.base, copied).signed_in()  # what the cookie opened before, it opens no more


def test_change_a_password_and_every_other_session_ends(browser, served):
    password = "the first password of pat"
    cli(served.instance, "user", "create", "pat", "--scope", "write", "--password-stdin", input=password + "\n")
    other = Elsewhere(served.base).sign_in("pat", password)
    browser.get(f"{served.base}/_/login?next=/_/account/password")
    browser.find_element(By.ID, "name").send_keys("pat")
    browser.find_element(By.ID, "password").send_keys(password)
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "main form button[type=submit]:not(.secondary)"))
    browser.find_element(By.ID, "current-password").send_keys(password)
    browser.find_element(By.ID, "new-password").send_keys("the second password of pat")
    browser.find_element(By.ID, "repeat-password").send_keys("the second password of pat")
    browser.click_and_wait(browser.find_element(By.CSS_SELECTOR, "form.password button[type=submit]"))
    assert "1 other session signed out" in browser.find_element(By.ID, "done").text
    assert not other.signed_in()
    browser.get(served.base + "/_/account/sessions")
    assert [row.text.endswith("Sign out") and "(this browser)" in row.text
            for row in browser.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr")] == [True]  # fmt: skip
    assert Elsewhere(served.base).sign_in("pat", "the second password of pat").signed_in()


def test_an_exported_namespace_in_a_browser_from_a_plain_web_server(browser, served, tmp_path):
    cli(served.instance, "export-site", "--namespace", "pub", "--out", str(tmp_path / "site"))
    with plain_server(tmp_path / "site" / "pub") as base:
        browser.get(base + "/")
        assert "News for everyone" in browser.find_element(By.TAG_NAME, "main").text
        assert loaded(browser, "img.ns-banner") == 960
        browser.screenshot("web-export")
        browser.click_and_wait(browser.find_element(By.LINK_TEXT, "Weather"))
        assert browser.current_url == base + "/weather.html"
        assert loaded(browser, ".body img") == 240 and loaded(browser, "img.ns-logo") == 960


@pytest.mark.browser
def test_a_browser_session_leaves_nothing_in_the_temporary_folder():
    """Chromium's singleton socket folder (org.chromium.Chromium.*) goes with the session: test runs
    must not fill the machine's /tmp."""
    import tempfile

    from hostcore.testing.browser import chromium

    tmp = Path(tempfile.gettempdir())

    def leftovers() -> set[Path]:
        return set(tmp.glob("org.chromium.Chromium.*"))

    before = leftovers()
    with chromium() as session:
        scratch = Path(session.service.env["TMPDIR"])  # this session's own folder (another test's Chromium may run meanwhile)
        assert scratch.parent == tmp and scratch.name.startswith("hostcore-chromium-") and scratch.exists()
        session.get("data:text/html,<title>blank</title>")
        assert session.title == "blank"
    assert not scratch.exists() and leftovers() - before == set()


def test_waiting_for_the_next_page_takes_chromedrivers_detached_node_error_as_gone():
    """click_and_wait's check that the old page is gone: chromedriver answered a navigation in
    progress with "Node with given id does not belong to the document" (a WebDriverException, not a
    stale reference) and failed a browser test under load. Both mean the old page is gone; any
    other error still fails the test, and an element still shown is not gone."""
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    from hostcore.testing.browser import _gone

    class Element:
        def __init__(self, error=None):
            self.error = error

        def is_enabled(self):
            if self.error is not None:
                raise self.error
            return True

    detached = WebDriverException('unknown error: unhandled inspector error: {"code":-32000,"message":"Node with given id does not belong to the document"}')
    assert _gone(Element(detached)) is True
    assert _gone(Element(StaleElementReferenceException("stale element reference"))) is True
    assert _gone(Element()) is False
    with pytest.raises(WebDriverException, match="chrome not reachable"):
        _gone(Element(WebDriverException("chrome not reachable")))
