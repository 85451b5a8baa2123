"""read_page at a revision and restore_page accept only commit ids from the page's own history.

A git revision expression searches the whole repository (``:/message`` matches any commit
message, and messages name slugs), so accepting one would tell a caller limited to one namespace
whether a page exists in another.
"""

import subprocess

import pytest

from hostcore import ValidationError
from hostcore.domain.principal import SYSTEM

from .conftest import principal


def git(host, *args):
    return subprocess.run(["git", "-C", str(host.storage.root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def team(git_host):
    """A writer limited to the team namespace; team/plan has two versions; ops/secret exists."""
    git_host.wiki(SYSTEM).save_namespace("ops", title="Ops")
    git_host.wiki(SYSTEM).save_page("ops/secret", body="hidden")
    wiki = git_host.wiki(principal("write", namespaces=["team"]))
    h = wiki.save_page("team/plan", body="v1")["hash"]
    wiki.save_page("team/plan", basehash=h, body="v2")
    return wiki


EXPRESSIONS = [
    ":/save_page: ops/secret",
    ":/save_page: ops/none",
    "HEAD",
    "HEAD~1",
    "HEAD^",
    "HEAD@{0}",
    "main",
    "refs/heads/main",
    "main@{1}",
    "@",
    "HEAD:team/plan.md",
    "abc",  # too short to be an abbreviation
    "g" * 40,
    " " + "a" * 40,
    "a" * 41,
    "",
]


@pytest.mark.parametrize("revision", EXPRESSIONS)
def test_expressions_are_refused_the_same_way_whatever_they_name(team, revision):
    head = git(team.host, "rev-parse", "HEAD")
    for call in (
        lambda: team.read_page_at("team/plan", revision, None, 0, 100),
        lambda: team.restore_page("team/plan", revision, basehash=team.read_page("team/plan")["hash"]),
    ):
        with pytest.raises(ValidationError) as err:
            call()
        assert err.value.field == "revision"
        assert str(err.value) == (
            "revision: is not a commit id; pass the id of a commit from page_history (all 40 hex digits, or the first 7 or more)"
        )
    assert git(team.host, "rev-parse", "HEAD") == head


def test_a_commit_outside_the_page_history_is_refused_like_one_that_does_not_exist(team):
    secret_commit = git(team.host, "log", "-1", "--format=%H", "--", "ops/secret.md").strip()
    messages = []
    for revision in (secret_commit, "0" * 40, secret_commit[:7], "0" * 7):
        with pytest.raises(ValidationError) as err:
            team.read_page_at("team/plan", revision, None, 0, 100)
        assert err.value.field == "revision"
        messages.append(str(err.value).replace(revision, "<id>"))
    assert set(messages) == {
        "revision: <id> is not a commit in the history of team/plan; pass a commit id from page_history for this page"
    }


def test_full_and_abbreviated_ids_of_the_page_history_work(team):
    _v2, v1 = (c["id"] for c in team.page_history("team/plan")["commits"])
    for given in (v1, v1[:7], v1[:12], v1.upper()):
        old = team.read_page_at("team/plan", given, None, 0, 100)
        assert old["body"] == "v1" and old["revision"] == v1
    current = team.read_page("team/plan")["hash"]
    restored = team.restore_page("team/plan", v1[:8], basehash=current)
    assert restored["restored_from"] == v1 and restored["changed"] is True
    assert team.read_page("team/plan")["body"] == "v1"
    assert git(team.host, "log", "-1", "--format=%s").strip() == f"restore_page: team/plan from {v1[:12]}"
