"""Attachments in the service layer and its HTTP routes: names, sniffed types, one-use upload
tickets, windows of extracted text, extraction limits, and attachments following their page
through move, rename, delete and restore. Real storage, real SQLite, real subprocesses."""

from __future__ import annotations

import io
import json
import sqlite3
import time
import zipfile

import pytest
from flask import Flask

import hostcore_tokens
from hostcore import create_app, recover_sqlite
from hostcore.domain.attachments import attachment_links, check_filename, serving_headers, sniff
from hostcore.domain.principal import SYSTEM
from hostcore.errors import Forbidden, NotFound, TicketRefused, TooLarge, Unavailable, ValidationError
from hostcore.testing import FakeClock
from tests import hostile_extractor

from .conftest import principal

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 64
TEXT = "# Minutes\n\n" + "".join(f"Line {i}: the budget was approved.\n" for i in range(200))


def token_of(ticket: dict) -> str:
    return ticket["upload_url"].rsplit("/", 1)[1]


def upload(wiki, slug: str, filename: str, data: bytes) -> dict:
    return wiki.complete_upload(token_of(wiki.upload_attachment(slug, filename)), data)


@pytest.fixture
def page(wiki) -> str:
    wiki.save_page("notes/plan", body="# Plan\n")
    return "notes/plan"


# --- names, types, links: the pure rules --------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["../x.txt", "a/b.txt", "a\\b.txt", ".hidden", "_x.txt", "CON.txt", "nul", "x.", "", "a" * 101, "é.txt", "a b.txt"]
)
def test_bad_filenames_are_refused_naming_the_field(name):
    with pytest.raises(ValidationError) as err:
        check_filename(name)
    assert err.value.field == "filename"


def test_types_are_sniffed_from_the_bytes_not_the_name():
    docx = io.BytesIO()
    with zipfile.ZipFile(docx, "w") as archive:
        archive.writestr("[Content_Types].xml", "<Types/>")
        archive.writestr("word/document.xml", "<w:document/>")
    assert sniff(PNG, "photo.pdf") == "image/png"
    assert sniff(b"\xff\xd8\xff\xe0rest", "x.bin") == "image/jpeg"
    assert sniff(b"%PDF-1.7\n...", "x.txt") == "application/pdf"
    assert sniff(docx.getvalue(), "x.txt") == "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    assert sniff(b"<!DOCTYPE html><html><script>alert(1)</script>", "notes.txt") == "text/html"
    assert sniff(b'<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"/>', "x.png") == "image/svg+xml"
    assert sniff(b"a,b\n1,2\n", "t.csv") == "text/csv"
    assert sniff(b"# Title\n", "t.md") == "text/markdown"
    assert sniff("Grüße\n".encode(), "t") == "text/plain"
    assert sniff(b"\x00\x01\x02", "t.txt") == "application/octet-stream"


def test_html_and_svg_are_served_as_plain_text_downloads():
    for media_type in ("text/html", "image/svg+xml"):
        headers = serving_headers(media_type, "x.html")
        assert headers["Content-Type"] == "text/plain; charset=utf-8"
        assert headers["Content-Disposition"] == 'attachment; filename="x.html"'
        assert headers["X-Content-Type-Options"] == "nosniff"
        assert "sandbox" in headers["Content-Security-Policy"] and "default-src 'none'" in headers["Content-Security-Policy"]
    assert serving_headers("image/png", "a.png")["Content-Disposition"].startswith("inline")


def test_attachment_links_are_markdown_links_and_images_outside_code():
    body = "[r](/_/files/notes/plan/r.pdf) ![i](</_/files/notes/plan/i.png> \"t\")\n`[c](/_/files/notes/x/c.txt)`\n"
    assert attachment_links(body) == [("notes/plan", "r.pdf"), ("notes/plan", "i.png")]


# --- upload through a one-use ticket ------------------------------------------------------------


