"""A page's attachments on the page: listed, images inline, PDFs in a sandboxed preview, documents'
text shown; upload, replace and delete through the service (access, basehash, CSRF)."""

from __future__ import annotations

import io

import pytest

from hostcore import Conflict, NotFound, Principal
from hostcore.testing.documents import pdf_document, png_image


def attach(admin, slug: str, filename: str, data: bytes) -> None:
    admin.complete_upload(admin.upload_attachment(slug, filename)["upload_url"].rsplit("/", 1)[1], data)


@pytest.fixture
def album(admin):
    admin.save_page("notes/album", body="Our trip.", title="Album")
    attach(admin, "notes/album", "beach.png", png_image(40, 30))
    attach(admin, "notes/album", "minutes.txt", b"We agreed to go to the beach.\n")
    attach(admin, "notes/album", "trip.pdf", pdf_document(["Day one: the beach."]))
    attach(admin, "notes/album", "blob.bin", bytes(range(256)) * 4)
    return "notes/album"


def test_the_page_lists_its_attachments_each_shown_as_it_can_be(carol, album):
    html = carol.get("/notes/album").text
    section = html.split('id="attachments"')[1].split("</section>")[0]
    assert '<img src="/_/web/files/notes/album/beach.png" alt="beach.png" loading="lazy">' in section
    assert '<iframe class="pdf" src="/_/web/pdf/notes/album/trip.pdf" title="Preview of trip.pdf"' in section
    assert (
        "sandbox" not in section.split("<iframe")[1].split(">")[0]
    )  # the response is sandboxed, not the frame (see attachments.py)
    assert "We agreed to go to the beach." in section  # a document's extracted text
    assert 'href="/_/web/files/notes/album/blob.bin" download' in section  # the rest: a link
    assert section.count('name="action" value="delete"') == 4 and 'value="upload"' in section


def test_a_reader_sees_them_and_no_form(client_for, admin):
    admin.save_page("team/plan", body="x", title="Plan")
    attach(admin, "team/plan", "map.png", png_image(10, 10))
    html = client_for("dave").get("/team/plan").text
    assert "map.png" in html and not any(f'value="{a}"' in html for a in ("upload", "replace", "delete"))  # comments' forms aside


def test_the_pdf_preview_is_sandboxed_and_only_for_pdfs(carol, visitor, album):
    shown = carol.get("/_/web/pdf/notes/album/trip.pdf")
    assert shown.status_code == 200 and shown.mimetype == "application/pdf"
    csp = shown.headers["Content-Security-Policy"]
    assert csp.startswith("sandbox;") and "default-src 'none'" in csp and "frame-ancestors 'self'" in csp
    assert shown.headers["Content-Disposition"].startswith("inline") and shown.headers["X-Content-Type-Options"] == "nosniff"
    assert carol.get("/_/web/pdf/notes/album/beach.png").status_code == 404  # a PDF or nothing
    assert carol.get("/_/web/pdf/notes/album/none.pdf").status_code == 404
    assert visitor.get("/_/web/pdf/notes/album/trip.pdf").status_code == 302  # sign in first, as for the page


def test_upload_replace_and_delete_from_the_page(carol, admin, album):
    form = {"csrf_token": carol.csrf, "action": "upload", "file": (io.BytesIO(b"Second meeting.\n"), "minutes.txt")}
    done = carol.post("/_/web/attachments/notes/album", data=form, content_type="multipart/form-data")
    assert done.status_code == 303 and done.headers["Location"].endswith("/notes/album#attachments")
    assert "minutes-2.txt" in admin.attachment_names(album)  # an upload never replaces
    old = admin.attachment_hashes(album)["minutes.txt"]
    form = {"csrf_token": carol.csrf, "action": "replace", "filename": "minutes.txt", "basehash": old,
            "file": (io.BytesIO(b"We agreed: the mountains.\n"), "whatever.txt")}  # fmt: skip
    assert carol.post("/_/web/attachments/notes/album", data=form, content_type="multipart/form-data").status_code == 303
    assert admin.attachment(album, "minutes.txt")[0] == b"We agreed: the mountains.\n"
    assert "the mountains" in carol.get("/notes/album").text  # its text follows
    stale = {"csrf_token": carol.csrf, "action": "replace", "filename": "minutes.txt", "basehash": old,
             "file": (io.BytesIO(b"Overwrite!\n"), "x.txt")}  # fmt: skip
    refused = carol.post("/_/web/attachments/notes/album", data=stale, content_type="multipart/form-data")
    assert refused.status_code == 409 and "changed since you read it" in refused.text
    assert '<header class="site">' in refused.text  # the site's page, with its header
    assert admin.attachment(album, "minutes.txt")[0] == b"We agreed: the mountains.\n"  # nothing overwritten
    current = admin.attachment_hashes(album)["beach.png"]
    gone = carol.post("/_/web/attachments/notes/album", data={"csrf_token": carol.csrf, "action": "delete",
                                                              "filename": "beach.png", "basehash": current})  # fmt: skip
    assert gone.status_code == 303 and "beach.png" not in admin.attachment_names(album)
    history = [c["message"] for c in admin.recent_changes(10)["commits"]]
    assert "delete_attachment: notes/album/beach.png via web" in history
    assert "replace_attachment: notes/album/minutes.txt via web" in history
    no_token = carol.post("/_/web/attachments/notes/album", data={"action": "delete", "filename": "trip.pdf",
                                                                  "basehash": admin.attachment_hashes(album)["trip.pdf"]})  # fmt: skip
    assert no_token.status_code == 403 and "trip.pdf" in admin.attachment_names(album)


def test_readers_change_nothing(client_for, admin):
    admin.save_page("team/plan", body="x", title="Plan")
    attach(admin, "team/plan", "map.png", png_image(10, 10))
    dave = client_for("dave")
    digest = admin.attachment_hashes("team/plan")["map.png"]
    answer = dave.post("/_/web/attachments/team/plan", data={"csrf_token": dave.csrf, "action": "delete", "filename": "map.png",
                                                             "basehash": digest})  # fmt: skip
    assert answer.status_code == 403 and admin.attachment_names("team/plan") == ["map.png"]


def test_the_service_replaces_and_deletes_only_what_the_caller_saw(host, admin, album):
    carol = host.wiki(Principal("person:carol", frozenset({"write"})))
    digest = carol.attachment_hashes(album)["beach.png"]
    with pytest.raises(Conflict) as refused:
        carol.delete_attachment(album, "beach.png", "0" * 40)
    assert refused.value.field == "basehash" and refused.value.data["hash"] == digest
    with pytest.raises(NotFound):
        carol.delete_attachment(album, "nothing.png", digest)
    replaced = carol.replace_attachment(album, "beach.png", digest, png_image(50, 50))
    assert replaced["hash"] != digest and replaced["media_type"] == "image/png"
    carol.delete_attachment(album, "beach.png", replaced["hash"])
    assert "beach.png" not in carol.attachment_names(album)
