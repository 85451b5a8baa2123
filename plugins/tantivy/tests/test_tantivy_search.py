from pathlib import Path

import pytest

from hostcore import And, Not, Or, Phrase, SearchDoc, Tag, Term, ValidationError, parse_query
from hostcore.testing import SearchConformance
from hostcore_tantivy import FORMAT, TantivySearch, register_search_backends


class TestTantivySearch(SearchConformance):
    @staticmethod
    def make_backend(root: Path) -> TantivySearch:
        return TantivySearch(root)

    def test_ascii_folding(self, backend: TantivySearch) -> None:
        backend.update([SearchDoc("n/a", "Crème brûlée", "Straße", (), "h")])
        assert self.search(backend, "STRASSE") == ["n/a"]

    def test_an_older_format_goes_once_this_one_reflects_storage(self, tmp_path: Path) -> None:
        root = tmp_path / "search"
        (root / "tantivy-v1").mkdir(parents=True)
        (root / "tantivy-v1" / "meta.json").write_text("{}")
        (root / "tantivy-v1.storage-version").write_text("an old version")
        backend = TantivySearch(root)
        assert (root / "tantivy-v1").exists()  # still what an older hostcore beside it would read
        backend.set_storage_version("0" * 40)
        assert sorted(p.name for p in root.iterdir()) == sorted(
            [f"tantivy-v{FORMAT}", f"tantivy-v{FORMAT}.storage-version", "tantivy.lock"]
        )

    def test_a_phrase_with_a_common_word_matches_its_words_side_by_side_only(self, backend: TantivySearch) -> None:
        long = "x" * 41  # a token the analyser drops: its neighbours are not side by side
        backend.update([
            SearchDoc("n/a", "A", "The design review went well.", (), "h"),
            SearchDoc("n/b", "B", "Design of the review, then the end.", (), "h"),
            SearchDoc("n/c", "C", f"Sketch and {long} design later.", (), "h"),
            SearchDoc("n/d", "D", "Sketch and design now; and design again.", (), "h"),
        ])  # fmt: skip
        assert self.search(backend, '"the design"') == ["n/a"]
        assert self.search(backend, '"the review"') == ["n/b"]
        assert self.search(backend, '"and design"') == ["n/d"]  # not n/c: the phrase decides, not its pairs
        assert self.search(backend, '"design review went"') == ["n/a"]  # no common word: the phrase alone
        assert self.search(backend, '"review the"') == []

    def test_a_snippet_shows_where_most_of_the_words_are(self, backend: TantivySearch) -> None:
        body = "Alpha starts here. " + "filler words " * 30 + "Then alpha and BETA together, with gamma_delta."
        backend.update([SearchDoc("n/a", "T", body, (), "h")])
        snippet = backend.search("alpha beta", namespaces=None).hits[0].snippet
        assert snippet.startswith("… ") and "<mark>alpha</mark> and <mark>BETA</mark> together" in snippet, snippet
        assert "<mark>Alpha</mark> starts" not in snippet and len(snippet) < 260, snippet
        assert "<mark>gamma</mark>_delta" in backend.search("gamma", namespaces=None).hits[0].snippet  # _ parts words
        marked = backend.search("toget*", namespaces=None).hits[0].snippet
        assert "<mark>together</mark>" in marked and not marked.endswith("…"), marked

    def test_a_snippet_of_a_short_body_is_all_of_it(self, backend: TantivySearch) -> None:
        body = "<b>Lead</b> & more words before it, " * 3 + "then the needle."
        backend.update([SearchDoc("n/a", "T", body, (), "h")])
        snippet = backend.search("needle", namespaces=None).hits[0].snippet
        assert snippet.startswith("&lt;b&gt;Lead&lt;/b&gt; &amp; more") and snippet.endswith("<mark>needle</mark>."), snippet

    def test_registers_backend(self) -> None:
        registered = []
        register_search_backends(register=registered.append)
        assert registered == [TantivySearch]
        assert TantivySearch.name == "tantivy"


def words(text: str) -> list[str]:
    return [w for w in text.lower().replace("-", " ").replace(":", " ").split() if w.isalnum()]


@pytest.mark.parametrize(
    ("query", "tree"),
    [
        ("a b", And((Term("a"), Term("b")))),
        ("a OR b c", Or((Term("a"), And((Term("b"), Term("c")))))),
        ('"a b"* -c', And((Phrase(("a", "b"), prefix=True), Not(Term("c"))))),
        ("(a OR b) tag:X", And((Or((Term("a"), Term("b"))), Tag("x")))),
        ("e-mail", Phrase(("e", "mail"))),
        ('tag:"two words"', Tag("two words")),
    ],
)
def test_parse(query: str, tree: object) -> None:
    assert parse_query(query, words) == tree


@pytest.mark.parametrize(("query", "says"), [("a) b", "closes no"), ("(a b", "never closed"), ('"a b', "never closed")])
def test_parse_refuses_what_is_left_open(query: str, says: str) -> None:
    with pytest.raises(ValidationError, match=says) as err:
        parse_query(query, words)
    assert err.value.field == "query"
