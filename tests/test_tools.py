from typing import Annotated

import pytest
from pydantic import Field
from typing_extensions import TypedDict

from hostcore import ValidationError, tool


class Out(TypedDict):
    words: int


@tool(read_only=True, title="Count words")
def word_count(
    slug: Annotated[str, Field(description="namespace/page")],
    limit: Annotated[int, Field(ge=1, le=10)] = 5,
    *,
    wiki,
) -> Out:
    """Count the words of one page. Arguments: slug, limit."""
    return {"words": len(wiki.page(slug).body.split())}


def test_schema_annotations_and_injection():
    assert word_count.name == "word_count" and word_count.title == "Count words"
    assert (word_count.read_only, word_count.destructive, word_count.idempotent, word_count.scope) == (True, False, True, "read")
    schema = word_count.input_schema
    assert schema["required"] == ["slug"] and schema["additionalProperties"] is False
    assert schema["properties"]["limit"] == {"default": 5, "maximum": 10, "minimum": 1, "type": "integer"}
    assert "wiki" not in schema["properties"] and word_count.inject == {"wiki"}
    assert word_count.output_schema["properties"] == {"words": {"type": "integer"}}


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "slug: is required"),
        ({"slug": "n/p", "limit": 11}, "limit: must be at most 10, got the integer 11"),
        ({"slug": "n/p", "extra": 1}, "extra: is not an argument of word_count"),
        ({"slug": 3}, "slug: expected a string, got the integer 3"),
    ],
)
def test_argument_errors_name_the_field(arguments, message):
    with pytest.raises(ValidationError) as err:
        word_count.parse(arguments)
    assert str(err.value).startswith(message)


def test_tool_needs_docstring_and_annotations():
    with pytest.raises(TypeError, match="docstring"):
        tool(lambda slug: None)
    with pytest.raises(ValueError, match="scope"):
        tool(scope="root")

    def untyped(slug):
        """Doc."""

    with pytest.raises(TypeError, match="type annotation"):
        tool(untyped)


def test_smallest_plugin_runs_in_the_host(tmp_path):
    from hostcore import create_app, hookimpl
    from hostcore.domain.principal import SYSTEM

    class WordCount:
        @hookimpl
        def register_tools(self, register, host):
            register(word_count)

    app = create_app({"PLUGINS": ["fs"]}, instance_path=tmp_path, plugins=[WordCount()])
    host = app.extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    wiki.save_namespace("notes")
    wiki.save_page("notes/a", body="one two three")
    t = host.tools["word_count"]
    assert t.fn(**t.bind(t.parse({"slug": "notes/a"}), wiki=wiki, host=host)) == {"words": 3}


# --- strict argument types: every tool, every argument ------------------------------------------

# JSON type -> (bad value, how the error names it); "5" for an integer was coerced before.
BAD_VALUES = {
    "integer": [("5", 'the string "5"'), (True, "the boolean true"), (1.5, "the number 1.5"), (None, "null")],
    "boolean": [("true", 'the string "true"'), ("yes", 'the string "yes"'), (1, "the integer 1"), (0, "the integer 0")],
    "string": [(5, "the integer 5"), (True, "the boolean true"), (["x"], "an array"), ({}, "an object")],
    "array": [("x", 'the string "x"'), ({"a": 1}, "an object"), (1, "the integer 1")],
    "object": [("x", 'the string "x"'), ([1], "an array")],
}
EXPECTED = {
    "integer": "an integer",
    "boolean": "a boolean (true or false)",
    "string": "a string",
    "array": "an array",
    "object": "an object",
}


def _all_tools(tmp_path):
    from hostcore import create_app, hookimpl

    class WordCount:
        @hookimpl
        def register_tools(self, register, host):
            register(word_count)

    app = create_app(
        {"PLUGINS": ["git", "tokens", "sqlite"], "STORAGE": "git"}, instance_path=tmp_path, plugins=[WordCount()]
    )
    return app.extensions["hostcore"]


def _resolve(schema, defs):
    if "$ref" in schema:
        return defs[schema["$ref"].rsplit("/", 1)[1]]
    return schema


def _json_type(schema, defs):
    """(the JSON type of an argument, whether null is allowed)."""
    schema = _resolve(schema, defs)
    options = [_resolve(s, defs) for s in schema.get("anyOf", [schema])]
    kinds = [s.get("type", "string" if "enum" in s else None) for s in options]
    return next(k for k in kinds if k != "null"), "null" in kinds


def _valid(schema, defs):
    """A value the argument accepts, built from its schema."""
    schema = _resolve(schema, defs)
    schema = _resolve(next((s for s in schema.get("anyOf", [schema]) if s.get("type") != "null"), schema), defs)
    if "enum" in schema:
        return schema["enum"][0]
    kind = schema.get("type")
    if kind == "integer":
        return schema.get("minimum", 0)
    if kind == "boolean":
        return False
    if kind == "array":
        return [_valid(schema["items"], defs)] if schema.get("minItems") else []
    if kind == "object":
        return {k: _valid(v, defs) for k, v in schema.get("properties", {}).items() if k in schema.get("required", [])}
    return "x" * max(1, schema.get("minLength", 1))


