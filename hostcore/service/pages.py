"""Pages: read, save, edit, delete and list, with the basehash rule; mixed into :class:`~hostcore.service.wiki.Wiki`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

from typing_extensions import TypedDict

from hostcore.domain.edits import apply_edits, unified_diff
from hostcore.domain.pages import (
    Page,
    check_body,
    check_namespace,
    check_tags,
    check_title,
    namespace_of,
    page_path,
    section,
    slug_from_path,
    window,
)
from hostcore.errors import Conflict, NotFound, ValidationError
from hostcore.seams.storage import Delete, Operation, Put
from hostcore.service.base import WikiBase

MAX_EDITS = 128


class PageWindow(TypedDict, total=False):
    slug: str
    title: str
    tags: list[str]
    pin: bool
    hash: str
    body: str
    offset: int
    total_chars: int
    truncated: bool
    next_offset: int | None
    section: str
    revision: str


class SaveResult(TypedDict):
    slug: str
    hash: str
    created: bool
    changed: bool


class EditResult(TypedDict):
    slug: str
    hash: str
    changed: bool
    diff: str
    dryRun: bool


class DeleteResult(TypedDict):
    slug: str
    deleted: bool
    hash: str


class PageEntry(TypedDict):
    slug: str
    title: str
    tags: list[str]


class PageList(TypedDict):
    pages: list[PageEntry]
    total: int
    more: bool
    next_offset: int | None


class PagesMixin(WikiBase):
    """read_page, save_page, edit_page, delete_page, list_pages."""

    def read_page(self, slug: str, section_name: str | None = None, offset: int = 0, limit: int = 40_000) -> PageWindow:
        page = self.page(slug)
        if section_name is not None and not section_name.strip():
            raise ValidationError("is empty; give a heading's text, or omit section for the whole page", field="section")
        text = section(page.body, section_name) if section_name else page.body
        result: PageWindow = {
            "slug": page.slug, "title": page.title, "tags": list(page.tags), "pin": page.pin, "hash": page.hash,
            **window(text, offset, limit),
        }  # fmt: skip
        if section_name:
            result["section"] = section_name
        return result

    def save_page(
        self,
        slug: str,
        basehash: str | None = None,
        body: str | None = None,
        title: str | None = None,
        tags: list[str] | None = None,
        pin: bool | None = None,
    ) -> SaveResult:
        self._access("write", slug)
        if body is not None:
            check_body(body)
        if title is not None:
            check_title(title)
        if tags is not None:
            tags = check_tags(tags)
        path = page_path(slug)
        if basehash is None:
            if body is None:
                raise ValidationError("is required to create a page; send the complete Markdown body", field="body")
            self._require_namespace_exists(namespace_of(slug))
            self._check_new_slug(slug)
            previous = None
            new = Page(slug=slug, title=slug if title is None else title, body=body, tags=tuple(tags or ()), pin=bool(pin))
        else:
            previous = self._current_or_conflict(slug, basehash, tool="save_page")
            new = replace(
                previous,
                body=previous.body if body is None else body,
                title=previous.title if title is None else title,
                tags=previous.tags if tags is None else tuple(tags),
                pin=previous.pin if pin is None else pin,
            )
        data = new.to_bytes()
        new = new.stored()
        if previous is not None and new.hash == previous.hash:
            return {"slug": slug, "hash": new.hash, "created": False, "changed": False}
        change = self._change("save_page", slug)
        try:
            self._store([Put(path, data, expect=basehash)], change)
        except Conflict as exc:
            if basehash is None:
                current = self._load(slug)
                raise Conflict(
                    "a page with this slug exists already; read_page it and pass its hash as basehash to update it",
                    field="slug",
                    hash=current.hash,
                    body=current.body,
                ) from None
            raise self._page_conflict(slug, exc, tool="save_page") from None
        self.host.notify("page_saved", page=new, previous=previous, change=change)
        return {"slug": slug, "hash": new.hash, "created": previous is None, "changed": True}

    def edit_page(self, slug: str, basehash: str, edits: list[dict[str, str]], dry_run: bool = False) -> EditResult:
        self._access("write", slug)
        if not edits:
            raise ValidationError("needs at least one edit {oldText, newText}", field="edits")
        if len(edits) > MAX_EDITS:
            raise ValidationError(f"has {len(edits)} edits; at most {MAX_EDITS} per call", field="edits")
        previous = self._current_or_conflict(slug, basehash, tool="edit_page")
        body, spans = apply_edits(previous.body, edits)
        check_body(body)
        diff = unified_diff(previous.body, body, spans, f"a/{slug}", f"b/{slug}")
        new_page = replace(previous, body=body).stored()
        changed = new_page.hash != previous.hash
        result: EditResult = {"slug": slug, "hash": previous.hash, "changed": changed, "diff": diff, "dryRun": dry_run}
        if dry_run or not changed:
            return result
        change = self._change("edit_page", slug)
        try:
            self._store([Put(page_path(slug), new_page.to_bytes(), expect=basehash)], change)
        except Conflict as exc:
            raise self._page_conflict(slug, exc, tool="edit_page") from None
        self.host.notify("page_saved", page=new_page, previous=previous, change=change)
        result["hash"] = new_page.hash
        return result

    def delete_page(self, slug: str, basehash: str | None = None) -> DeleteResult:
        self._access("write", slug)
        previous = self._current_or_conflict(slug, basehash, tool="delete_page") if basehash else self._load(slug)
        change = self._change("delete_page", slug)
        ops: list[Operation] = [Delete(page_path(slug), expect=previous.hash)]
        ops += [Delete(path, expect=digest) for path, digest in self._attachments_of(slug).items()]
        try:
            self._store(ops, change)
        except (Conflict, NotFound) as exc:
            raise self._page_conflict(slug, exc, tool="delete_page") from None
        self.host.notify("page_deleted", page=previous, change=change)
        return {"slug": slug, "deleted": True, "hash": previous.hash}

    def iter_pages(self, namespace: str | None = None) -> Iterator[str]:
        """Slugs of the visible pages the principal may read, sorted."""
        for path in self.storage.list(namespace or ""):
            slug = slug_from_path(path)
            if slug and self.principal.can_access(namespace_of(slug)):
                yield slug

    def list_pages(self, namespace: str | None = None, offset: int = 0, limit: int = 100) -> PageList:
        self.principal.require("read")
        if namespace is not None:
            check_namespace(namespace, "namespace")
            self.principal.require_namespace(namespace, "namespace")
        slugs = list(self.iter_pages(namespace))
        chosen = slugs[offset : offset + limit]
        pages: list[PageEntry] = []
        for slug in chosen:
            page = Page.from_bytes(slug, self.storage.read(page_path(slug)))
            pages.append({"slug": slug, "title": page.title, "tags": list(page.tags)})
        more = offset + limit < len(slugs)
        return {"pages": pages, "total": len(slugs), "more": more, "next_offset": offset + limit if more else None}

