"""Rendered pages kept by block: the same HTML as a full render, an edit renders only what it
changed, and the blocks outlive the process (a file in the instance folder)."""

from __future__ import annotations

import re
import sqlite3
import threading

import pytest
from hostcore_web.render import PRERENDER_BYTES, BlockStore, RenderCache, render, sanitise, snippet_text, without_title
from hostcore_web.views import prerender, render_cache

from hostcore import SYSTEM, create_app, wiki_links

CONFIG = {"PLUGINS": ["git", "tokens", "sqlite", "web"], "STORAGE": "git", "SEARCH": "sqlite"}
PAGE = """# Guide <script>alert(1)</script>

Read [[notes/other]], [[other|the other page]] and [[ghost]]; jump to [[other#Second part]].
[x](javascript:alert(1)) <img src=x onerror=alert(2)>
[the report](/_/files/notes/p/report.pdf) and ![a chart](/_/files/notes/p/chart.png)

```js
const add = (a, b) => a + b;
```

```mermaid
sequenceDiagram
  Alice->>Bob: hi
```
"""
ODD = """[ref]: /elsewhere 'A title'

Use [ref], [the ref][ref] and [[odd & <"quoted'> page|label *with* emphasis]].

- one [[notes/one]]
- two

  still two, loose

> quoted [[team/two#A heading]]

1. first

| a | b |
|---|---|
| [[cell]] | ~~gone~~ |

# Same
# Same
## same

    indented code

```unknown-language
x < y
```
"""


def big(paragraphs: int = 120) -> str:
    return "# Big\n\n" + "".join(f"## Part {n}\n\nText {n} with [[page-{n % 7}]] and `code`.\n\n" for n in range(paragraphs))


IMAGES = "First ![one](/_/files/notes/p/one.jpg)\n\n- ![two](/_/files/notes/p/two.png)\n"


def same(a, b) -> None:
    assert (a.html, a.headings, a.mermaid, a.links, a.image) == (b.html, b.headings, b.mermaid, b.links, b.image)


@pytest.mark.parametrize("body", [PAGE, ODD, big(), IMAGES, ""])
@pytest.mark.parametrize("found", [set(), {"notes/other", "notes/one", "notes/page-1", "notes/odd & <\"quoted'> page"}])
def test_kept_blocks_give_the_html_of_a_full_render(body, found, tmp_path):
    cache = RenderCache(store=BlockStore(tmp_path / "blocks.sqlite"))
    first = cache.render(body, "notes/p", "h1", lambda _t: found)
    same(first, render(body, "notes/p", lambda _t: found))
    again = RenderCache(store=BlockStore(tmp_path / "blocks.sqlite")).render(body, "notes/p", "h1", lambda _t: found)
    same(again, first)  # from the file this time


def test_an_edit_renders_only_the_blocks_it_changed(tmp_path):
    cache = RenderCache()
    body = big()
    cache.render(body, "notes/p", "h1", lambda _t: set())
    blocks = cache.blocks_rendered
    assert blocks > 240
    edited = body.replace("Text 50 with", "Text fifty with")
    same(cache.render(edited, "notes/p", "h2", lambda _t: set()), render(edited, "notes/p", lambda _t: set()))
    assert cache.blocks_rendered == blocks + 1
    moved = "A new first line.\n\n" + edited  # the blocks below shift lines, not content
    cache.render(moved, "notes/p", "h3", lambda _t: set())
    assert cache.blocks_rendered == blocks + 2
    cache.render(moved, "notes/p", "h3", lambda _t: {"notes/page-3"})  # a linked page was made: only marks change
    assert cache.blocks_rendered == blocks + 2
    assert cache.render(moved, "notes/p", "h3", lambda _t: set()).html.count("wikilink missing") == 120
    cache.render(moved, "team/p", "h3", lambda _t: set())  # links resolve in another namespace: all again
    assert cache.blocks_rendered > blocks * 2
    refs = RenderCache()
    refs.render("[x]\n\n[[a]]\n\n[x]: /one\n", "notes/p", "h1", lambda _t: set())
    second = refs.render("[x]\n\n[[a]]\n\n[x]: /two\n", "notes/p", "h2", lambda _t: set())  # a definition changes every block
    assert 'href="/two"' in second.html and refs.blocks_rendered == 4  # two blocks, twice


