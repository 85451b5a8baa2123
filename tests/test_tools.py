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
        ({"slug": "n/p", "limit": 11}, "limit: Input should be less than or equal to 10"),
        ({"slug": "n/p", "extra": 1}, "extra: is not an argument of word_count"),
        ({"slug": 3}, "slug: Input should be a valid string"),
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
