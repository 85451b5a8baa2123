"""History: recent changes, a page's commits, reading and restoring older revisions.

Needs a storage backend that keeps history (``Storage.has_history``; the git storage does).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import replace
from datetime import UTC
from itertools import islice

from typing_extensions import TypedDict

from hostcore.domain.attachments import files_folder
from hostcore.domain.pages import Page, hidden_path, namespace_of, page_path, window
from hostcore.errors import Conflict, NotFound, ValidationError
from hostcore.seams.storage import Operation, Put, Revision, blob_hash
from hostcore.service.base import WikiBase
from hostcore.service.pages import PageWindow
from hostcore.service.sections import section_of

RECENT_SCAN_LIMIT = 5000  # commits examined at most to fill one recent_changes answer
MAX_FILES = 100  # files listed per commit; file_count has the total
# A revision is a commit id, whole or abbreviated, and nothing else: git's revision expressions
# (":/message", "HEAD~1", "main@{0}") search the whole repository, so they would answer questions
# about pages in namespaces the caller cannot read.
_COMMIT_ID = re.compile(r"[0-9a-f]{7,40}")


class Commit(TypedDict):
    id: str
    author: str
    time: str
    message: str
    files: list[str]
    file_count: int


class Commits(TypedDict):
    commits: list[Commit]


class PageHistory(TypedDict):
    slug: str
    commits: list[Commit]
    more: bool
    next_offset: int | None


class Restored(TypedDict):
    slug: str
    hash: str
    restored_from: str
    changed: bool


def revision_dict(rev: Revision, message: str | None = None) -> Commit:
    """The commit as tools show it: hidden files (``.wiki.yaml``, ``notes/_draft.md``) left out of
    ``files`` and ``file_count``."""
    shown = [path for path in rev.paths if not hidden_path(path)]
    return {
        "id": rev.id,
        "author": rev.author,
        "time": rev.time.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "message": rev.message if message is None else message,
        "files": shown[:MAX_FILES],
        "file_count": rev.path_count - (len(rev.paths) - len(shown)),
    }


class HistoryMixin(WikiBase):
    """recent_changes, page_history, read_page_at and restore_page; mixed into Wiki."""

    def _visible(self, rev: Revision) -> bool:
        """Whether the commit changed a file the caller may see and every namespace it touched is
        one the caller may read. Hidden files count against no namespace (a ``.wiki.yaml`` beside
        a page hides nothing) and are never shown; a file at the top, outside every namespace,
        only to a caller limited to none."""
        shown = any(not hidden_path(path) for path in rev.paths) or rev.path_count > len(rev.paths)
        return shown and bool(rev.folders) and all(self.principal.can_access(folder) for folder in rev.folders)

    def _redaction(self) -> Callable[[str], str]:
        """What a commit message becomes for the caller: each slug it names in a private namespace
        the caller may not read replaced by "…". A message is free text (a push from outside may
        say anything; a link rewrite made before the rename rule covered it named its target), and
        a commit the caller may see can still name a page it may not."""
        if self.principal.namespaces is None:
            return str
        unreadable = [
            name for name in self.storage.folders()
            if name[:1] not in ("_", ".") and not self.principal.can_access(name)
            and self._namespace_fields(name, ("public",)).get("public") is not True
        ]  # fmt: skip
        if not unreadable:
            return str
        slug = re.compile(r"(?<![\w./-])(?:" + "|".join(map(re.escape, unreadable)) + r")/[\w.-]+(?:/[\w.-]+)*")
        return lambda message: slug.sub("…", message)

    def recent_changes(self, limit: int = 20) -> Commits:
        """Newest first; a commit touching anything outside the caller's access is left out whole."""
        self.principal.require("read")
        redact = self._redaction()
        kept: list[Commit] = []
        offset = 0
        while len(kept) < limit and offset < RECENT_SCAN_LIMIT:
            batch = self.storage.history(None, offset=offset, limit=100)
            if not batch:
                break
            offset += len(batch)
            kept += [revision_dict(r, redact(r.message)) for r in batch if self._visible(r)]
        return {"commits": kept[:limit]}

    def _page_revisions(self, slug: str) -> Iterator[Revision]:
        """The commits of the page's history the caller may see, newest first.

        Like recent_changes: a commit that also touches namespaces outside access stays hidden.
        """
        scanned = 0
        while scanned < RECENT_SCAN_LIMIT:
            batch = self.storage.history(page_path(slug), offset=scanned, limit=100)
            if not batch:
                return
            scanned += len(batch)
            yield from (r for r in batch if self._visible(r))

    def page_history(self, slug: str, offset: int = 0, limit: int = 20) -> PageHistory:
        self._access("read", slug)
        revs = list(islice(self._page_revisions(slug), offset, offset + limit + 1))
        more = len(revs) > limit
        redact = self._redaction()
        return {
            "slug": slug,
            "commits": [revision_dict(r, redact(r.message)) for r in revs[:limit]],
            "more": more,
            "next_offset": offset + limit if more else None,
        }

    def _resolve_revision(self, slug: str, revision: str) -> str:
        """The full id of the commit ``revision`` names among those page_history lists for ``slug``.

        Raises ValidationError for anything else: an expression, a commit of another page, an
        id that matches no commit or several.
        """
        wanted = revision.lower()
        if not _COMMIT_ID.fullmatch(wanted):
            raise ValidationError(
                "is not a commit id; pass the id of a commit from page_history (all 40 hex digits, or the first 7 or more)",
                field="revision",
            )
        found: list[str] = []
        for rev in self._page_revisions(slug):
            if rev.id.startswith(wanted):
                found.append(rev.id)
                if len(wanted) == len(rev.id) or len(found) > 1:
                    break
        if not found:
            raise ValidationError(
                f"{revision} is not a commit in the history of {slug}; pass a commit id from page_history for this page",
                field="revision",
            )
        if len(found) > 1:
            raise ValidationError(f"{revision} matches several commits of {slug}; give more digits of the commit id", field="revision")
        return found[0]

    def _read_revision(self, slug: str, revision: str) -> tuple[Page, bytes]:
        """The page as of ``revision`` and its exact stored bytes. Raises NotFound."""
        try:
            data = self.storage.read_at(page_path(slug), revision)
        except NotFound:
            raise NotFound(f"page {slug!r} does not exist in revision {revision!r}; page_history lists its revisions", field="revision") from None
        return replace(Page.from_bytes(slug, data), hash=blob_hash(data)), data

    def read_page_at(self, slug: str, revision: str, section_name: str | None, offset: int, limit: int) -> PageWindow:
        self._access("read", slug)
        revision = self._resolve_revision(slug, revision)
        page, _data = self._read_revision(slug, revision)
        text = section_of(page, section_name) if section_name else page.body
        result: PageWindow = {
            "slug": slug, "title": page.title, "tags": list(page.tags), "pin": page.pin, "hash": page.hash,
            "revision": revision, **window(text, offset, limit),
        }  # fmt: skip
        if section_name:
            result["section"] = section_name
        return result

    def _last_version(self, slug: str) -> tuple[str, tuple[Page, bytes]]:
        offset = 0
        while True:
            revs = self.storage.history(page_path(slug), offset=offset, limit=50)
            if not revs:
                raise NotFound(f"page {slug!r} has no recorded history; nothing to restore", field="slug")
            for rev in revs:
                try:
                    return rev.id, self._read_revision(slug, rev.id)
                except NotFound:
                    continue
            offset += len(revs)

    def _missing_attachments(self, slug: str, revision: str) -> list[Operation]:
        """Puts bringing back the attachments the page had in ``revision`` that are gone now
        (never replacing one that exists)."""
        present = self._attachments_of(slug)
        return [
            Put(path, self.storage.read_at(path, revision), expect=None)
            for path in self.storage.list_at(files_folder(slug), revision)
            if path not in present
        ]

    def restore_page(self, slug: str, revision: str | None = None, basehash: str | None = None) -> Restored:
        """Bring back a deleted page (its last version) or an older revision, as a new change."""
        self._access("write", slug)
        if revision is None:
            revision, (old, data) = self._last_version(slug)
        else:
            revision = self._resolve_revision(slug, revision)
            old, data = self._read_revision(slug, revision)
        current_hash = self.storage.hash(page_path(slug))
        if current_hash is not None and basehash != current_hash:
            raise Conflict(
                "the page exists: pass its current hash (from read_page) as basehash to restore over it",
                field="basehash",
                hash=current_hash,
            )
        if current_hash is None and basehash is not None:
            raise Conflict("the page no longer exists; omit basehash to restore it", field="basehash", hash="")
        self._require_namespace_exists(namespace_of(slug))
        if current_hash is None:
            self._check_new_slug(slug)
        previous = self._load(slug) if current_hash is not None else None
        if old.hash == current_hash:
            return {"slug": slug, "hash": old.hash, "restored_from": revision, "changed": False}
        change = self._change("restore_page", f"{slug} from {revision[:12]}")
        ops: list[Operation] = [Put(page_path(slug), data, expect=current_hash)]
        ops += self._missing_attachments(slug, revision)
        try:
            self._store(ops, change)
        except Conflict as exc:
            raise self._page_conflict(slug, exc, tool="restore_page") from None
        self.host.notify("page_saved", page=old, previous=previous, change=change)
        return {"slug": slug, "hash": old.hash, "restored_from": revision, "changed": True}
