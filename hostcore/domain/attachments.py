"""Attachments: where a page's files are stored, their names, their sniffed type, links to them.

A page's attachments live in a folder beside it: ``notes/plan.md`` keeps ``report.pdf`` at
``notes/plan.files/report.pdf``. No page segment may end in ``.files`` (see
:func:`hostcore.domain.pages.check_slug`), so that folder never holds pages and never lists as
one. A page links an attachment by its URL, ``/_/files/notes/plan/report.pdf``
(:func:`attachment_url`), as ``[report](...)`` or ``![alt](...)``.

This module is pure: no storage, no access rules.
"""

from __future__ import annotations

import io
import re
import zipfile
from urllib.parse import unquote

from hostcore.domain.pages import (
    FILES_SUFFIX,
    PAGE_SUFFIX,
    check_portable,
    check_segment,
    outside_code,
    slug_from_path,
)
from hostcore.errors import ValidationError

URL_PREFIX = "/_/files/"
UPLOAD_PATH = "/_/upload/"  # + the one-use token

# Media types a browser may show inline from an attachment URL: none of them runs script.
INLINE_SAFE = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp", "text/plain", "text/markdown", "text/csv"})
# Types a browser would run script in when opened directly: served as text/plain, as a download.
SCRIPTABLE = frozenset({"text/html", "image/svg+xml", "application/xml", "application/xhtml+xml"})


def check_filename(name: object, field_name: str = "filename") -> str:
    """Validate an attachment's filename: one portable segment, no directory, not hidden.

    Letters, digits, ``-``, ``_`` and ``.``, starting with a letter or digit, at most 100
    characters; no name Windows reserves and no trailing dot. Returns it or raises ValidationError.
    """
    if not isinstance(name, str):
        raise ValidationError("must be a string", field=field_name)
    if "/" in name or "\\" in name:
        raise ValidationError(
            f"{name!r} has a directory; give the file's name alone, e.g. report.pdf", field=field_name
        )
    check_segment(name, field_name, "filename")
    return check_portable(name, field_name)


def files_folder(slug: str) -> str:
    """The storage folder of ``slug``'s attachments: ``notes/plan`` -> ``notes/plan.files``."""
    return slug + FILES_SUFFIX


def attachment_path(slug: str, filename: str) -> str:
    return f"{files_folder(slug)}/{filename}"


def split_attachment_path(path: str) -> tuple[str, str] | None:
    """(slug, filename) of a visible attachment's storage path (``notes/plan.files/report.pdf``), or None."""
    folder, _, filename = path.rpartition("/")
    if not folder.endswith(FILES_SUFFIX) or not filename or filename[0] in "._":
        return None
    slug = folder[: -len(FILES_SUFFIX)]
    return (slug, filename) if slug_from_path(slug + PAGE_SUFFIX) == slug else None


def attachment_url(slug: str, filename: str) -> str:
    """The URL a page links the attachment by (root-relative, so it survives a change of host)."""
    return f"{URL_PREFIX}{slug}/{filename}"


def split_attachment_url(path: str) -> tuple[str, str] | None:
    """(slug, filename) of an attachment URL path (``/_/files/notes/plan/report.pdf``), or None."""
    if not path.startswith(URL_PREFIX):
        return None
    rest = unquote(path[len(URL_PREFIX) :].split("#", 1)[0].split("?", 1)[0])
    slug, _, filename = rest.rpartition("/")
    if "/" not in slug or not filename:
        return None
    return slug, filename


# --- links to attachments ----------------------------------------------------------------

