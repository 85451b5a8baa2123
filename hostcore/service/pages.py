"""Pages: read, save, edit, delete and list, with the basehash rule; mixed into :class:`~hostcore.service.wiki.Wiki`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

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
from hostcore.seams.storage import Delete, Put

if TYPE_CHECKING:
    from hostcore.service.wiki import Wiki

MAX_EDITS = 128


class PagesMixin:
    """read_page, save_page, edit_page, delete_page, list_pages."""

    def read_page(self: Wiki, slug: str, section_name: str | None = None, offset: int = 0, limit: int = 40_000) -> dict[str, Any]:
        page = self.page(slug)
        if section_name is not None and not section_name.strip():
            raise ValidationError("is empty; give a heading's text, or omit section for the whole page", field="section")
        text = section(page.body, section_name) if section_name else page.body
        result = {"slug": page.slug, "title": page.title, "tags": list(page.tags), "pin": page.pin, "hash": page.hash}
        result.update(window(text, offset, limit))
        if section_name:
            result["section"] = section_name
        return result

    def save_page(
        self: Wiki,
        slug: str,
        basehash: str | None = None,
        body: str | None = None,
        title: str | None = None,
        tags: list[str] | None = None,
        pin: bool | None = None,
    ) -> dict[str, Any]:
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
            previous = None
            new = Page(slug=slug, title=slug if title is None else title, body=body, tags=tuple(tags or ()), pin=bool(pin))
        else:
            previous = self._current_or_conflict(slug, basehash, with_body=True)
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
            self.storage.apply([Put(path, data, expect=basehash)], change)
        except Conflict as exc:
            if basehash is None:
                current = self._load(slug)
                raise Conflict(
                    "a page with this slug exists already; read_page it and pass its hash as basehash to update it",
                    field="slug",
                    hash=current.hash,
                    body=current.body,
                ) from None
            raise self._page_conflict(slug, exc, with_body=True) from None
        self.host.notify("page_saved", page=new, previous=previous, change=change)
        return {"slug": slug, "hash": new.hash, "created": previous is None, "changed": True}

    def edit_page(self: Wiki, slug: str, basehash: str, edits: list[dict[str, str]], dry_run: bool = False) -> dict[str, Any]:
        self._access("write", slug)
        if not edits:
            raise ValidationError("needs at least one edit {oldText, newText}", field="edits")
        if len(edits) > MAX_EDITS:
            raise ValidationError(f"has {len(edits)} edits; at most {MAX_EDITS} per call", field="edits")
        previous = self._current_or_conflict(slug, basehash, with_body=False)
        body, spans = apply_edits(previous.body, edits)
        check_body(body)
        diff = unified_diff(previous.body, body, spans, f"a/{slug}", f"b/{slug}")
        new_page = replace(previous, body=body).stored()
        changed = new_page.hash != previous.hash
        result = {"slug": slug, "hash": previous.hash, "changed": changed, "diff": diff, "dryRun": dry_run}
        if dry_run or not changed:
            return result
        change = self._change("edit_page", slug)
        try:
            self.storage.apply([Put(page_path(slug), new_page.to_bytes(), expect=basehash)], change)
        except Conflict as exc:
            raise self._page_conflict(slug, exc, with_body=False) from None
        self.host.notify("page_saved", page=new_page, previous=previous, change=change)
        result["hash"] = new_page.hash
        return result

    def delete_page(self: Wiki, slug: str, basehash: str | None = None) -> dict[str, Any]:
        self._access("write", slug)
        previous = self._current_or_conflict(slug, basehash, with_body=False) if basehash else self._load(slug)
        change = self._change("delete_page", slug)
        try:
            self.storage.apply([Delete(page_path(slug), expect=previous.hash)], change)
        except (Conflict, NotFound) as exc:
            raise self._page_conflict(slug, exc, with_body=False) from None
        self.host.notify("page_deleted", page=previous, change=change)
        return {"slug": slug, "deleted": True, "hash": previous.hash}

    def _current_or_conflict(self: Wiki, slug: str, basehash: str, *, with_body: bool) -> Page:
        try:
            current = self._load(slug)
        except NotFound:
            raise Conflict(
                f"page {slug!r} no longer exists; omit basehash to create it again, or pick another slug",
                field="basehash",
                hash="",
            ) from None
        if current.hash != basehash:
            data: dict[str, Any] = {"hash": current.hash}
            if with_body:
                data["body"] = current.body
            raise Conflict(
                "is stale: the page changed since you read it. Re-read it (or merge with the body here) "
                "and retry with the current hash",
                field="basehash",
                **data,
            )
        return current

    def _page_conflict(self: Wiki, slug: str, exc: Exception, *, with_body: bool) -> Conflict:
        """A storage-level race lost after our own check passed: report the page's state now."""
        try:
            self._current_or_conflict(slug, "", with_body=with_body)
        except Conflict as conflict:
            return conflict
        raise AssertionError("unreachable: an empty basehash never matches") from exc

    def iter_pages(self: Wiki, namespace: str | None = None) -> Iterator[str]:
        """Slugs of the visible pages the principal may read, sorted."""
        for path in self.storage.list(namespace or ""):
            slug = slug_from_path(path)
            if slug and self.principal.can_access(namespace_of(slug)):
                yield slug

    def list_pages(self: Wiki, namespace: str | None = None, offset: int = 0, limit: int = 100) -> dict[str, Any]:
        self.principal.require("read")
        if namespace is not None:
            check_namespace(namespace, "namespace")
            self.principal.require_namespace(namespace, "namespace")
        slugs = list(self.iter_pages(namespace))
        chosen = slugs[offset : offset + limit]
        pages = []
        for slug in chosen:
            page = Page.from_bytes(slug, self.storage.read(page_path(slug)))
            pages.append({"slug": slug, "title": page.title, "tags": list(page.tags)})
        more = offset + limit < len(slugs)
        return {"pages": pages, "total": len(slugs), "more": more, "next_offset": offset + limit if more else None}

