"""Attachments: one-use upload URLs, storing an upload beside its page, reading its text in windows.

Mixed into :class:`~hostcore.service.wiki.Wiki`. An attachment belongs to its page: it is stored
in the page's ``.files`` folder (:mod:`hostcore.domain.attachments`), and access to it is access
to the page. Moving, renaming, deleting and restoring the page take its attachments along
(:mod:`hostcore.service.links`, :mod:`hostcore.service.pages`, :mod:`hostcore.service.history`).
"""

from __future__ import annotations

import time

from typing_extensions import TypedDict

from hostcore.domain.attachments import (
    UPLOAD_PATH,
    attachment_path,
    attachment_url,
    check_filename,
    files_folder,
    sniff,
)
from hostcore.domain.hashes import blob_hash
from hostcore.domain.pages import Window, fold, window
from hostcore.errors import Conflict, NotFound, TooLarge, Unavailable, ValidationError
from hostcore.indexes.extraction import Extraction, Status
from hostcore.seams.storage import Delete, Put
from hostcore.service.base import WikiBase

UPLOAD_FIELD = "file"


class UploadTicket(TypedDict):
    slug: str
    filename: str
    upload_url: str
    field: str
    attachment_url: str
    expires_at: str
    max_bytes: int
    how: str


class Uploaded(TypedDict):
    slug: str
    filename: str
    attachment_url: str
    media_type: str
    size: int
    hash: str
    text_status: Status
    text_reason: str
    total_chars: int | None


class AttachmentWindow(Window):
    """A window of an attachment's text (``body``, ``offset``, ``total_chars``, ``truncated``,
    ``next_offset``) and what the file is."""

    slug: str
    filename: str
    media_type: str
    size: int
    hash: str


