"""Finding documents: attachments' passages by their words (and, with an ``EMBEDDER``, their
meaning), pages near a page in meaning, and what documents add to search and fetch.

Mixed into :class:`~hostcore.service.wiki.Wiki`. The passage index
(:mod:`hostcore.indexes.passages`) ranks; this layer applies the access rules: only documents in
namespaces the caller may read are ranked at all, so nothing else can leak into scores. Pages by
meaning need an ``EMBEDDER``; attachments are found by their words without one.
:meth:`~hostcore.service.search.SearchMixin.search` composes its results from the pages' full-text
hits and :meth:`DocumentsMixin._documents_results`; ``fetch`` hands an attachment's URL path to
:meth:`DocumentsMixin._fetch_attachment`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from typing_extensions import TypedDict

from hostcore.domain.attachments import attachment_url, split_attachment_url
from hostcore.domain.pages import page_path
from hostcore.errors import NotFound, Unavailable, ValidationError
from hostcore.indexes.passages import Near, PassageIndex, excerpt, query_words
from hostcore.service.attachments import AttachmentsMixin

if TYPE_CHECKING:
    from hostcore.service.search import Fetched, Result

MAX_PASSAGE_LIMIT = 50
ATTACHMENT_RESULTS = 5  # attachments that search adds to its ChatGPT-style results
FETCH_CHARS = 100_000  # of an attachment's text in one fetch


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


class DocumentsMixin(AttachmentsMixin):
    """search_attachments and similar_pages, and what documents add to search and fetch."""

    def _documents_results(self, query: str, scope: frozenset[str] | None, limit: int, *, pages_found: bool) -> list[Result]:
        """What the documents add to the first page of search's ``results`` for a plain query
        (:meth:`~hostcore.service.search.SearchMixin.search` composes it): when no page holds
        every word (``pages_found`` False), the pages near ``query`` in meaning (with an
        ``EMBEDDER``); then the URL paths of the attachments with the best passages (by their
        words, and by meaning with an ``EMBEDDER``), at most ATTACHMENT_RESULTS: nothing is
        searched, nor the query embedded, for them when the wiki holds none (the passage index's
        ``search`` sees to it)."""
        passages = self.host.indexes.passage_index()
        results: list[Result] = []
        if not pages_found and passages.embedder is not None:
            results += [
                {"id": n.slug, "title": n.title, "url": self.page_url(n.slug)} for n in self._pages_by_meaning(passages, query, scope, limit)
            ]
        best = passages.search(query, kind="attachment", namespaces=scope, limit=ATTACHMENT_RESULTS * 4)
        urls = list(dict.fromkeys(attachment_url(p.slug, p.filename) for p in best))[:ATTACHMENT_RESULTS]
        base = self.host.config["PUBLIC_URL"].rstrip("/")
        results += [{"id": url, "title": url.rsplit("/", 1)[1], "url": base + url} for url in urls]
        return results

    @staticmethod
    def _pages_by_meaning(passages: PassageIndex, query: str, scope: frozenset[str] | None, limit: int) -> list[Near]:
        """Pages whose nearest passage is at least the embedder's ``relevant`` similarity to ``query``, nearest first."""
        embedder = passages.embedder
        if embedder is None:
            return []
        return passages.nearest(embedder.embed_query(query), kind="page", namespaces=scope, limit=limit, least=embedder.relevant)

    def _fetch_attachment(self, id: str) -> Fetched:
        """An attachment's text (at most FETCH_CHARS) by its URL path, as fetch answers it."""
        owner = split_attachment_url(id)
        if owner is None:
            raise NotFound(f"no attachment {id!r}; pass an id from search's results", field="id")
        slug, filename = owner
        self._access("read", slug, "id")
        try:
            read = self.read_attachment(slug, filename, 0, FETCH_CHARS)
        except NotFound:
            raise NotFound(f"no attachment {id!r}; pass an id from search's results", field="id") from None
        text = read["body"]
        if read["truncated"]:
            text += f"\n\n[the text goes on: read_attachment with slug {slug}, filename {filename}, offset {read['next_offset']}]"
        return {
            "id": id,
            "title": filename,
            "text": text,
            "url": self.host.config["PUBLIC_URL"].rstrip("/") + id,
            "metadata": {"slug": slug, "namespace": slug.split("/", 1)[0], "tags": [], "hash": read["hash"]},
        }

    def search_attachments(self, query: str, namespace: str | None = None, limit: int = 20) -> AttachmentSearch:
        """The passages of accessible attachments best matching ``query``: holding its words, or
        (with an ``EMBEDDER``) near it in meaning, at least the embedder's ``relevant`` similarity."""
        self.principal.require("read")
        scope = self._scope(query, namespace, limit, MAX_PASSAGE_LIMIT)
        passages = self.host.indexes.passage_index()
        status = passages.status()  # before the search: pending 0 then means the hits saw every document
        found = passages.search(query, kind="attachment", namespaces=scope, limit=limit)
        words = query_words(query)
        hits: list[PassageHit] = [
            {
                "slug": p.slug,
                "filename": p.filename,
                "attachment_url": attachment_url(p.slug, p.filename),
                "offset": p.start,
                "excerpt": excerpt(p.text, words),
                "score": round(p.score, 6),
            }
            for p in found
        ]
        return {"hits": hits, "indexed": int(status["documents"]), "pending": int(status["pending"])}

    def similar_pages(self, slug: str, limit: int = 10) -> SimilarPages:
        """The accessible pages whose meaning is nearest ``slug``'s, nearest first."""
        self._access("read", slug)
        if self.host.indexes.passages.embedder is None:
            raise Unavailable("finding pages by meaning is not enabled on this wiki (EMBEDDER is empty); use backlinks or search")
        self._load(slug)
        if not 1 <= limit <= MAX_PASSAGE_LIMIT:
            raise ValidationError(f"must be between 1 and {MAX_PASSAGE_LIMIT}", field="limit")
        passages = self.host.indexes.passage_index()
        pending = passages.pending()  # before the search, as in search_attachments
        vector = passages.document_vector(page_path(slug))
        if vector is None:
            raise Unavailable(
                f"page {slug!r} is not indexed yet ({passages.pending()} documents pending); try again in a moment",
                field="slug",
            )
        near = passages.nearest(vector, kind="page", namespaces=self.principal.namespaces, limit=limit, exclude=page_path(slug))
        return {
            "slug": slug,
            "pages": [{"slug": n.slug, "title": n.title, "similarity": round(n.similarity, 4)} for n in near],
            "pending": pending,
        }
