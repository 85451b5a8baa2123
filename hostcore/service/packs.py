"""Context packs (:mod:`hostcore.domain.packs`): listed, loaded within a budget, found by intent,
and proposed as a change request that creates the pack's page, never saved silently."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from typing_extensions import TypedDict

from hostcore.domain import packs as dom
from hostcore.domain.pages import Page, check_namespace, check_slug, check_title, page_path
from hostcore.domain.stemming import stem
from hostcore.errors import Forbidden, NotFound, ValidationError
from hostcore.indexes.passages import query_words
from hostcore.service.base import WikiBase

if TYPE_CHECKING:
    from hostcore.service.change_requests import ChangeRequestsMixin

MAX_LISTED = 200  # packs read at most, per namespace
MIN_BUDGET, MAX_BUDGET = 500, 100_000


class PackSummary(TypedDict):
    slug: str
    name: str
    namespace: str
    title: str
    aliases: list[str]
    tasks: list[str]
    pages: list[str]


class PackList(TypedDict):
    packs: list[PackSummary]
    total: int


class PackItem(TypedDict):
    slug: str
    title: str
    hash: str
    text: str
    truncated: bool
    read_more: str


class LoadedPack(TypedDict):
    pack: PackSummary
    items: list[PackItem]
    used: int
    left_out: list[str]
    missing: list[str]


class Matched(TypedDict):
    words: list[str]
    meaning: float | None


class FoundPack(PackSummary):
    why: Matched


class FoundPacks(TypedDict):
    packs: list[FoundPack]


class ProposedPack(TypedDict):
    proposed: str
    slug: str
    review: str
    review_url: str


def _summary(pack: dom.Pack) -> PackSummary:
    return {"slug": pack.slug, "name": pack.name, "namespace": pack.slug.split("/", 1)[0], "title": pack.title,
            "aliases": list(pack.aliases), "tasks": list(pack.tasks), "pages": list(pack.pages)}  # fmt: skip


class PacksMixin(WikiBase):
    """Context packs; mixed into :class:`~hostcore.service.wiki.Wiki`."""

    def _packs(self, namespace: str | None) -> list[dom.Pack]:
        """The packs of ``namespace`` (None: every namespace the caller may read), by slug."""
        self.principal.require("read")
        if namespace is not None:
            check_namespace(namespace, "namespace")
            self.principal.require_namespace(namespace, "namespace")
        names = [namespace] if namespace is not None else [n for n in self._namespace_names() if self.principal.can_access(n)]
        found: list[dom.Pack] = []
        for name in sorted(names):
            paths = [p for p in self.storage.list(f"{name}/{dom.FOLDER}") if p.endswith(".md") and p.count("/") == 2]
            for path in paths[:MAX_LISTED]:
                slug = path[: -len(".md")]
                try:
                    found.append(dom.parse(Page.from_bytes(slug, self.storage.read(path))))
                except NotFound:  # deleted since it was listed
                    continue
        return found

    def list_context_packs(self, namespace: str | None = None, offset: int = 0, limit: int = 50) -> PackList:
        """The context packs of ``namespace`` (or of every namespace the caller may read)."""
        if not 1 <= limit <= 100:
            raise ValidationError("must be between 1 and 100", field="limit")
        if offset < 0:
            raise ValidationError("must be 0 or more", field="offset")
        packs = self._packs(namespace)
        return {"packs": [_summary(p) for p in packs[offset : offset + limit]], "total": len(packs)}

    def _pack(self, slug: str) -> dom.Pack:
        check_slug(slug)
        if not dom.is_pack(slug):
            raise ValidationError(f"is not a pack's page; packs are at <namespace>/{dom.FOLDER}/<name> (list_context_packs)", field="slug")
        self._access("read", slug)
        try:
            return dom.parse(Page.from_bytes(slug, self.storage.read(page_path(slug))))
        except NotFound:
            raise NotFound(f"no context pack {slug}; list_context_packs shows them", field="slug") from None

    def load_context_pack(self, slug: str, budget: int = 8_000) -> LoadedPack:
        """The pack's pages that the caller may read, in the pack's order, within ``budget``
        characters: each page's text from its start, cut where the budget left runs out (an
        equal share for each page still to come, what a short page leaves going to the next)."""
        if not MIN_BUDGET <= budget <= MAX_BUDGET:
            raise ValidationError(f"must be between {MIN_BUDGET} and {MAX_BUDGET} characters", field="budget")
        pack = self._pack(slug)
        items: list[PackItem] = []
        missing: list[str] = []
        left_out: list[str] = []
        pages: list[Page] = []
        for target in pack.pages:
            try:
                self._access("read", target)
                pages.append(Page.from_bytes(target, self.storage.read(page_path(target))))
            except (NotFound, Forbidden):  # gone, or not the caller's to read: named only in their own namespaces
                if self.principal.can_access(target.split("/", 1)[0]):
                    missing.append(target)
        used = 0
        for i, page in enumerate(pages):
            share = (budget - used) // (len(pages) - i)
            if share < 100:
                left_out += [p.slug for p in pages[i:]]
                break
            text = page.body[:share]
            items.append({"slug": page.slug, "title": page.title, "hash": page.hash, "text": text,
                          "truncated": len(text) < len(page.body),
                          "read_more": f"read_page {page.slug} offset {len(text)}" if len(text) < len(page.body) else ""})  # fmt: skip
            used += len(text)
        return {"pack": _summary(pack), "items": items, "used": used, "left_out": left_out, "missing": missing}

    def find_context_packs(self, intent: str, namespace: str | None = None, limit: int = 10) -> FoundPacks:
        """The packs that serve ``intent`` best: by the words of their title, name, aliases and
        tasks that it holds (stems alike), and, with an embedder, by meaning; packs matching
        neither way are left out."""
        if not intent.strip():
            raise ValidationError("is empty; say in a few words what the task is", field="intent")
        if not 1 <= limit <= 50:
            raise ValidationError("must be between 1 and 50", field="limit")
        wanted = {stem(w): w for w in query_words(intent)}
        packs = self._packs(namespace)
        described = {p.slug: " ".join([p.title, p.name.replace("-", " "), *p.aliases, *p.tasks]) for p in packs}
        similarity: dict[str, float] = {}
        embedder = self.host.indexes.passages.embedder if self.host.indexes.passages is not None else None
        if embedder is not None and packs:
            vectors = embedder.embed([described[p.slug] for p in packs])
            goal = embedder.embed_query(intent)
            for pack, vector in zip(packs, vectors, strict=True):
                similarity[pack.slug] = float(sum(a * b for a, b in zip(vector, goal, strict=True)))
        floor = embedder.relevant if embedder is not None else 1.0
        scored: list[tuple[float, FoundPack]] = []
        for pack in packs:
            held = {stem(w) for w in query_words(described[pack.slug])}
            words = [word for key, word in wanted.items() if key in held]
            near = similarity.get(pack.slug)
            if not words and (near is None or near < floor):
                continue
            found = cast(FoundPack, {**_summary(pack), "why": {"words": words, "meaning": round(near, 4) if near is not None else None}})
            scored.append((len(words) / max(len(wanted), 1) + (near or 0.0), found))
        scored.sort(key=lambda item: -item[0])
        return {"packs": [found for _, found in scored[:limit]]}

    def propose_context_pack(
        self, namespace: str, name: str, title: str, pages: list[str], reason: str,
        aliases: list[str] | None = None, tasks: list[str] | None = None, notes: str = "", source: str = "",
    ) -> ProposedPack:  # fmt: skip
        """A change request creating (or, when it exists, replacing) the pack's page: a person
        reviews and applies it; nothing is saved now."""
        self.principal.require("propose")
        check_namespace(namespace, "namespace")
        self.principal.require_namespace(namespace, "namespace")
        dom.check_name(name)
        title = check_title(title).strip()
        if not title:
            raise ValidationError("is empty; give the pack a title", field="title")
        checked_aliases = dom.check_items(aliases, "aliases", dom.MAX_ALIASES, ",")
        checked_tasks = dom.check_items(tasks, "tasks", dom.MAX_TASKS, ";")
        if not pages:
            raise ValidationError("is empty; name the pages the pack gathers", field="pages")
        if len(pages) > dom.MAX_PAGES:
            raise ValidationError(f"holds {len(pages)} pages; a pack gathers at most {dom.MAX_PAGES}", field="pages")
        for i, target in enumerate(pages):
            check_slug(target, f"pages[{i}]")
            self._access("read", target, f"pages[{i}]")
            if not self.storage.exists(page_path(target)):
                raise NotFound(f"no page {target}; name pages that exist", field=f"pages[{i}]")
        slug = dom.pack_slug(namespace, name)
        body = dom.render(checked_aliases, checked_tasks, list(dict.fromkeys(pages)), notes)
        change: dict[str, object] = {"op": "save", "slug": slug, "title": title, "body": body}
        current = self.storage.hash(page_path(slug))
        if current is not None:  # a pack of that name exists: the request replaces it
            change["basehash"] = current
        made = cast("ChangeRequestsMixin", self).create_change_request(
            [change], f"Context pack {slug}"[:200], reason, description=f"A context pack: {title}", source=source
        )
        url = self._review_url(made["id"])
        return {"proposed": made["id"], "slug": slug, "review_url": url,
                "review": f"not saved yet: change request {made['id']} waits for a person to review it at {url}; tell the person"}  # fmt: skip
