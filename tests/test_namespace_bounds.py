"""Namespace settings are bounded field by field, checked like page slugs, and read cheaply however they were written."""

import logging

import pytest

from hostcore import Change, Put, TooLarge, Unavailable, ValidationError
from hostcore.domain import namespaces as ns_settings
from hostcore.domain.attachments import image_path
from hostcore.domain.pages import namespace_path

from .conftest import principal


def snapshot(host):
    return {path: host.storage.read(path) for path in host.storage.list()}


def plant(host, name, data: bytes):
    """Write a settings file the way an outside commit would: no validation."""
    host.storage.apply([Put(namespace_path(name), data)], Change("outsider", "planted settings"))


BAD = [
    ({"title": "a\x00b"}, "title", "U+0000"),
    ({"title": "two\nlines"}, "title", "one line"),
    ({"title": "t" * 257}, "title", "at most 256"),
    ({"title": "\ud800"}, "title", "surrogate"),
    ({"description": "d" * 256}, "description", "at most 255"),
    ({"description": "bell\x07"}, "description", "U+0007"),
    ({"image": "../x.png"}, "image", "'..'"),
    ({"image": "index/hero.gif"}, "image", "PNG or JPEG"),
    ({"index": "a/b"}, "index", "not allowed"),
    ({"index": "_x"}, "index", "starts with '_'"),
    ({"index": "con.md"}, "index", "device name"),
    ({"index": "home."}, "index", "ends with '.'"),
    ({"widgets": ["pages", "pages"]}, "widgets", "twice"),
    ({"widgets": ["pages"] * 12}, "widgets", "at most 11"),
    ({"tree": [f"p{i}" for i in range(ns_settings.MAX_TREE + 1)]}, "tree", "at most 1000"),
    ({"tree": ["ok", "../../x"]}, "tree[1]", "'..'"),
    ({"tree": ["a//b"]}, "tree[0]", "empty"),
    ({"tree": ["x" * 100 + "/" + "y" * 100 + "/" + "z" * 60]}, "tree[0]", "at most 255"),
    ({"tree": ["a\x00"]}, "tree[0]", "U+0000"),
    ({"tree": [5]}, "tree[0]", "string"),
    ({"new": {"template": "é" * 32769, "slug": ""}}, "new.template", "at most 65536"),
    ({"new": {"template": "x" * 65537}}, "new.template", "at most 65536"),
    ({"new": {"template": "nul\x00"}}, "new.template", "U+0000"),
    ({"new": {"template": "t", "slug": "../../x"}}, "new.slug", "'..'"),
    ({"new": {"template": "t", "slug": "a/b.md"}}, "new.slug", ".md"),
    ({"new": {"template": "t", "slug": "{date}/../x"}}, "new.slug", "'..'"),
    ({"new": {"template": "t", "slug": "{date"}}, "new.slug", "not allowed"),
    ({"new": {"template": "t", "slug": "journal/{week}"}}, "new.slug", "unknown placeholder {week}; use {date}"),
    ({"image": "https://evil.example/x.png"}, "image", "page/filename"),
    ({"export": {"base_url": "ftp://example.org/"}}, "export.base_url", "http or https"),
    ({"export": {"base_url": "javascript:alert(1)"}}, "export.base_url", "http or https"),
    ({"export": {"base_url": "https://"}}, "export.base_url", "http or https"),
    ({"export": {"base_url": "https://[::1"}}, "export.base_url", "http or https"),
    ({"export": {"base_url": "https://example.org/" + "p" * 2000}}, "export.base_url", "at most 2000"),
    ({"export": {"sitemap": "yes"}}, "export.sitemap", "true or false"),
    ({"export": {"links": "l" * 101}}, "export.links", "at most 100"),
]