_MD_LINK = re.compile(r"\]\(\s*<?(" + re.escape(URL_PREFIX) + r"[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def attachment_links(body: str) -> list[tuple[str, str]]:
    """(slug, filename) of every Markdown link or image to an attachment URL, in order, once each.

    Counts ``[text](/_/files/...)`` and ``![alt](/_/files/...)`` outside code; what a page links
    from elsewhere (wiki-links, absolute URLs) is not an attachment link.
    """
    found: list[tuple[str, str]] = []
    for line in outside_code(body):
        for m in _MD_LINK.finditer(line):
            target = split_attachment_url(m.group(1))
            if target is not None and target not in found:
                found.append(target)
    return found


def rewrite_attachment_links(body: str, old: str, new: str) -> str:
    """``body`` with links to ``old``'s attachments pointing at ``new``'s (after a move)."""
    return body.replace(f"]({URL_PREFIX}{old}/", f"]({URL_PREFIX}{new}/").replace(
        f"](<{URL_PREFIX}{old}/", f"](<{URL_PREFIX}{new}/"
    )


def image_path(namespace: str, image: str) -> str:
    """The storage path of a namespace ``image`` setting, ``page/filename`` within ``namespace``."""
    page, _, filename = image.rpartition("/")
    return attachment_path(f"{namespace}/{page}", filename)


# --- the stored type, from the bytes ------------------------------------------------------

_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "image/png"),
    (b"\xff\xd8\xff", "image/jpeg"),
    (b"GIF87a", "image/gif"),
    (b"GIF89a", "image/gif"),
    (b"%PDF-", "application/pdf"),
    (b"\x1f\x8b", "application/gzip"),
    (b"7z\xbc\xaf\x27\x1c", "application/x-7z-compressed"),
    (b"Rar!\x1a\x07", "application/vnd.rar"),
    (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", "application/x-ole-storage"),  # old .doc/.xls
    (b"{\\rtf", "application/rtf"),
    (b"OggS", "audio/ogg"),
    (b"ID3", "audio/mpeg"),
    (b"fLaC", "audio/flac"),
)
_OFFICE = (
    ("word/", "application/vnd.openxmlformats-officedocument.wordprocessingml.document"),
    ("xl/", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
    ("ppt/", "application/vnd.openxmlformats-officedocument.presentationml.presentation"),
)
_TEXT_BY_EXTENSION = {
    "md": "text/markdown", "markdown": "text/markdown", "csv": "text/csv", "tsv": "text/tab-separated-values",
    "json": "application/json",
}  # fmt: skip
_HTML = re.compile(rb"\s*(<!--.*?-->\s*)*<(!doctype\s+html|html|head|body|script|iframe)[\s>]", re.I | re.S)
_SVG = re.compile(rb"\s*(<\?xml[^>]*>\s*)?(<!--.*?-->\s*|<!doctype[^>]*>\s*)*<svg[\s>]", re.I | re.S)
_XML = re.compile(rb"\s*<\?xml[\s?]")


def _zip_type(data: bytes) -> str:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            names = archive.namelist()
            if "mimetype" in names and archive.getinfo("mimetype").file_size < 100:
                declared = archive.read("mimetype").decode("ascii", "replace").strip()
                if re.fullmatch(r"application/vnd\.oasis\.opendocument\.[a-z.-]+", declared):
                    return declared
    except (zipfile.BadZipFile, OSError, ValueError, RuntimeError, NotImplementedError):
        return "application/zip"
    if "[Content_Types].xml" in names:
        for folder, media_type in _OFFICE:
            if any(n.startswith(folder) for n in names):
                return media_type
    return "application/zip"


def _is_text(head: bytes) -> bool:
    if b"\x00" in head:
        return False
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not just a character cut at the end of the sample
            return False
    return True


def sniff(data: bytes, filename: str) -> str:
    """The media type of ``data``, read from its bytes (magic numbers), never from the client.

    The filename's extension only tells text formats apart (``.md``, ``.csv``), which the bytes
    cannot; HTML, SVG and XML are recognised by content whatever the name. Anything unknown is
    ``application/octet-stream``.
    """
    for magic, media_type in _MAGIC:
        if data.startswith(magic):
            return media_type
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[4:8] == b"ftyp":
        return "video/mp4"
    if data.startswith(b"PK\x03\x04"):
        return _zip_type(data)
    if data.startswith((b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")):
        data = data.decode("utf-16" if data[:2] in (b"\xff\xfe", b"\xfe\xff") else "utf-8-sig", "replace").encode()
    head = data[:8192]
    if not _is_text(head):
        return "application/octet-stream"
    if _SVG.match(head):
        return "image/svg+xml"
    if _HTML.match(head):
        return "text/html"
    if _XML.match(head):
        return "application/xml"
    extension = filename.rsplit(".", 1)[-1].lower() if "." in filename else ""
    return _TEXT_BY_EXTENSION.get(extension, "text/plain")


def serving_headers(media_type: str, filename: str) -> dict[str, str]:
    """Headers for serving an attachment: a type that runs no script, nosniff and a locked-down CSP.

    Images and plain text show inline; anything else downloads. HTML, SVG and XML are sent as
    text/plain downloads, so a browser never runs script from an attachment URL.
    """
    inline = media_type in INLINE_SAFE
    content_type = "text/plain; charset=utf-8" if media_type in SCRIPTABLE else media_type
    if media_type.startswith("text/") and media_type not in SCRIPTABLE:
        content_type = f"{media_type}; charset=utf-8"
    return {
        "Content-Type": content_type,
        "Content-Disposition": f'{"inline" if inline else "attachment"}; filename="{filename}"',
        "X-Content-Type-Options": "nosniff",
        "Content-Security-Policy": "default-src 'none'; img-src 'self'; style-src 'unsafe-inline'; sandbox",
        "Cache-Control": "private, no-cache",
    }
