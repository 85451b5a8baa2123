"""Reorganising the wiki: move and rename pages, backlinks and health, from the link graph."""

from __future__ import annotations

import time
from dataclasses import replace

from typing_extensions import TypedDict

from hostcore.domain import comments
from hostcore.domain.attachments import attachment_path, attachment_url, files_folder, rewrite_attachment_links
from hostcore.domain.pages import (
    Page,
    check_namespace,
    check_slug,
    check_title,
    namespace_of,
    page_path,
    rewrite_links,
    slugify,
)
from hostcore.errors import Conflict, HostcoreError, ValidationError
from hostcore.indexes.link_graph import DanglingLink, LinkingPage, PageFact
from hostcore.seams.storage import Delete, Operation, Put
from hostcore.service.base import WikiBase
from hostcore.service.pages import PagesMixin, Plan

STALE_DAYS = 180
HEALTH_LIST_LIMIT = 500


class Moved(TypedDict):
    slug: str
    old_slug: str
    hash: str


class FailedLink(TypedDict):
    slug: str
    reason: str


class Renamed(TypedDict):
    slug: str
    old_slug: str
    title: str
    hash: str
    rewritten: list[str]
    failed_links: list[FailedLink]
    hidden_failed_links: int


class Backlinks(TypedDict):
    slug: str
    backlinks: list[LinkingPage]


class StalePage(TypedDict):
    slug: str
    changed: str


class Counts(TypedDict):
    missing: int
    orphans: int
    stale: int
    missing_attachments: int


class Health(TypedDict, total=False):
    missing: list[DanglingLink]
    missing_attachments: list[DanglingLink]
    orphans: list[str]
    stale: list[StalePage]
    counts: Counts
    storage: dict[str, object]
    rate_limits: dict[str, object]
    passages: dict[str, object]
    rebuilding: list[dict[str, object]]


def _index_page(wiki: WikiBase, namespace: str) -> str:
    index = wiki._namespace_fields(namespace, ("index",)).get("index")
    return f"{namespace}/{index if isinstance(index, str) and index else 'index'}"


