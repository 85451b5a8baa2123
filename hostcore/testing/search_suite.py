"""The search conformance suite: the query language and index contract every search engine passes.

Subclass :class:`SearchConformance` in the engine's tests and define ``make_backend(root)`` as a
staticmethod of a module-level class (worker processes rebuild the backend from the folder).
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from hostcore.errors import ValidationError
from hostcore.seams.search import SearchBackend, SearchDoc, SearchFilters, SearchResults


def _search_writer(factory: Any, root: str, index: int, count: int, barrier: Any) -> None:
    backend = factory(Path(root))
    barrier.wait()
    try:
        for n in range(count):
            slug = f"w{index}/page-{n}"
            backend.update([SearchDoc(slug, f"Writer {index} page {n}", f"written by racer{index} number{n}", (), f"h{index}-{n}")])
    finally:
        backend.close()


def search_doc(slug: str, title: str = "", body: str = "", tags: tuple[str, ...] = (), hash: str = "") -> SearchDoc:
    """A SearchDoc with defaults: the title defaults to the slug's last segment."""
    return SearchDoc(slug, title or slug.rsplit("/", 1)[-1], body, tags, hash or f"hash-of-{slug}")


class SearchConformance:
    """The contract every search backend passes. Subclass and define ``make_backend``::

        class TestMySearch(SearchConformance):
            @staticmethod
            def make_backend(root):
                return MySearch(root, {})

    ``make_backend`` must be a staticmethod of a module-level class so worker processes can open
    the same index folder.
    """

    @staticmethod
    def make_backend(root: Path) -> SearchBackend:  # pragma: no cover - subclasses define it
        raise NotImplementedError

    @pytest.fixture
    def backend(self, tmp_path: Path):
        engine = self.make_backend(tmp_path / "index")
        yield engine
        engine.close()

    @staticmethod
    def slugs(results: SearchResults) -> list[str]:
        return [hit.slug for hit in results.hits]

    def search(self, backend: SearchBackend, query: str, **kwargs: Any) -> list[str]:
        kwargs.setdefault("namespaces", None)
        return self.slugs(backend.search(query, **kwargs))

    def test_reopens_existing_index(self, tmp_path: Path) -> None:
        first = self.make_backend(tmp_path / "index")
        first.update([SearchDoc("n/a", "T", "kept", (), "h")])
        first.close()
        again = self.make_backend(tmp_path / "index")
        try:
            assert again.hashes() == {"n/a": "h"}
            assert self.search(again, "kept") == ["n/a"]
        finally:
            again.close()

    def test_paging_arguments_checked(self, backend: SearchBackend) -> None:
        with pytest.raises(ValidationError) as err:
            backend.search("x", namespaces=None, offset=-1)
        assert err.value.field == "offset"
        with pytest.raises(ValidationError) as err:
            backend.search("x", namespaces=None, limit=0)
        assert err.value.field == "limit"

    def test_case_and_accents_are_ignored(self, backend: SearchBackend) -> None:
        backend.update([SearchDoc("n/a", "Crème brûlée", "A dessert", (), "h")])
        assert self.search(backend, "creme") == ["n/a"]
        assert self.search(backend, "BRULEE") == ["n/a"]
        assert "<mark>Crème</mark>" in backend.search("creme", namespaces=None).hits[0].snippet

    def test_long_snippet_is_short_with_ellipsis(self, backend: SearchBackend) -> None:
        backend.update([SearchDoc("n/a", "T", "lead " * 200 + "needle " + "tail " * 200, (), "h")])
        snippet = backend.search("needle", namespaces=None).hits[0].snippet
        assert "<mark>needle</mark>" in snippet
        assert snippet.startswith("…") and snippet.endswith("…")
        assert len(snippet) < 300

    def test_empty_index(self, backend: SearchBackend) -> None:
        assert backend.search("anything", namespaces=None) == SearchResults([], False)
        assert backend.hashes() == {}

    def test_title_match_ranks_first(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("a/many", "Animals", "zebra " * 30 + "and more words about zebras and zebra herds"),
                search_doc("a/titled", "Zebra", "A striped animal of the savanna."),
                search_doc("a/once", "Horses", "Unlike the zebra, a horse has no stripes. " * 3),
                search_doc("a/none", "Lions", "Lions hunt on the savanna."),
            ]
        )
        found = self.search(backend, "zebra")
        assert found[0] == "a/titled"
        assert sorted(found) == ["a/many", "a/once", "a/titled"]
        assert found[0] == self.search(backend, "ZEBRA")[0]

    def test_words_must_all_match(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/both", body="backup and restore of the database"),
                search_doc("n/one", body="backup only"),
                search_doc("n/other", body="restore only"),
            ]
        )
        assert self.search(backend, "backup restore") == ["n/both"]
        assert self.search(backend, "backup AND restore") == ["n/both"]

    def test_phrase(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/exact", body="please restore the backup today"),
                search_doc("n/apart", body="the backup will restore everything"),
            ]
        )
        assert self.search(backend, '"restore the backup"') == ["n/exact"]
        assert sorted(self.search(backend, "restore backup")) == ["n/apart", "n/exact"]

    def test_prefix(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/a", body="deployment notes"),
                search_doc("n/b", body="we deploy on fridays"),
                search_doc("n/c", body="a depot of things"),
            ]
        )
        assert sorted(self.search(backend, "deploy*")) == ["n/a", "n/b"]
        assert sorted(self.search(backend, "dep*")) == ["n/a", "n/b", "n/c"]

    def test_or_and_not(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/pg", body="postgres backup"),
                search_doc("n/my", body="mysql backup"),
                search_doc("n/both", body="postgres and mysql backup"),
                search_doc("n/neither", body="sqlite backup"),
            ]
        )
        assert sorted(self.search(backend, "postgres OR mysql")) == ["n/both", "n/my", "n/pg"]
        assert sorted(self.search(backend, "backup -mysql")) == ["n/neither", "n/pg"]
        assert sorted(self.search(backend, "backup NOT mysql")) == ["n/neither", "n/pg"]
        assert sorted(self.search(backend, "(postgres OR sqlite) -mysql")) == ["n/neither", "n/pg"]

    def test_tags_are_searched_and_filter(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/a", body="server setup", tags=("runbook", "Ops")),
                search_doc("n/b", body="server history", tags=("history",)),
                search_doc("n/c", body="client setup", tags=("runbook",)),
            ]
        )
        assert self.search(backend, "server tag:runbook") == ["n/a"]
        assert sorted(self.search(backend, "tag:runbook")) == ["n/a", "n/c"]
        assert self.search(backend, "tag:ops") == ["n/a"]
        assert self.search(backend, "history") == ["n/b"]
        hit = backend.search("server tag:runbook", namespaces=None).hits[0]
        assert hit.tags == ("runbook", "Ops")
        assert hit.title == "a"

    def test_filters_tags_author_and_dates(self, backend: SearchBackend) -> None:
        day = 86400.0
        backend.update(
            [
                SearchDoc("n/a", "A", "server setup", ("runbook", "Ops"), "ha", "Ann Lee", 10 * day),
                SearchDoc("n/b", "B", "server history", ("runbook",), "hb", "bob", 20 * day),
                SearchDoc("n/c", "C", "server client", ("ops",), "hc", "ann lee", 30 * day),
                SearchDoc("m/d", "D", "server other", ("runbook", "ops"), "hd", "", None),
            ]
        )

        def found(**filters: Any) -> list[str]:
            return sorted(self.search(backend, "server", filters=SearchFilters(**filters)))

        assert found() == ["m/d", "n/a", "n/b", "n/c"]
        assert found(tags=("runbook",)) == ["m/d", "n/a", "n/b"]
        assert found(tags=("runbook", "ops")) == ["m/d", "n/a"]  # every tag, case folded
        assert found(author="ANN LEE") == ["n/a", "n/c"]
        assert found(author="nobody") == []
        assert found(since=20 * day) == ["n/b", "n/c"]  # at or after; an unknown time passes no date filter
        assert found(before=20 * day) == ["n/a"]  # strictly before
        assert found(since=15 * day, before=25 * day) == ["n/b"]
        assert found(author="ann lee", tags=("ops",), since=20 * day) == ["n/c"]
        assert sorted(self.search(backend, "server", namespaces=["n"], filters=SearchFilters(tags=("ops",)))) == ["n/a", "n/c"]
        assert sorted(self.search(backend, "tag:ops", filters=SearchFilters(before=25 * day))) == ["n/a"]
        # paging stays exact under filters
        backend.update([SearchDoc(f"p/{i}", f"P{i}", "common words", ("t",) if i % 2 else (), f"p{i}", "x", float(i)) for i in range(30)])
        pages, offset = [], 0
        while True:
            res = backend.search("common", namespaces=None, offset=offset, limit=4, filters=SearchFilters(tags=("t",), since=5.0))
            pages.append(self.slugs(res))
            offset += 4
            if not res.more:
                break
        everything = [slug for page in pages for slug in page]
        assert sorted(everything) == sorted(f"p/{i}" for i in range(5, 30) if i % 2)
        assert len(everything) == len(set(everything))

    def test_other_forms_of_a_word_match_and_the_typed_one_ranks_first(self, backend: SearchBackend) -> None:
        backend.update(
            [
                search_doc("n/one", "One", "an automobile parked in the street"),
                search_doc("n/many", "Many", "automobiles parked in the street"),
                search_doc("n/other", "Other", "a bicycle parked in the street"),
            ]
        )
        assert self.search(backend, "automobiles") == ["n/many", "n/one"]
        assert self.search(backend, "automobile") == ["n/one", "n/many"]
        assert self.search(backend, "automobiles parked") == ["n/many", "n/one"]
        hit = backend.search("automobiles", namespaces=None).hits[1]
        assert "<mark>automobile</mark>" in hit.snippet
        backend.update([search_doc("n/run", "Run", "she was running late"), search_doc("n/stop", "Stop", "the bus stopped")])
        assert self.search(backend, "runs") == ["n/run"]
        assert self.search(backend, "stop") == ["n/stop"]
        assert self.search(backend, '"automobiles parked"') == ["n/many"]  # a phrase is matched as typed

    def test_namespaces_and_exact_paging(self, backend: SearchBackend) -> None:
        docs = [search_doc(f"{ns}/p{i}", body=f"common word {i}") for ns in ("a", "b", "c") for i in range(7)]
        backend.update(docs)
        assert backend.search("common", namespaces=[]).hits == []
        pages, offset = [], 0
        while True:
            res = backend.search("common", namespaces={"a", "c"}, offset=offset, limit=3)
            pages.append(self.slugs(res))
            offset += 3
            if not res.more:
                break
        found = [slug for page in pages for slug in page]
        assert [len(page) for page in pages] == [3, 3, 3, 3, 2]
        assert sorted(found) == sorted(d.slug for d in docs if d.namespace in ("a", "c"))
        assert backend.search("common", namespaces=["b"], limit=7).more is False
        assert backend.search("common", namespaces=["b"], limit=6).more is True

    def test_thousands_of_matches(self, backend: SearchBackend) -> None:
        """An engine may rank a capped set of a broad query's matches: titles still first, paging still exact."""
        docs = [
            search_doc(f"{'ab'[i % 2]}/p{i}", "Common notes" if i % 500 == 0 else "Notes", f"common words {i} " + "filler " * (i % 7))
            for i in range(2500)
        ]
        for first in range(0, len(docs), 500):
            backend.update(docs[first : first + 500])
        titled = {"a/p0", "a/p500", "a/p1000", "a/p1500", "a/p2000"}
        assert set(self.search(backend, "common", limit=20)[:5]) == titled
        assert set(self.search(backend, "common notes", limit=20)[:5]) == titled
        assert set(self.search(backend, "comm* -1500", namespaces=["a"], limit=20)[:4]) == titled - {"a/p1500"}
        for namespaces, expected in ((None, {d.slug for d in docs}), (["b"], {d.slug for d in docs if d.namespace == "b"})):
            found, offset, more = [], 0, True
            while more:
                res = backend.search("common", namespaces=namespaces, offset=offset, limit=300)
                found += self.slugs(res)
                offset, more = offset + 300, res.more
            assert len(found) == len(expected) and set(found) == expected
        tail = backend.search("common", namespaces=None, offset=2495, limit=10)
        assert len(tail.hits) == 5 and tail.more is False
        assert backend.search("common", namespaces=None, offset=2490, limit=9).more is True

    def test_snippet_marks_and_escapes(self, backend: SearchBackend) -> None:
        body = "Intro. <script>alert(1)</script> & the needle is <b>here</b>. " + "filler words " * 60
        backend.update([search_doc("n/x", "Unrelated", body), search_doc("n/t", "Needle & <i>thread</i>", "nothing")])
        hits = {hit.slug: hit.snippet for hit in backend.search("needle OR alert", namespaces=None).hits}
        snippet = hits["n/x"]
        assert "<mark>needle</mark>" in snippet and "<mark>alert</mark>" in snippet
        assert "<script>" not in snippet and "&lt;script&gt;" in snippet
        assert "<b>" not in snippet and "&amp;" in snippet
        assert len(snippet) < 600
        assert "<mark>Needle</mark>" in hits["n/t"] and "<i>" not in hits["n/t"]
        without_marks = snippet.replace("<mark>", "").replace("</mark>", "")
        assert "<" not in without_marks

    def test_update_replaces_and_remove(self, backend: SearchBackend) -> None:
        backend.update([search_doc("n/a", body="old words", hash="h1"), search_doc("n/b", body="old words", hash="h2")])
        backend.update([search_doc("n/a", body="new words", hash="h3")])
        assert self.search(backend, "old") == ["n/b"]
        assert self.search(backend, "new") == ["n/a"]
        assert backend.hashes() == {"n/a": "h3", "n/b": "h2"}
        backend.update(removed=["n/b", "n/missing"])
        assert self.search(backend, "words") == ["n/a"]
        assert backend.hashes() == {"n/a": "h3"}
        backend.update([search_doc("n/c", body="words")], removed=["n/a"])
        assert backend.hashes() == {"n/c": "hash-of-n/c"}
        backend.clear()
        assert backend.hashes() == {}
        assert self.search(backend, "words") == []

    def test_ranked_gives_the_order_of_search_and_marks_the_first(self, backend: SearchBackend) -> None:
        backend.update([search_doc(f"n/p{i:02}", f"Page {i}", "lead " * i + "needle in the hay " + "tail " * (30 - i)) for i in range(30)])
        full = backend.search("needle hay", namespaces=None, limit=25)
        for marked in (0, 3, 25):
            ranked = backend.ranked("needle hay", namespaces=None, limit=25, marked=marked)
            assert [(h.slug, h.title, h.tags, h.score) for h in ranked.hits] == [(h.slug, h.title, h.tags, h.score) for h in full.hits]
            assert ranked.more == full.more and len(full.hits) == 25
            assert [h.snippet for h in ranked.hits[:marked]] == [h.snippet for h in full.hits[:marked]]
            assert all(h.snippet in ("", f.snippet) for h, f in zip(ranked.hits[marked:], full.hits[marked:], strict=True))
        assert all("<mark>needle</mark>" in h.snippet for h in full.hits)
        later = backend.ranked("needle hay", namespaces=None, offset=5, limit=10, marked=2)
        assert [h.slug for h in later.hits] == [h.slug for h in full.hits[5:15]]
        assert [h.snippet for h in later.hits[:2]] == [h.snippet for h in full.hits[5:7]]

    def test_documents_give_back_what_was_indexed(self, backend: SearchBackend) -> None:
        backend.update([search_doc("n/a", "Title A", "The body\n\nof  a", ("Ops", "runbook"), "ha"), search_doc("n/b", body="b")])
        backend.update([search_doc("n/a", "Title A2", "The new body", ("ops",), "ha2")], removed=["n/b"])
        found = backend.documents(["n/a", "n/b", "n/missing", "n/a"])
        if found is None:  # optional: an engine that keeps no text says so by not defining it
            assert type(backend).documents is SearchBackend.documents
            return
        assert set(found) == {"n/a"}
        doc = found["n/a"]
        assert (doc.slug, doc.title, doc.body, doc.tags, doc.hash) == ("n/a", "Title A2", "The new body", ("ops",), "ha2")
        assert backend.documents([]) == {}

    def test_write_visible_to_other_instance(self, backend: SearchBackend, tmp_path: Path) -> None:
        other = self.make_backend(tmp_path / "index")
        try:
            assert self.search(other, "fresh") == []
            backend.update([search_doc("n/a", body="fresh words")])
            assert self.search(other, "fresh") == ["n/a"]
            backend.update(removed=["n/a"])
            assert self.search(other, "fresh") == []
        finally:
            other.close()

    @pytest.mark.parametrize(
        "query",
        ["", "   ", "-word", "NOT word", "word OR", "OR word", "a OR OR b", "word NOT", "(-a -b)", "word OR -other",
         "(" * 400 + "word", "word " + "NOT " * 40 + "other"],
    )  # fmt: skip
    def test_syntax_errors(self, backend: SearchBackend, query: str) -> None:
        backend.update([search_doc("n/a", body="word other")])
        with pytest.raises(ValidationError) as err:
            backend.search(query, namespaces=None)
        assert err.value.field == "query"
        assert err.value.message

    @pytest.mark.parametrize(
        "query",
        ['"unbalanced (', 'word"', '"word', "(word", "word)", ")word(", "word (", 'tag:"two words', '"a b" "c', "(a OR b))"],
    )
    def test_unbalanced_quotes_and_parentheses_say_what_to_change(self, backend: SearchBackend, query: str) -> None:
        backend.update([search_doc("n/a", body="word unbalanced a b c")])
        for text in (query, "word " + query):
            with pytest.raises(ValidationError) as err:
                backend.search(text, namespaces=None)
            assert err.value.field == "query"
            assert "never closed" in err.value.message or "closes no" in err.value.message
            assert "remove" in err.value.message

    @pytest.mark.parametrize(
        "query",
        ["word*", "word:", ":word", "wo-rd", "word -", "**", '"word" (other OR word)',
         "word ! ? ; \\ / ^ ~ [ ] { } < > & |", "tag:", "word AND", "word ()"],
    )  # fmt: skip
    def test_odd_characters_degrade(self, backend: SearchBackend, query: str) -> None:
        backend.update([search_doc("n/a", body="word wo rd")])
        try:
            assert self.search(backend, query) in ([], ["n/a"])
        except ValidationError as err:  # nothing left to search for is a fair answer
            assert err.field == "query"
        assert self.search(backend, "word " + query) == ["n/a"]

    @pytest.mark.slow  # writers in interpreters of their own
    def test_concurrent_writer_processes(self, backend: SearchBackend) -> None:
        backend.update([search_doc("base/page", body="racer0 base")])
        assert self.search(backend, "racer0") == ["base/page"]
        ctx = multiprocessing.get_context("spawn")
        writers, count = 4, 5
        barrier = ctx.Barrier(writers)
        procs = [
            ctx.Process(target=_search_writer, args=(type(self).make_backend, str(backend.root), i, count, barrier))
            for i in range(writers)
        ]
        for proc in procs:
            proc.start()
        for proc in procs:
            proc.join(timeout=120)
        assert [proc.exitcode for proc in procs] == [0] * writers
        expected = {f"w{i}/page-{n}": f"h{i}-{n}" for i in range(writers) for n in range(count)}
        assert backend.hashes() == {**expected, "base/page": "hash-of-base/page"}
        for i in range(writers):
            assert sorted(self.search(backend, f"racer{i}", namespaces=[f"w{i}"])) == sorted(
                f"w{i}/page-{n}" for n in range(count)
            )
        assert len(self.search(backend, "written", limit=100)) == writers * count
