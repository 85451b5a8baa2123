"""Editing one section in the browser: an edit link per section on the page, the section's rev in
the form, so a person's section edit lands while an assistant edits another section, and a lost
race on the same section shows both sides and merges without overwriting."""

from __future__ import annotations

import re

from hostcore import Principal

PAGE = "Intro.\n\n# Guide\n\nHow it works.\n\n## Install\n\nRun it.\n\n- a list\n  # not a section\n\nSetext\n======\n\n## Use\n\nUse it.\n"


def _field(html: str, name: str) -> str:
    return re.search(rf'name="{name}" value="([^"]*)"', html).group(1)


def _textarea(html: str) -> str:
    from html import unescape

    return unescape(re.search(r'<textarea id="text" name="text" rows="20"[^>]*>(.*?)</textarea>', html, re.S).group(1))


def assistant(host):
    return host.wiki(Principal("assistant", frozenset({"write"}), None, client="claude"))


def test_each_section_heading_gets_an_edit_link_for_writers_only(carol, client_for, admin):
    admin.save_page("notes/g", body=PAGE, title="G")
    admin.save_page("team/t", body=PAGE, title="T")
    html = carol.get("/notes/g").text
    links = re.findall(r'<a class="section-edit l\d" href="([^"]*)"', html)
    assert links == ["/_/edit-section/notes/g?section=guide", "/_/edit-section/notes/g?section=install",
                     "/_/edit-section/notes/g?section=use"]  # fmt: skip
    assert re.search(r'<a class="section-edit l2" [^>]*>edit</a><h2 id="install">Install</h2>', html)
    assert 'class="section-edit"' not in carol.get("/notes/g?section=install").text  # a section alone: no links
    assert 'class="section-edit"' not in client_for("dave").get("/team/t").text  # dave may only read
    assert carol.get("/_/edit-section/notes/g?section=nowhere").status_code == 404


def test_a_section_edit_lands_while_an_assistant_edits_another(carol, host, admin):
    admin.save_page("notes/g", body=PAGE, title="G")
    form = carol.get("/_/edit-section/notes/g?section=install").text
    assert _textarea(form) == "## Install\n\nRun it.\n\n- a list\n  # not a section\n\nSetext\n======\n\n"
    bot = assistant(host)
    bot.replace_text("notes/g", "use", bot.read_section("notes/g", "use")["rev"], "Use it.", "Use it often.")
    saved = carol.post("/_/edit-section/notes/g", data={
        "csrf_token": carol.csrf, "section": "install", "rev": _field(form, "rev"), "text": "## Install\r\n\r\nRun it twice.\r\n",
    })  # fmt: skip
    assert saved.status_code == 302 and saved.headers["Location"] == "/notes/g#install"
    body = admin.read_page("notes/g")["body"]
    assert "Run it twice.\n\n## Use\n\nUse it often.\n" in body and "- a list" not in body
    assert admin.page_history("notes/g")["commits"][0]["message"] == "save_section: notes/g#install via web"


def test_a_lost_race_on_the_same_section_shows_both_sides_then_merges(carol, host, admin):
    admin.save_page("notes/g", body=PAGE, title="G")
    form = carol.get("/_/edit-section/notes/g?section=use").text
    bot = assistant(host)
    bot.replace_text("notes/g", "use", bot.read_section("notes/g", "use")["rev"], "Use it.", "Use it, says the assistant.")
    lost = carol.post("/_/edit-section/notes/g", data={
        "csrf_token": carol.csrf, "section": "use", "rev": _field(form, "rev"), "text": "## Use\n\nUse it, says carol.\n",
    })  # fmt: skip
    assert lost.status_code == 409
    assert "says the assistant" in lost.text.split('id="theirs"')[1].split("</pre>")[0]
    assert "says carol" in lost.text.split('id="mine"')[1].split("</pre>")[0]
    assert admin.read_page("notes/g", "use")["body"] == "## Use\n\nUse it, says the assistant.\n"  # not overwritten
    merged = carol.post("/_/edit-section/notes/g", data={
        "csrf_token": carol.csrf, "section": "use", "rev": _field(lost.text, "rev"),
        "text": "## Use\n\nUse it, says carol and the assistant.\n",
    })  # fmt: skip
    assert merged.status_code == 302
    assert admin.read_page("notes/g", "use")["body"] == "## Use\n\nUse it, says carol and the assistant.\n"


def test_a_section_gone_or_text_that_breaks_other_sections_saves_nothing(carol, host, admin):
    saved = admin.save_page("notes/g", body=PAGE, title="G")
    form = carol.get("/_/edit-section/notes/g?section=use").text
    broken = carol.post("/_/edit-section/notes/g", data={
        "csrf_token": carol.csrf, "section": "install", "rev": admin.section_source("notes/g", "install")["rev"],
        "text": "## Install\n\n```\nnever closed\n",
    })  # fmt: skip
    assert broken.status_code == 400 and "close every code fence" in broken.text and "never closed" in _textarea(broken.text)
    admin.save_page("notes/g", saved["hash"], body=PAGE.replace("## Use", "## Usage"))
    gone = carol.post("/_/edit-section/notes/g", data={
        "csrf_token": carol.csrf, "section": "use", "rev": _field(form, "rev"), "text": "## Use\n\nmine\n",
    })  # fmt: skip
    assert gone.status_code == 409 and "mine" in gone.text.split('id="mine"')[1] and "is gone" in gone.text
    no_csrf = carol.post("/_/edit-section/notes/g", data={"section": "usage", "rev": "x", "text": "y"})
    assert no_csrf.status_code in (400, 403)
    assert admin.read_page("notes/g")["body"] == PAGE.replace("## Use", "## Usage")