def test_upload_stores_beside_the_page_and_reads_in_windows(host, wiki, page):
    ticket = wiki.upload_attachment(page, "minutes.md")
    assert ticket["attachment_url"] == "/_/files/notes/plan/minutes.md" and ticket["field"] == "file"
    assert ticket["upload_url"].startswith(host.config["PUBLIC_URL"] + "/_/upload/")
    done = wiki.complete_upload(token_of(ticket), TEXT.encode())
    assert done["media_type"] == "text/markdown" and done["text_status"] == "extracted"
    assert done["total_chars"] == len(TEXT) and done["size"] == len(TEXT.encode())
    assert host.storage.read("notes/plan.files/minutes.md") == TEXT.encode()
    assert wiki.list_pages("notes")["pages"] == [{"slug": "notes/plan", "title": "notes/plan", "tags": []}]

    first = wiki.read_attachment(page, "minutes.md", 0, 1000)
    assert first["body"] == TEXT[:1000] and first["truncated"] and first["next_offset"] == 1000
    rest = wiki.read_attachment(page, "minutes.md", 1000, 100_000)
    assert first["body"] + rest["body"] == TEXT and not rest["truncated"] and rest["next_offset"] is None
    with pytest.raises(ValidationError) as err:
        wiki.read_attachment(page, "minutes.md", len(TEXT) + 5)
    assert err.value.field == "offset"


def test_the_ticket_survives_a_restart_and_works_once(tmp_path, page, wiki, host):
    token = token_of(wiki.upload_attachment(page, "a.txt"))
    other = create_app({"PLUGINS": ["fs", "tokens"], "STORAGE": "fs"}, instance_path=host.instance_path)
    try:
        later = other.extensions["hostcore"].wiki(SYSTEM)
        assert later.complete_upload(token, b"hello\n")["text_status"] == "extracted"
        with pytest.raises(TicketRefused) as err:
            later.complete_upload(token, b"again\n")
        assert err.value.status == 410 and "already used" in err.value.message
    finally:
        other.extensions["hostcore"].close()
    with pytest.raises(TicketRefused) as err:
        wiki.complete_upload("not-a-token", b"x")
    assert err.value.status == 404
    rows = sqlite3.connect(host.instance_path / "shared.sqlite").execute("SELECT key, value FROM records").fetchall()
    assert rows and token not in repr(rows), "only a digest of the token is stored"


@pytest.fixture
def instance(tmp_path):
    """make(config, plugins) -> an app on fs storage with settings ``config`` and a page notes/plan."""
    made = []

    def make(config: dict, plugins: tuple = ()) -> Flask:
        app = create_app({"PLUGINS": ["fs"], "STORAGE": "fs", **config}, instance_path=tmp_path / "i", plugins=plugins)
        made.append(app.extensions["hostcore"])
        wiki = made[-1].wiki(SYSTEM)
        wiki.save_namespace("notes")
        wiki.save_page("notes/plan", body="x")
        return app

    yield make
    for host in made:
        host.close()


def test_an_expired_ticket_is_refused(instance):
    host = instance({"UPLOAD_URL_SECONDS": 60}).extensions["hostcore"]
    host.uploads.clock = clock = FakeClock()
    wiki = host.wiki(SYSTEM)
    token = token_of(wiki.upload_attachment("notes/plan", "a.txt"))
    clock.advance(59)
    assert host.uploads.check(token).filename == "a.txt"
    clock.advance(2)
    with pytest.raises(TicketRefused) as err:
        wiki.complete_upload(token, b"late")
    assert err.value.status == 410 and "expired" in err.value.message


def test_over_the_limit_is_refused_and_the_ticket_stays_valid(instance):
    wiki = instance({"MAX_ATTACHMENT_BYTES": 100}).extensions["hostcore"].wiki(SYSTEM)
    token = token_of(wiki.upload_attachment("notes/plan", "a.txt"))
    with pytest.raises(TooLarge) as err:
        wiki.complete_upload(token, b"x" * 101)
    assert err.value.code == "too_large" and "MAX_ATTACHMENT_BYTES" in err.value.message
    assert wiki.complete_upload(token, b"x" * 100)["size"] == 100