@pytest.mark.parametrize(("kwargs", "field", "words"), BAD, ids=[f"{f}-{i}" for i, (_k, f, _w) in enumerate(BAD)])
def test_each_bound_names_the_field_and_writes_nothing(admin, host, kwargs, field, words):
    h = admin.read_namespace("notes")["hash"]
    before = snapshot(host)
    with pytest.raises(ValidationError) as err:
        admin.save_namespace("notes", basehash=h, **kwargs)
    assert err.value.field == field and words in str(err.value), str(err.value)
    with pytest.raises(ValidationError):
        admin.save_namespace("fresh", **kwargs)
    assert snapshot(host) == before


def largest() -> dict:
    """Every field at its limit."""
    folder = "f" * 100 + "/" + "g" * 100 + "/"
    return {
        "title": "T" * 256,
        "description": "d\tline\n" * 31 + "ddddddd",
        "public": True,
        "image": "index/" + "h" * 96 + ".png",
        "index": "i" * 100,
        "widgets": list(ns_settings.WIDGETS),
        "tree": [folder + f"{i:04d}" + "p" * 44 for i in range(ns_settings.MAX_TREE)],
        "new": {"template": "é\t\n" * (ns_settings.MAX_TEMPLATE_BYTES // 4), "slug": folder + "{date}-{title}"},
        "export": {"base_url": "https://example.org/" + "u" * 1980, "sitemap": True, "robots_allow": False, "links": "l" * 100},
    }


def test_largest_allowed_settings_are_kept_whole(admin, host):
    settings = largest()
    png = b"\x89PNG\r\n\x1a\n" + b"\0" * 32  # the image setting must name a stored PNG or JPEG
    host.storage.apply([Put(image_path("big", settings["image"]), png)], Change("uploader", "the namespace image"))
    saved = admin.save_namespace("big", **settings)
    stored = host.storage.read(namespace_path("big"))
    assert len(stored) <= ns_settings.MAX_FILE_BYTES
    read = admin.read_namespace("big")
    assert read["hash"] == saved["hash"] and {k: read[k] for k in settings} == settings
    listed = {n["name"]: n for n in admin.list_namespaces()["namespaces"]}["big"]
    assert (listed["title"], listed["description"], listed["public"]) == (settings["title"], settings["description"], True)
    admin.save_page("big/" + settings["index"], body="the index")
    assert admin.health("big")["orphans"] == []


def test_existing_settings_files_still_read_and_update(admin, host):
    """A file as the earlier code wrote it (tree before title, an unknown key) reads, lists and updates."""
    plant(host, "old", b"tree:\n- guides/setup\n- index\nskin: soft\ncustom: kept\ntitle: Old one\npublic: true\n")
    read = admin.read_namespace("old")
    assert (read["title"], read["tree"], read["custom"], read["public"]) == ("Old one", ["guides/setup", "index"], "kept", True)
    listed = {n["name"]: n for n in admin.list_namespaces()["namespaces"]}["old"]
    assert listed["title"] == "Old one" and listed["public"] is True
    admin.save_namespace("old", basehash=read["hash"], description="now described")
    stored = host.storage.read(namespace_path("old")).decode()
    assert stored.startswith("title: Old one\ndescription: now described\npublic: true\n")
    assert admin.read_namespace("old")["custom"] == "kept"


def test_listed_fields_are_read_without_parsing_the_rest():
    """fields() stops once it has what it needs: what follows, even broken YAML, is never read."""
    data = b"title: T\ndescription: D\npublic: true\ntree: [unclosed\n"
    assert ns_settings.fields(data, "x", ns_settings.LISTED) == {"title": "T", "description": "D", "public": True}
    with pytest.raises(Unavailable):
        ns_settings.parse(data, "x")
    assert ns_settings.fields(b"tree: [a, {b: c}]\nnew: {template: t}\nindex: home\n", "x", ("index",)) == {"index": "home"}
    assert ns_settings.fields(b"- a list\n", "x", ("index",)) == {}
    assert ns_settings.fields(b"", "x", ("index",)) == {}


def test_oversized_or_broken_file_from_outside_is_skipped_with_a_log_line(admin, host, caplog):
    plant(host, "huge", b"title: Huge\ntree:\n" + b"- a\n" * (ns_settings.MAX_FILE_BYTES // 4 + 1))
    plant(host, "broken", b"title: [unclosed\n")
    plant(host, "typed", b"title: [a, b]\ndescription: 5\npublic: 'yes'\nindex: 7\n")
    with caplog.at_level(logging.WARNING, logger="hostcore"):
        listed = {n["name"]: n for n in admin.list_namespaces()["namespaces"]}
    assert {k: listed["huge"][k] for k in ("title", "description", "public")} == {"title": "", "description": "", "public": False}
    assert listed["broken"]["title"] == "" and listed["typed"]["title"] == "" and listed["typed"]["public"] is False
    assert "huge/.namespace.yaml is" in caplog.text and "broken/.namespace.yaml is not valid YAML" in caplog.text
    with pytest.raises(TooLarge) as err:
        admin.read_namespace("huge")
    assert err.value.field == "name" and "repository" in str(err.value)
    with pytest.raises(Unavailable):
        admin.read_namespace("broken")
    assert admin.health()  # health reads each namespace's index setting and goes on
    admin.save_page("typed/index", body="x")
    admin.save_page("typed/other", body="x")
    assert admin.health("typed")["orphans"] == ["typed/other"]


def test_tool_schema_carries_the_limits(host):
    schema = host.tools["save_namespace"].input_schema
    props = schema["properties"]
    tree = props["tree"]["anyOf"][0]
    assert tree["maxItems"] == ns_settings.MAX_TREE and tree["items"]["maxLength"] == 255
    assert props["widgets"]["anyOf"][0]["maxItems"] == len(ns_settings.WIDGETS)
    assert props["index"]["anyOf"][0]["pattern"] and props["image"]["anyOf"][0]["maxLength"] == 255
    new, export = schema["$defs"]["NewTemplateArgs"]["properties"], schema["$defs"]["ExportArgs"]["properties"]
    assert new["template"]["maxLength"] == ns_settings.MAX_TEMPLATE_BYTES and new["slug"]["maxLength"] == 255
    assert export["base_url"]["maxLength"] == ns_settings.MAX_URL and export["links"]["maxLength"] == ns_settings.MAX_LINKS
    with pytest.raises(ValidationError) as err:
        host.tools["save_namespace"].parse({"name": "notes", "tree": ["x"] * (ns_settings.MAX_TREE + 1)})
    assert err.value.field == "tree"


def test_new_page_fills_the_placeholders_of_new_slug(admin, wiki):
    from datetime import datetime

    from hostcore import InsufficientScope, NotFound

    when = datetime(2026, 3, 7, 9, 5)
    assert wiki.new_page("notes", "Any Title", when) == {"slug": "notes/any-title", "template": "", "pattern": ""}  # no new setting
    admin.save_namespace("notes", admin.read_namespace("notes")["hash"],
                         new={"template": "# {date}\n", "slug": "journal/{year}/{month}/{date}-{day}-{time}-{title}"})  # fmt: skip
    made = wiki.new_page("notes", "Stand-up: Ünïcode & more!", when)
    assert made["slug"] == "notes/journal/2026/03/2026-03-07-07-0905-stand-up-unicode-more" and made["template"] == "# {date}\n"
    assert made["pattern"] == "journal/{year}/{month}/{date}-{day}-{time}-{title}"
    assert wiki.new_page("notes", "", when)["slug"] == "notes/journal/2026/03/2026-03-07-07-0905-untitled"
    assert wiki.new_page("notes")["slug"].startswith(f"notes/journal/{datetime.now().astimezone():%Y/%m/%Y-%m-}")
    plant(admin.host, "notes", b"new:\n  slug: '{week}'\n")  # committed from outside, never validated
    with pytest.raises(ValidationError) as err:
        wiki.new_page("notes", "t", when)
    assert err.value.field == "new.slug" and "{week}" in str(err.value)
    with pytest.raises(NotFound):
        wiki.new_page("nowhere", "t")
    with pytest.raises(InsufficientScope):
        admin.host.wiki(principal("read")).new_page("notes", "t")
