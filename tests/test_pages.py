import pytest
import yaml

from hostcore import NotFound, Page, ValidationError, blob_hash, check_slug, wiki_links
from hostcore.domain.pages import (
    check_tags,
    check_title,
    headings,
    section,
    slug_from_path,
    window,
)


@pytest.mark.parametrize("slug", ["notes/a", "notes/folder/page", "a-b/c_d.e", "N/x1"])
def test_valid_slugs(slug):
    assert check_slug(slug) == slug


@pytest.mark.parametrize(
    ("slug", "fragment"),
    [
        ("notes", "no namespace"),
        ("_x/y", "starts with '_'"),
        ("notes/.hidden", "starts with '.'"),
        ("../etc/passwd", "starts with '.'"),
        ("notes//a", "empty"),
        ("notes/a.md", "leave the extension off"),
        ("notes/a b", "not allowed"),
        ("notes/" + "x" * 101, "not allowed"),
        ("/".join(["a"] * 9), "at most 8"),
    ],
)
def test_invalid_slugs_name_the_problem(slug, fragment):
    with pytest.raises(ValidationError) as err:
        check_slug(slug)
    assert err.value.field == "slug"
    assert fragment in str(err.value)
    assert str(err.value).startswith("slug: ")


def test_front_matter_cannot_inject_keys():
    page = Page(slug="n/p", title="x\nadmin: true", body="b", tags=("a: b", "- c"))
    data = page.to_bytes()
    parsed = Page.from_bytes("n/p", data)
    assert parsed.title == "x\nadmin: true"
    assert parsed.tags == ("a: b", "- c")
    assert parsed.extra == {}
    assert parsed.hash == blob_hash(data)


def test_unknown_front_matter_kept_and_body_exact():
    raw = b"---\ntitle: T\ncustom: {a: 1}\npin: true\n---\n---\nbody with --- lines\n---\n"
    page = Page.from_bytes("n/p", raw)
    assert (page.title, page.pin, page.extra) == ("T", True, {"custom": {"a": 1}})
    assert page.body == "---\nbody with --- lines\n---\n"
    again = Page.from_bytes("n/p", page.to_bytes())
    assert again.extra == {"custom": {"a": 1}} and again.body == page.body
    assert yaml.safe_load(page.to_bytes().split(b"---\n")[1])["custom"] == {"a": 1}


def test_front_matter_read_again_is_a_fresh_copy():
    """Front matter YAML is kept for the next read of the same text: what one reader changes in
    its copy never reaches the next."""
    raw = b"---\ntitle: T\ncustom: {a: [1, 2]}\n---\nbody\n"
    first = Page.from_bytes("n/p", raw)
    first.extra["custom"]["a"].append(3)
    first.extra["added"] = True
    assert Page.from_bytes("n/p", raw).extra == {"custom": {"a": [1, 2]}}
    long = b"---\ntitle: " + b"x" * 5000 + b"\n---\nbody\n"  # over the size kept: parsed each time
    assert Page.from_bytes("n/p", long).title == "x" * 5000
    assert Page(slug="n/p", title="T", body="b", tags=["a"]).to_bytes() == Page(slug="n/p", title="T", body="b", tags=("a",)).to_bytes()


def test_no_front_matter_is_all_body():
    page = Page.from_bytes("n/p", b"# Just text\n")
    assert page.title == "n/p" and page.body == "# Just text\n"


def test_title_and_tags_limits():
    with pytest.raises(ValidationError, match="at most 256"):
        check_title("x" * 257)
    with pytest.raises(ValidationError, match="one line"):
        check_title("a\nb")
    with pytest.raises(ValidationError, match="at most 32"):
        check_tags([f"t{i}" for i in range(33)])
    with pytest.raises(ValidationError, match="at most 64"):
        check_tags(["x" * 65])
    assert check_tags(["a", "b", "a"]) == ["a", "b"]


def test_wiki_links():
    body = "See [[notes/a]], [[b|label]], [[other/c#Head]] and [[notes/a]].\n```\n[[in/code]]\n```\n`[[inline/code]]`"
    assert wiki_links(body, "notes/x") == ["notes/a", "notes/b", "other/c"]


def test_the_welcome_page_shows_its_link_as_an_example():
    """`hostcore init`'s welcome page writes a wiki-link as an example: code, not a link (nor a backlink)."""
    from hostcore_web.render import render

    from hostcore.cli.commands import WELCOME_BODY

    assert wiki_links(WELCOME_BODY, "notes/index") == []
    assert "<code>[[notes/index]]</code>" in render(WELCOME_BODY, "notes/index", set).html


def test_sections():
    body = "intro\n# A\na text\n## A1\nsub\n# B\nb text\n```\n# not a heading\n```\n"
    assert [h[1] for h in headings(body)] == ["A", "A1", "B"]
    assert section(body, "a") == "# A\na text\n## A1\nsub\n"
    assert section(body, "A1") == "## A1\nsub\n"
    assert section(body, "b").startswith("# B\nb text")
    with pytest.raises(NotFound) as err:
        section(body, "missing")
    assert "'A', 'A1', 'B'" in str(err.value) and err.value.field == "section"


def test_windows():
    assert window("abcdef", 0, 4) == {
        "body": "abcd", "offset": 0, "total_chars": 6, "truncated": True, "next_offset": 4,
    }  # fmt: skip
    assert window("abcdef", 4, 4)["body"] == "ef"
    assert window("abcdef", 4, 4)["truncated"] is False
    assert window("", 0, 10)["body"] == ""
    with pytest.raises(ValidationError, match="past the end"):
        window("abc", 3, 1)


def test_hidden_paths_are_not_pages():
    assert slug_from_path("notes/a.md") == "notes/a"
    assert slug_from_path("notes/.a.md") is None
    assert slug_from_path("_x/a.md") is None
    assert slug_from_path("notes/.namespace.yaml") is None
    assert slug_from_path("top.md") is None
