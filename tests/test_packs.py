"""Context packs: proposed as a change request (nothing saved until a person applies it), then
listed, found by intent and loaded within a budget; namespace limits on every path; bad input
named by field with nothing stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hostcore import SYSTEM, Forbidden, InsufficientScope, NotFound, ValidationError, create_app
from hostcore.domain.packs import Pack, parse, render
from hostcore.domain.pages import Page
from hostcore.host.host import Host

from .test_change_requests import who

BOT = who("bot", "propose", client="claude-code 2.1")
REVIEWER = who("ann", "review")


@pytest.fixture(params=["git", "fs"])
def host(request: pytest.FixtureRequest, tmp_path: Path):
    backend = str(request.param)
    config: dict[str, Any] = {"PLUGINS": [backend, "tokens", "sqlite"], "STORAGE": backend, "SEARCH": "sqlite"}
    host: Host = create_app(config, instance_path=tmp_path / "instance").extensions["hostcore"]
    admin = host.wiki(SYSTEM)
    for ns in ("ops", "team"):
        admin.save_namespace(ns, title=ns.title())
    admin.save_page("ops/deploy", title="Deploy", body="Deploy behind nginx.\n" + "Step by step. " * 200)
    admin.save_page("ops/rollback", title="Rollback", body="Roll back a release with the previous tag.\n")
    admin.save_page("ops/tls", title="TLS", body="Certificates renew every ninety days.\n")
    admin.save_page("team/secret", title="Secret", body="Team only.\n")
    yield host
    host.close()


def proposed_and_applied(host: Host, **extra: Any) -> str:
    made = host.wiki(BOT).propose_context_pack(
        "ops", "releases", "Shipping a release", ["ops/deploy", "ops/rollback", "ops/tls"], "the person ships weekly",
        aliases=["deploys", "ship it"], tasks=["release a version", "roll back a release"], **extra,
    )  # fmt: skip
    assert made["slug"] == "ops/packs/releases" and made["review_url"].endswith(f"/_/review/{made['proposed']}")
    assert not host.storage.exists("ops/packs/releases.md")  # nothing saved before a person applies it
    host.wiki(REVIEWER).apply_change_request(made["proposed"])
    return made["proposed"]


def test_a_proposed_pack_is_saved_only_when_applied_then_listed_found_and_loaded(host: Host) -> None:
    request = proposed_and_applied(host)
    assert host.wiki(REVIEWER).read_change_request(request)["state"] == "applied"
    reader = host.wiki(who("rita", "read"))
    listed = reader.list_context_packs()
    assert listed["total"] == 1 and listed["packs"][0]["aliases"] == ["deploys", "ship it"]
    assert listed["packs"][0]["pages"] == ["ops/deploy", "ops/rollback", "ops/tls"]
    assert reader.read_page("ops/packs/releases")["title"] == "Shipping a release"  # an ordinary page
    found = reader.find_context_packs("how do I roll back the release?")["packs"]
    assert [p["slug"] for p in found] == ["ops/packs/releases"] and {"roll", "release"} <= set(found[0]["why"]["words"])
    assert reader.find_context_packs("gardening tomatoes")["packs"] == []
    loaded = reader.load_context_pack("ops/packs/releases", budget=900)
    assert [i["slug"] for i in loaded["items"]] == ["ops/deploy", "ops/rollback", "ops/tls"]
    assert loaded["used"] <= 900 and loaded["items"][0]["truncated"] and loaded["items"][0]["read_more"].startswith("read_page ops/deploy")
    assert not loaded["items"][1]["truncated"] and loaded["items"][1]["text"].startswith("Roll back")


def test_a_namespace_limit_holds_on_every_path(host: Host) -> None:
    host.wiki(SYSTEM).save_page("team/packs/mixed", title="Mixed", body=render([], [], ["ops/tls", "team/secret", "team/gone"]))
    proposed_and_applied(host)
    ops_only = host.wiki(who("otto", "read", namespaces=["ops"]))
    assert [p["slug"] for p in ops_only.list_context_packs()["packs"]] == ["ops/packs/releases"]
    with pytest.raises(Forbidden):
        ops_only.list_context_packs("team")
    with pytest.raises(Forbidden):
        ops_only.load_context_pack("team/packs/mixed")
    team_only = host.wiki(who("tess", "read", namespaces=["team"]))
    loaded = team_only.load_context_pack("team/packs/mixed")
    assert [i["slug"] for i in loaded["items"]] == ["team/secret"] and loaded["missing"] == ["team/gone"]  # ops/tls: not named
    with pytest.raises(Forbidden):
        host.wiki(who("otto", "propose", namespaces=["ops"])).propose_context_pack("ops", "x", "X", ["team/secret"], "why")


@pytest.mark.parametrize(
    ("arguments", "field"),
    [
        ({"name": ".hidden"}, "name"),
        ({"pages": []}, "pages"),
        ({"pages": ["ops/nowhere"]}, "pages[0]"),
        ({"aliases": ["a, b"]}, "aliases[0]"),
        ({"tasks": ["one; two"]}, "tasks[0]"),
        ({"tasks": [" "]}, "tasks[0]"),
        ({"title": ""}, "title"),
    ],
)
def test_bad_input_is_named_and_nothing_is_stored(host: Host, arguments: dict[str, Any], field: str) -> None:
    given = {"namespace": "ops", "name": "p", "title": "P", "pages": ["ops/tls"], "reason": "why", **arguments}
    with pytest.raises((ValidationError, NotFound)) as caught:
        host.wiki(BOT).propose_context_pack(**given)
    assert caught.value.field == field
    assert host.wiki(REVIEWER).list_change_requests()["change_requests"] == []


def test_reading_needs_a_pack_page_and_proposing_the_propose_scope(host: Host) -> None:
    reader = host.wiki(who("rita", "read"))
    with pytest.raises(ValidationError) as caught:
        reader.load_context_pack("ops/deploy")
    assert caught.value.field == "slug"
    with pytest.raises(NotFound):
        reader.load_context_pack("ops/packs/none")
    with pytest.raises(ValidationError):
        reader.load_context_pack("ops/packs/none", budget=10)
    with pytest.raises(InsufficientScope):
        reader.propose_context_pack("ops", "p", "P", ["ops/tls"], "why")


def test_a_pack_page_reads_back_what_it_was_written_with() -> None:
    body = render(["a", "b c"], ["do x", "do y"], ["ops/one", "two"], notes="Read one first.")
    pack = parse(Page("ops/packs/p", "P", body))
    assert pack == Pack("ops/packs/p", "p", "P", ("a", "b c"), ("do x", "do y"), ("ops/one", "ops/two"), "Read one first.")
