"""Names every clone of the wiki can hold: no Windows device names, no trailing dots, and no page,
folder or namespace that differs from an existing one only by case (a case-insensitive file
system, on Windows or macOS, would merge the two). Names already stored stay readable."""

import pytest

from hostcore import ValidationError, create_app
from hostcore.domain.pages import check_portable, fold
from hostcore.domain.principal import SYSTEM

from .conftest import principal


@pytest.mark.parametrize(
    "name",
    ["X/CON", "X/nul", "X/aux.txt", "X/COM1", "X/com0", "X/Lpt9", "X/prn.tar.gz", "X/con/page", "X/a/NUL.x/b", "NUL", "com3.d"],
)
def test_device_names_are_refused_in_every_segment(name):
    with pytest.raises(ValidationError) as err:
        check_portable(name)
    assert err.value.field == "slug"
    assert "is a device name on Windows" in str(err.value) and "pick another name" in str(err.value)


@pytest.mark.parametrize("name", ["X/x.", "X/a./b", "ns.", "X/a.b."])
def test_trailing_dots_are_refused(name):
    with pytest.raises(ValidationError, match=r"ends with '\.', which Windows drops from names; remove it"):
        check_portable(name, "new_slug")


@pytest.mark.parametrize("name", ["X/console", "X/com10", "X/lpt", "X/auxiliary.txt", "X/con-x", "X/a.b", "X/x.y/z", "notes"])
def test_ordinary_names_pass(name):
    assert check_portable(name) == name


def test_fold_ignores_case_and_normalisation():
    assert fold("Team") == fold("team") == fold("TEAM")
    assert fold("Cafe\u0301") == fold("CAFÉ")  # decomposed and composed é


# --- through the service: create, move, rename, restore, namespaces ---------------------------


def listing(host):
    return sorted(host.storage.list())


@pytest.mark.parametrize("slug", ["notes/CON", "notes/nul", "notes/aux.txt", "notes/COM1", "notes/x.", "notes/lpt1/page"])
def test_save_page_refuses_names_a_clone_could_not_hold(wiki, host, slug):
    before = listing(host)
    with pytest.raises(ValidationError) as err:
        wiki.save_page(slug, body="x")
    assert err.value.field == "slug"
    assert listing(host) == before


def test_a_page_differing_only_by_case_is_refused_naming_the_existing_one(wiki, host):
    wiki.save_page("notes/foo", body="x")
    before = listing(host)
    with pytest.raises(ValidationError) as err:
        wiki.save_page("notes/Foo", body="y")
    assert str(err.value) == (
        "slug: notes/Foo differs only by case from the existing notes/foo; use that page or pick another name"
    )
    assert listing(host) == before
    assert wiki.save_page("notes/foo-2", body="y")["created"]


def test_a_folder_differing_only_by_case_is_refused(wiki, host):
    wiki.save_page("notes/Projects/a", body="x")
    with pytest.raises(ValidationError) as err:
        wiki.save_page("notes/projects/b", body="y")
    assert str(err.value) == (
        "slug: notes/projects differs only by case from the existing notes/Projects; use that folder or pick another name"
    )
    with pytest.raises(ValidationError, match="notes/projects differs only by case from the existing notes/Projects"):
        wiki.save_page("notes/projects/deeper/c", body="y")
    assert wiki.save_page("notes/Projects/b", body="y")["created"]
    # a page beside a folder of the same name is no clash (Projects.md and Projects/ differ)
    assert wiki.save_page("notes/projects", body="z")["created"]
    # once the folder has emptied, its name in another case is free
    wiki.delete_page("notes/Projects/a")
    wiki.delete_page("notes/Projects/b")
    assert wiki.save_page("notes/PROJECTS/c", body="y")["created"]


def test_case_is_checked_within_the_caller_namespace_only(host):
    system = host.wiki(SYSTEM)
    system.save_namespace("team", title="Team")
    system.save_page("notes/foo", body="x")
    limited = host.wiki(principal("write", namespaces=["team"]))
    assert limited.save_page("team/Foo", body="y")["created"]


