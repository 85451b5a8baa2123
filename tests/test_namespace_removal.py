"""Deleting a namespace with its pages and attachments (one change, only what the person was
shown) and bringing it back from history (one change)."""

import subprocess

import pytest

from hostcore import Conflict, Forbidden, InsufficientScope, NotFound
from hostcore.domain.principal import SYSTEM

from .conftest import principal


def git(host, *args):
    return subprocess.run(["git", "-C", str(host.storage.root), *args], capture_output=True, text=True, check=True).stdout


@pytest.fixture
def filled(git_host):
    """team holds two pages (one in a folder) and an attachment; notes holds one page."""
    wiki = git_host.wiki(SYSTEM)
    wiki.save_page("team/plan", body="# Plan\n\nsee [[team/guides/setup]]")
    wiki.save_page("team/guides/setup", body="setup steps")
    wiki._store_attachment("team/plan", "notes.txt", b"hello")
    wiki.save_page("notes/keep", body="stays")
    return git_host


def test_contents_name_every_page_and_attachment(filled):
    contents = filled.wiki(principal("admin")).namespace_contents("team")
    assert contents["pages"] == ["team/guides/setup", "team/plan"]
    assert contents["attachments"] == ["team/plan/notes.txt"]
    assert contents["files"] == 4 and contents["recoverable"] is True


def test_delete_is_one_change_of_every_file_and_leaves_other_namespaces(filled):
    admin = filled.wiki(principal("admin"))
    before = int(git(filled, "rev-list", "--count", "HEAD"))
    done = admin.delete_namespace("team", admin.namespace_contents("team")["digest"])
    assert done["pages"] == 2 and done["attachments"] == 1 and done["revision"]
    assert int(git(filled, "rev-list", "--count", "HEAD")) == before + 1
    assert git(filled, "log", "-1", "--format=%s").strip() == "delete_namespace: team (2 pages)"
    assert [n["name"] for n in admin.list_namespaces()["namespaces"]] == ["notes"]
    assert admin.list_pages()["pages"][0]["slug"] == "notes/keep"
    with pytest.raises(NotFound):
        admin.read_page("team/plan")
    assert git(filled, "ls-tree", "-r", "--name-only", "HEAD").split() == ["notes/.namespace.yaml", "notes/keep.md"]


def test_delete_refuses_when_the_namespace_changed_since_it_was_listed(filled):
    admin = filled.wiki(principal("admin"))
    digest = admin.namespace_contents("team")["digest"]
    filled.wiki(SYSTEM).save_page("team/late", body="written meanwhile")
    with pytest.raises(Conflict) as caught:
        admin.delete_namespace("team", digest)
    assert caught.value.field == "digest" and "3 pages" in str(caught.value)
    assert caught.value.data["hash"] == admin.namespace_contents("team")["digest"]
    assert admin.read_page("team/late")["body"] == "written meanwhile"


def test_only_an_admin_with_access_deletes(filled):
    digest = filled.wiki(principal("admin")).namespace_contents("team")["digest"]
    with pytest.raises(InsufficientScope):
        filled.wiki(principal("read", "write")).delete_namespace("team", digest)
    with pytest.raises(Forbidden):
        filled.wiki(principal("admin", namespaces=["notes"])).delete_namespace("team", digest)
    assert filled.wiki(principal("admin")).read_page("team/plan")


def test_restore_brings_back_everything_as_it_was(filled):
    admin = filled.wiki(principal("admin"))
    settings = admin.read_namespace("team")
    plan = admin.read_page("team/plan")
    admin.delete_namespace("team", admin.namespace_contents("team")["digest"])
    back = admin.restore_namespace("team")
    assert back["pages"] == 2 and back["attachments"] == 1
    assert git(filled, "log", "-1", "--format=%s").strip().startswith("restore_namespace: team from ")
    assert admin.read_namespace("team")["hash"] == settings["hash"]
    assert admin.read_page("team/plan")["hash"] == plan["hash"]
    assert admin.attachment("team/plan", "notes.txt")[0] == b"hello"
    assert [p["slug"] for p in admin.list_pages("team")["pages"]] == ["team/guides/setup", "team/plan"]
    assert admin.backlinks("team/guides/setup")["backlinks"]


def test_restore_refuses_a_namespace_that_exists_or_never_went(filled):
    admin = filled.wiki(principal("admin"))
    with pytest.raises(Conflict):
        admin.restore_namespace("team")
    with pytest.raises(NotFound):
        admin.restore_namespace("never")


def test_without_history_a_delete_says_it_is_final(app, host):
    admin = host.wiki(principal("admin"))
    assert admin.namespace_contents("notes")["recoverable"] is False


def test_deleted_namespaces_lists_those_gone_now_for_their_admins(filled):
    admin = filled.wiki(principal("admin"))
    assert admin.deleted_namespaces() == []
    admin.delete_namespace("team", admin.namespace_contents("team")["digest"])
    admin.delete_namespace("notes", admin.namespace_contents("notes")["digest"])
    gone = admin.deleted_namespaces()
    assert [d["name"] for d in gone] == ["notes", "team"] and gone[0]["author"] == "tester"
    assert [d["name"] for d in filled.wiki(principal("admin", namespaces=["team"])).deleted_namespaces()] == ["team"]
    with pytest.raises(InsufficientScope):
        filled.wiki(principal("write")).deleted_namespaces()
    admin.restore_namespace("team")
    assert [d["name"] for d in admin.deleted_namespaces()] == ["notes"]
