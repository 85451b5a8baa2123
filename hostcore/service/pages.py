"""Pages: read, save, edit, delete and list, with the basehash rule; mixed into :class:`~hostcore.service.wiki.Wiki`."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import NotRequired

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
    slug_from_path,
    window,
)
from hostcore.domain.rebase import rebase as rebase_edits
from hostcore.errors import Conflict, NotFound, Unavailable, ValidationError
from hostcore.seams.storage import Change, Delete, Operation, Put
from hostcore.service.base import WikiBase
from hostcore.service.sections import section_of

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
    proposed: NotRequired[str]
    review: NotRequired[str]
    review_url: NotRequired[str]


class EditResult(TypedDict):
    slug: str
    hash: str
    changed: bool
    diff: str
    dryRun: bool
    rebased: NotRequired[bool]
    basehash: NotRequired[str]
    current: NotRequired[str]
    proposed: NotRequired[str]
    review: NotRequired[str]
    review_url: NotRequired[str]


class DeleteResult(TypedDict):
    slug: str
    deleted: bool
    hash: str
    proposed: NotRequired[str]
    review: NotRequired[str]
    review_url: NotRequired[str]


class PageEntry(TypedDict):
    slug: str
    title: str
    tags: list[str]


class PageList(TypedDict):
    pages: list[PageEntry]
    total: int
    more: bool
    next_offset: int | None


@dataclass
class Plan:
    """A page change worked out and checked, not yet written: the operations that write it and
    the event that announces it (``page`` is the page after it, or the one deleted; ``previous``
    the one before)."""

    event: str
    page: Page
    previous: Page | None
    ops: list[Operation]
    moves: list[tuple[str, str]] = field(default_factory=list)
    also: list[Plan] = field(default_factory=list)  # pages it rewrites besides (their ops are in ``ops``), announced after it


def _check_edits(edits: list[dict[str, str]]) -> None:
    if not edits:
        raise ValidationError("needs at least one edit {oldText, newText}", field="edits")
    if len(edits) > MAX_EDITS:
        raise ValidationError(f"has {len(edits)} edits; at most {MAX_EDITS} per call", field="edits")


class PagesMixin(WikiBase):
    """read_page, save_page, edit_page, delete_page, list_pages."""

    def read_page(self, slug: str, section_name: str | None = None, offset: int = 0, limit: int = 40_000) -> PageWindow:
        page = self.page(slug)
        if section_name is not None and not section_name.strip():
            raise ValidationError("is empty; give a heading's text, or omit section for the whole page", field="section")
        text = section_of(page, section_name) if section_name else page.body
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
        if (proposer := self._proposer()) is not None:
            return proposer.save_page(slug, basehash, body, title, tags, pin)
        plan = self._plan_save(slug, basehash, body, title, tags, pin)
        if not plan.ops:
            return {"slug": slug, "hash": plan.page.hash, "created": False, "changed": False}
        asked = {"op": "save", "slug": slug, "basehash": basehash, "body": body, "title": title, "tags": tags, "pin": pin}
        if (proposal := self._proposal("save_page", [asked])) is not None:
            return {"slug": slug, "hash": basehash or "", "created": False, "changed": False, **proposal}
        change = self._change("save_page", slug)
        try:
            self._store(plan.ops, change)
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
        self._announce(plan, change)
        return {"slug": slug, "hash": plan.page.hash, "created": plan.previous is None, "changed": True}

    def _plan_save(
        self,
        slug: str,
        basehash: str | None,
        body: str | None,
        title: str | None,
        tags: list[str] | None,
        pin: bool | None,
    ) -> Plan:
        """What save_page writes (no operation when nothing changes), after its checks."""
        self._access("write", slug)
        if body is not None:
            check_body(body)
        if title is not None:
            check_title(title)
        if tags is not None:
            tags = check_tags(tags)
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
            return Plan("page_saved", new, previous, [])
        return Plan("page_saved", new, previous, [Put(page_path(slug), data, expect=basehash)])

    def _announce(self, plan: Plan, change: Change) -> None:
        """Tell the listeners what ``plan`` did, once it landed as ``change``."""
        if plan.event == "page_deleted":
            self.host.notify("page_deleted", page=plan.page, change=change)
        elif plan.event == "page_moved":
            self.host.notify("page_moved", page=plan.page, old_slug=plan.previous.slug if plan.previous else "", change=change)
        else:
            self.host.notify("page_saved", page=plan.page, previous=plan.previous, change=change)

    def edit_page(
        self, slug: str, basehash: str, edits: list[dict[str, str]], dry_run: bool = False, rebase: bool = False
    ) -> EditResult:
        if (proposer := self._proposer()) is not None:
            return proposer.edit_page(slug, basehash, edits, dry_run, rebase)
        if rebase:
            return self._edit_rebased(slug, basehash, edits, dry_run)
        plan, diff = self._plan_edit(slug, basehash, edits)
        previous = plan.previous
        assert previous is not None
        result: EditResult = {"slug": slug, "hash": previous.hash, "changed": bool(plan.ops), "diff": diff, "dryRun": dry_run}
        if dry_run or not plan.ops:
            return result
        if (proposal := self._proposal("edit_page", [{"op": "edit", "slug": slug, "basehash": basehash, "edits": edits}])) is not None:
            return {**result, "changed": False, **proposal}
        change = self._change("edit_page", slug)
        try:
            self._store(plan.ops, change)
        except Conflict as exc:
            raise self._page_conflict(slug, exc, tool="edit_page") from None
        self._announce(plan, change)
        result["hash"] = plan.page.hash
        return result

    def _plan_edit(self, slug: str, basehash: str, edits: list[dict[str, str]]) -> tuple[Plan, str]:
        """What edit_page writes (no operation when nothing changes) and its diff, after its checks."""
        self._access("write", slug)
        _check_edits(edits)
        previous = self._current_or_conflict(slug, basehash, tool="edit_page")
        body, spans = apply_edits(previous.body, edits)
        check_body(body)
        diff = unified_diff(previous.body, body, spans, f"a/{slug}", f"b/{slug}")
        new_page = replace(previous, body=body).stored()
        ops: list[Operation] = [Put(page_path(slug), new_page.to_bytes(), expect=basehash)]
        return Plan("page_saved", new_page, previous, ops if new_page.hash != previous.hash else []), diff

    def _edit_rebased(self, slug: str, basehash: str, edits: list[dict[str, str]], dry_run: bool) -> EditResult:
        """edit_page with ``rebase``: the edits made on the version ``basehash`` applied to the current
        page when that is safe (see :func:`hostcore.domain.rebase.rebase`), else the same conflict
        as without it. Tried again when another change lands while it writes."""
        self._access("write", slug)
        _check_edits(edits)
        base: str | None = None
        change = None
        for _attempt in range(8):
            try:
                current = self._load(slug)
            except NotFound:
                current = self._current_or_conflict(slug, basehash, tool="edit_page")  # raises: the page is gone
            if current.hash == basehash:
                body, spans = apply_edits(current.body, edits)
            else:
                base = base if base is not None else self._version_body(slug, basehash)
                done = rebase_edits(base, current.body, edits) if base is not None else None
                if done is None:
                    self._current_or_conflict(slug, basehash, tool="edit_page")  # raises: stale
                    continue  # the page came back to basehash meanwhile
                body, spans = done
            check_body(body)
            new_page = replace(current, body=body).stored()
            changed = new_page.hash != current.hash
            result: EditResult = {
                "slug": slug, "hash": current.hash, "changed": changed,
                "diff": unified_diff(current.body, body, spans, f"a/{slug}", f"b/{slug}"), "dryRun": dry_run,
                "rebased": current.hash != basehash, "basehash": basehash, "current": current.hash,
            }  # fmt: skip
            if dry_run or not changed:
                return result
            # rebased or not, the edits apply to the current page as it is: that is what is proposed
            asked = {"op": "edit", "slug": slug, "basehash": current.hash, "edits": edits}
            if change is None and (proposal := self._proposal("edit_page", [asked])) is not None:
                return {**result, "changed": False, **proposal}
            change = change or self._change("edit_page", slug)
            try:
                self._store([Put(page_path(slug), new_page.to_bytes(), expect=current.hash)], change)
            except Conflict:
                continue
            self.host.notify("page_saved", page=new_page, previous=current, change=change)
            result["hash"] = new_page.hash
            return result
        self._current_or_conflict(slug, "", tool="edit_page")
        raise AssertionError("unreachable: an empty basehash never matches")

    def _version_body(self, slug: str, digest: str) -> str | None:
        """The body of ``slug``'s stored version ``digest``, or None when the storage keeps no
        older versions or has none by that hash."""
        try:
            return Page.from_bytes(slug, self.storage.read_blob(digest)).body
        except (NotFound, Unavailable, ValidationError):
            return None

    def delete_page(self, slug: str, basehash: str | None = None) -> DeleteResult:
        if (proposer := self._proposer()) is not None:
            return proposer.delete_page(slug, basehash)
        plan = self._plan_delete(slug, basehash)
        previous = plan.previous
        assert previous is not None
        if (proposal := self._proposal("delete_page", [{"op": "delete", "slug": slug, "basehash": previous.hash}])) is not None:
            return {"slug": slug, "deleted": False, "hash": previous.hash, **proposal}
        change = self._change("delete_page", slug)
        try:
            self._store(plan.ops, change)
        except (Conflict, NotFound) as exc:
            raise self._page_conflict(slug, exc, tool="delete_page") from None
        self._announce(plan, change)
        return {"slug": slug, "deleted": True, "hash": previous.hash}

    def _plan_delete(self, slug: str, basehash: str | None) -> Plan:
        """What delete_page removes (the page and its attachments), after its checks."""
        self._access("write", slug)
        previous = self._current_or_conflict(slug, basehash, tool="delete_page") if basehash else self._load(slug)
        ops: list[Operation] = [Delete(page_path(slug), expect=previous.hash)]
        ops += [Delete(path, expect=digest) for path, digest in self._attachments_of(slug).items()]
        return Plan("page_deleted", previous, previous, ops)

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

