"""Context for a task within a budget, and the pages around a page: what an assistant asks first,
before it reads anything; mixed into :class:`~hostcore.service.wiki.Wiki`.

``gather_context`` takes a goal in plain words and a budget of characters, and answers the
passages and pages most likely to matter, best first, trimmed to the budget, each with why it was
chosen and how to read on. Candidates come from three places, fused by reciprocal rank:

- **words**: the search backend's ranking of pages holding every word of the goal (English
  function words aside), then, at half weight, of pages holding some of them; the passage
  shown is the page's text around the first of them, so a long page costs the budget only its
  relevant part;
- **meaning** (with an ``EMBEDDER``): the passages nearest the goal, above the embedder's floor;
  when some page holds every word, meaning only ranks the pages the words found (as search's
  ``results`` add pages by meaning only when no page holds every word);
- **links**: the pages the caller names as starting points come first, whole passages of them,
  then the pages they link to or that link to them.

A page appears once, with every reason it was chosen; only pages the caller may read are looked
at, and ``tags`` keeps those holding every tag given. ``page_graph`` answers the pages around one
page to a depth, with the links between them, from the link graph (no page is read).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import NotRequired

from typing_extensions import TypedDict

from hostcore.domain.pages import check_namespace, check_slug
from hostcore.errors import NotFound, ValidationError
from hostcore.indexes.passages import Mode, query_words
from hostcore.service.search import SearchMixin

MIN_BUDGET, MAX_BUDGET = 500, 100_000
MAX_START = 10  # pages a caller may name to start from
MAX_TAGS = 10
CANDIDATES = 30  # pages taken from each ranking
GOAL_WORDS = 8  # words of the goal the keyword ranking is asked about
RRF_K = 60  # reciprocal rank fusion: score = sum of 1 / (RRF_K + rank)
PARTIAL_WEIGHT = 0.5  # a page holding some of the goal's words counts half as much as one near it in meaning
PASSAGE_CHARS = 1_200  # the most of one page an item shows (a starting page's: twice that)
LEAST_CHARS = 200  # an item trimmed shorter than this to fit the budget is left out instead
MAX_DEPTH, MAX_NODES = 3, 200
MEANING: tuple[Mode] = ("meaning",)


class Why(TypedDict):
    words: list[str]  # the goal's words the page holds
    meaning: NotRequired[float]  # similarity of its nearest passage to the goal
    linked: NotRequired[list[str]]  # the starting pages it links to or is linked from
    start: NotRequired[bool]  # one of the pages the caller started from


class ContextItem(TypedDict):
    slug: str
    title: str
    offset: int  # where ``text`` starts in the page's body
    text: str
    truncated: bool  # the page goes on past (or before) ``text``
    why: Why
    read_more: str


class Context(TypedDict):
    goal: str
    budget: int
    used: int
    items: list[ContextItem]
    left_out: int  # candidates that did not fit the budget
    pending: int  # documents still being embedded (meaning saw the others)


class GraphNode(TypedDict):
    slug: str
    title: str
    depth: int


GraphEdge = TypedDict("GraphEdge", {"from": str, "to": str})


class PageGraph(TypedDict):
    slug: str
    depth: int
    nodes: list[GraphNode]
    links: list[GraphEdge]
    truncated: bool


def window(text: str, words: Collection[str], size: int, at: int | None = None) -> tuple[int, str]:
    """(offset, piece) of about ``size`` characters of ``text`` starting at ``at``, else a little
    before the first of ``words`` (the start when none occurs), cut at spaces."""
    first = re.search(r"\b(?:" + "|".join(map(re.escape, words)) + r")\b", text, re.IGNORECASE) if words else None
    start = at if at is not None else 0
    if at is None and first is not None and first.start() > size // 4:
        start = text.rfind("\n", 0, first.start() - size // 4) + 1 or text.rfind(" ", 0, first.start() - size // 4) + 1
    end = min(len(text), start + size)
    if end < len(text):
        end = max(text.rfind(" ", start, end), start + size // 2)
    return start, text[start:end]


class ContextMixin(SearchMixin):
    """gather_context and page_graph."""

    def gather_context(
        self, goal: str, budget: int = 8_000, namespace: str | None = None, tags: list[str] | None = None,
        start: list[str] | None = None,
    ) -> Context:  # fmt: skip
        """The passages and pages that matter most for ``goal``, within ``budget`` characters."""
        self.principal.require("read")
        if not goal.strip():
            raise ValidationError("is empty; say in a few words what the task is", field="goal")
        if not MIN_BUDGET <= budget <= MAX_BUDGET:
            raise ValidationError(f"must be between {MIN_BUDGET} and {MAX_BUDGET} characters", field="budget")
        scope = self.principal.namespaces
        if namespace is not None:
            check_namespace(namespace, "namespace")
            self.principal.require_namespace(namespace, "namespace")
            scope = frozenset({namespace})
        tags, start = list(dict.fromkeys(tags or [])), list(dict.fromkeys(start or []))
        if len(tags) > MAX_TAGS:
            raise ValidationError(f"at most {MAX_TAGS} tags; keep those every page must hold", field="tags")
        if len(start) > MAX_START:
            raise ValidationError(f"at most {MAX_START} pages; name the ones the task starts from", field="start")
        for i, slug in enumerate(start):
            check_slug(slug, f"start[{i}]")
            self._access("read", slug, f"start[{i}]")
            if namespace is not None and not slug.startswith(f"{namespace}/"):
                raise ValidationError(f"{slug!r} is not in namespace {namespace!r}; drop it or the namespace", field=f"start[{i}]")
        words = query_words(goal)
        graph = self.host.indexes.link_graph()
        score: dict[str, float] = {}
        why: dict[str, Why] = {}
        near: dict[str, int] = {}  # slug -> where its nearest passage starts in its body

        def add(slug: str, rank: int, weight: float = 1.0) -> Why:
            score[slug] = score.get(slug, 0.0) + weight / (RRF_K + rank + 1)
            return why.setdefault(slug, {"words": []})

        for rank, slug in enumerate(start):
            add(slug, rank, weight=100.0)["start"] = True
        for source, target in graph.links_around(start, scope):
            for slug, other in ((source, target), (target, source)):
                if other in start and slug not in start:
                    linked = add(slug, len(score)).setdefault("linked", [])
                    linked.append(other)
        backend = self.host.indexes.search_backend()
        every: set[str] = set()  # pages holding every word of the goal
        if backend is not None and words:
            terms = [f'"{w}"' for w in words[:GOAL_WORDS]]
            try:
                for rank, hit in enumerate(backend.search(" ".join(terms), namespaces=scope, offset=0, limit=CANDIDATES).hits):
                    every.add(hit.slug)
                    add(hit.slug, rank)
                for rank, hit in enumerate(backend.search(" OR ".join(terms), namespaces=scope, offset=0, limit=CANDIDATES).hits):
                    add(hit.slug, rank, weight=PARTIAL_WEIGHT)
            except ValidationError:  # a goal is plain text, not a query: words the engine cannot search rank nothing
                every.clear()
        passages = self.host.indexes.passage_index()
        pending = 0
        if passages.embedder is not None:
            pending = passages.pending()
            found = passages.search(goal, kind="page", namespaces=scope, limit=CANDIDATES, modes=MEANING)
            for rank, passage in enumerate(found):
                # When pages hold every word, meaning only ranks those the words found (as search's
                # results do): a code or a name has no meaning a page near it shares.
                if passage.slug not in near and (not every or passage.slug in score):
                    near[passage.slug] = passage.start  # (a page's passages keep no text: the page has it)
                    add(passage.slug, rank)["meaning"] = round(passage.score, 4)
        facts = graph.facts(list(score))
        ranked = [slug for slug in sorted(score, key=lambda s: -score[s]) if slug in facts]
        if tags:
            ranked = [slug for slug in ranked if set(tags) <= set(facts[slug][1])]
        items: list[ContextItem] = []
        used = left_out = 0
        for slug in ranked:
            room = budget - used
            if room < LEAST_CHARS:
                left_out += 1
                continue
            try:
                body = self._load(slug).body
            except NotFound:  # removed since the indexes saw it
                continue
            holds = [w for w in words if re.search(rf"\b{re.escape(w)}\b", body, re.IGNORECASE)]
            reasons = why[slug]
            reasons["words"] = holds
            size = min(room, PASSAGE_CHARS * (2 if reasons.get("start") else 1))
            offset, text = window(body, holds, size, near.get(slug, 0) if not holds else None)
            items.append({
                "slug": slug, "title": facts[slug][0], "offset": offset, "text": text,
                "truncated": offset > 0 or offset + len(text) < len(body), "why": reasons,
                "read_more": f"read_page slug={slug}" + (f" (this text starts at character {offset})" if offset else ""),
            })  # fmt: skip
            used += len(text)
        return {"goal": goal, "budget": budget, "used": used, "items": items, "left_out": left_out, "pending": pending}

    def page_graph(self, slug: str, depth: int = 1, limit: int = 50) -> PageGraph:
        """The pages around ``slug`` to ``depth`` links away (either way), at most ``limit``, with
        the links between them: only pages the caller may read."""
        self._access("read", slug)
        if not 1 <= depth <= MAX_DEPTH:
            raise ValidationError(f"must be between 1 and {MAX_DEPTH}", field="depth")
        if not 1 <= limit <= MAX_NODES:
            raise ValidationError(f"must be between 1 and {MAX_NODES}", field="limit")
        graph = self.host.indexes.link_graph()
        if slug not in graph.facts([slug]):
            self._load(slug)  # the page's own error when it does not exist
        scope = self.principal.namespaces
        found: dict[str, int] = {slug: 0}
        edges: set[tuple[str, str]] = set()
        frontier, truncated = [slug], False
        for level in range(1, depth + 1):
            following: list[str] = []
            for source, target in sorted(graph.links_around(frontier, scope)):
                edges.add((source, target))
                for page in (source, target):
                    if page in found:
                        continue
                    if len(found) >= limit:
                        truncated = True
                        continue
                    found[page] = level
                    following.append(page)
            frontier = following
            if not frontier:
                break
        facts = graph.facts(list(found))
        nodes: list[GraphNode] = [
            {"slug": s, "title": facts[s][0] if s in facts else s, "depth": d} for s, d in sorted(found.items(), key=lambda x: (x[1], x[0]))
        ]
        links: list[GraphEdge] = [{"from": a, "to": b} for a, b in sorted(edges) if a in found and b in found]
        return {"slug": slug, "depth": depth, "nodes": nodes, "links": links, "truncated": truncated}