def test_upload_refuses_taken_names_missing_pages_and_other_namespaces(host, wiki, page):
    upload(wiki, page, "Report.txt", b"one")
    for name in ("Report.txt", "report.txt"):
        with pytest.raises(ValidationError) as err:
            wiki.upload_attachment(page, name)
        assert err.value.field == "filename"
    with pytest.raises(NotFound):
        wiki.upload_attachment("notes/none", "a.txt")
    with pytest.raises(Forbidden):
        host.wiki(principal("write", namespaces=["team"])).upload_attachment(page, "b.txt")
    with pytest.raises(Forbidden):
        host.wiki(principal("read", namespaces=["team"])).read_attachment(page, "Report.txt")
    with pytest.raises(ValidationError) as err:
        wiki.save_page("notes/plan.files/x", body="x")
    assert "attachments folder" in err.value.message


# --- extraction: unsupported, failing, limited --------------------------------------------------


def test_a_file_without_text_is_stored_and_says_why(wiki, page):
    done = upload(wiki, page, "photo.png", PNG)
    assert done["media_type"] == "image/png" and done["text_status"] == "unsupported"
    assert "no text extractor reads image/png" in done["text_reason"] and done["total_chars"] is None
    with pytest.raises(Unavailable) as err:
        wiki.read_attachment(page, "photo.png")
    assert "no text extractor" in err.value.message and "/_/files/notes/plan/photo.png" in err.value.message
    assert wiki.attachment(page, "photo.png")[:2] == (PNG, "image/png")


@pytest.fixture
def limited(instance):
    app = instance({"EXTRACT_TIMEOUT_SECONDS": 4, "EXTRACT_MEMORY_BYTES": 512 * 2**20}, plugins=(hostile_extractor,))
    return app.extensions["hostcore"]


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (b"SLEEP", "took longer than 4 s"),
        (b"LOOP", "took longer than 4 s"),
        (b"BOMB", "MiB of memory"),
        (b"CORRUPT", "the file is corrupt"),
        (b"CRASH", "ValueError: an extractor bug"),
    ],
)
def test_extraction_runs_in_a_limited_subprocess(limited, command, reason):
    wiki = limited.wiki(SYSTEM)
    started = time.monotonic()
    done = upload(wiki, "notes/plan", "file.bin", b"\x00" + command)
    assert time.monotonic() - started < 20
    assert done["text_status"] == "failed" and reason in done["text_reason"], done
    assert done["media_type"] == "application/octet-stream"
    with pytest.raises(Unavailable) as err:  # cached: not extracted again
        wiki.read_attachment("notes/plan", "file.bin")
    assert reason in err.value.message


def test_the_time_limit_counts_from_the_extractors_start(instance):
    """A subprocess that is slow to start (here: its extractor's module takes longer to import than
    the whole limit, as any import does on a busy machine) still gets the whole limit to extract."""
    from tests import slow_start_extractor

    assert slow_start_extractor.IMPORT_SECONDS > 2
    app = instance({"EXTRACT_TIMEOUT_SECONDS": 2}, plugins=(slow_start_extractor,))
    wiki = app.extensions["hostcore"].wiki(SYSTEM)
    done = upload(wiki, "notes/plan", "file.bin", b"\x00payload")
    assert done["text_status"] == "extracted", done
    assert wiki.read_attachment("notes/plan", "file.bin")["body"] == "bytes: 8"


def test_text_is_extracted_once_per_blob(limited):
    wiki = limited.wiki(SYSTEM)
    data = b"\x00" + b"payload" * 10
    assert upload(wiki, "notes/plan", "a.bin", data)["total_chars"] == len(f"bytes: {len(data)}")
    db = sqlite3.connect(limited.instance_path / "extracted.sqlite")
    db.execute("UPDATE texts SET text = 'from the cache'")
    db.commit()
    assert upload(wiki, "notes/plan", "b.bin", data)["total_chars"] == len("from the cache")
    assert wiki.read_attachment("notes/plan", "a.bin")["body"] == "from the cache"


# --- attachments follow their page --------------------------------------------------------------