def test_move_and_rename_refuse_case_variants_but_a_page_may_change_its_own_case(wiki, host):
    h = wiki.save_page("notes/a", body="x")["hash"]
    wiki.save_page("notes/taken", body="y")
    wiki.save_page("notes/Dir/p", body="z")
    before = listing(host)
    with pytest.raises(ValidationError) as err:
        wiki.move_page("notes/a", "notes/Taken", h)
    assert err.value.field == "new_slug" and "the existing notes/taken" in str(err.value)
    with pytest.raises(ValidationError, match="notes/dir differs only by case from the existing notes/Dir"):
        wiki.move_page("notes/a", "notes/dir/a", h)
    with pytest.raises(ValidationError) as err:
        wiki.move_page("notes/a", "notes/nul", h)
    assert err.value.field == "new_slug"
    with pytest.raises(ValidationError) as err:
        wiki.rename_page("notes/a", "Taken", h)  # derives notes/taken, which exists
    assert err.value.field == "title"
    with pytest.raises(ValidationError) as err:
        wiki.rename_page("notes/a", "Aux", h)  # derives notes/aux, a device name
    assert err.value.field == "title" and "device name" in str(err.value)
    assert listing(host) == before
    # the page itself, or the only page of a folder, may change case
    assert wiki.move_page("notes/a", "notes/A", h)["slug"] == "notes/A"
    dir_hash = wiki.read_page("notes/Dir/p")["hash"]
    assert wiki.move_page("notes/Dir/p", "notes/dir/p", dir_hash)["slug"] == "notes/dir/p"


def test_case_variants_are_checked_against_every_save_before_this_one(git_host, monkeypatch):
    """The link graph answers the check after catching up: with this process's background catch-up
    held back, and for a page saved through another host on the same instance."""
    wiki = git_host.wiki(principal("write"))
    wiki.save_page("notes/foo", body="old")
    git_host.indexes.follower.wait()
    monkeypatch.setattr(git_host.indexes.follower, "kick", lambda: None)  # the background never comes
    wiki.delete_page("notes/foo")
    assert wiki.save_page("notes/Foo", body="new")["hash"]  # notes/foo is known to be gone
    other = create_app({"PLUGINS": ["git", "tokens"], "STORAGE": "git"}, instance_path=git_host.instance_path)
    try:
        other.extensions["hostcore"].wiki(SYSTEM).save_page("team/Plan", body="from the other host")
    finally:
        other.extensions["hostcore"].close()
    with pytest.raises(ValidationError, match="team/plan differs only by case from the existing team/Plan"):
        wiki.save_page("team/plan", body="here")


def test_restoring_a_deleted_page_beside_its_case_variant_is_refused(git_host):
    wiki = git_host.wiki(principal("write"))
    wiki.save_page("notes/foo", body="old")
    wiki.delete_page("notes/foo")
    wiki.save_page("notes/Foo", body="new")
    with pytest.raises(ValidationError) as err:
        wiki.restore_page("notes/foo")
    assert str(err.value) == (
        "slug: notes/foo differs only by case from the existing notes/Foo; use that page or pick another name"
    )


@pytest.mark.parametrize("name", ["CON", "nul", "Aux", "com1", "x."])
def test_save_namespace_refuses_names_a_clone_could_not_hold(admin, host, name):
    before = listing(host)
    with pytest.raises(ValidationError) as err:
        admin.save_namespace(name)
    assert err.value.field == "name"
    assert listing(host) == before


def test_a_namespace_differing_only_by_case_is_refused(admin, host):
    admin.save_namespace("team")
    before = listing(host)
    for name in ("Team", "TEAM", "NOTES"):
        with pytest.raises(ValidationError) as err:
            admin.save_namespace(name, title="x")
        existing = name.lower()
        assert str(err.value) == (
            f"name: {name} differs only by case from the existing namespace {existing}; use that namespace or pick another name"
        )
    assert listing(host) == before
    h = admin.read_namespace("team")["hash"]
    assert admin.save_namespace("team", basehash=h, title="Team")["created"] is False  # updates are not creates


def test_pages_already_stored_under_such_names_stay_readable_and_writable(wiki, host):
    from hostcore.seams.storage import Change, Put

    host.storage.apply([Put("notes/con.md", b"---\ntitle: old\n---\nfrom outside\n")], Change("operator", "import"))
    page = wiki.read_page("notes/con")
    assert page["body"] == "from outside\n"
    assert wiki.save_page("notes/con", basehash=page["hash"], body="edited\n")["changed"]
    assert wiki.delete_page("notes/con")["deleted"]
