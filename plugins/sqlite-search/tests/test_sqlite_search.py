import multiprocessing
import random
import sqlite3
from pathlib import Path

import pytest

from hostcore import SearchDoc, ValidationError, parse_query
from hostcore.testing import SearchConformance
from hostcore_sqlite_search import (
    SqliteSearch,
    analyse,
    compile_match,
    compile_title_matches,
    ranking,
    register_search_backends,
)
from hostcore_sqlite_search.ranking import SCORE, WINDOW


class TestSqliteSearch(SearchConformance):
    @staticmethod
    def make_backend(root: Path) -> SqliteSearch:
        return SqliteSearch(root)

    def test_accents_fold_in_body_and_prefixes(self, backend: SqliteSearch) -> None:
        backend.update([SearchDoc("n/a", "Crème brûlée", "Ça marche", (), "h")])
        assert self.search(backend, "ca") == ["n/a"]
        assert self.search(backend, "crè*") == ["n/a"]

    def test_no_body_match_falls_back_to_title_then_body_start(self, backend: SqliteSearch) -> None:
        backend.update([SearchDoc("n/a", "Zebra <b>notes</b>", "plain " * 100, ("animals",), "h")])
        assert backend.search("zebra", namespaces=None).hits[0].snippet == "<mark>Zebra</mark> &lt;b&gt;notes&lt;/b&gt;"
        snippet = backend.search("tag:animals", namespaces=None).hits[0].snippet
        assert snippet.startswith("plain plain") and snippet.endswith("…") and "<mark>" not in snippet

    def test_snippets_mark_what_the_query_matched(self, backend: SqliteSearch) -> None:
        filler = "lorem ipsum dolor " * 20
        backend.update(
            [
                SearchDoc("n/a", "T", f"An alpha early. {filler}Later the alpha and beta stand together. {filler}", (), "h"),
                SearchDoc("n/b", "T", "Clusters and clustering, not reclustered; design_review by the Design team", (), "h"),
                SearchDoc("n/c", "T", "İstanbul crème brûlée, then zebra", (), "h"),
            ]
        )

        def snippet(query: str, slug: str) -> str:
            return {hit.slug: hit.snippet for hit in backend.search(query, namespaces=None).hits}[slug]

        densest = snippet("alpha beta", "n/a")  # the window holding both words, not the first alpha
        assert "<mark>alpha</mark> and <mark>beta</mark>" in densest and "early" not in densest
        assert densest.startswith("…") and densest.endswith("…") and len(densest) < 260
        assert "<mark>Clusters</mark> and <mark>clustering</mark>, not reclustered" in snippet("cluste*", "n/b")
        assert "<mark>design</mark>_review by the <mark>Design</mark> team" in snippet("design", "n/b")
        assert snippet("team", "n/b").startswith("Clusters and")  # a short body is shown whole, wherever the match
        phrase = snippet('"the design"', "n/b")
        assert "by <mark>the Design</mark> team" in phrase and phrase.count("<mark>") == 1
        # offsets survive a letter whose lower case is two characters (İ) and accents folded either way
        assert snippet("zebra creme", "n/c") == "İstanbul <mark>crème</mark> brûlée, then <mark>zebra</mark>"
        assert snippet("istanbul brulee", "n/c") == "<mark>İstanbul</mark> crème <mark>brûlée</mark>, then zebra"

    def test_common_words_find_exactly_what_fts5_finds(self, backend: SqliteSearch) -> None:
        """Common words left to the pages' mask (.common) keep the very pages the plain FTS5
        expression matches: random pages of common and other words (some accented, some
        capitalised) in titles, bodies and tags, and queries of their words and phrases."""
        rng = random.Random(7)
        words = ["the", "of", "and", "to", "a", "in", "state", "art", "Théorie", "théorie", "quick", "fox", "of", "The", "ART"]
        docs = []
        for i in range(150):
            title = " ".join(rng.choice(words) for _ in range(rng.randint(0, 4)))
            body = " ".join(rng.choice(words) for _ in range(rng.randint(0, 30)))
            tags = tuple(" ".join(rng.choice(words) for _ in range(rng.randint(1, 3))) for _ in range(rng.randint(0, 2)))
            docs.append(SearchDoc(f"n/p{i}", title, body, tags, "h"))
        backend.update(docs)
        db = sqlite3.connect(backend.path)
        plain = "SELECT pages.slug FROM fts JOIN pages ON pages.id = fts.rowid WHERE fts MATCH ?"
        checked = 0
        for _ in range(300):
            picked = [rng.choice(words).lower() for _ in range(rng.randint(1, 4))]
            if rng.random() < 0.5:  # a phrase, with maybe a word beside it
                query, expression = f'"{" ".join(picked)}"', '"' + " ".join(picked) + '"'
                if rng.random() < 0.5:
                    other = rng.choice(words).lower()
                    query, expression = f"{query} {other}", f'{expression} AND "{other}"'
            else:
                query, expression = " ".join(picked), " AND ".join(f'"{w}"' for w in picked)
            expected = {slug for (slug,) in db.execute(plain, (expression,))}
            assert set(self.search(backend, query, limit=1000)) == expected, query
            checked += bool(expected)
        db.close()
        assert checked > 100  # most queries found pages: the comparison is not between empty sets

    def test_user_text_is_never_fts5_syntax(self, backend: SqliteSearch) -> None:
        backend.update([SearchDoc("n/a", "T", "near title body keys k and or not", ("x",), "h")])
        for query in ['NEAR(a b)', 'title:near', 'keys:k', '"k"', 'body : near', '^near', 'near + title', "k", 'a"b"c']:
            try:
                self.search(backend, query)
            except ValidationError as err:
                assert err.field == "query"
        assert self.search(backend, "near:title") == ["n/a"]  # the phrase "near title", not a column filter
        assert self.search(backend, "body:near") == []
        assert self.search(backend, "k") == ["n/a"]  # the word, not the hidden every-page key
        backend.update([SearchDoc("n/b", "T", "nothing here", (), "h")])
        assert self.search(backend, "k") == ["n/a"]
        backend.update([SearchDoc("ns/c", "Zebra", "stripes", ("ops",), "h")])  # filter tokens are no words
        for token in ["hzebra", "\ue000hzebra", "hz*", "hstripes", "n6e73", "t6f7073", "\ue000t6f7073"]:
            assert self.search(backend, token) == [], token
        assert self.search(backend, "zebra tag:ops") == ["ns/c"]

    def test_tags_inside_or_and_not(self, backend: SqliteSearch) -> None:
        backend.update(
            [
                SearchDoc("n/a", "A", "alpha", ("Two Words",), "h"),
                SearchDoc("n/b", "B", "beta", ("one",), "h"),
                SearchDoc("n/c", "C", "alpha beta", (), "h"),
            ]
        )
        assert self.search(backend, 'tag:"two words"') == ["n/a"]
        assert sorted(self.search(backend, "beta OR tag:one")) == ["n/b", "n/c"]
        assert sorted(self.search(backend, "alpha -tag:\"two words\"")) == ["n/c"]
        assert sorted(self.search(backend, "(alpha OR beta) NOT (tag:one OR tag:\"two words\")")) == ["n/c"]
        assert self.search(backend, "alpha NOT -beta") == ["n/c"]

    def test_big_update_is_one_transaction(self, backend: SqliteSearch) -> None:
        docs = [SearchDoc(f"n/p{i}", f"Page {i}", f"bulk word{i}", (), f"h{i}") for i in range(1200)]
        backend.update(docs)
        assert len(backend.hashes()) == 1200
        assert self.search(backend, "word1199") == ["n/p1199"]
        assert backend.search("bulk", namespaces=["n"], limit=1000).more is True

    def test_broad_query_ranks_recent_and_titled_candidates(self, backend: SqliteSearch) -> None:
        older = [SearchDoc(f"n/old{i}", "Old", "word " * 20, (), "h") for i in range(300)]
        titled = [SearchDoc("n/titled", "Word", "word", (), "h"), SearchDoc("n/both", "Word and more", "more word", (), "h")]
        newer = [SearchDoc(f"n/new{i}", "New", f"word {i} " + "filler " * 30, (), "h") for i in range(WINDOW)]
        backend.update(older + titled + newer)
        first = self.search(backend, "word", limit=50)
        assert first[:2] == ["n/titled", "n/both"]  # title matches however old
        assert all(slug.startswith("n/new") for slug in first[2:])  # then the best of the most recent WINDOW
        assert self.search(backend, "word more")[:1] == ["n/both"]  # every word in the title first
        rest = self.search(backend, "word", offset=WINDOW + 2, limit=5)
        assert rest == [f"n/old{i}" for i in range(299, 294, -1)]  # past the ranked ones: most recent first
        assert len(self.search(backend, "word", offset=WINDOW, limit=400)) == 302

    @pytest.fixture
    def small_windows(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Candidate windows of a few dozen pages, so a small corpus takes the capped plans."""
        monkeypatch.setattr(ranking, "WINDOW", 40)
        monkeypatch.setattr(ranking, "TITLE_WINDOW", 10)
        monkeypatch.setattr(ranking, "TIER_WINDOW", 15)

    @staticmethod
    def uncapped(backend: SqliteSearch, query: str) -> list[str]:
        """Every match ranked by the score, best first: what the capped plans stand in for."""
        with backend._connection() as db:
            rows = db.execute(
                f"SELECT pages.slug, {SCORE} AS score FROM fts JOIN pages ON pages.id = fts.rowid WHERE fts MATCH ? ORDER BY score, fts.rowid",
                (compile_match(parse_query(query, analyse)),),
            )
            return [slug for slug, _ in rows]

    def test_one_word_ranks_its_title_tier_first(self, backend: SqliteSearch, small_windows: None) -> None:
        titled = [SearchDoc(f"n/t{i}", f"Word {'x ' * i}", "word", (), "h") for i in range(12)]  # shorter titles score better
        newer = [SearchDoc(f"n/b{i}", "Body", "word " + "filler " * (i % 7), (), "h") for i in range(60)]
        backend.update(titled + newer)
        first = self.search(backend, "word", limit=5)
        assert first == self.uncapped(backend, "word")[:5] == ["n/t0", "n/t1", "n/t2", "n/t3", "n/t4"]
        pages = [self.search(backend, "word", offset=offset, limit=7) for offset in range(0, 72, 7)]
        paged = [slug for page in pages for slug in page]
        for offset, page in zip(range(0, 72, 7), pages, strict=True):  # another worker, remembering nothing: the same pages
            fresh = SqliteSearch(backend.root)
            try:
                assert self.search(fresh, "word", offset=offset, limit=7) == page
            finally:
                fresh.close()
        assert sorted(paged) == sorted(doc.slug for doc in titled + newer)  # every match once, across the tier's end
        assert paged[:12] == self.uncapped(backend, "word")[:12]  # the title matches, best first
        window = {f"n/b{i}" for i in range(20, 60)}  # the 40 most recent matches
        assert paged[12:52] == [slug for slug in self.uncapped(backend, "word") if slug in window]  # then the window, best first
        assert paged[52:] == [f"n/b{i}" for i in range(19, -1, -1)]  # then the others, most recent first

    def test_tier_too_short_for_the_page_takes_the_window(self, backend: SqliteSearch, small_windows: None) -> None:
        backend.update([SearchDoc("n/old-title", "Word", "word", (), "h")])
        backend.update([SearchDoc(f"n/b{i}", "Body", "word " + "filler " * (i % 5), (), "h") for i in range(50)])
        found = backend.search("word", namespaces=None, limit=4)
        ranked = {"n/old-title"} | {f"n/b{i}" for i in range(10, 50)}  # the title tier, then the 40 most recent matches
        assert [h.slug for h in found.hits] == [slug for slug in self.uncapped(backend, "word") if slug in ranked][:4]
        assert [h.slug for h in found.hits] == ["n/old-title", "n/b10", "n/b15", "n/b20"]
        assert found.more

    def test_rare_word_with_common_one_finds_the_best_old_page(self, backend: SqliteSearch, small_windows: None) -> None:
        """A capped candidate set still returns the best hits of a rare word beside a common one."""
        rare = [SearchDoc(f"n/r{i}", "Page", "common " + "zephyr " * (3 - i) + "filler " * 5, (), "h") for i in range(3)]
        backend.update(rare + [SearchDoc(f"n/c{i}", "Page", "common filler", (), "h") for i in range(100)])  # rare pages are the oldest
        assert self.search(backend, "common zephyr") == self.uncapped(backend, "common zephyr") == ["n/r0", "n/r1", "n/r2"]
        assert self.search(backend, "zephyr common", limit=1) == ["n/r0"]

    def test_small_corpus_ranks_as_every_match(self, backend: SqliteSearch) -> None:
        """Under WINDOW matches the capped plans change nothing: the order is that of ranking every match."""
        words = ["alpha", "beta", "gamma", "delta"]
        docs = [
            SearchDoc(f"n/p{i}", " ".join(words[j] for j in range(4) if (i >> j) & 1) or "none", " ".join(words[(i * k) % 4] for k in range(1, i % 9 + 2)), ("t",), "h")
            for i in range(60)
        ]
        backend.update(docs)
        for query in ["alpha", "alpha beta", "beta OR gamma", '"alpha beta"', "delta -gamma", "gam*", "alpha tag:t"]:
            assert self.search(backend, query, limit=50) == self.uncapped(backend, query)[:50], query

    def test_remembered_ranking_follows_every_write(self, backend: SqliteSearch, tmp_path: Path, small_windows: None) -> None:
        backend.update([SearchDoc(f"n/b{i}", "Body", "word filler", (), "h") for i in range(50)])
        before = self.search(backend, "word", limit=5)
        assert self.search(backend, "word", limit=5) == before  # asked again: the same (remembered) answer
        other = SqliteSearch(backend.root)  # another worker process's backend on the same file
        try:
            other.update([SearchDoc("n/new", "Word", "word", (), "h")])
            now = self.search(backend, "word", limit=5)
            assert now[0] == "n/new" and now != before
            assert now == self.search(other, "word", limit=5)
            backend.update([], ["n/new"])
            assert self.search(other, "word", limit=5) == before
            assert self.search(backend, "word", offset=5, limit=5) == self.search(other, "word", offset=5, limit=5)
        finally:
            other.close()

    def test_file_without_generation_gets_one(self, backend: SqliteSearch) -> None:
        backend.update([SearchDoc("n/a", "A", "word", (), "h")])
        with backend._connection() as db:
            db.execute("DELETE FROM meta WHERE key = 'generation'")  # as a file written before generations
        reopened = SqliteSearch(backend.root)
        try:
            with reopened._connection() as db:
                assert db.execute("SELECT value FROM meta WHERE key = 'generation'").fetchone() is not None
            assert self.search(reopened, "word") == ["n/a"]
        finally:
            reopened.close()

    def test_title_matches_compile_to_title_keys(self) -> None:
        assert compile_title_matches(parse_query("tag:x -b", analyse)) == []
        assert compile_title_matches(parse_query("Crème", analyse)) == ['keys : ("\ue000hcrème")']
        assert compile_title_matches(parse_query('a "b c*" OR a', analyse)) == [
            'keys : (("\ue000ha") AND ("\ue000hb" AND "\ue000hc" *))',
            'keys : (("\ue000ha") OR ("\ue000hb" AND "\ue000hc" *))',
        ]

    def test_failed_update_changes_nothing(self, backend: SqliteSearch) -> None:
        backend.update([SearchDoc("n/a", "T", "before", (), "h1")])
        with pytest.raises(sqlite3.Error):
            backend.update([SearchDoc("n/b", "T", "after", (), "h2"), SearchDoc("n/c", "T", "after", (), None)])  # type: ignore[arg-type]
        assert backend.hashes() == {"n/a": "h1"}
        assert self.search(backend, "after") == []

    @pytest.mark.slow
    def test_write_visible_to_next_search_in_other_process(self, backend: SqliteSearch) -> None:
        ctx = multiprocessing.get_context("spawn")
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_search_server, args=(str(backend.root), child))
        proc.start()
        try:
            assert parent.recv() == "ready"
            parent.send("fresh")
            assert parent.recv() == []
            backend.update([SearchDoc("n/a", "T", "fresh words", (), "h")])
            parent.send("fresh")
            assert parent.recv() == ["n/a"]
            backend.update(removed=["n/a"])
            parent.send("fresh")
            assert parent.recv() == []
            parent.send(("write", "n/b", "other process"))
            assert parent.recv() == "written"
            assert self.search(backend, "other") == ["n/b"]
            parent.send(None)
        finally:
            proc.join(timeout=60)
            parent.close()
            child.close()
        assert proc.exitcode == 0

    def test_an_older_format_goes_once_this_one_reflects_storage(self, tmp_path: Path) -> None:
        root = tmp_path / "search"
        root.mkdir()
        for name in ("sqlite-search-v3.db", "sqlite-search-v3.db-wal", "sqlite-search-v30.db"):
            (root / name).write_bytes(b"old")
        backend = SqliteSearch(root)
        assert (root / "sqlite-search-v3.db").exists()  # still what an older hostcore beside it would read
        backend.set_storage_version("0" * 40)
        assert not (root / "sqlite-search-v3.db").exists() and not (root / "sqlite-search-v3.db-wal").exists()
        assert (root / "sqlite-search-v30.db").exists()  # a newer format is not this one's to remove
        assert backend.storage_version() == "0" * 40

    def test_registers_backend(self) -> None:
        registered = []
        register_search_backends(register=registered.append)
        assert registered == [SqliteSearch]
        assert SqliteSearch.name == "sqlite"


def _search_server(root: str, conn: object) -> None:
    backend = SqliteSearch(Path(root))
    try:
        conn.send("ready")  # type: ignore[attr-defined]
        while (request := conn.recv()) is not None:  # type: ignore[attr-defined]
            if isinstance(request, tuple):
                _, slug, body = request
                backend.update([SearchDoc(slug, "T", body, (), "h")])
                conn.send("written")  # type: ignore[attr-defined]
            else:
                conn.send([hit.slug for hit in backend.search(request, namespaces=None).hits])  # type: ignore[attr-defined]
    finally:
        backend.close()
        conn.close()  # type: ignore[attr-defined]


def test_analyse_matches_unicode61() -> None:
    assert analyse("E-mail_address Crème 3.14") == ["e", "mail", "address", "crème", "3", "14"]


@pytest.mark.parametrize(
    ("query", "match"),
    [
        ("a", '"a"'),
        ("a b*", '("a" AND "b" *)'),
        ('"a b" OR c', '("a b" OR "c")'),
        ("a -b", '(("a") NOT ("b"))'),
        ("tag:X", 'keys : "\ue000t78"'),
        ("cars", '("cars" OR stems : "car")'),
    ],
)
def test_compile_match(query: str, match: str) -> None:
    assert compile_match(parse_query(query, analyse)) == match