class LinksMixin(PagesMixin):
    """move_page, rename_page, backlinks and health; mixed into :class:`~hostcore.service.wiki.Wiki`."""

    def _relocate(self, page: Page, new: Page, basehash: str, tool: str) -> Page:
        """Write ``new`` (at a new slug) and remove ``page`` in one change, its attachments moving
        along (and the page's own links to them following). Raises Conflict."""
        change = self._change(tool, f"{page.slug} -> {new.slug}")
        plan = self._relocation(page, new, basehash)
        new, new_folder = plan.page, files_folder(new.slug)
        change = replace(change, moves=tuple(plan.moves))  # recorded, so history follows the page and its files
        try:
            self._store(plan.ops, change)
        except Conflict as exc:
            if exc.data.get("path") == page_path(new.slug):
                raise ValidationError(f"{new.slug!r} was just created by someone else; pick another", field="new_slug") from None
            if str(exc.data.get("path", "")).startswith(new_folder + "/"):
                raise ValidationError(
                    f"{new.slug!r} has attachment files left in {new_folder}/ already; pick another slug or remove them",
                    field="new_slug",
                ) from None
            raise self._page_conflict(page.slug, exc, tool=tool) from None
        self.host.notify("page_moved", page=new, old_slug=page.slug, change=change)
        return new

    def _relocation(self, page: Page, new: Page, basehash: str) -> Plan:
        """The operations and moves that write ``new`` (at a new slug) and remove ``page``, its
        attachments moving along (and the page's own links to them following)."""
        body = rewrite_attachment_links(new.body, page.slug, new.slug)
        if body != new.body:
            new = replace(new, body=body).stored()
        ops: list[Operation] = [
            Put(page_path(new.slug), new.to_bytes(), expect=None), Delete(page_path(page.slug), expect=basehash)
        ]
        old_folder, new_folder = files_folder(page.slug), files_folder(new.slug)
        moves = [(page_path(page.slug), page_path(new.slug))]
        for path, digest in self._attachments_of(page.slug).items():
            moved_path = new_folder + path[len(old_folder) :]
            ops += [Put(moved_path, self.storage.read(path), expect=None), Delete(path, expect=digest)]
            moves.append((path, moved_path))
        ops += self._comments_moving(page.slug, new.slug)
        return Plan("page_moved", new, page, ops, moves)

    def _comments_moving(self, slug: str, new_slug: str) -> list[Operation]:
        """The operations that take ``slug``'s comments to ``new_slug`` (merged with any left there
        by a page deleted at that slug): none when it has none."""
        old_path, new_path = comments.record_path(slug), comments.record_path(new_slug)
        old_hash = self.storage.hash(old_path)
        if old_hash is None:
            return []
        there_hash = self.storage.hash(new_path)
        moved = comments.moved(self.storage.read(old_path), self.storage.read(new_path) if there_hash else None, new_slug)
        return [Put(new_path, moved, expect=there_hash), Delete(old_path, expect=old_hash)]

    def _check_movable(self, slug: str, new_slug: str, field: str) -> None:
        if slug == _index_page(self, namespace_of(slug)):
            raise ValidationError(f"{slug!r} is its namespace's index page; it cannot be moved", field="slug")
        self._require_namespace_exists(namespace_of(new_slug), field)
        if self.storage.exists(page_path(new_slug)):
            raise ValidationError(f"{new_slug!r} holds a page already; pick another slug or delete that page first", field=field)
        self._check_new_slug(new_slug, field, moving=slug)

    def _check_move(self, slug: str, new_slug: str, basehash: str) -> Page:
        """The page to move, after every check of move_page."""
        self._access("write", slug)
        self._access("write", new_slug, "new_slug")
        if new_slug == slug:
            raise ValidationError("is the page's current slug; give a different one", field="new_slug")
        self._check_movable(slug, new_slug, "new_slug")
        return self._current_or_conflict(slug, basehash, tool="move_page")

    def move_page(self, slug: str, new_slug: str, basehash: str) -> Moved:
        current = self._check_move(slug, new_slug, basehash)
        moved = self._relocate(current, replace(current, slug=new_slug), basehash, "move_page")
        return {"slug": moved.slug, "old_slug": slug, "hash": moved.hash}

    def _renamed_slug(self, slug: str, title: str) -> str:
        """The slug ``title`` gives the page ``slug`` (its own for a namespace's index page), after
        rename_page's checks of the title. Raises ValidationError naming ``title``."""
        check_title(title)
        if not title.strip():
            raise ValidationError("is empty; give the page's new title", field="title")
        if slug == _index_page(self, namespace_of(slug)):
            return slug
        segment = slugify(title)
        if not segment:
            raise ValidationError("has no letters or digits to derive a slug from", field="title")
        return check_slug(f"{slug.rsplit('/', 1)[0]}/{segment}", "title")

    def rename_page(self, slug: str, title: str, basehash: str) -> Renamed:
        self._access("write", slug)
        new_slug = self._renamed_slug(slug, title)
        current = self._current_or_conflict(slug, basehash, tool="rename_page")
        if new_slug == slug:
            result = self.save_page(slug, basehash=basehash, title=title)
            return {
                "slug": slug, "old_slug": slug, "title": title, "hash": result["hash"],
                "rewritten": [], "failed_links": [], "hidden_failed_links": 0,
            }  # fmt: skip
        self._check_movable(slug, new_slug, "title")
        self.host.indexes.link_graph()  # links to rewrite come from the graph: never rename while it is rebuilt
        renamed = self._relocate(current, replace(current, slug=new_slug, title=title).stored(), basehash, "rename_page")
        rewritten, failed, hidden = self._rewrite_links_to(slug, new_slug)
        return {
            "slug": new_slug, "old_slug": slug, "title": title, "hash": renamed.hash,
            "rewritten": rewritten, "failed_links": failed, "hidden_failed_links": hidden,
        }  # fmt: skip

    def _rewrite_links_to(self, old: str, new: str) -> tuple[list[str], list[FailedLink], int]:
        """Point every link to ``old`` at ``new``, one change per page; report what could not be.

        Only links whose readers may read ``new`` are rewritten: those in pages of its own
        namespace, and in other namespaces only when its namespace is public. A rewrite elsewhere
        would show the new slug (in the page and in its history) to readers of the linking page
        who may not read the renamed one, and whether a link was rewritten would tell them that a
        page they guessed exists; such links are left as written, for someone who may tell their
        readers to change.

        Returns the pages rewritten, those the caller may read that were not (with the reason),
        and how many pages outside the caller's namespaces link there: counted, never named, since
        their slugs are not the caller's to learn.
        """
        rewritten: list[str] = []
        failed: list[FailedLink] = []
        hidden = 0
        target = namespace_of(new)
        public = self._namespace_fields(target, ("public",)).get("public") is True
        for source in self.host.indexes.link_graph().slugs_linking_to(old):
            if source in (old, new):
                continue
            if not self.principal.can_access(namespace_of(source)):
                hidden += 1
                continue
            if namespace_of(source) != target and not public:
                failed.append({"slug": source, "reason": (
                    f"links into the private namespace {target!r} from other namespaces are not rewritten, so readers of "
                    f"{namespace_of(source)!r} learn nothing of it; change them with edit_page if they may know {new!r}"
                )})  # fmt: skip
                continue
            try:
                page = self._load(source)
                body = rewrite_links(page.body, source, old, new)
                if body == page.body:
                    continue
                new_page = replace(page, body=body).stored()
                # One rename is one write against the limit, however many pages link to it.
                change = self._change("rename_page", f"links in {source}: {old} -> {new}", counted=False)
                self._store([Put(page_path(source), new_page.to_bytes(), expect=page.hash)], change)
            except HostcoreError as exc:
                failed.append({"slug": source, "reason": str(exc)})
                continue
            self.host.notify("page_saved", page=new_page, previous=page, change=change)
            rewritten.append(source)
        return rewritten, failed, hidden

    def backlinks(self, slug: str) -> Backlinks:
        self._access("read", slug)
        return {"slug": slug, "backlinks": self.host.indexes.link_graph().backlinks(slug, self.principal.namespaces)}

    def page_facts(self, namespace: str) -> list[PageFact]:
        """Slug, title, hash, last change, tags and pin of every page of ``namespace``, from the link graph (no page is read)."""
        self.principal.require("read")
        check_namespace(namespace, "namespace")
        self.principal.require_namespace(namespace, "namespace")
        return self.host.indexes.link_graph().pages_in(namespace)

    def page_titles(self, slugs: list[str]) -> dict[str, str]:
        """Slug -> title of those of ``slugs`` that are pages the caller may read, from the link graph (no page is read)."""
        self.principal.require("read")
        readable = [s for s in slugs if "/" in s and self.principal.can_access(s.split("/", 1)[0])]
        return {slug: title for slug, (title, _tags) in self.host.indexes.link_graph().facts(readable).items()}

    def pages_existing(self, slugs: list[str]) -> set[str]:
        """Those of ``slugs`` that are pages the caller may read (a page it may not read counts as missing)."""
        return set(self.page_titles(slugs))

    def health(self, namespace: str | None = None) -> Health:
        self.principal.require("read")
        scope = self.principal.namespaces
        if namespace is not None:
            check_namespace(namespace, "namespace")
            self.principal.require_namespace(namespace, "namespace")
            scope = frozenset({namespace})
        names = scope if scope is not None else self._namespace_names()
        graph = self.host.indexes.link_graph()
        # A filter picks the linking pages; where they point may be any namespace the caller reads.
        missing, missing_total = graph.dangling(scope, self.principal.namespaces, HEALTH_LIST_LIMIT)
        orphans, orphans_total = graph.orphans(
            scope, [_index_page(self, n) for n in names], HEALTH_LIST_LIMIT, visible=self.principal.namespaces
        )
        stale, stale_total = graph.stale(scope, time.time() - STALE_DAYS * 86400, HEALTH_LIST_LIMIT)
        broken = [
            DanglingLink({"from": source, "to": attachment_url(owner, name)})
            for source, owner, name in graph.attachment_links(scope, self.principal.namespaces)
            if not self.storage.exists(attachment_path(owner, name))
        ]
        result: Health = {
            "missing": missing,
            "missing_attachments": broken[:HEALTH_LIST_LIMIT],
            "orphans": orphans,
            "stale": [
                {"slug": s["slug"], "changed": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s["changed"]))} for s in stale
            ],
            "counts": {
                "missing": missing_total,
                "orphans": orphans_total,
                "stale": stale_total,
                "missing_attachments": len(broken),
            },
        }
        # the counts of a rebuild's progress are the whole wiki's: for callers who read all of it
        result["rebuilding"] = [dict(state) for state in self.host.indexes.rebuilding(progress=self.principal.namespaces is None)]
        if self.principal.namespaces is None:
            result["storage"] = self.storage.status()
            result["rate_limits"] = self.host.limiter.status()
            result["passages"] = dict(self.host.indexes.status("passage index"))
        return result
