"""Blame: each line of a page with the recorded change that last wrote it (who, with which client,
when, why), from the storage seam's :meth:`~hostcore.Storage.blame`, which every backend with
history answers (git, s3); one without (fs) answers ``no_history``.
"""

from __future__ import annotations

from datetime import UTC

from typing_extensions import TypedDict

from hostcore.domain.pages import Page, page_path
from hostcore.errors import NotFound, ValidationError
from hostcore.seams.storage import Revision, file_lines
from hostcore.service.history import HistoryMixin

MAX_BLAME_LINES = 2000  # lines per answer


class BlameLine(TypedDict):
    line: int
    text: str
    change: str


class BlameChange(TypedDict):
    id: str
    author: str
    client: str | None
    time: str
    message: str
    reason: str | None


class Blame(TypedDict):
    slug: str
    hash: str
    body_line: int
    total_lines: int
    lines: list[BlameLine]
    changes: list[BlameChange]
    complete: bool
    more: bool
    next_line: int | None


def described(message: str) -> tuple[str | None, str | None]:
    """(client, reason) a change's message states: the client after " via " in its first line
    (``save_page: notes/plan via Claude Desktop 0.9.3``), the reason in the lines after it."""
    subject, _, rest = message.partition("\n")
    client = subject.rsplit(" via ", 1)[1].strip() if " via " in subject else None
    return client or None, rest.strip() or None


class BlameMixin(HistoryMixin):
    """blame_page; mixed into Wiki."""

    def blame_page(self, slug: str, start_line: int = 1, limit: int = 500) -> Blame:
        """Lines ``start_line`` .. of the page as stored (front matter first: ``body_line`` is the
        body's first), each with the id of the change that last wrote it, and those changes.
        Raises NotFound, NoHistory (fs storage), ValidationError for a window out of range."""
        self._access("read", slug)
        if start_line < 1:
            raise ValidationError("must be 1 or more", field="start_line")
        if not 1 <= limit <= MAX_BLAME_LINES:
            raise ValidationError(f"must be between 1 and {MAX_BLAME_LINES}", field="limit")
        path = page_path(slug)
        try:
            data, digest = self.storage.read_with_hash(path)
            hunks = self.storage.blame(path)
        except NotFound:
            raise NotFound(f"no page {slug!r}; list_pages or search shows the pages that exist", field="slug") from None
        text = data.decode("utf-8", "replace")
        body = Page.from_bytes(slug, data).body
        lines = file_lines(data)
        end = min(len(lines), start_line + limit - 1)
        owner: dict[int, Revision] = {}
        for hunk in hunks:
            for number in range(max(hunk.start, start_line), min(hunk.start + hunk.count - 1, end) + 1):
                owner[number] = hunk.revision
        redact = self._redaction()
        changes: dict[str, BlameChange] = {}
        for rev in owner.values():
            if rev.id not in changes:
                message = redact(rev.message)
                client, reason = described(message)
                changes[rev.id] = {"id": rev.id, "author": rev.author, "client": client, "message": message, "reason": reason,
                                   "time": rev.time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}  # fmt: skip
        return {
            "slug": slug, "hash": digest, "body_line": text[: len(text) - len(body)].count("\n") + 1,
            "total_lines": len(lines),
            "lines": [{"line": n, "text": lines[n - 1], "change": owner[n].id} for n in range(start_line, end + 1)],
            "changes": sorted(changes.values(), key=lambda c: c["time"], reverse=True),
            "complete": not any(h.boundary for h in hunks), "more": end < len(lines),
            "next_line": end + 1 if end < len(lines) else None,
        }  # fmt: skip
