"""gather_context and page_graph: what an assistant asks before it reads. A real git wiki with
SQLite search and the wordllama embedder (the default's model), through the service and /_/mcp."""

from __future__ import annotations

from pathlib import Path

import pytest

from hostcore import SYSTEM, Principal, create_app
from hostcore.errors import Forbidden, NotFound, ValidationError

CONFIG = {"PLUGINS": ["git", "tokens", "sqlite", "wordllama"], "STORAGE": "git", "SEARCH": "sqlite", "EMBEDDER": "wordllama"}
BREAD = "Knead the dough for ten minutes, then let it rise somewhere warm until doubled. Bake the loaf at 220 degrees until the crust sounds hollow."
TAX = "The quarterly filing deadline for income returns is the fifteenth of April. Late submissions incur a penalty."
LONG = "\n\n".join(f"Paragraph {i} is about nothing much, filler words to make the page long." for i in range(80))


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    host = create_app(CONFIG, instance_path=Path(tmp_path_factory.mktemp("context")) / "instance").extensions["hostcore"]
    wiki = host.wiki(SYSTEM)
    for name in ("notes", "team"):
        wiki.save_namespace(name, title=name.title())
    wiki.save_page("notes/bread", title="Bread", body=BREAD, tags=["kitchen"])
    wiki.save_page("notes/tax", title="Tax", body=TAX, tags=["money"])
    wiki.save_page("notes/deploy", title="Deploy", body="Deploy the wiki behind nginx with gunicorn. See [[notes/nginx]].")
    wiki.save_page("notes/nginx", title="Nginx", body="Nginx passes requests on with proxy_pass. [[notes/tls]]")
    wiki.save_page("notes/tls", title="TLS", body="Certificates renew every ninety days.")
    wiki.save_page("notes/ops", title="Ops", body="On call, read [[notes/deploy]] first.")
    wiki.save_page("notes/long", title="Long", body=LONG + "\n\nThe gunicorn workers restart at night.\n\n" + LONG)
    wiki.save_page("team/deploy", title="Team deploy", body="The team deploys behind nginx on Fridays. [[notes/deploy]]")
    host.indexes.wait()
    yield host
    host.close()


def slugs(context):
    return [item["slug"] for item in context["items"]]


def test_a_paraphrase_finds_the_page_by_meaning_and_words_rank_too(host):
    wiki = host.wiki(SYSTEM)
    found = wiki.gather_context("how do I make homemade bread", 2000)
    assert slugs(found)[0] == "notes/bread" and found["items"][0]["why"]["meaning"] > 0.2
    assert found["items"][0]["text"] == BREAD  # a page's passages keep no text: it comes from the page
    by_words = wiki.gather_context("quarterly filing penalty", 2000)
    assert slugs(by_words)[0] == "notes/tax" and by_words["items"][0]["why"]["words"] == ["quarterly", "filing", "penalty"]
    assert by_words["items"][0]["text"] == TAX and not by_words["items"][0]["truncated"]


def test_the_budget_holds_and_a_long_page_gives_its_relevant_part(host):
    wiki = host.wiki(SYSTEM)
    found = wiki.gather_context("gunicorn workers restart", 600)
    assert found["used"] == sum(len(item["text"]) for item in found["items"]) <= 600
    [long] = [item for item in found["items"] if item["slug"] == "notes/long"]
    assert "gunicorn workers restart" in long["text"] and long["truncated"] and long["offset"] > 0
    assert wiki.read_page("notes/long")["body"][long["offset"] :].startswith(long["text"])
    assert "starts at character" in long["read_more"]
    wide = wiki.gather_context("gunicorn workers restart", 100_000)
    assert wide["used"] > found["used"] and wide["left_out"] == 0


def test_start_pages_come_first_then_the_pages_they_link_with(host):
    found = host.wiki(SYSTEM).gather_context("certificates", 4000, start=["notes/deploy"])
    assert slugs(found)[0] == "notes/deploy" and found["items"][0]["why"]["start"] is True
    reasons = {item["slug"]: item["why"] for item in found["items"]}
    assert reasons["notes/nginx"]["linked"] == ["notes/deploy"] and reasons["notes/ops"]["linked"] == ["notes/deploy"]
    assert reasons["notes/tls"]["words"] == ["certificates"]


def test_namespace_and_tags_narrow_it(host):
    wiki = host.wiki(SYSTEM)
    assert set(slugs(wiki.gather_context("deploy nginx", 4000))) >= {"notes/deploy", "team/deploy"}
    assert "team/deploy" not in slugs(wiki.gather_context("deploy nginx", 4000, namespace="notes"))
    assert slugs(wiki.gather_context("bread dough penalty deadline", 4000, tags=["money"])) == ["notes/tax"]


def test_a_limited_caller_sees_only_its_namespaces(host):
    team = host.wiki(Principal("tia", frozenset({"read"}), frozenset({"team"})))
    found = team.gather_context("deploy nginx", 4000)
    assert slugs(found) == ["team/deploy"]
    with pytest.raises(Forbidden) as refused:
        team.gather_context("deploy", 4000, start=["notes/deploy"])
    assert refused.value.field == "start[0]"
    with pytest.raises(Forbidden):
        team.gather_context("deploy", 4000, namespace="notes")
    graph = team.page_graph("team/deploy")
    assert [n["slug"] for n in graph["nodes"]] == ["team/deploy"] and graph["links"] == []


@pytest.mark.parametrize(
    ("arguments", "field"),
    [({"goal": " ", "budget": 1000}, "goal"), ({"goal": "x", "budget": 10}, "budget"),
     ({"goal": "x", "start": ["../etc"]}, "start[0]"), ({"goal": "x", "start": ["team/deploy"], "namespace": "notes"}, "start[0]"),
     ({"goal": "x", "tags": [f"t{i}" for i in range(11)]}, "tags")],
)  # fmt: skip
def test_bad_arguments_name_the_field(host, arguments, field):
    with pytest.raises(ValidationError) as refused:
        host.wiki(SYSTEM).gather_context(**arguments)
    assert refused.value.field == field


def test_page_graph_follows_links_both_ways_to_a_depth(host):
    wiki = host.wiki(SYSTEM)
    one = wiki.page_graph("notes/nginx")
    assert {(n["slug"], n["depth"]) for n in one["nodes"]} == {("notes/nginx", 0), ("notes/deploy", 1), ("notes/tls", 1)}
    two = wiki.page_graph("notes/nginx", depth=2)
    assert {n["slug"] for n in two["nodes"] if n["depth"] == 2} == {"notes/ops", "team/deploy"}
    assert {"from": "notes/ops", "to": "notes/deploy"} in two["links"] and not two["truncated"]
    small = wiki.page_graph("notes/nginx", depth=2, limit=2)
    assert len(small["nodes"]) == 2 and small["truncated"]
    with pytest.raises(NotFound):
        wiki.page_graph("notes/none")
    with pytest.raises(ValidationError) as refused:
        wiki.page_graph("notes/nginx", depth=4)
    assert refused.value.field == "depth"


@pytest.mark.parametrize("goal", ["_/x", "0" * 40, "g" * 40, "notes/" + "a" * 300, "OR", '"', "*"])
def test_a_goal_the_search_engine_cannot_parse_ranks_by_meaning_alone(host, goal):
    """A goal is plain text, not a query: what the keyword engine refuses ranks nothing, and
    never becomes an error about a `query` the caller did not send (the fuzzer found it)."""
    found = host.wiki(SYSTEM).gather_context(goal, 1000)
    assert found["goal"] == goal and found["used"] <= 1000
