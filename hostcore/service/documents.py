"""Finding by meaning: passages of attachments by keyword and meaning, pages near a page.

Mixed into :class:`~hostcore.service.wiki.Wiki` when an ``EMBEDDER`` is set; the passage index
(:mod:`hostcore.indexes.passages`) does the ranking, this layer the access rules: only documents
in namespaces the caller may read are ranked at all, so nothing else can leak into scores.
"""

from __future__ import annotations

from typing_extensions import TypedDict

from hostcore.domain.attachments import attachment_url
from hostcore.domain.pages import page_path
from hostcore.errors import Unavailable, ValidationError
from hostcore.indexes.passages import PassageIndex, excerpt, query_words
from hostcore.service.search import SearchMixin

MAX_PASSAGE_LIMIT = 50


class PassageHit(TypedDict):
    slug: str
    filename: str
    attachment_url: str
    offset: int
    excerpt: str
    score: float


class AttachmentSearch(TypedDict):
    hits: list[PassageHit]
    indexed: int
    pending: int


class SimilarPage(TypedDict):
    slug: str
    title: str
    similarity: float


class SimilarPages(TypedDict):
    slug: str
    pages: list[SimilarPage]
    pending: int


class DocumentsMixin(SearchMixin):
    """search_attachments and similar_pages."""

    def _passages(self) -> PassageIndex:
        if self.host.passages is None:
            raise Unavailable("document search is not enabled on this wiki (EMBEDDER is empty); use search")
        return self.host.passages

    def search_attachments(self, query: str, namespace: str | None = None, limit: int = 20) -> AttachmentSearch:
        """The passages of accessible attachments best matching ``query`` by keyword and meaning."""
        self.principal.require("read")
        passages = self._passages()
        scope = self._scope(query, namespace, limit, MAX_PASSAGE_LIMIT)
        passages.kick()
        found = passages.search(query, kind="attachment", namespaces=scope, limit=limit)
        words = query_words(query)
        hits: list[PassageHit] = [
            {
                "slug": p.slug, "filename": p.filename, "attachment_url": attachment_url(p.slug, p.filename),
                "offset": p.start, "excerpt": excerpt(p.text, words), "score": round(p.score, 6),
            }  # fmt: skip
            for p in found
        ]
        status = passages.status()
        return {"hits": hits, "indexed": int(status["documents"]), "pending": int(status["pending"])}

    def similar_pages(self, slug: str, limit: int = 10) -> SimilarPages:
        """The accessible pages whose meaning is nearest ``slug``'s, nearest first."""
        self._access("read", slug)
        passages = self._passages()
        self._load(slug)
        if not 1 <= limit <= MAX_PASSAGE_LIMIT:
            raise ValidationError(f"must be between 1 and {MAX_PASSAGE_LIMIT}", field="limit")
        passages.kick()
        vector = passages.document_vector(page_path(slug))
        if vector is None:
            raise Unavailable(
                f"page {slug!r} is not indexed yet ({passages.pending()} documents pending); try again in a moment",
                field="slug",
            )
        near = passages.nearest(
            vector, kind="page", namespaces=self.principal.namespaces, limit=limit, exclude=page_path(slug)
        )
        return {
            "slug": slug,
            "pages": [{"slug": n.slug, "title": n.title, "similarity": round(n.similarity, 4)} for n in near],
            "pending": passages.pending(),
        }