def test_a_restarted_app_renders_nothing_it_rendered_before(app, host, admin, carol):
    admin.save_page("notes/big", body=big(), title="Big")
    html = carol.get("/notes/big").text
    assert render_cache(host).blocks_rendered > 240
    assert list((host.instance_path / "web-templates").iterdir())  # compiled templates, for the next worker
    people = [p for p in host.pm.get_plugins() if type(p).__name__ == "People"]
    restarted = create_app(CONFIG, instance_path=host.instance_path, plugins=people)  # a new worker's app
    try:
        client = restarted.test_client()
        client.set_cookie("hostcore_session", carol.get_cookie("hostcore_session").value)
        assert client.get("/notes/big").text == html
        assert render_cache(restarted.extensions["hostcore"]).blocks_rendered == 0
    finally:
        restarted.extensions["hostcore"].close()


def test_the_block_file_is_only_a_cache(tmp_path):
    path = tmp_path / "blocks.sqlite"
    path.write_bytes(b"not a database at all " * 100)
    cache = RenderCache(store=BlockStore(path))
    same(cache.render(PAGE, "notes/p", "h", lambda _t: set()), render(PAGE, "notes/p", lambda _t: set()))
    assert list(tmp_path.glob("blocks.sqlite.damaged-*"))  # set aside, started again
    assert BlockStore(path).get(["missing"]) == {}
    unusable = RenderCache(store=BlockStore(tmp_path / "no" / "such" / "folder" / "blocks.sqlite"))
    same(unusable.render(PAGE, "notes/p", "h", lambda _t: set()), render(PAGE, "notes/p", lambda _t: set()))


def test_the_block_file_drops_its_oldest_blocks_past_its_limit(tmp_path):
    store = BlockStore(tmp_path / "blocks.sqlite", limit=16 * 1000)
    for batch in range(12):
        store.put({f"{batch}-{n}": ("x" * 500, None) for n in range(4)})
    with sqlite3.connect(tmp_path / "blocks.sqlite") as db:
        size, oldest = db.execute("SELECT total(length(html)), min(key) FROM blocks").fetchone()
    assert size <= 16 * 1000 + 4 * 500 and oldest != "0-0"
    assert store.get(["11-0"]) == {"11-0": ("x" * 500, None)}


def test_a_big_saved_page_is_rendered_ahead_so_its_first_reader_renders_nothing(app, host, admin, carol):
    body = big(400)
    assert len(body) >= PRERENDER_BYTES
    admin.save_page("notes/huge", body=body, title="Huge")
    ahead = prerender(host)
    assert ahead.wait()
    cache = render_cache(host)
    kept = cache.blocks_rendered
    assert kept >= 800  # every heading and paragraph, rendered by the background thread
    html = carol.get("/notes/huge").text
    assert cache.blocks_rendered == kept  # the first reader found every block kept
    first = render(body, "notes/huge", lambda _targets: set()).html
    heading, after = first.split("<h2", 1)[1].split("</h2>", 1)
    assert heading in html and after[:60] in html  # (a comment link may follow the heading)
    admin.save_page("notes/small", body="# Small\n\nA few words.", title="Small")  # under PRERENDER_BYTES
    assert ahead.wait()
    assert cache.blocks_rendered == kept
    carol.get("/notes/small")
    assert cache.blocks_rendered > kept  # rendered by its reader


def test_closing_the_host_stops_the_renderer(tmp_path, monkeypatch):
    app = create_app(CONFIG, instance_path=tmp_path / "instance")
    host = app.extensions["hostcore"]
    host.wiki(SYSTEM).save_namespace("notes", title="Notes")
    ahead, rendering, release, rendered = prerender(host), threading.Event(), threading.Event(), []
    prepare = ahead.cache.prepare

    def held(body: str, slug: str) -> None:
        rendering.set()
        assert release.wait(30), "the test never released the renderer"
        prepare(body, slug)
        rendered.append(slug)

    monkeypatch.setattr(ahead.cache, "prepare", held)
    host.wiki(SYSTEM).save_page("notes/huge", body=big(400), title="Huge")
    assert rendering.wait(30)
    host.wiki(SYSTEM).save_page("notes/next", body=big(400), title="Next")  # waits its turn
    thread = ahead.worker.thread
    assert thread is not None and thread.name == "hostcore-web-prerender"
    threading.Timer(0.5, release.set).start()
    host.close()  # the page under way is finished, the one waiting dropped
    assert not thread.is_alive() and rendered == ["notes/huge"]
    ahead.add("notes/late", big(400))  # after close: nothing starts again
    assert ahead.worker.thread is None