def _bad_argument_cases(host):
    for name, t in sorted(host.tools.items()):
        schema = t.input_schema
        defs = schema.get("$defs", {})
        base = {k: _valid(v, defs) for k, v in schema["properties"].items() if k in schema.get("required", [])}
        for arg, prop in schema["properties"].items():
            kind, nullable = _json_type(prop, defs)
            for value, shown in BAD_VALUES[kind]:
                if value is None and nullable:
                    continue
                yield name, {**base, arg: value}, (arg, EXPECTED[kind], shown)


def test_every_argument_of_every_tool_is_strictly_typed(tmp_path):
    host = _all_tools(tmp_path)
    try:
        cases = list(_bad_argument_cases(host))
        covered = {(name, arg) for name, _args, (arg, _kind, _shown) in cases}
        for name, t in host.tools.items():  # every argument of every tool is in the table
            assert covered >= {(name, arg) for arg in t.input_schema["properties"]}, name
        assert ("word_count", "limit") in covered  # a plugin's tool is held to the same rule
        for name, arguments, (arg, kind, shown) in cases:
            with pytest.raises(ValidationError) as err:
                host.tools[name].parse(arguments)
            assert err.value.field == arg, (name, arguments)
            message = str(err.value)
            assert message.endswith(f", got {shown}"), (name, arguments, message)
            # an argument with allowed values lists them instead of naming the type
            assert message.startswith((f"{arg}: expected {kind}, ", f"{arg}: expected one of ")), (name, message)
    finally:
        host.close()


@pytest.mark.parametrize(
    ("tool_name", "arguments", "message"),
    [
        ("read_page", {"slug": "n/p", "offset": 10**400}, "offset: must be at most 9007199254740991, got an integer"),
        ("list_pages", {"offset": -(10**30)}, "offset: must be at least 0, got an integer"),
        ("word_count", {"slug": "n/p", "limit": 2**70}, "limit: must be at most 10, got an integer"),
        ("edit_page", {"slug": "n/p", "basehash": "h", "edits": [{"oldText": 1, "newText": ""}]},
         "edits[0].oldText: expected a string, got the integer 1"),
        ("edit_page", {"slug": "n/p", "basehash": "h", "edits": [{"oldText": "", "newText": ""}]},
         "edits[0].oldText: must be at least 1 characters long, got 0"),
        ("edit_page", {"slug": "n/p", "basehash": "h", "edits": []}, "edits: must have at least 1 items, got 0"),
        ("save_page", {"slug": "n/p", "tags": ["t"] * 33}, "tags: must have at most 32 items, got 33"),
        ("rename_page", {"slug": "n/p", "basehash": "h", "title": "t" * 257}, "title: must be at most 256 characters long, got 257"),
        ("save_namespace", {"name": "n", "index": ".."}, 'index: must match the pattern ^[A-Za-z0-9][A-Za-z0-9._-]*$, got the string ".."'),
    ],
)  # fmt: skip
def test_huge_and_nested_values_are_refused_at_parsing(tmp_path, tool_name, arguments, message):
    host = _all_tools(tmp_path)
    try:
        with pytest.raises(ValidationError) as err:
            host.tools[tool_name].parse(arguments)
        assert str(err.value) == message
    finally:
        host.close()


def test_int_bounds_reach_the_schema_only_where_none_were_declared():
    assert word_count.input_schema["properties"]["limit"]["maximum"] == 10

    @tool
    def paged(offset: Annotated[int, Field(ge=0)] = 0, *, wiki) -> Out:
        """Doc."""

    assert paged.input_schema["properties"]["offset"] == {"default": 0, "minimum": 0, "maximum": 2**53 - 1, "type": "integer"}
    assert paged.parse({"offset": 2**53 - 1}) == {"offset": 2**53 - 1}


class Entry(TypedDict):
    name: str
    parent: str | None
    size: int | str | None


class Tree(TypedDict):
    name: str
    children: list["Tree"]


class Listing(TypedDict):
    entries: list[Entry]
    tree: Tree
    next_offset: int | None


@tool(read_only=True)
def listing(*, wiki) -> Listing:
    """A listing with nested, optional and recursive parts."""
    return {"entries": [], "tree": {"name": "", "children": []}, "next_offset": None}


def test_output_schema_inlines_what_is_not_recursive_and_keeps_its_meaning():
    import jsonschema

    schema = listing.output_schema
    entry = schema["properties"]["entries"]["items"]
    assert entry["properties"]["parent"] == {"type": ["string", "null"]}  # not an anyOf to try
    assert "anyOf" in entry["properties"]["size"]  # two types and null: left as it is
    assert schema["properties"]["next_offset"] == {"type": ["integer", "null"]}
    assert schema["properties"]["tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert set(schema["$defs"]) == {"Tree"}  # only what refers to itself stays a definition
    assert schema["$defs"]["Tree"]["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}

    good = {"entries": [{"name": "a", "parent": None, "size": 3}], "tree": {"name": "r", "children": [{"name": "c", "children": []}]}, "next_offset": 2}  # fmt: skip
    jsonschema.validate(good, schema)
    for bad in (
        {**good, "entries": [{"name": "a", "parent": 5, "size": 3}]},
        {**good, "tree": {"name": "r", "children": [{"name": 1, "children": []}]}},
        {**good, "next_offset": "2"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
