"""Namespace settings a person sees: ``image`` (banner, logo, link preview), attachments shown in
pages, ``new.slug`` on the new-page form, and the calendar widget."""

from __future__ import annotations

import re
from datetime import date, datetime

from hostcore import SYSTEM
from hostcore.testing.documents import png_image

HERO = png_image(48, 16)


def upload(host, slug: str, filename: str, data: bytes) -> None:
    wiki = host.wiki(SYSTEM)
    token = wiki.upload_attachment(slug, filename)["upload_url"].rsplit("/", 1)[1]
    wiki.complete_upload(token, data)


def test_a_pages_attachments_are_served_to_who_may_read_the_page(host, admin, carol, client_for, visitor):
    admin.save_page("notes/trip", body="![map](/_/files/notes/trip/map.png)\n\n[notes](/_/files/notes/trip/n.txt)", title="Trip")
    upload(host, "notes/trip", "map.png", HERO)
    upload(host, "notes/trip", "n.txt", b"packing list\n")
    html = carol.get("/notes/trip").text
    assert '<img src="/_/web/files/notes/trip/map.png" alt="map">' in html
    assert 'href="/_/web/files/notes/trip/n.txt"' in html
    image = carol.get("/_/web/files/notes/trip/map.png")
    assert image.status_code == 200 and image.data == HERO and image.mimetype == "image/png"
    assert image.headers["X-Content-Type-Options"] == "nosniff" and "sandbox" in image.headers["Content-Security-Policy"]
    assert carol.get("/_/web/files/notes/trip/map.png", headers={"If-None-Match": image.headers["ETag"]}).status_code == 304
    assert carol.get("/_/web/files/notes/trip/n.txt").data == b"packing list\n"
    assert carol.get("/_/web/files/notes/trip/none.png").status_code == 404
    assert carol.get("/_/web/files/notes/trip/../trip/map.png").status_code == 404
    assert client_for("dave").get("/_/web/files/notes/trip/map.png").status_code == 404  # dave reads team only
    refused = visitor.get("/_/web/files/notes/trip/map.png")
    assert refused.status_code == 302 and "/_/login" in refused.headers["Location"]
    admin.save_page("pub/photo", body="![p](/_/files/pub/photo/p.png)", title="Photo")
    upload(host, "pub/photo", "p.png", HERO)
    assert visitor.get("/_/web/files/pub/photo/p.png").data == HERO  # a public namespace: no sign-in


def test_the_namespace_image_is_its_banner_logo_and_link_preview(host, admin, visitor, client_for):
    admin.save_page("pub/index", body="Front page.", title="Front")
    upload(host, "pub/index", "hero.png", HERO)
    admin.save_namespace("pub", admin.read_namespace("pub")["hash"], image="index/hero.png", description="All the news")
    admin.save_page("pub/plain", body="No picture here.", title="Plain")
    admin.save_page("pub/own", body="![own](/_/files/pub/own/own.jpg)", title="Own")
    upload(host, "pub/own", "own.jpg", b"\xff\xd8\xff\xe0" + b"\x00" * 32)
    public_url = host.config["PUBLIC_URL"].rstrip("/")
    index = visitor.get("/pub/").text
    assert '<img class="ns-banner" src="/_/web/files/pub/index/hero.png" alt="">' in index
    assert 'class="ns-logo" src="/_/web/files/pub/index/hero.png"' in index
    assert f'<meta property="og:image" content="{public_url}/_/web/files/pub/index/hero.png">' in index
    assert '<meta property="og:description" content="All the news">' in index
    plain = visitor.get("/pub/plain").text
    assert 'class="ns-logo" src="/_/web/files/pub/index/hero.png"' in plain
    assert f'content="{public_url}/_/web/files/pub/index/hero.png"' in plain
    own = visitor.get("/pub/own").text  # a page with its own image previews with it
    assert f'<meta property="og:image" content="{public_url}/_/web/files/pub/own/own.jpg">' in own
    assert visitor.get("/_/web/files/pub/index/hero.png").data == HERO
    assert "ns-logo" not in client_for("erin").get("/notes/").text  # no image set: none shown
    admin.delete_page("pub/index", basehash=admin.read_page("pub/index")["hash"])  # its attachments go with it
    gone = visitor.get("/pub/plain").text
    assert "ns-logo" not in gone and "hero.png" not in gone  # no broken image: none at all