def test_move_rename_delete_restore_take_attachments_along(git_host):
    wiki = git_host.wiki(principal("write", name="mover"))
    wiki.save_page("notes/plan", body="See [minutes](/_/files/notes/plan/minutes.md) and [[notes/plan]].\n")
    upload(wiki, "notes/plan", "minutes.md", TEXT.encode())
    upload(wiki, "notes/plan", "photo.png", PNG)
    storage = git_host.storage
    before = len(storage.history())

    page = wiki.read_page("notes/plan")
    moved = wiki.move_page("notes/plan", "team/plan", page["hash"])
    assert len(storage.history()) == before + 1, "the move is one commit"
    assert storage.history()[0].author == "mover" and storage.history()[0].message.startswith("move_page:")
    assert storage.list("team") == ["team/.namespace.yaml", "team/plan.files/minutes.md", "team/plan.files/photo.png", "team/plan.md"]
    assert not storage.list("notes/plan.files")
    assert wiki.read_page("team/plan")["body"].startswith("See [minutes](/_/files/team/plan/minutes.md)")
    assert wiki.read_page("team/plan")["hash"] == moved["hash"]
    assert wiki.read_attachment("team/plan", "minutes.md", 0, 100)["body"] == TEXT[:100]

    renamed = wiki.rename_page("team/plan", "Budget", moved["hash"])
    assert renamed["slug"] == "team/budget"
    assert wiki.attachment_names("team/budget") == ["minutes.md", "photo.png"]

    wiki.delete_page("team/budget")
    assert storage.list("team/budget.files") == []
    with pytest.raises(NotFound):
        wiki.read_attachment("team/budget", "minutes.md")
    wiki.restore_page("team/budget")
    assert wiki.attachment_names("team/budget") == ["minutes.md", "photo.png"]
    assert storage.read("team/budget.files/photo.png") == PNG


def test_health_reports_links_to_missing_attachments(git_host):
    wiki = git_host.wiki(principal("write"))
    wiki.save_page("notes/plan", body="x")
    upload(wiki, "notes/plan", "here.txt", b"here")
    wiki.save_page("notes/links", body="[ok](/_/files/notes/plan/here.txt) ![gone](/_/files/notes/plan/gone.png)\n")
    report = wiki.health("notes")
    assert report["missing_attachments"] == [{"from": "notes/links", "to": "/_/files/notes/plan/gone.png"}]
    assert report["counts"]["missing_attachments"] == 1
    limited = git_host.wiki(principal("read", namespaces=["team"]))
    assert limited.health()["missing_attachments"] == []


def test_links_to_attachments_leave_the_link_graph_sound_for_the_next_process(git_host):
    """SQLite 3.40's quick_check took file_links for damaged (a NOT NULL column between its key's
    columns), so each new process (a CLI command beside the server) set the graph aside and rebuilt it."""
    wiki = git_host.wiki(principal("write"))
    wiki.save_page("notes/links", body="![i](/_/files/notes/links/i.png)\n")
    path = git_host.links.path
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA quick_check").fetchall() == [("ok",)]
    assert not recover_sqlite(path, "link graph")


def test_namespace_image_must_be_a_stored_png_or_jpeg(git_host):
    admin = git_host.wiki(principal("admin"))
    admin.save_page("notes/index", body="x")
    ns_hash = admin.read_namespace("notes")["hash"]
    with pytest.raises(ValidationError) as err:
        admin.save_namespace("notes", ns_hash, image="index/hero.png")
    assert err.value.field == "image" and "upload_attachment" in err.value.message
    upload(admin, "notes/index", "fake.png", b"not an image")
    with pytest.raises(ValidationError):
        admin.save_namespace("notes", ns_hash, image="index/fake.png")
    upload(admin, "notes/index", "hero.png", PNG)
    assert admin.save_namespace("notes", ns_hash, image="index/hero.png")["hash"]


# --- the HTTP routes ------------------------------------------------------------------------------


