"""Working inside a page: its outline, one section's numbered blocks, and edits addressed to one
section or appended, which never collide with edits elsewhere on the page; mixed into
:class:`~hostcore.service.wiki.Wiki`.

An edit to a section is checked against that section's ``rev`` (see :mod:`hostcore.domain.sections`),
not the page hash: it is computed on the current page, whose section text is the one the caller
read when its rev still matches, and written with compare-and-set on the page hash it was computed
on. When another writer's change lands first, the edit is computed again on the page as it is
then (the rev checked again), so edits to different sections all land, one recorded change each,
and none is lost. Appends have no rev: they always land.
"""

from __future__ import annotations

import random
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import NotRequired

from typing_extensions import TypedDict

from hostcore.domain import sections as dom
from hostcore.domain.pages import MAX_BODY_BYTES, Page, check_body, page_path, section
from hostcore.errors import Conflict, NotFound, Unavailable, ValidationError
from hostcore.seams.storage import Put
from hostcore.service.base import WikiBase

OUTLINES_KEPT = 16
"""Outlines each process keeps, by the hash of the page they were read from."""
LAND_SECONDS = 20.0
"""How long a section edit or an append keeps trying while other writers' changes land first."""

_outlines: OrderedDict[str, dom.Outline] = OrderedDict()
_listings: dict[str, list[OutlineEntry]] = {}
_outlines_lock = threading.Lock()


class OutlineEntry(TypedDict):
    section_id: str
    level: int
    title: str
    parent: str | None
    rev: str
    blocks: int
    chars: int


class OutlineResult(TypedDict):
    slug: str
    hash: str
    sections: list[OutlineEntry]
    total: int
    more: bool
    next_offset: int | None


class SectionRead(TypedDict):
    slug: str
    hash: str
    section_id: str
    level: int
    title: str
    rev: str
    heading: str
    blocks: list[dom.BlockEntry]
    block_count: int
    offset: int
    total_chars: int
    truncated: bool
    next_offset: int | None


class SectionEdited(TypedDict):
    slug: str
    hash: str
    section_id: str
    rev: str
    changed: bool
    block_count: int
    added_sections: list[str]
    proposed: NotRequired[str]
    review: NotRequired[str]
    review_url: NotRequired[str]


class SectionSource(TypedDict):
    slug: str
    hash: str
    section_id: str
    level: int
    title: str
    rev: str
    text: str


class TextReplaced(TypedDict):
    slug: str
    hash: str
    section_id: str
    rev: str
    changed: bool
    block: int


@dataclass
class _Landed:
    page: Page
    outline: dom.Outline
    changed: bool


def outline_of(page: Page) -> dom.Outline:
    """The outline of ``page``'s body, kept by the page's hash for the next call in this process."""
    with _outlines_lock:
        found = _outlines.get(page.hash)
        if found is not None:
            _outlines.move_to_end(page.hash)
            return found
    made = dom.outline(page.body)
    _keep(page.hash, made)
    return made


def _keep(digest: str, made: dom.Outline) -> None:
    with _outlines_lock:
        _outlines[digest] = made
        while len(_outlines) > OUTLINES_KEPT:
            gone, _o = _outlines.popitem(last=False)
            _listings.pop(gone, None)


def _listing(digest: str, o: dom.Outline) -> list[OutlineEntry]:
    """The outline's entries as outline lists them, made once per kept outline. Its dicts are
    shared: callers serialise them, never change them."""
    with _outlines_lock:
        found = _listings.get(digest)
    if found is not None:
        return found
    made: list[OutlineEntry] = [
        {"section_id": s.id, "level": s.level, "title": s.title, "parent": s.parent, "rev": s.rev,
         "blocks": len(s.blocks), "chars": s.end - s.start}
        for i, s in enumerate(o.sections)
        if i or s.blocks
    ]  # fmt: skip
    with _outlines_lock:
        if digest in _outlines:  # kept as long as its outline is
            _listings[digest] = made
    return made


def section_of(page: Page, name: str) -> str:
    """What read_page gives for ``section``: the heading whose text it is (as before there were
    section ids), else the section whose section_id it is. Raises NotFound."""
    try:
        return section(page.body, name)
    except NotFound as exc:
        found = dom.subtree_text(outline_of(page), name)
        if found is None:
            raise NotFound(f"{exc.message}; or give a section_id from outline", field="section") from None
        return found


