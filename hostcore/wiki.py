"""The service layer: every rule about pages and namespaces, applied once for every adapter.

A :class:`Wiki` is bound to one principal. MCP tools, web views and CLI commands call these
methods; none of them checks access, validates input or compares hashes on its own.
Methods return plain dicts shaped as the tool contract's results, and raise ``hostcore.errors``.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from . import namespaces as ns_settings
from .auth import Principal
from .errors import Conflict, NotFound, ValidationError
from .pages import (
    Page,
    check_body,
    check_namespace,
    check_slug,
    check_tags,
    check_title,
    namespace_of,
    namespace_path,
    page_path,
    section,
    slug_from_path,
    window,
)
from .history import HistoryMixin
from .indexer import catch_up
from .retrieval import RetrievalMixin
from .storage import Change, Delete, Put
from .structure import StructureMixin

if TYPE_CHECKING:
    from .host import Host

MAX_EDITS = 128


class Wiki(StructureMixin, HistoryMixin, RetrievalMixin):
    """The wiki as one principal may see and change it."""

    def __init__(self, host: Host, principal: Principal) -> None:
        self.host = host
        self.storage = host.storage
        self.principal = principal

    # --- helpers ------------------------------------------------------------------------

    def _change(self, tool: str, subject: str) -> Change:
        client = f" via {self.principal.client}" if self.principal.client else ""
        return Change(author=self.principal.name, message=f"{tool}: {subject}{client}")

    def _access(self, scope: str, slug: str, field: str = "slug") -> str:
        self.principal.require(scope)
        check_slug(slug, field)
        self.principal.require_namespace(namespace_of(slug), field)
        return slug

    def _load(self, slug: str) -> Page:
        try:
            data, digest = self.storage.read_with_hash(page_path(slug))
        except NotFound:
            raise NotFound(f"no page {slug!r}; list_pages or search shows the pages that exist", field="slug") from None
        return replace(Page.from_bytes(slug, data), hash=digest)

    def _require_namespace_exists(self, name: str, field: str = "slug") -> None:
        if not self.storage.exists(namespace_path(name)):
            raise ValidationError(
                f"namespace {name!r} does not exist; pick one from list_namespaces or create it with save_namespace",
                field=field,
            )

    def page(self, slug: str) -> Page:
        """The whole page (for plugins). Needs read scope and access to its namespace."""
        return self._load(self._access("read", slug))

    # --- pages --------------------------------------------------------------------------

    def read_page(self, slug: str, section_name: str | None = None, offset: int = 0, limit: int = 40_000) -> dict[str, Any]:
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
        self,
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

    def edit_page(self, slug: str, basehash: str, edits: list[dict[str, str]], dry_run: bool = False) -> dict[str, Any]:
        self._access("write", slug)
        if not edits:
            raise ValidationError("needs at least one edit {oldText, newText}", field="edits")
        if len(edits) > MAX_EDITS:
            raise ValidationError(f"has {len(edits)} edits; at most {MAX_EDITS} per call", field="edits")
        previous = self._current_or_conflict(slug, basehash, with_body=False)
        body = previous.body
        for i, edit in enumerate(edits):
            old, new = edit.get("oldText"), edit.get("newText")
            if not isinstance(old, str) or not old:
                raise ValidationError("must be non-empty text copied exactly from the page", field=f"edits[{i}].oldText")
            if not isinstance(new, str):
                raise ValidationError("must be a string (empty to delete the text)", field=f"edits[{i}].newText")
            count = body.count(old)
            if count == 0:
                raise ValidationError(
                    "does not occur in the body at this step; copy it exactly from read_page (edits apply in order)",
                    field=f"edits[{i}].oldText",
                )
            if count > 1:
                raise ValidationError(
                    f"occurs {count} times; include more surrounding text so it matches exactly once",
                    field=f"edits[{i}].oldText",
                )
            body = body.replace(old, new, 1)
        check_body(body)
        diff = "".join(
            difflib.unified_diff(
                previous.body.splitlines(keepends=True), body.splitlines(keepends=True), f"a/{slug}", f"b/{slug}", n=2
            )
        )
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

    def delete_page(self, slug: str, basehash: str | None = None) -> dict[str, Any]:
        self._access("write", slug)
        previous = self._current_or_conflict(slug, basehash, with_body=False) if basehash else self._load(slug)
        change = self._change("delete_page", slug)
        try:
            self.storage.apply([Delete(page_path(slug), expect=previous.hash)], change)
        except (Conflict, NotFound) as exc:
            raise self._page_conflict(slug, exc, with_body=False) from None
        self.host.notify("page_deleted", page=previous, change=change)
        return {"slug": slug, "deleted": True, "hash": previous.hash}

    def _current_or_conflict(self, slug: str, basehash: str, *, with_body: bool) -> Page:
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

    def _page_conflict(self, slug: str, exc: Exception, *, with_body: bool) -> Conflict:
        """A storage-level race lost after our own check passed: report the page's state now."""
        try:
            self._current_or_conflict(slug, "", with_body=with_body)
        except Conflict as conflict:
            return conflict
        raise AssertionError("unreachable: an empty basehash never matches") from exc

    def iter_pages(self, namespace: str | None = None) -> Iterator[str]:
        """Slugs of the visible pages the principal may read, sorted."""
        for path in self.storage.list(namespace or ""):
            slug = slug_from_path(path)
            if slug and self.principal.can_access(namespace_of(slug)):
                yield slug

    def list_pages(self, namespace: str | None = None, offset: int = 0, limit: int = 100) -> dict[str, Any]:
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

    # --- namespaces ---------------------------------------------------------------------

    def _namespace_names(self) -> list[str]:
        return [name for name in self.storage.folders() if self.storage.exists(namespace_path(name))]

    def list_namespaces(self) -> dict[str, Any]:
        self.principal.require("read")
        catch_up(self.host)
        counts = self.host.links.page_counts()
        out = []
        for name in self._namespace_names():
            if not self.principal.can_access(name):
                continue
            settings = ns_settings.parse(self.storage.read(namespace_path(name)))
            out.append(
                {
                    "name": name,
                    "title": settings.get("title", ""),
                    "description": settings.get("description", ""),
                    "pages": counts.get(name, 0),
                    "public": bool(settings.get("public", False)),
                }
            )
        return {"namespaces": out}

    def read_namespace(self, name: str) -> dict[str, Any]:
        self.principal.require("admin")
        check_namespace(name)
        self.principal.require_namespace(name, "name")
        try:
            data, digest = self.storage.read_with_hash(namespace_path(name))
        except NotFound:
            raise NotFound(f"no namespace {name!r}; list_namespaces shows those that exist", field="name") from None
        return {"name": name, "hash": digest, **ns_settings.complete(ns_settings.parse(data))}

    def save_namespace(self, name: str, basehash: str | None = None, **fields: Any) -> dict[str, Any]:
        self.principal.require("admin")
        check_namespace(name)
        self.principal.require_namespace(name, "name")
        given = {k: v for k, v in fields.items() if v is not None}
        ns_settings.validate(given)
        path = namespace_path(name)
        if basehash is None:
            current: dict[str, Any] = {}
        else:
            try:
                data, digest = self.storage.read_with_hash(path)
            except NotFound:
                raise Conflict(f"namespace {name!r} does not exist; omit basehash to create it", field="basehash", hash="") from None
            if digest != basehash:
                raise Conflict("is stale: re-read with read_namespace and retry with its hash", field="basehash", hash=digest)
            current = ns_settings.parse(data)
        settings = ns_settings.merge(current, given)
        data = ns_settings.dump(settings)
        change = self._change("save_namespace", name)
        try:
            result = self.storage.apply([Put(path, data, expect=basehash)], change)
        except Conflict as exc:
            if basehash is None:
                raise Conflict(
                    f"namespace {name!r} exists already; read it with read_namespace and pass its hash as basehash",
                    field="name",
                    hash=exc.data.get("hash", ""),
                ) from None
            raise Conflict("is stale: the settings changed meanwhile; re-read and retry", field="basehash", hash=exc.data.get("hash", "")) from None
        return {"name": name, "hash": result[path], "created": basehash is None}
