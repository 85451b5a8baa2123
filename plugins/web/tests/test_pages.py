"""Reading, browsing, search and history pages, through Flask's test client on a real git wiki."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlsplit

import hostcore_web
import pytest
from hostcore_web.render import anchor

from hostcore import Principal

CSS = (Path(hostcore_web.__file__).parent / "static" / "web.css").read_text()

PAGE = """# Guide

Read [[notes/other]], [[other|the other page]], [[team/plan]] and [[ghost]].
Jump to [[other#Second part]].

## Install it

```python
def greet(name):
    return f"hello {name}"
```

```mermaid
graph TD; A-->B
```

## Second part

Text.
"""


@pytest.fixture
def pages(admin):
    admin.save_page("notes/guide", body=PAGE, title="Guide", tags=["howto"])
    admin.save_page("notes/other", body="# Other\n\n## Second part\n\nhere\n", title="Other")
    admin.save_page("team/plan", body="secret plan", title="Plan")
    admin.save_page("pub/hello", body="Hello, world. See [[notes/guide]].", title="Hello")
    return admin


def test_a_page_renders_links_anchors_code_and_mermaid(carol, pages):
    response = carol.get("/notes/guide")
    assert response.status_code == 200
    html = response.text
    assert re.search(r'<a class="wikilink" href="/notes/other"[^>]*>notes/other</a>', html)
    assert re.search(r'<a class="wikilink" href="/notes/other"[^>]*>the other page</a>', html)
    assert re.search(r'<a class="wikilink" href="/team/plan"[^>]*>team/plan</a>', html)  # carol may read team
    assert 'class="wikilink missing" href="/notes/ghost"' in html
    assert 'href="/notes/other#second-part"' in html
    assert '<span class="k">def</span>' in html  # Pygments, on the server
    assert '<pre class="mermaid">graph TD; A--&gt;B' in html
    assert "vendor/mermaid.min.js" in html
    assert "'unsafe-inline'" in response.headers["Content-Security-Policy"].split("style-src")[1].split(";")[0]
    assert "script-src 'self';" in response.headers["Content-Security-Policy"]


def test_heading_anchors_match_read_page_sections(carol, pages, host):
    html = carol.get("/notes/guide").text
    reader = host.wiki(Principal("t", frozenset({"read"})))
    for text in ("Guide", "Install it", "Second part"):
        assert f'id="{anchor(text)}"' in html
        assert reader.read_page("notes/guide", anchor(text).replace("-", " "))["section"]  # the anchor names the section
        section = carol.get("/notes/guide", query_string={"section": text})
        assert section.status_code == 200 and f'id="{anchor(text)}"' in section.text
    only = carol.get("/notes/guide?section=install it").text
    assert "greet" in only and "Text." not in only
    assert carol.get("/notes/guide?section=nowhere").status_code == 404


def test_a_page_without_mermaid_keeps_the_strict_policy(carol, pages):
    response = carol.get("/notes/other")
    assert "style-src 'self';" in response.headers["Content-Security-Policy"]
    assert "mermaid.min.js" not in response.text


def test_links_to_pages_a_reader_cannot_read_show_as_missing(app, pages, client_for):
    dave = client_for("dave")  # limited to team
    html = app.test_client().get("/pub/hello").text  # a visitor
    assert 'class="wikilink missing" href="/notes/guide"' in html
    assert dave.get("/pub/hello").status_code == 200  # public: everyone reads it


def test_a_search_hits_url_opens_the_page(carol, pages, host):
    host.config["PUBLIC_URL"] = "http://localhost"
    hit = host.wiki(Principal("t", frozenset({"read"}))).search("greet")["results"][0]
    path = urlsplit(hit["url"]).path
    response = carol.get(path)
    assert response.status_code == 200 and '<h1 id="guide">Guide</h1>' in response.text


def test_search_page_uses_the_query_language_and_escapes_snippets(carol, admin):
    admin.save_page("notes/x", body="beware <script>alert(1)</script> of tokens", title="X", tags=["sec"])
    admin.save_page("notes/y", body="tokens are fine", title="Y")
    html = carol.get("/_/search", query_string={"q": "tokens NOT fine"}).text
    assert 'href="http://' in html and "/notes/x" in html and "/notes/y" not in html
    assert "<script>alert" not in html and "&lt;script&gt;" in html
    assert "<mark>tokens</mark>" in html
    assert "/notes/x" in carol.get("/_/search", query_string={"q": "tag:sec"}).text
    bad = carol.get("/_/search", query_string={"q": "tokens", "namespace": "_x"})
    assert bad.status_code == 200 and 'class="error"' in bad.text


def test_search_page_filters_as_the_search_tool_does(carol, admin):
    admin.save_page("notes/fa", body="quarterly figures", title="FA", tags=["finance", "q3"])
    admin.save_page("notes/fb", body="quarterly figures", title="FB", tags=["finance"])
    html = carol.get("/_/search", query_string={"q": "quarterly", "tags": "Finance, q3"}).text
    assert "/notes/fa" in html and "/notes/fb" not in html
    assert 'value="Finance, q3"' in html and "<details class=\"filters\" open>" in html
    assert "/notes/fa" not in carol.get("/_/search", query_string={"q": "quarterly", "before": "2000-01-01"}).text
    assert "/notes/fa" in carol.get("/_/search", query_string={"q": "quarterly", "since": "2000-01-01"}).text
    bad = carol.get("/_/search", query_string={"q": "quarterly", "since": "last week"}).text
    assert 'class="error"' in bad and "since" in bad and "2026-05-01" in bad


def test_namespace_index_shows_widgets_in_order_with_tree(carol, admin):
    admin.save_namespace(
        "notes", admin.read_namespace("notes")["hash"],
        widgets=["log", "pinned", "pages", "tags", "health", "writing-stats", "backlinks", "calendar", "prev-entries",
                 "namespaces", "page-meta"],
        tree=["zeta", "alpha"],
    )  # fmt: skip
    admin.save_page("notes/alpha", body="a", title="Alpha", tags=["one"])
    admin.save_page("notes/zeta", body="z [[gone]]", title="Zeta", pin=True, tags=["one", "two"])
    admin.save_page("notes/mid", body="m", title="Mid")
    admin.save_page("notes/index", body="# Welcome\n\nStart at [[zeta]].", title="Notes home")
    html = carol.get("/notes/").text
    order = re.findall(r'class="widget widget-([a-z-]+)"', html)
    assert order == ["log", "pinned", "pages", "tags", "health", "writing-stats", "backlinks", "calendar", "prev-entries",
                     "namespaces", "page-meta"]  # fmt: skip
    pages_widget = html.split("widget-pages")[1].split("</section>")[0]
    assert pages_widget.index("Zeta") < pages_widget.index("Alpha") < pages_widget.index("Mid")
    pinned = html.split("widget-pinned")[1].split("</section>")[0]
    assert "Zeta" in pinned and "Alpha" not in pinned
    assert "one <span class=\"count\">2</span>" in html
    assert "Welcome" in html  # the index page's body
    assert "notes/gone" in html.split("widget-health")[1].split("</section>")[0]


def test_a_title_the_body_opens_with_is_shown_once(carol, admin):
    admin.save_page("notes/trip", body="# Trip\n\nWe went.\n\n# Trip\n\nAgain.\n", title="Trip")
    html = carol.get("/notes/trip").text
    assert html.count(">Trip</h1>") == 2 and '<h1 id="trip">Trip</h1>' in html  # the second heading is the body's own
    assert html.index('<h1 id="trip">Trip</h1>') < html.index('class="body"')
    admin.save_page("notes/index", body="# Notes\n\nStart here.\n", title="Home")
    index = carol.get("/notes/").text
    assert index.count(">Notes</h1>") == 1 and "Start here." in index
    admin.save_page("notes/other", body="# Something else\n\nText.\n", title="Trip two")
    other = carol.get("/notes/other").text
    assert ">Trip two</h1>" in other and ">Something else</h1>" in other


def test_search_snippets_show_text_not_markdown(carol, admin):
    admin.save_page("notes/s", body="The **budget** is in [the sheet](https://x.example/budget) and `budget.csv`.", title="S")
    html = carol.get("/_/search", query_string={"q": "budget"}).text
    snippet = html.split('class="snippet">')[1].split("</p>")[0]
    assert "<mark>budget</mark>" in snippet and "the sheet" in snippet, snippet
    assert "**" not in snippet and "](" not in snippet and "`" not in snippet and "x.example" not in snippet, snippet


def test_page_lists_sort_numbers_by_value(carol, admin):
    for n in (10, 2, 1, 21, 3):
        admin.save_page(f"notes/rl-{n}", body="x", title=f"RL-{n}", pin=True)
    expected = ["RL-1", "RL-2", "RL-3", "RL-10", "RL-21"]
    index = carol.get("/notes/").text
    for widget in ("pages", "pinned"):
        listed = re.findall(r">(RL-\d+)</a>", index.split(f"widget-{widget}")[1].split("</section>")[0])
        assert listed == expected, (widget, listed)
    every = carol.get("/_/pages/notes").text
    assert re.findall(r">(RL-\d+)</a>", every.split("<main")[1]) == expected
    assert re.findall(r">(RL-\d+)</a>", every.split('<nav class="tree"')[1].split("</nav>")[0]) == expected  # the sidebar too
    assert [p["slug"] for p in admin.list_pages("notes")["pages"]][:3] == ["notes/rl-1", "notes/rl-10", "notes/rl-2"]  # the contract's order


@pytest.mark.parametrize("skin", ["", "bare", "phosphor", "newsprint", "journal", "soft"])
def test_every_skin_has_a_visible_effect(carol, admin, app, skin):
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], skin=skin)
    html = carol.get("/notes/").text
    name = skin or "default"
    assert f'class="skin-{name} ' in html
    css = CSS
    if skin:
        assert re.search(rf"\.skin-{skin}[ .{{]", css), f"no rule for skin {skin}"


@pytest.mark.parametrize(
    "palette", ["", "neutral", "phosphor", "dracula", "everforest", "flexoki", "gruvbox", "nord", "rosé pine", "solarized",
                "tokyo night"],
)  # fmt: skip
def test_every_palette_has_a_visible_effect(carol, admin, palette):
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], palette=palette)
    html = carol.get("/notes/").text
    name = palette.replace(" ", "-").replace("é", "e") or "skin"
    assert f"palette-{name}" in html
    css = CSS
    if palette:
        rule = re.search(rf"\.palette-{name} {{([^}}]*)}}", css)
        assert rule and "--bg:" in rule.group(1) and "--fg:" in rule.group(1)


def test_history_diff_revision_and_restore(carol, admin):
    first = admin.save_page("notes/h", body="one\ntwo\n", title="H")
    admin.save_page("notes/h", first["hash"], body="one\nTWO\n")
    history = carol.get("/_/history/notes/h").text
    ids = re.findall(r'name="to" value="([0-9a-f]{40})"', history)
    assert len(ids) == 2
    diff = carol.get("/_/diff/notes/h", query_string={"from": ids[1], "to": ids[0]}).text
    assert '<span class="d-del">-two</span>' in diff and '<span class="d-add">+TWO</span>' in diff
    old = carol.get(f"/notes/h?rev={ids[1]}")
    assert old.status_code == 200 and "two" in old.text and "revision" in old.text
    current_hash = re.search(r'name="basehash" value="([0-9a-f]+)"', history).group(1)
    restored = carol.post("/_/restore/notes/h", data={"csrf_token": carol.csrf, "revision": ids[1], "basehash": current_hash})
    assert restored.status_code == 302
    assert admin.read_page("notes/h")["body"] == "one\ntwo\n"
    stale = carol.post("/_/restore/notes/h", data={"csrf_token": carol.csrf, "revision": ids[0], "basehash": current_hash})
    assert stale.status_code == 409 and admin.read_page("notes/h")["body"] == "one\ntwo\n"
    assert carol.get("/notes/h?rev=abc").status_code == 404


def test_the_history_links_to_who_wrote_each_line(carol, admin, host, client_for):
    from dataclasses import replace

    from hostcore import SYSTEM

    first = admin.save_page("notes/b", body="one\ntwo\n", title="B")
    host.wiki(replace(SYSTEM, name="bot", client="Claude Desktop 0.9.3")).save_page("notes/b", first["hash"], body="one\nTWO\n")
    assert 'href="/_/blame/notes/b"' in carol.get("/_/history/notes/b").text
    page = carol.get("/_/blame/notes/b")
    assert page.status_code == 200
    rows = re.findall(r'<td class="author">([^<]*)</td><td>([^<]*)</td>.*?<td class="n">(\d+)</td><td class="text"><code>([^<]*)</code>',
                      page.text, re.S)  # fmt: skip
    # each change's first line names it: the front matter and "one" are the first save's, "TWO" the bot's
    assert [(who, client, text) for who, client, _n, text in rows] == [("hostcore", "", "---"), ("bot", "Claude Desktop 0.9.3", "TWO")]
    assert '<td class="n">4</td><td class="text"><code>one</code>' in page.text
    assert client_for("dave").get("/_/blame/notes/b").status_code == 404  # dave reads only team
    assert carol.get("/_/blame/notes/none").status_code == 404


def test_recent_changes_wiki_wide_and_per_namespace(carol, admin, app):
    admin.save_page("notes/a", body="a", title="A")
    admin.save_page("team/b", body="b", title="B")
    everywhere = carol.get("/_/changes").text
    assert "/notes/a" in everywhere and "/team/b" in everywhere
    notes = carol.get("/_/changes/notes").text
    assert "/notes/a" in notes and "/team/b" not in notes
    visitor = app.test_client().get("/_/changes").text
    assert "/notes/a" not in visitor and "/team/b" not in visitor