class SectionsMixin(WikiBase):
    """outline, read_section, edit_blocks, replace_text, append_to_page, save_section."""

    def _outlined(self, slug: str) -> tuple[str, dom.Outline]:
        """(hash, outline) of the page now; its body is read only when no outline of that hash is kept."""
        digest = self.storage.hash(page_path(slug))
        if digest is None:
            raise NotFound(f"no page {slug!r}; list_pages or search shows the pages that exist", field="slug")
        with _outlines_lock:
            found = _outlines.get(digest)
        if found is not None:
            return digest, found
        page = self._load(slug)
        return page.hash, outline_of(page)

    def outline(self, slug: str, offset: int = 0, limit: int = 200) -> OutlineResult:
        self._access("read", slug)
        digest, o = self._outlined(slug)
        listed = _listing(digest, o)
        more = offset + limit < len(listed)
        return {
            "slug": slug,
            "hash": digest,
            "sections": listed[offset : offset + limit],
            "total": len(listed),
            "more": more,
            "next_offset": offset + limit if more else None,
        }

    def read_section(self, slug: str, section_id: str, offset: int = 0, limit: int = 40_000) -> SectionRead:
        self._access("read", slug)
        digest, o = self._outlined(slug)
        at = o.find(section_id)
        s = o.sections[at]
        win = dom.window(o, at, offset, limit)
        return {"slug": slug, "hash": digest, "section_id": s.id, "level": s.level, "title": s.title, "rev": s.rev, **win}

    def section_source(self, slug: str, section_id: str) -> SectionSource:
        """A section's own text exactly as stored (heading line, blocks and the blank lines between), with its rev."""
        self._access("read", slug)
        digest, o = self._outlined(slug)
        at = o.find(section_id)
        s = o.sections[at]
        return {"slug": slug, "hash": digest, "section_id": s.id, "level": s.level, "title": s.title, "rev": s.rev,
                "text": o.own_text(at)}  # fmt: skip

    def edit_blocks(
        self, slug: str, section_id: str, rev: str, after_block: int, remove_blocks: int = 0, markdown: str = ""
    ) -> SectionEdited:
        self._access("write", slug)
        if after_block < 0 or remove_blocks < 0:
            raise ValidationError("must be 0 or more", field="after_block" if after_block < 0 else "remove_blocks")
        check_body(markdown, "markdown")
        before: list[str] = []

        def compute(o: dom.Outline) -> str:
            at = _current(o, section_id, rev)
            before[:] = [s.id for s in o.sections]
            return dom.edit_blocks(o, at, after_block, remove_blocks, markdown)

        landed = self._land(slug, "edit_blocks", f"{slug}#{section_id}", compute)
        return self._edited(slug, landed, section_id, before)

    def replace_text(self, slug: str, section_id: str, rev: str, old_text: str, new_text: str) -> TextReplaced:
        self._access("write", slug)
        check_body(new_text, "new_text")
        block = [0]

        def compute(o: dom.Outline) -> str:
            body, block[0] = dom.replace_text(o, _current(o, section_id, rev), old_text, new_text)
            return body

        landed = self._land(slug, "replace_text", f"{slug}#{section_id}", compute, "new_text")
        s = landed.outline.sections[landed.outline.find(section_id)]
        return {"slug": slug, "hash": landed.page.hash, "section_id": s.id, "rev": s.rev, "changed": landed.changed,
                "block": block[0]}  # fmt: skip

    def append_to_page(
        self, slug: str, markdown: str, section_id: str | None = None, position: dom.Position = "end"
    ) -> SectionEdited:
        if (proposer := self._proposer()) is not None:
            return proposer.append_to_page(slug, markdown, section_id, position)
        self._access("write", slug)
        check_body(markdown, "markdown")
        if position not in dom.POSITIONS:
            raise ValidationError(f"must be one of {', '.join(dom.POSITIONS)}", field="position")
        asked = {"op": "append", "slug": slug, "markdown": markdown, "section_id": section_id, "position": position}
        if (proposal := self._proposal("append_to_page", [asked])) is not None:
            page = self._load(slug)
            return {"slug": slug, "hash": page.hash, "section_id": section_id or "", "rev": "", "changed": False,
                    "block_count": 0, "added_sections": [], **proposal}  # fmt: skip
        target: list[str] = []
        before: list[str] = []

        def compute(o: dom.Outline) -> str:
            at = o.find(section_id) if section_id is not None else None
            body = dom.insert(o, markdown, at, position)
            before[:] = [s.id for s in o.sections]
            target[:] = [_landing(o, at, position)]
            return body

        landed = self._land(slug, "append_to_page", slug if section_id is None else f"{slug}#{section_id}", compute)
        return self._edited(slug, landed, target[0], before)

    def save_section(self, slug: str, section_id: str, rev: str, text: str) -> SectionEdited:
        """Replace a section's own text (heading line and blocks) with ``text``, as a person does
        in the browser; checked against the section's rev. Raises Conflict (with ``text``: the
        section's current own text) when it changed, NotFound when it is gone."""
        self._access("write", slug)
        check_body(text, "text")
        before: list[str] = []

        def compute(o: dom.Outline) -> str:
            at = _current(o, section_id, rev, with_text=True)
            before[:] = [s.id for s in o.sections]
            return dom.replace_section(o, at, text)

        landed = self._land(slug, "save_section", f"{slug}#{section_id}", compute, "text")
        new_ids = [s.id for s in landed.outline.sections]
        kept = section_id if section_id in new_ids else next((i for i in new_ids if i not in before), dom.TOP)
        return self._edited(slug, landed, kept, before)

    def _edited(self, slug: str, landed: _Landed, section_id: str, before: list[str]) -> SectionEdited:
        o = landed.outline
        s = o.sections[o.index[section_id]] if section_id in o.index else o.sections[0]
        return {
            "slug": slug, "hash": landed.page.hash, "section_id": s.id, "rev": s.rev, "changed": landed.changed,
            "block_count": len(s.blocks), "added_sections": [x.id for x in o.sections if x.id not in before],
        }  # fmt: skip

    def _land(
        self, slug: str, tool: str, subject: str, compute: Callable[[dom.Outline], str], field_name: str = "markdown"
    ) -> _Landed:
        """Compute the new body on the current page and write it under compare-and-set; computed
        again when another change lands first, until ``LAND_SECONDS`` pass."""
        change = None
        deadline = time.monotonic() + LAND_SECONDS
        attempt = 0
        while True:
            page = self._load(slug)
            try:
                body = compute(outline_of(page))
            except Conflict as exc:
                exc.data["hash"] = page.hash
                raise
            size = len(body.encode("utf-8", "surrogatepass"))
            if size > MAX_BODY_BYTES:
                raise ValidationError(
                    f"would make the page {size} bytes as UTF-8; a page holds at most {MAX_BODY_BYTES} (1 MiB)", field=field_name
                )
            new = replace(page, body=body).stored()
            if new.hash == page.hash:
                return _Landed(page, outline_of(page), False)
            if change is None:
                change = self._change(tool, subject)
            try:
                self._store([Put(page_path(slug), new.to_bytes(), expect=page.hash)], change)
            except Conflict:
                attempt += 1
                if time.monotonic() > deadline:
                    raise Unavailable(
                        f"{slug} kept changing under {attempt} tries; nothing was changed by this call, try again"
                    ) from None
                time.sleep(random.uniform(0, min(0.05, 0.002 * attempt)))  # spread the retries of writers that met
                continue
            made = dom.outline(body)
            _keep(new.hash, made)
            self.host.notify("page_saved", page=new, previous=page, change=change)
            return _Landed(new, made, True)


def _current(o: dom.Outline, section_id: str, rev: str, *, with_text: bool = False) -> int:
    """The index of ``section_id`` in ``o`` when its rev is still ``rev``; else a Conflict with
    the current rev (and, ``with_text``, its own text)."""
    at = o.find(section_id)
    s = o.sections[at]
    if s.rev != rev:
        extra = {"text": o.own_text(at)} if with_text else {}
        raise Conflict(
            f"is stale: section {section_id!r} changed since you read it (its rev is now {s.rev}); other sections "
            "may change freely. Read it again with read_section and retry with the new rev",
            field="rev",
            hash="",
            rev=s.rev,
            section_id=section_id,
            **extra,
        )
    return at


def _landing(o: dom.Outline, at: int | None, position: dom.Position) -> str:
    """The section_id of the section an append at ``position`` of section ``at`` lands in."""
    if at is None:
        return o.sections[-1].id if position == "end" else o.sections[0].id
    if position == "before":
        return o.sections[at - 1].id
    if position == "after":
        return o.sections[o.subtree_end(at) - 1].id
    return o.sections[at].id