def test_new_page_form_names_the_page_from_new_slug(admin, carol):
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"],
                         new={"template": "## Done\n\n## Next\n", "slug": "journal/{date}"})  # fmt: skip
    today = date.today().isoformat()
    form = carol.get("/_/new?namespace=notes").text
    assert f'name="name" value="journal/{today}"' in form and "journal/{date}" in form
    assert "## Done" in form
    made = carol.post("/_/new", data={"csrf_token": carol.csrf, "namespace": "notes", "name": "", "title": "Today", "body": "x"})
    assert made.status_code == 302 and made.headers["Location"] == f"/notes/journal/{date.today().isoformat()}"
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], new={"template": "", "slug": "{year}/{title}"})
    form = carol.get("/_/new?namespace=notes").text
    assert 'name="name" value=""' in form and "leave the name empty to name it from the title" in form
    made = carol.post("/_/new", data={"csrf_token": carol.csrf, "namespace": "notes", "name": "", "title": "Big Plan", "body": "y"})
    assert made.headers["Location"] == f"/notes/{datetime.now().year}/big-plan"
    assert admin.read_page(f"notes/{datetime.now().year}/big-plan")["title"] == "Big Plan"
    typed = carol.post("/_/new", data={"csrf_token": carol.csrf, "namespace": "notes", "name": "chosen", "title": "T", "body": "z"})
    assert typed.headers["Location"] == "/notes/chosen"  # a name typed wins
    again = carol.post("/_/new", data={"csrf_token": carol.csrf, "namespace": "notes", "name": "", "title": "Big Plan", "body": "w"})
    assert again.status_code == 400 and "exists" in again.text  # the same name twice: refused, nothing overwritten
    assert admin.read_page(f"notes/{datetime.now().year}/big-plan")["body"] == "y"


def _calendar(html: str) -> str:
    return html.split('class="widget widget-calendar"', 1)[1].split("</section>", 1)[0]


def test_the_calendar_shows_dated_pages_on_a_month_grid(admin, carol):
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"], widgets=["calendar", "prev-entries"])
    for slug, title in [("notes/2026-11-03", "Tuesday notes"), ("notes/log/2026-11-30-retro", "Retro"),
                        ("notes/2026-11-30", "Monday notes"), ("notes/2026-10-15", "October"), ("notes/undated", "U")]:  # fmt: skip
        admin.save_page(slug, body="x", title=title)
    html = carol.get("/notes/").text
    cal = _calendar(html)
    assert "<caption>November 2026</caption>" in cal
    first_week = re.search(r"<tbody><tr>(.*?)</tr>", cal).group(1)
    assert first_week.count("<td></td>") == 6 and first_week.endswith("<td>1</td>")  # 1 Nov 2026 is a Sunday
    assert '<a href="/notes/2026-11-03" title="Tuesday notes" aria-label="2026-11-03: Tuesday notes">3</a>' in cal
    assert 'title="Monday notes, Retro"' in cal  # two pages that day: the first linked, both named
    assert '<a href="/notes/log/2026-11-30-retro">Retro</a>' in cal and "undated" not in cal
    assert '<a rel="prev" href="?month=2026-10#w-calendar">← October 2026</a>' in cal and 'rel="next"' not in cal
    previous = html.split('class="widget widget-prev-entries"', 1)[1].split("</section>", 1)[0]
    assert re.findall(r'<a href="/notes/([^"]+)">', previous) == [
        "log/2026-11-30-retro", "2026-11-30", "2026-11-03", "2026-10-15"]  # by the date in the name, not by when saved
    october = _calendar(carol.get("/notes/?month=2026-10").text)
    assert "<caption>October 2026</caption>" in october and 'href="/notes/2026-10-15"' in october
    assert '<a rel="next" href="?month=2026-11#w-calendar">' in october and 'rel="prev"' not in october
    empty = _calendar(carol.get("/notes/?month=1999-02").text)
    assert "<caption>February 1999</caption>" in empty and "<a href" not in empty.split("</table>")[0]
    assert "<caption>November 2026</caption>" in _calendar(carol.get("/notes/?month=2026-13").text)  # nonsense: the newest


def test_the_calendar_marks_today_and_says_how_to_date_a_page(admin, carol):
    admin.save_namespace("team", admin.read_namespace("team")["hash"], widgets=["calendar"])
    cal = _calendar(carol.get("/team/").text)
    today = date.today()
    assert f"<caption>{today:%B} {today.year}</caption>" in cal
    assert f'<td class="today">{today.day}</td>' in cal
    assert "No dated pages" in cal


def test_the_web_reads_attachments_with_the_readers_access_not_the_systems(host, admin, client_for):
    admin.save_page("team/secret", body="s", title="S")
    upload(host, "team/secret", "s.png", HERO)
    assert client_for("dave").get("/_/web/files/team/secret/s.png").data == HERO
    assert client_for("dave").get("/_/web/files/notes/x/s.png").status_code == 404


def test_live_pages_are_noindex_unless_the_namespace_allows_robots(admin, visitor, carol):
    """The live pages follow the namespace's ``export.robots_allow``, as its static export does: a
    public namespace's pages are open to anyone, but search engines list them only once allowed."""
    admin.save_page("pub/open", body="For everyone.", title="Open")
    noindex = '<meta name="robots" content="noindex">'
    assert noindex in visitor.get("/pub/open").text and noindex in visitor.get("/pub/").text
    assert noindex in carol.get("/notes/").text  # a namespace for its members only: never listed
    admin.save_namespace("pub", admin.read_namespace("pub")["hash"], export={"robots_allow": True})
    assert noindex not in visitor.get("/pub/open").text and noindex not in visitor.get("/pub/").text
    assert noindex in carol.get("/notes/").text