def test_routes_upload_once_and_serve_with_safe_headers(app, host, wiki, page, client):
    token = hostcore_tokens.store(host).create("reader", ["read"])
    team = hostcore_tokens.store(host).create("team", ["read"], ["team"])
    ticket = wiki.upload_attachment(page, "page.html")
    path = "/_/upload/" + token_of(ticket)
    html = b"<!doctype html><html><script>alert(1)</script></html>"
    missing = client.post(path, data={}, content_type="multipart/form-data")
    assert missing.status_code == 400 and "field 'file'" in missing.get_json()["error"]["message"]
    posted = client.post(path, data={"file": (io.BytesIO(html), "whatever.txt")}, content_type="multipart/form-data")
    assert posted.status_code == 201, posted.data
    assert posted.get_json()["media_type"] == "text/html"
    again = client.post(path, data={"file": (io.BytesIO(b"x"), "x")}, content_type="multipart/form-data")
    assert again.status_code == 410 and "already used" in again.get_json()["error"]["message"]

    url = ticket["attachment_url"]
    assert client.get(url).status_code == 401
    served = client.get(url, headers={"Authorization": f"Bearer {token}"})
    assert served.status_code == 200 and served.data == html
    assert served.headers["Content-Type"] == "text/plain; charset=utf-8"
    assert served.headers["Content-Disposition"] == 'attachment; filename="page.html"'
    assert served.headers["X-Content-Type-Options"] == "nosniff"
    assert client.get(url, headers={"Authorization": f"Bearer {team}"}).status_code == 403
    gone = client.get("/_/files/notes/plan/none.txt", headers={"Authorization": f"Bearer {token}"})
    assert gone.status_code == 404 and json.loads(gone.data)["error"]["field"] == "filename"


def test_a_mangled_upload_url_gets_the_json_not_found(client, wiki, page):
    """A slash in the token, a trailing one (a client joining paths) or a line break is the route's
    own JSON answer, not an HTML page."""
    token = token_of(wiki.upload_attachment(page, "a.txt"))
    for path in (f"/_/upload/{token}/", f"/_/upload/notes/{token}", "/_/upload/a%2Fb", "/_/upload/", "/_/upload/a%0D%0Ab"):
        refused = client.post(path, data={"file": (io.BytesIO(b"x"), "a.txt")}, content_type="multipart/form-data")
        assert refused.status_code == 404 and refused.get_json()["error"]["code"] == "not_found", path


def test_route_refuses_a_body_over_the_limit_before_using_the_ticket(instance):
    app = instance({"MAX_ATTACHMENT_BYTES": 1000})
    wiki = app.extensions["hostcore"].wiki(SYSTEM)
    path = "/_/upload/" + token_of(wiki.upload_attachment("notes/plan", "big.bin"))
    client = app.test_client()
    big = client.post(path, data={"file": (io.BytesIO(b"x" * 200_000), "big.bin")}, content_type="multipart/form-data")
    assert big.status_code == 413 and "MAX_ATTACHMENT_BYTES" in big.get_json()["error"]["message"]
    near = client.post(path, data={"file": (io.BytesIO(b"x" * 1001), "big.bin")}, content_type="multipart/form-data")
    assert near.status_code == 413
    fits = client.post(path, data={"file": (io.BytesIO(b"x" * 1000), "big.bin")}, content_type="multipart/form-data")
    assert fits.status_code == 201


def test_attachment_settings_are_checked():
    from hostcore.host.config import DEFAULTS, problems_in

    assert DEFAULTS["MAX_ATTACHMENT_BYTES"] == 25 * 2**20 and DEFAULTS["UPLOAD_URL_SECONDS"] == 900
    problems = problems_in({"MAX_ATTACHMENT_BYTES": 0, "UPLOAD_URL_SECONDS": "soon", "EXTRACT_TIMEOUT_SECONDS": -1})
    assert "MAX_ATTACHMENT_BYTES: must be greater than 0, got 0" in problems
    assert "EXTRACT_TIMEOUT_SECONDS: must be greater than 0, got -1" in problems
    assert any(p.startswith("UPLOAD_URL_SECONDS: expected int") for p in problems)