def test_a_task_list_shows_disabled_checkboxes():
    html = render("- [ ] write it\n- [x] read it\n- [not a task]\n", "notes/p", lambda _t: set()).html
    boxes = re.findall(r"<input[^>]*>", html)
    assert len(boxes) == 2 and all('type="checkbox"' in b and 'disabled="disabled"' in b for b in boxes), boxes
    assert 'checked="checked"' not in boxes[0] and 'checked="checked"' in boxes[1]
    assert "[ ]" not in html and "[x]" not in html and "[not a task]" in html


def test_the_sanitiser_keeps_only_a_disabled_checkbox():
    """Raw HTML in a page is text already; the sanitiser is the second guard: whatever input the
    renderer ever made, only a disabled checkbox gets through."""
    for made in ('<input type="text" name="q" value="x">', '<input type="checkbox" onclick="alert(1)">',
                 '<input type="password" autofocus>', '<input type="checkbox" checked="checked">'):  # fmt: skip
        cleaned = sanitise(made)
        assert 'disabled="disabled"' in cleaned and "onclick" not in cleaned and "name=" not in cleaned, cleaned
        assert re.search(r'type="(?!checkbox)', cleaned) is None, cleaned
    assert "&lt;input" in render('<input type="text">', "notes/p", lambda _t: set()).html


@pytest.mark.parametrize(
    ("title", "body", "once"),
    [
        ("Guide", "# Guide\n\nText.", True),
        ("A  guide", "# a *guide*\n\nText.", True),  # case, spacing and emphasis aside, it says the title
        ("Guide", "# Guide to more\n\nText.", False),
        ("Guide", "Text first.\n\n# Guide", False),
        ("Guide", "## Guide\n\nText.", False),
    ],
)
def test_an_opening_heading_that_says_the_title_is_shown_once(title, body, once):
    rendered = render(body, "notes/p", lambda _t: set())
    shown, anchor = without_title(rendered, title)
    assert (anchor is not None) == once
    if once:
        assert anchor == rendered.headings[0][2] and "<h1" not in shown.html and "Text." in shown.html
    else:
        assert shown is rendered


@pytest.mark.parametrize(
    ("snippet", "shown"),
    [
        ("The **<mark>budget</mark>** is _final_.", "The <mark>budget</mark> is final."),
        ("## <mark>Budget</mark> notes\n- item one\n- [ ] todo", "<mark>Budget</mark> notes item one todo"),
        ("See [the <mark>budget</mark>](https://x.example/<mark>budget</mark>) and ![chart](/_/files/a/b/c.png)",
         "See the <mark>budget</mark> and chart"),
        ("Ask [[notes/plan|the <mark>plan</mark>]] or [[notes/<mark>plan</mark>]]", "Ask the <mark>plan</mark> or notes/<mark>plan</mark>"),
        ("`<mark>code</mark>` and snake_case_name &lt;b&gt; \\*star\\*", "<mark>code</mark> and snake_case_name &lt;b&gt; *star*"),
        ("| a | <mark>b</mark> |\n|---|---|\n| c | d |", "a <mark>b</mark> c d"),
        ("&lt;mark&gt;not a match&lt;/mark&gt; [x](http://e.example/<mark>y", "&lt;mark&gt;not a match&lt;/mark&gt; [x](http://e.example/<mark>y</mark>"),
    ],
)
def test_a_search_snippet_is_shown_as_text_not_markdown(snippet, shown):
    assert str(snippet_text(snippet)) == shown


CODE_CASES = [
    "``[[a/x]]`` and [[a/y]]",
    "`` `[[a/x]]` ``",
    "````\n```\n[[a/x]]\n```\n````\n[[a/y]]",
    "~~~\n```\n[[a/x]]\n~~~\n[[a/y]]",
    "para\n\n    [[a/x]] indented code",
    "- item\n\n    [[a/y]] continued in the list",
    "- a\n\n      [[a/x]] code in an item",
    "    ```\n[[a/y]]",
    "```\nunclosed [[a/x]]",
    "> quote `[[a/x]]` [[a/y]]",
    "1. one\n\n   ```\n   [[a/x]]\n   ```\n\n[[a/y]]",
    "- item\n\ntext at the margin\n\n    [[a/x]] code again",
    "# Head\n\n\t[[a/x]] tab code",
]


@pytest.mark.parametrize("body", CODE_CASES)
def test_the_link_graph_counts_the_links_the_page_shows(body):
    """A wiki-link in a code span or block is code on the page, and no link in the graph either."""
    shown = set(re.findall(r'class="wikilink[^"]*" href="/([^"#]*)', render(body, "a/p", set).html))
    assert set(wiki_links(body, "a/p")) == shown
    assert "a/x" not in shown and ("[[a/y]]" not in body or shown == {"a/y"})