class AttachmentsMixin(WikiBase):
    """upload_attachment (and the upload it leads to), read_attachment, and serving the file."""

    def _load_attachment(self, slug: str, filename: str) -> tuple[bytes, str]:
        try:
            return self.storage.read_with_hash(attachment_path(slug, filename))
        except NotFound:
            raise NotFound(
                f"page {slug!r} has no attachment {filename!r}; the page's links show its attachments, "
                "or upload it with upload_attachment",
                field="filename",
            ) from None

    def _check_new_filename(self, slug: str, filename: str) -> None:
        """Refuse a name taken on the page, or one that differs from a taken one only by case."""
        for path in self._attachments_of(slug):
            existing = path.rsplit("/", 1)[1]
            if existing == filename:
                raise ValidationError(
                    f"page {slug!r} has an attachment {filename!r} already; pick another filename "
                    "(an upload never replaces a file)",
                    field="filename",
                )
            if fold(existing) == fold(filename):
                raise ValidationError(
                    f"{filename} differs only by case from the attachment {existing}; pick another filename",
                    field="filename",
                )

    def upload_attachment(self, slug: str, filename: str) -> UploadTicket:
        """A one-use URL to POST the file to (multipart field ``file``), valid UPLOAD_URL_SECONDS."""
        self._access("write", slug)
        check_filename(filename)
        self._load(slug)
        self._check_new_filename(slug, filename)
        config = self.host.config
        token, expires = self.host.uploads.issue(slug, filename, self.principal, config["UPLOAD_URL_SECONDS"])
        upload_url = f"{config['PUBLIC_URL'].rstrip('/')}{UPLOAD_PATH}{token}"
        return {
            "slug": slug,
            "filename": filename,
            "upload_url": upload_url,
            "field": UPLOAD_FIELD,
            "attachment_url": attachment_url(slug, filename),
            "expires_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(expires)),
            "max_bytes": config["MAX_ATTACHMENT_BYTES"],
            "how": f"POST the file once, as multipart field '{UPLOAD_FIELD}', before expires_at, e.g. "
            f"curl -F {UPLOAD_FIELD}=@{filename} '{upload_url}'; then link it from the page with edit_page as "
            f"[{filename}]({attachment_url(slug, filename)})",
        }

    def complete_upload(self, token: str, data: bytes) -> Uploaded:
        """Store the file posted to a one-use URL as the attachment its ticket names.

        The ticket is claimed (used up) once the file is known to fit; the caller's access is
        checked again as the principal who asked for the URL. Raises TicketRefused (unknown,
        expired or used URL), TooLarge, or the errors of a write.
        """
        self.host.uploads.check(token)
        check_upload_size(len(data), self.host.config["MAX_ATTACHMENT_BYTES"])
        ticket = self.host.uploads.claim(token)
        return self.host.wiki(ticket.principal)._store_attachment(ticket.slug, ticket.filename, data)

    def _store_attachment(self, slug: str, filename: str, data: bytes) -> Uploaded:
        self._access("write", slug)
        self._load(slug)
        path = attachment_path(slug, filename)
        media_type = sniff(data, filename)
        change = self._change("upload_attachment", f"{slug}/{filename}")
        # extracted (and cached) before the change is stored and announced: the passage index,
        # which indexes it in the background from then on, finds its text instead of extracting it again
        digest = blob_hash(data)
        text = self.host.extraction.text(data, digest, media_type)
        try:
            self._store([Put(path, data, expect=None)], change)
        except Conflict:
            raise ValidationError(
                f"page {slug!r} got an attachment {filename!r} meanwhile; ask for a new upload URL with another filename",
                field="filename",
            ) from None
        return _uploaded(slug, filename, data, media_type, digest, text)

    def read_attachment(self, slug: str, filename: str, offset: int = 0, limit: int = 40_000) -> AttachmentWindow:
        """A window of the attachment's extracted text. Raises Unavailable saying why it has none."""
        self._access("read", slug)
        check_filename(filename)
        data, digest = self._load_attachment(slug, filename)
        media_type = sniff(data, filename)
        text = self.host.extraction.text(data, digest, media_type)
        if text.status != "extracted":
            raise Unavailable(
                f"{filename} ({media_type}) has no text to read: {text.reason}. The file itself is at "
                f"{attachment_url(slug, filename)}",
                field="filename",
                text_status=text.status,
            )
        return {
            "slug": slug, "filename": filename, "media_type": media_type, "size": len(data), "hash": digest,
            **window(text.text, offset, limit),
        }  # fmt: skip

    def attachment(self, slug: str, filename: str) -> tuple[bytes, str, str]:
        """The attachment's bytes, sniffed media type and blob id, for serving it."""
        self._access("read", slug)
        check_filename(filename)
        data, digest = self._load_attachment(slug, filename)
        return data, sniff(data, filename), digest

    def attachment_names(self, slug: str) -> list[str]:
        """The filenames of the page's attachments, sorted."""
        return sorted(self.attachment_hashes(slug))

    def attachment_hashes(self, slug: str) -> dict[str, str]:
        """Filename -> blob id of each of the page's attachments: the ``basehash`` that
        :meth:`replace_attachment` and :meth:`delete_attachment` take."""
        self._access("read", slug)
        prefix = files_folder(slug) + "/"
        return {path[len(prefix) :]: digest for path, digest in self._attachments_of(slug).items()}

    def _existing_attachment(self, slug: str, filename: str, basehash: str) -> str:
        """The storage path of an attachment the caller may change, still holding ``basehash``
        (its blob id as the caller saw it); Conflict naming the current one otherwise."""
        self._access("write", slug)
        check_filename(filename)
        self._load(slug)
        path = attachment_path(slug, filename)
        current = self.storage.hash(path)
        if current is None:
            raise NotFound(f"page {slug!r} has no attachment {filename!r}; list the page's attachments again", field="filename")
        if basehash != current:
            raise Conflict(
                f"{filename} changed since you read it (now {current[:12]}); look at it again before changing it",
                field="basehash", hash=current,
            )  # fmt: skip
        return path

    def replace_attachment(self, slug: str, filename: str, basehash: str, data: bytes) -> Uploaded:
        """Put ``data`` in place of an attachment that still holds ``basehash``: the same name, so
        links to it show the new file. Raises Conflict (changed meanwhile), NotFound, TooLarge."""
        check_upload_size(len(data), self.host.config["MAX_ATTACHMENT_BYTES"])
        path = self._existing_attachment(slug, filename, basehash)
        media_type = sniff(data, filename)
        digest = blob_hash(data)
        text = self.host.extraction.text(data, digest, media_type)
        self._store([Put(path, data, expect=basehash)], self._change("replace_attachment", f"{slug}/{filename}"))
        return _uploaded(slug, filename, data, media_type, digest, text)

    def delete_attachment(self, slug: str, filename: str, basehash: str) -> None:
        """Remove an attachment that still holds ``basehash`` (its history keeps it, as a deleted
        page's does). Raises Conflict (changed meanwhile) or NotFound."""
        path = self._existing_attachment(slug, filename, basehash)
        self._store([Delete(path, expect=basehash)], self._change("delete_attachment", f"{slug}/{filename}"))


def _uploaded(slug: str, filename: str, data: bytes, media_type: str, digest: str, text: Extraction) -> Uploaded:
    extracted = text.status == "extracted"
    return {
        "slug": slug, "filename": filename, "attachment_url": attachment_url(slug, filename),
        "media_type": media_type, "size": len(data), "hash": digest, "text_status": text.status,
        "text_reason": text.reason, "total_chars": len(text.text) if extracted else None,
    }  # fmt: skip


def too_large(size: int, limit: int) -> TooLarge:
    return TooLarge(
        f"is {size} bytes; the limit is {limit} bytes (MAX_ATTACHMENT_BYTES). The upload URL is still valid "
        "for a smaller file",
        field=UPLOAD_FIELD,
    )


def check_upload_size(size: int, limit: int) -> None:
    """Refuse a file over ``limit`` bytes before the ticket is used (the URL stays valid)."""
    if size > limit:
        raise too_large(size, limit)
