"""A big namespace's index: a bounded first page of its pages, the rest a link away, and widgets
from the link graph (tags and pins included) that follow every change."""

from __future__ import annotations

import re

from hostcore_web.navigation import SIDEBAR_PAGES
from hostcore_web.widgets import INDEX_PAGES_SHOWN, PAGES_SHOWN

from hostcore import Change, Page, Put


def test_a_big_namespace_lists_a_first_page_and_pages_through_the_rest(host, admin, carol):
    total = PAGES_SHOWN + 100
    puts = [
        Put(
            f"notes/p{i:04d}.md",
            Page(f"notes/p{i:04d}", f"Page {i}", "x", tags=(f"t{i % 3}",), pin=i == 7).to_bytes(),
            expect=None,
        )
        for i in range(total)
    ]
    host.storage.apply(puts, Change(author="test", message="many pages"))
    html = carol.get("/notes/").text
    listed = html.split("widget-pages")[1].split("</section>")[0]
    assert len(re.findall(r"<li ", listed)) == INDEX_PAGES_SHOWN and f"All {total} pages" in listed
    assert "Page 7" in html.split("widget-pinned")[1].split("</section>")[0]
    assert f't0 <span class="count">{len(range(0, total, 3))}</span>' in html
    first = carol.get("/_/pages/notes").text
    assert f"Pages 1–{PAGES_SHOWN} of {total}" in first and f"offset={PAGES_SHOWN}" in first
    rest = carol.get(f"/_/pages/notes?offset={PAGES_SHOWN}").text.split("<main")[1]
    assert f"Pages {PAGES_SHOWN + 1}–{total} of {total}" in rest and "Page 599" in rest and "Page 0<" not in rest
    tree = html.split('<nav class="tree"')[1].split("</nav>")[0]  # the sidebar: bounded too, the rest a link away
    assert len(re.findall(r"<li>", tree)) == SIDEBAR_PAGES and f"All {total} pages" in tree
    admin.save_page("notes/p0008", admin.page("notes/p0008").hash, "x", "Page 8", ["fresh"], True)
    html = carol.get("/notes/").text
    assert "Page 8" in html.split("widget-pinned")[1].split("</section>")[0]
    assert 'fresh <span class="count">1</span>' in html
